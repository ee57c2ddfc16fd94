"""guide() and aguide(): the two short shells that perform the driver's effects (backtrack.driver).

Each draft round is retried as a whole: a stream that drops midway resumes from the text
committed so far. An error that ends the run carries the partial GuideResult (`exc.partial`):
committed text is never lost or repeated.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from backtrack.driver import Correct, Effect, Outcome, Run, Wait
from backtrack.options import GuideOptions, resolve
from backtrack.result import GuideResult
from grammars import GrammarLike
from providers.base import AsyncDrafter, Drafter, Prompt, check_prompt

if TYPE_CHECKING:
    from local_target import LocalTarget

DrafterLike = Drafter | AsyncDrafter | Callable[..., Any]
"""What drafts: a Drafter or AsyncDrafter from `providers`, or a function `(prompt, prefix) ->
str` (or `(text) -> str`, sync or async, returning a str or yielding chunks)."""

# aguide checks a chunk in slices of this many characters and lets other tasks run between them:
# checking costs microseconds a character, and a drafter may hand over megabytes at once.
CHECK_SLICE = 1024

_KEYWORDS = ("prompt", "target", "options", "on_text")


def _run(
    caller: str,
    generate_fn: DrafterLike,
    grammar: GrammarLike,
    prompt: Prompt,
    target: LocalTarget | None,
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
    target: LocalTarget | None = None,
    options: GuideOptions | None = None,
    on_text: Callable[[str], None] | None = None,
    **option_changes: Any,
) -> GuideResult:
    """Let `generate_fn` write, keep its output inside `grammar`, correct it locally.

    `grammar`: a Grammar, a shipped name, Lark text, a JSON schema or a guidance grammar.
    `target`: the local model (default: SmolLM2-135M). `options` (a GuideOptions) sets every
    budget and policy; keyword arguments change single ones (`max_corrections=4`), and an unknown
    name is a TypeError that names the valid ones. `on_text(piece)` is called with the output as
    it becomes final, piece by piece: the pieces concatenated are the result's text (for
    streaming it on; a run that fails has passed on a prefix of its partial text).
    """
    run = _run("guide", generate_fn, grammar, prompt, target, options, on_text, option_changes)
    run.prepare()
    step = run.start()
    while not isinstance(step, GuideResult):
        try:
            outcome = _perform(run, step)
        except Exception as exc:
            step = run.throw(exc)
        else:
            step = run.send(outcome)
    return step


def _perform(run: Run, effect: Effect) -> Outcome:
    if isinstance(effect, Wait):
        time.sleep(effect.seconds)
        return None
    if isinstance(effect, Correct):
        return run.correct(effect.call)
    drafter = run.drafter
    if not isinstance(drafter, Drafter):
        raise TypeError(f"{drafter!r} drafts only asynchronously: use aguide()")
    stream = drafter.draft(effect.request)
    try:
        for chunk in stream:
            if not run.feed(chunk, stream.stripped):
                break
    finally:
        stream.close()
    return stream


async def aguide(
    generate_fn: DrafterLike,
    grammar: GrammarLike,
    *,
    prompt: Prompt = "",
    target: LocalTarget | None = None,
    options: GuideOptions | None = None,
    on_text: Callable[[str], None] | None = None,
    **option_changes: Any,
) -> GuideResult:
    """The async twin of guide(): drafts stream with `await`; the local model runs in a thread.
    `on_text` is called on the event loop's thread."""
    run = _run("aguide", generate_fn, grammar, prompt, target, options, on_text, option_changes)
    await asyncio.to_thread(run.prepare)
    step = run.start()
    while not isinstance(step, GuideResult):
        try:
            outcome = await _aperform(run, step)
        except Exception as exc:
            step = run.throw(exc)
        else:
            step = run.send(outcome)
    return step


async def _aperform(run: Run, effect: Effect) -> Outcome:
    if isinstance(effect, Wait):
        await asyncio.sleep(effect.seconds)
        return None
    if isinstance(effect, Correct):
        cancel = threading.Event()
        try:
            return await asyncio.to_thread(run.correct, effect.call, cancel)
        except asyncio.CancelledError:
            # The worker thread cannot be cancelled: stop it before its next forward pass, or it
            # writes the rest of the correction on the shared target for nobody.
            cancel.set()
            raise
    drafter = run.drafter
    if not isinstance(drafter, AsyncDrafter):
        raise TypeError(f"{drafter!r} drafts only synchronously: use guide()")
    stream = await drafter.adraft(effect.request)
    try:
        async for chunk in stream:
            if not await _afeed(run, chunk, stream.stripped):
                break
    finally:
        await stream.aclose()
    return stream


async def _afeed(run: Run, chunk: str, stripped: str) -> bool:
    """`run.feed(chunk)`, a long chunk in slices with a turn for other tasks after each. Every
    slice goes in even after one says stop, as the whole chunk would: the loop keeps the rest of
    the chunk as rejected text."""
    if len(chunk) <= CHECK_SLICE:
        return run.feed(chunk, stripped)
    more = True
    for i in range(0, len(chunk), CHECK_SLICE):
        more = run.feed(chunk[i : i + CHECK_SLICE], stripped) and more
        await asyncio.sleep(0)
    return more
