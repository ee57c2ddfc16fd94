"""Peers run side by side with backtrack, each in its own virtual environment.

`bash benchmarks/peers/setup.sh [PEER ...]` creates `.bench/venvs/<PEER>` (idempotent) and the
SmolLM2 copy that transformers 4.x reads. The runner scripts in this folder are executed with a
peer's interpreter (`peer_python`) and stay up between requests (`PeerProcess`): one JSON line
in, one JSON line out (lines starting with `{`; anything else on stdout is ignored, stderr goes to
a log under .bench/logs/).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
VENVS = ROOT / ".bench" / "venvs"
SETUP = HERE / "setup.sh"
PEERS = ("grammar-guide", "guidance", "transformers-cfg", "outlines")


def peer_python(name: str) -> Path:
    """The interpreter of peer `name`'s venv, running `setup.sh name` first if it is missing."""
    if name not in PEERS:
        raise ValueError(f"unknown peer {name!r} (known: {', '.join(PEERS)})")
    python = VENVS / name / "bin" / "python"
    if not (python.is_file() and (VENVS / name / ".peer-stamp").is_file()):
        subprocess.run(["bash", str(SETUP), name], check=True, cwd=ROOT)
    return python


def smollm2_tf4() -> Path:
    """The SmolLM2-135M-Instruct folder for transformers 4.x (written once, outside the repo)."""
    sys.path.insert(0, str(HERE))
    try:
        import smollm2_copy
    finally:
        sys.path.pop(0)
    return Path(smollm2_copy.ensure(str(ROOT / ".venv" / "bin" / "python")))


def peer_env() -> dict[str, str]:
    """The environment for a runner: one thread everywhere, no hub access."""
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false")
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONPATH=str(HERE))
    env.pop("VIRTUAL_ENV", None)
    return env


class PeerProcess:
    """A runner script kept alive in a peer's venv, spoken to one JSON line at a time.

    `request(obj)` sends one line and returns the first JSON line of the reply (lines the script
    prints that do not start with `{` are ignored). Its stderr goes to `log` (a file path).
    """

    def __init__(self, name: str, script: str, log: Path | None = None) -> None:
        python = peer_python(name) if name != "main" else Path(sys.executable)
        self.name = name
        self.log_path = log or (ROOT / ".bench" / "logs" / f"{name}-{Path(script).stem}.log")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = self.log_path.open("a", encoding="utf-8")
        self.proc = subprocess.Popen(
            [str(python), str(HERE / script)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            encoding="utf-8",
            env=peer_env(),
            cwd=ROOT,
        )

    def request(self, obj: dict[str, Any]) -> dict[str, Any]:
        proc = self.proc
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(json.dumps(obj, ensure_ascii=False) + "\n")
            proc.stdin.flush()
        except BrokenPipeError:
            pass
        for line in proc.stdout:
            if line.startswith("{"):
                reply: dict[str, Any] = json.loads(line)
                return reply
        raise RuntimeError(f"{self.name}: the runner exited; {self.stderr_tail()}")

    def stderr_tail(self, lines: int = 12) -> str:
        self._log.flush()
        text = self.log_path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
        return " | ".join(line.strip() for line in text[-lines:])

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            try:
                self.proc.stdin.write("\n")
                self.proc.stdin.close()
                self.proc.wait(timeout=30)
            except (BrokenPipeError, subprocess.TimeoutExpired):
                self.proc.kill()
        self._log.close()
