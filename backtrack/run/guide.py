"""guide() and aguide(): the two short shells that perform the driver's effects
(backtrack.run.driver); AsyncGuideRun is aguide's, as an object that a caller can stop and still
take the partial result. guide_pieces is guide()'s, as a generator of the output's final pieces
that a caller can close (wrap's sync streams); guide() drains the same generator, which passes
pieces on as they come only where guide() has an `on_text` to give them to.

Each draft round is retried as a whole: a stream that drops midway resumes from the text
committed so far. An error that ends the run carries the partial GuideResult (`exc.partial`):
committed text is never lost or repeated.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import threading
import time
from collections.abc import Awaitable, Callable, Generator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

from backtrack.run.deadline import OutOfTime, awaited_within, draft_within
from backtrack.run.driver import Correct, Effect, Outcome, Run, Wait
from backtrack.run.options import GuideOptions, resolve
from backtrack.trace.result import GuideResult
from grammars import GrammarLike
from providers.base import AsyncDrafter, AsyncDraftStream, Drafter, Prompt, check_prompt

if TYPE_CHECKING:
    from local_target import Target

DrafterLike = Drafter | AsyncDrafter | Callable[..., Any]
"""What drafts: a Drafter or AsyncDrafter from `providers`, or a function `(prompt, prefix) ->
str` (or `(text) -> str`, sync or async, returning a str or yielding chunks)."""

# aguide checks a chunk in slices of this many characters, in a worker thread that gives the GIL
# back between them: checking costs microseconds a character (in the engine, which holds the GIL),
# and a drafter may hand over megabytes at once.
CHECK_SLICE = 1024
# Worker threads for aguide's checks and repairs, shared by every run in the process: enough that
# one run's long repair search does not hold up the others' checks (the GIL gives them turns),
# apart from the correction threads.
CHECK_THREADS = 8
# Worker threads for corrections, shared by every run in the process: on a LocalTarget they wait
# for its lock one at a time; on a VllmTarget each is a request in flight, and the server batches
# the concurrent ones (the default executor's min(32, cores + 4) threads would cap them at 6 on
# 2 cores).
CORRECTION_THREADS = 128
# A chunk this short that only needs checking (no search: GuideLoop.checks_only) is checked on the
# loop: tens of microseconds, less than a thread's round trip, which would cost most when chunks
# are small and many.
INLINE_CHECK = 64
_pools: dict[str, ThreadPoolExecutor] = {}
_pools_lock = threading.Lock()

T = TypeVar("T")

_KEYWORDS = ("prompt", "target", "options", "on_text")


def _run(
    caller: str,
    generate_fn: DrafterLike,
    grammar: GrammarLike,
    prompt: Prompt,
    target: Target | None,
    options: GuideOptions | None,
    on_text: Callable[[str], None] | None,
    changes: dict[str, Any],
) -> Run:
    resolved = resolve(caller, options, changes, also=_KEYWORDS)
    return Run(generate_fn, grammar, check_prompt(prompt), target, resolved, on_text)


def guide(
    generate_fn: DrafterLike,
    grammar: GrammarLike,
    *,
    prompt: Prompt = "",
    target: Target | None = None,
    options: GuideOptions | None = None,
    on_text: Callable[[str], None] | None = None,
    **option_changes: Any,
) -> GuideResult:
    """Let `generate_fn` write, keep its output inside `grammar`, correct it locally.

    `grammar`: a Grammar, a shipped name, Lark text, a JSON schema (a pydantic model class too:
    the result's `parsed` is then the validated object) or a guidance grammar.
    `target`: the local model (default: SmolLM2-135M). `options` (a GuideOptions) sets every
    budget and policy; keyword arguments change single ones (`max_corrections=4`), and an unknown
    name is a TypeError that names the valid ones. `on_text(piece)` is called with the output as
    it becomes final, piece by piece: the pieces concatenated are the result's text (for
    streaming it on; a run that fails has passed on a prefix of its partial text).
    """
    # Where nobody reads the pieces, none is promised: a repair may still reach back into them.
    streamed = on_text is not None
    pieces = _pieces(generate_fn, grammar, prompt, target, options, option_changes, streamed)
    with contextlib.closing(pieces):  # on_text failed: the draft under way is closed
        while True:
            try:
                piece = next(pieces)
            except StopIteration as done:
                result: GuideResult = done.value
                return result
            if on_text is not None:
                on_text(piece)


def guide_pieces(
    generate_fn: DrafterLike,
    grammar: GrammarLike,
    *,
    prompt: Prompt = "",
    target: Target | None = None,
    options: GuideOptions | None = None,
    **option_changes: Any,
) -> Generator[str, None, GuideResult]:
    """guide() as a generator: it yields the output's pieces as they become final (what guide()
    hands to `on_text`) and returns the GuideResult. The arguments are checked here, before the
    first piece is asked for; the run starts then. Closed before its end, the run stops there: a
    draft under way is closed (its upstream request with it)."""
    return _pieces(generate_fn, grammar, prompt, target, options, option_changes, True)


def _pieces(
    generate_fn: DrafterLike,
    grammar: GrammarLike,
    prompt: Prompt,
    target: Target | None,
    options: GuideOptions | None,
    option_changes: dict[str, Any],
    streamed: bool,
) -> Generator[str, None, GuideResult]:
    """guide_pieces(); where not `streamed`, no piece comes before the result (nothing is
    passed on: backtrack.run.layout may place a closer far back)."""
    made: list[str] = []
    on_text = made.append if streamed else None
    run = _run("guide", generate_fn, grammar, prompt, target, options, on_text, option_changes)
    return _steps(run, made)


def _steps(run: Run, made: list[str]) -> Generator[str, None, GuideResult]:
    """The run's effects performed; each piece `run` adds to `made` is yielded once the step that
    made it has ended (a step that fails too: its text was final before the error)."""
    run.prepare()
    advance: Callable[[], Effect | GuideResult] = run.start
    while True:
        try:
            step = advance()
        finally:
            yield from _take(made)
        if isinstance(step, GuideResult):
            return step
        try:
            outcome = yield from _perform(run, step, made)
        except Exception as exc:
            advance = functools.partial(run.throw, exc)
        else:
            advance = functools.partial(run.send, outcome)


def _take(made: list[str]) -> list[str]:
    pieces = made[:]
    made.clear()
    return pieces


def _perform(run: Run, effect: Effect, made: list[str]) -> Generator[str, None, Outcome]:
    if isinstance(effect, Wait):
        time.sleep(effect.seconds)
        return None
    if isinstance(effect, Correct):
        return run.correct(effect.call)
    drafter = run.drafter
    if not isinstance(drafter, Drafter):
        raise TypeError(f"{drafter!r} drafts only asynchronously: use aguide()")
    if run.options.max_seconds is not None:  # the drafter's calls bounded too: in a thread
        try:
            return draft_within(drafter, effect.request, run.receive, run.loop.budget.seconds_left)
        except OutOfTime as exc:
            return run.out_of_time(exc.stream)
    stream = drafter.draft(effect.request)
    try:
        for chunk in stream:
            more = run.receive(chunk, stream)
            yield from _take(made)
            if not more:
                break
    finally:
        stream.close()
    return stream


async def aguide(
    generate_fn: DrafterLike,
    grammar: GrammarLike,
    *,
    prompt: Prompt = "",
    target: Target | None = None,
    options: GuideOptions | None = None,
    on_text: Callable[[str], None] | None = None,
    **option_changes: Any,
) -> GuideResult:
    """The async twin of guide(): drafts stream with `await`; the CPU work runs in worker threads,
    never on the event loop: checks and repair searches (the run's steps) in aguide's own
    (CHECK_THREADS), the target's corrections in their own (CORRECTION_THREADS). Only a short chunk
    that needs no search is checked on the loop (INLINE_CHECK). `on_text` is called on the event
    loop's thread. Cancelled, the run stops at once: a step under way in a thread
    ends there unseen, a correction stops before its next forward pass."""
    run = AsyncGuideRun(
        generate_fn,
        grammar,
        prompt=prompt,
        target=target,
        options=options,
        on_text=on_text,
        **option_changes,
    )
    return await run.result()


class AsyncGuideRun:
    """One aguide() run as an object, for a caller that stops it from outside and still wants
    the work done (backtrack serve's time limit): `await result()` runs it (aguide's arguments,
    checked here); after cancelling that, `await stop(error)` gives the partial GuideResult.

    The run's steps go to a check thread one at a time (`_off_loop`); the run's own on_text only
    collects the output a step made final, handed to the caller's `on_text` on the loop after it:
    the run is touched by one thread at a time, the callback only by the loop."""

    def __init__(
        self,
        generate_fn: DrafterLike,
        grammar: GrammarLike,
        *,
        prompt: Prompt = "",
        target: Target | None = None,
        options: GuideOptions | None = None,
        on_text: Callable[[str], None] | None = None,
        **option_changes: Any,
    ) -> None:
        self._pieces: list[str] = []
        collect = None if on_text is None else self._pieces.append
        self.run = _run(
            "aguide", generate_fn, grammar, prompt, target, options, collect, option_changes
        )
        self._on_text = on_text
        self._step: Future[Any] | None = None  # the step in a check thread, the last one sent

    async def result(self) -> GuideResult:
        """Run to the end: the GuideResult (or the error that ended the run, with its partial)."""
        run = self.run
        await asyncio.to_thread(run.prepare)
        step = await self._off_loop(run.start)
        while not isinstance(step, GuideResult):
            try:
                outcome = await self._perform(step)
            except Exception as exc:
                step = await self._off_loop(run.throw, exc)
            else:
                step = await self._off_loop(run.send, outcome)
        return step

    async def stop(self, error: Exception) -> GuideResult:
        """The result so far of a run whose `result()` was cancelled, `error` the reason (a draft
        under way ends with it), once the step that was in a thread has ended."""
        step = self._step
        if step is not None and not step.done():
            with contextlib.suppress(Exception):  # the run is over: its step's error is moot
                await asyncio.wrap_future(step)
        return self.run.stop(error)

    async def _off_loop(self, fn: Callable[..., T], *args: Any) -> T:
        """`fn(*args)` in a check thread (in this context: its contextvars go along); then the
        text it made final goes to on_text, unless the caller was cancelled meanwhile."""
        call = functools.partial(contextvars.copy_context().run, fn, *args)
        step: Future[T] = _threads("check", CHECK_THREADS).submit(call)
        self._step = step
        done = asyncio.wrap_future(step)
        try:
            return await done
        finally:
            if not done.cancelled():  # a step that failed made its text final too
                self._hand_on()

    def _hand_on(self) -> None:
        if self._on_text is None or not self._pieces:
            return
        pieces = self._pieces[:]
        self._pieces.clear()
        for piece in pieces:
            self._on_text(piece)

    async def _perform(self, effect: Effect) -> Outcome:
        run = self.run
        if isinstance(effect, Wait):
            await asyncio.sleep(effect.seconds)
            return None
        if isinstance(effect, Correct):
            cancel = threading.Event()
            try:
                call = functools.partial(
                    contextvars.copy_context().run, run.correct, effect.call, cancel
                )
                pool = _threads("correction", CORRECTION_THREADS)
                return await asyncio.get_running_loop().run_in_executor(pool, call)
            except asyncio.CancelledError:
                # The worker thread cannot be cancelled: stop it before its next forward pass, or
                # it writes the rest of the correction on the shared target for nobody.
                cancel.set()
                raise
        drafter = run.drafter
        if not isinstance(drafter, AsyncDrafter):
            raise TypeError(f"{drafter!r} drafts only synchronously: use guide()")
        stream: AsyncDraftStream | None = None
        try:
            stream = await self._drafter_call(drafter.adraft(effect.request))
            try:
                chunks = aiter(stream)
                while (chunk := await self._drafter_call(anext(chunks, None))) is not None:
                    if len(chunk) <= INLINE_CHECK and run.loop.checks_only(chunk):
                        more = run.receive(chunk, stream)
                        self._hand_on()
                    else:
                        more = await self._off_loop(_receive, run, chunk, stream)
                    if not more:
                        break
            finally:
                await stream.aclose()
        except OutOfTime:
            return run.out_of_time(stream)
        return stream

    async def _drafter_call(self, awaitable: Awaitable[T]) -> T:
        """A call to the drafter, cancelled at the run's max_seconds (OutOfTime) if it has one."""
        if self.run.options.max_seconds is None:
            return await awaitable
        return await awaited_within(awaitable, self.run.loop.budget.seconds_left)


def _threads(kind: str, count: int) -> ThreadPoolExecutor:
    """The process's pool of `count` worker threads for `kind`, made on first use."""
    with _pools_lock:
        if kind not in _pools:
            _pools[kind] = ThreadPoolExecutor(count, thread_name_prefix=f"backtrack-{kind}")
        return _pools[kind]


def _receive(run: Run, chunk: str, stream: AsyncDraftStream) -> bool:
    """`run.receive(chunk)`, a long chunk in slices, so that the thread holds the GIL for one
    slice's check at a time. Every slice goes in even after one says stop, as the whole chunk
    would: the loop keeps the rest of the chunk as rejected text."""
    if len(chunk) <= CHECK_SLICE:
        return run.receive(chunk, stream)
    more = True
    for i in range(0, len(chunk), CHECK_SLICE):
        more = run.receive(chunk[i : i + CHECK_SLICE], stream) and more
    return more
