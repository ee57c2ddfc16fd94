"""Grammar compiles that stop at their time limit: each grammar new to the server is compiled first
in a worker process, and a compile past `compile_seconds` has its worker killed, so its CPU work
ends with the 400 that answers it.

A thread cannot be stopped, and llguidance's own limits do not bound this work: its lexer fuel and
grammar size are checked after the costly part of the compile (a schema of 200 patternProperties
under `LLParserLimits(initial_lexer_fuel=1000)` burned 2.5 s of CPU before it was refused, 2.0 s
without limits). The engine's compiled grammar cannot cross processes, so a grammar whose trial
ended in time is compiled again in the server's process, in about as long: within the limit.

Workers are kept between trials (a spawned process needs about half a second to import the
engine; that start is not counted in a trial's time). A worker that dies in a trial (the engine
crashed on the grammar) is a GrammarError: the server's own process never compiles it.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import pickle
import select
import subprocess
import sys
import threading
from typing import IO, TYPE_CHECKING

from grammars import GrammarError

if TYPE_CHECKING:
    from backtrack.serve.fields import GrammarSpec
    from grammars import GrammarLimits

logger = logging.getLogger(__name__)

# How long a new worker may take to import the engine before it is given up on.
_START_SECONDS = 120.0
_READY, _DONE = b"r", b"d"


def _trials(jobs: IO[bytes], answers: IO[bytes]) -> None:
    """A worker's loop: compile each pickled (spec, limits) it is sent, and say when done
    (whatever the outcome: the server's own compile gives the grammar or its error)."""
    answers.write(_READY)
    answers.flush()
    while True:
        try:
            spec, limits = pickle.load(jobs)
        except EOFError:  # the server closed the pipe
            return
        with contextlib.suppress(Exception):  # the server's own compile reports it
            spec.compile(limits)
        answers.write(_DONE)
        answers.flush()


class _Worker:
    """`python -m backtrack.serve.compile_workers`, jobs on its stdin, answers on its stdout (a
    process of its own, not multiprocessing's: that would run the server's main script again)."""

    def __init__(self) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p or os.getcwd() for p in sys.path)}
        self.process = subprocess.Popen(
            [sys.executable, "-m", __name__],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )
        if not self._answer(_START_SECONDS):
            self.kill()
            raise OSError("a compile worker did not start")

    def _answer(self, seconds: float) -> bool:
        """True when the worker answered within `seconds`; EOFError when it died."""
        out = self.process.stdout
        if out is None or not select.select([out], [], [], seconds)[0]:
            return False
        if not out.read(1):
            raise EOFError
        return True

    def run(self, spec: GrammarSpec, limits: GrammarLimits, seconds: float) -> bool:
        """True when the compile ended within `seconds`; False when it did not (the worker is
        then killed). GrammarError when the worker died in it."""
        try:
            if self.process.stdin is None:
                raise EOFError
            pickle.dump((spec, limits), self.process.stdin)
            self.process.stdin.flush()
            if self._answer(seconds):
                return True
        except (EOFError, OSError):
            self.kill()
            raise GrammarError(
                "the engine failed on this grammar (its compile ended the process that ran it, "
                f"exit code {self.process.returncode})"
            ) from None
        self.kill()
        return False

    def kill(self) -> None:
        self.process.kill()
        self.process.wait()
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                pipe.close()


class CompileWorkers:
    """Worker processes for trial compiles, shared by every server in the process (they keep no
    state): started when first needed, kept while they finish in time, at most `size` trials at
    once (others wait for a worker). A worker ends when this process does (its stdin closes), or
    once the compile it runs then ends."""

    def __init__(self, size: int = 2) -> None:
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(size)
        self._closing_at_exit = False

    def trial(self, spec: GrammarSpec, limits: GrammarLimits, seconds: float) -> bool:
        """Compile `spec` in a worker (blocking): True when it ended within `seconds`, False
        when it did not (its worker killed). A worker's start is not part of `seconds`."""
        with self._slots:
            with self._lock:
                worker = self._idle.pop() if self._idle else None
            try:
                worker = worker or self._started()
            except OSError as exc:  # no process to be had: compiled as before, in a thread
                logger.warning("no compile worker (%s): the compile cannot be stopped", exc)
                return True
            finished = False
            try:
                finished = worker.run(spec, limits, seconds)
            finally:
                if finished:
                    with self._lock:
                        self._idle.append(worker)
            return finished

    def _started(self) -> _Worker:
        worker = _Worker()
        if not self._closing_at_exit:
            self._closing_at_exit = True
            atexit.register(self.close)
        return worker

    def close(self) -> None:
        """End the idle workers (at exit: their pipes closed, no process left behind)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.kill()


TRIALS = CompileWorkers()


if __name__ == "__main__":
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # the answers' pipe carries nothing else: any other output goes to stderr
    _trials(sys.stdin.buffer, answers)
