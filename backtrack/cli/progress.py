"""Progress of slow steps for the command line, on stderr.

On a terminal a step is one line redrawn in place: a spinner, the step's message (which `status()`
may change while it runs) and the seconds elapsed, replaced by the step's total when it ends.
Elsewhere (a pipe, a log file) each step is two plain lines, its start and its end, and status
changes are plain lines too. Quiet, nothing is written. Nothing goes to stdout: that is the
output's.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

__all__ = ["Progress"]

_FRAMES = "|/-\\"
_CLEAR = "\r\x1b[K"  # back to the start of the line, erase it


class Progress:
    """Reports slow steps on `stream` (default: stderr); see the module docstring.

    `note()` fits LocalTarget.default's `progress` callback. The spinner runs in a daemon thread
    that draws only while a step is open; every write holds one lock, so lines never interleave.
    """

    def __init__(
        self, stream: TextIO | None = None, *, quiet: bool = False, interval: float = 0.1
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.quiet = quiet
        self.live = not quiet and _isatty(self.stream)
        self.interval = interval
        self._lock = threading.Lock()
        self._message: str | None = None  # the open step's message, None between steps
        self._started = 0.0
        self._frame = 0

    def note(self, message: str) -> None:
        """A line of its own (above the spinner when one is running)."""
        with self._lock:
            self._write(f"{_CLEAR if self.live else ''}{message}\n")
            self._draw()

    def status(self, message: str) -> None:
        """Change the open step's message (a plain line when not on a terminal)."""
        if not self.live:
            self.note(message)
            return
        with self._lock:
            self._message = message
            self._draw()

    @contextmanager
    def step(self, message: str) -> Iterator[None]:
        """Report the work done inside the `with` block as one step."""
        with self._lock:
            self._message, self._started = message, time.perf_counter()
            self._write("" if self.live else f"{message}...\n")
            self._draw()
        done = threading.Event()
        spinner = threading.Thread(target=self._spin, args=(done,), daemon=True)
        if self.live:
            spinner.start()
        ok = False
        try:
            yield
            ok = True
        finally:
            done.set()
            if self.live:
                spinner.join()
            self._finish(message, ok)

    # -- drawing (callers hold the lock)

    def _spin(self, done: threading.Event) -> None:
        while not done.wait(self.interval):
            with self._lock:
                self._frame += 1
                self._draw()

    def _draw(self) -> None:
        if self.live and self._message is not None:
            elapsed = time.perf_counter() - self._started
            frame = _FRAMES[self._frame % len(_FRAMES)]
            self._write(f"{_CLEAR}{frame} {self._message}  {elapsed:.1f} s")

    def _finish(self, message: str, ok: bool) -> None:
        with self._lock:
            elapsed = time.perf_counter() - self._started
            self._message = None
            outcome = f"done in {elapsed:.1f} s" if ok else f"failed after {elapsed:.1f} s"
            self._write(f"{_CLEAR if self.live else ''}{message}: {outcome}\n")

    def _write(self, text: str) -> None:
        if self.quiet or not text:
            return
        self.stream.write(text)
        self.stream.flush()


def _isatty(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())
