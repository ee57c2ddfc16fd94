"""`backtrack serve` as its own process (the command line, as deployed) on 127.0.0.1, for tests
and benchmarks: `with serve_process(upstream, "--target", "vllm:URL") as url: ...`."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

STARTUP_SECONDS = 120  # loading SmolLM2 in process takes seconds on 2 busy cores


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def serve_process(upstream: str, *args: str) -> Iterator[str]:
    """The base URL of `backtrack serve --upstream upstream ARGS` while it runs (its /health
    answers); stopped with SIGTERM on exit. RuntimeError, with the end of its log, where it does
    not come up within STARTUP_SECONDS."""
    port = free_port()
    log = tempfile.NamedTemporaryFile(prefix="serve-", suffix=".log", delete=False)  # noqa: SIM115
    command = [sys.executable, "-m", "backtrack", "serve", "--upstream", upstream]
    command += ["--port", str(port), "--log-level", "warning", "-q", *args]
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(f"{url}/health", process, Path(log.name), STARTUP_SECONDS)
        yield url
    finally:
        with suppress(ProcessLookupError):
            process.send_signal(signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
        log.close()
        os.unlink(log.name)


def wait_ready(probe: str, process: subprocess.Popen[bytes], log: Path, seconds: float) -> None:
    """Until a GET of `probe` answers; RuntimeError, with the end of `log`, where `process`
    ends first or `seconds` pass."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and process.poll() is None:
        try:
            with urllib.request.urlopen(probe, timeout=5):
                return
        except OSError:
            time.sleep(0.5)
    tail = log.read_text(errors="replace")[-3000:]
    raise RuntimeError(f"{process.args!r} did not come up (exit {process.poll()}):\n{tail}")
