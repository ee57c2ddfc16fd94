"""A draft under the run's time bound (GuideOptions.max_seconds), also while the drafter is called.

The loop closes a draft when a chunk arrives past the bound (GuideLoop.receive); a drafter that
blocks, or never yields its next chunk, gives it no chunk to see. With a bound, the shells wait for
the drafter's calls only until it passes:

- guide() (`draft_within`) makes a sync drafter's calls (`draft()`, each chunk, `close()`) one at
  a time in a daemon thread of their own, and waits for each until the bound (and GRACE_SECONDS
  more: a chunk that comes just late is read as before). Past it the thread is abandoned: Python
  cannot stop a thread, so a drafter blocked for ever keeps it, and what it holds, until its call
  returns; the thread then closes the stream and ends.
- aguide() (`awaited_within`) cancels an async drafter's call at the bound (the same grace
  after). A sync function given to aguide runs on the event loop's thread and blocks it: nothing
  can bound it there.

Either way the run goes on as when a chunk comes past the bound: the draft ends as "length" with
what it committed, and the target completes the text (or, with complete_on_budget=False, the run
stops there). Without a bound the drafter is called directly, as before.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from providers.base import Drafter, DraftRequest, DraftStream

T = TypeVar("T")

# How long a drafter's call under way at the bound is waited for past it: a slow stream's chunk that
# comes just late is read, and closes the draft, as a chunk past the bound always did; a drafter
# blocked longer is left.
GRACE_SECONDS = 1.0
# How long guide() waits for a sync drafter's stream to close, even past the bound: a stream
# closed at the bound (its chunk came late) is closed before the run goes on, as without one.
CLOSE_SECONDS = 5.0


class OutOfTime(Exception):
    """The run's max_seconds passed while the drafter was called; `stream`: the draft's stream as
    it was left (None: before it was made)."""

    stream: DraftStream | None = None


def draft_within(
    drafter: Drafter,
    request: DraftRequest,
    receive: Callable[[str, DraftStream], bool],
    seconds_left: Callable[[], float],
) -> DraftStream:
    """guide()'s draft: `drafter.draft(request)`, each chunk handed to `receive(chunk, stream)`
    until it says stop, then the stream closed; each call to the drafter waited for at most
    `seconds_left()` (OutOfTime past it)."""
    thread = _CallThread(lambda: seconds_left() + GRACE_SECONDS)
    stream: DraftStream | None = None
    try:
        stream = thread.call(drafter.draft, request)
        try:
            chunks = iter(stream)
            while (chunk := thread.call(next, chunks, None)) is not None:
                if not receive(chunk, stream):
                    break
        finally:
            if thread.abandoned:
                thread.later(stream.close)  # once the drafter's call returns, if ever
            else:
                thread.call(stream.close, wait_at_least=CLOSE_SECONDS)
    except OutOfTime as exc:
        exc.stream = stream
        raise
    finally:
        thread.end()
    return stream


async def awaited_within(awaitable: Awaitable[T], seconds_left: Callable[[], float]) -> T:
    """aguide's drafter call: `awaitable`, cancelled GRACE_SECONDS after `seconds_left()` passes
    (OutOfTime)."""
    try:
        return await asyncio.wait_for(_own(awaitable), max(0.0, seconds_left() + GRACE_SECONDS))
    except asyncio.TimeoutError:
        raise OutOfTime from None
    except _OwnTimeout as own:
        raise own.error from None


class _OwnTimeout(Exception):
    """A TimeoutError the drafter raised itself, told apart from wait_for's."""

    def __init__(self, error: BaseException) -> None:
        super().__init__()
        self.error = error


async def _own(awaitable: Awaitable[T]) -> T:
    try:
        return await awaitable
    except asyncio.TimeoutError as exc:
        raise _OwnTimeout(exc) from None


class _CallThread:
    """Calls made one at a time in a daemon thread; the caller waits for each until the time
    left runs out (`abandoned` then: the thread is left to its call)."""

    def __init__(self, seconds_left: Callable[[], float]) -> None:
        self.seconds_left = seconds_left
        self.abandoned = False
        self._calls: queue.SimpleQueue[tuple[Callable[..., Any], tuple[Any, ...], Any] | None]
        self._calls = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._serve, name="backtrack-drafter", daemon=True)
        self._thread.start()

    def call(self, fn: Callable[..., T], *args: Any, wait_at_least: float = 0.0) -> T:
        """`fn(*args)` in the thread: its value, or what it raised; OutOfTime at the bound (or
        after `wait_at_least` seconds, if later)."""
        replies: queue.SimpleQueue[tuple[bool, Any]] = queue.SimpleQueue()
        self._calls.put((fn, args, replies))
        try:
            ok, value = replies.get(timeout=max(wait_at_least, self.seconds_left()))
        except queue.Empty:
            self.abandoned = True
            raise OutOfTime from None
        if not ok:
            raise value
        result: T = value
        return result

    def later(self, fn: Callable[[], object]) -> None:
        """`fn()` in the thread after the call under way, nobody waiting for it."""
        self._calls.put((fn, (), None))

    def end(self) -> None:
        """The thread ends after its last call."""
        self._calls.put(None)

    def _serve(self) -> None:
        while (call := self._calls.get()) is not None:
            fn, args, replies = call
            try:
                reply = (True, fn(*args))
            except BaseException as exc:  # handed to the caller, who raises it
                reply = (False, exc)
            if replies is not None:
                replies.put(reply)
