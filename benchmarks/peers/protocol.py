"""What the peer runners and the benchmarks share: a clock for a timed block and the runners' side
of the line protocol. Runners import it as `protocol` (their folder is on their path); the
benchmarks as `benchmarks.peers.protocol`. Standard library only: it runs in every peer's venv.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any


class Clock:
    """Wall and CPU (this process, all threads) seconds of a `with` block."""

    def __enter__(self) -> Clock:
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self.wall
        self.cpu = time.process_time() - self.cpu

    def times(self) -> dict[str, float]:
        return {"seconds": self.wall, "cpu_seconds": self.cpu}


def emit(record: dict[str, Any]) -> None:
    """Answer the caller: one JSON document on one line of stdout."""
    sys.stdout.write(json.dumps(record, ensure_ascii=False) + "\n")
    sys.stdout.flush()
