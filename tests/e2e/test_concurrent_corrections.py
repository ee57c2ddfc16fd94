"""aguide hands the corrections of concurrent runs to the target at once, whichever engine it
is: a target whose sessions wait until RUNS corrections are in flight (more than the 32 threads
the default executor has at most) before SmolLM2 writes each. The in-process target still takes
them one at a time behind its lock; a VllmTarget sends them together, and vLLM batches them."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from backtrack import aguide
from grammars import Grammar
from local_target import LocalTarget, Session

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

RUNS = 33
SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
    "additionalProperties": False,
}


class Gathering:
    """SmolLM2, whose sessions' first corrections each wait for `parties` in flight; a barrier
    that never fills breaks after 60 s (BrokenBarrierError: the run fails)."""

    def __init__(self, target: LocalTarget, parties: int) -> None:
        self.target = target
        self.barrier = threading.Barrier(parties, timeout=60)

    def session(self, prompt: Any) -> Session:
        return _GatheringSession(self.barrier, self.target.session(prompt))


class _GatheringSession:
    def __init__(self, barrier: threading.Barrier, session: Session) -> None:
        self.barrier = barrier
        self.session = session
        self.first = True

    def correct(self, *args: Any, **kwargs: Any) -> Any:
        if self.first:
            self.first = False
            self.barrier.wait()
        return self.session.correct(*args, **kwargs)

    def likeliest(self, texts: list[str]) -> int:
        return self.session.likeliest(texts)


async def draft(prompt: str, prefix: str) -> str:
    name = prompt.rsplit(" ", 1)[-1]
    return "}" if prefix else f'{{"name": "{name}", "age": "three"}}'  # age: not an integer


def test_the_corrections_of_concurrent_runs_are_in_flight_together(smollm2: LocalTarget) -> None:
    grammar = Grammar.from_json_schema(SCHEMA)
    target = Gathering(smollm2, RUNS)

    async def runs() -> list[Any]:
        return await asyncio.gather(
            *(
                aguide(
                    draft,
                    grammar,
                    prompt=f"A cat as JSON, named cat{n}",
                    target=target,
                    repair_window=0,
                )
                for n in range(RUNS)
            )
        )

    results = asyncio.run(runs())
    for n, result in enumerate(results):
        assert result.valid and result.text.startswith(f'{{"name": "cat{n}", "age": ')
        assert result.corrections >= 1
