"""guide() and aguide(): thin sync and async shells around GuideLoop (backtrack/loop.py).

Each draft round runs under the retry policy (providers/retry.py) as a whole: a stream that drops
midway resumes from the text committed so far. An error that ends the run carries the partial
GuideResult (`exc.partial`): committed text is never lost or repeated.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import replace
from typing import TYPE_CHECKING, Any

# Module imports, resolved at call time: `import providers.retry` (or providers.errors) first
# runs backtrack/__init__, which comes back here before that module has defined anything.
import providers.errors as provider_errors
import providers.retry as retry_policy
from backtrack.loop import GuideLoop, Settings
from backtrack.result import GuideResult
from grammars.errors import TextError
from grammars.grammar import Grammar
from local_target.errors import TargetError
from providers import as_drafter
from providers.base import Prompt, check_prompt
from providers.errors import ProviderError

if TYPE_CHECKING:
    # local_target (and torch) load on first use: `import backtrack` stays light, and
    # local_target, which raises backtrack's errors, can be imported first.
    from local_target import LocalTarget, Sampling, TargetSession

_default_target: LocalTarget | None = None
_default_lock = threading.Lock()

# aguide checks a chunk in slices of this many characters and lets other tasks run between them:
# checking costs microseconds a character, and a drafter may hand over megabytes at once.
CHECK_SLICE = 1024


def default_target() -> LocalTarget:
    """The shared LocalTarget.default(), loaded on first use."""
    global _default_target
    with _default_lock:
        if _default_target is None:
            from local_target import LocalTarget

            _default_target = LocalTarget.default()
        return _default_target


def _setup(
    generate_fn: Any,
    grammar: Any,
    prompt: Prompt,
    settings: dict[str, Any],
    sampling: tuple[Any, ...],
) -> tuple[Any, GuideLoop, Sampling]:
    """Everything a run needs, checked before any call: a bad argument never costs an API call
    or loses a result."""
    from local_target import Sampling

    loop = GuideLoop(Grammar.coerce(grammar), check_prompt(prompt), Settings(**settings))
    return as_drafter(generate_fn), loop, Sampling(*sampling)


def _shared_session(drafter: Any, target: LocalTarget | None, prompt: Prompt) -> Any:
    """A drafter that runs on a LocalTarget (`drafter.target`: a LocalDrafter, or a wrapper that
    passes its target on) drafts in that target's session when it is guide()'s target too: one KV
    cache for drafts and corrections."""
    own = getattr(drafter, "target", None)
    if own is None or target not in (None, own):
        return None
    return own.session(prompt)


def _attempts(max_attempts: int | None) -> int:
    """`max_attempts`, or the retry policy's default."""
    if max_attempts is None:
        return retry_policy.DEFAULT_MAX_ATTEMPTS
    if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 1:
        raise ValueError(f"max_attempts must be a whole number >= 1, got {max_attempts!r}")
    return max_attempts


def _fail(loop: GuideLoop, exc: BaseException, retries: int) -> ProviderError | TextError:
    """Record the failure; the error to raise, carrying the partial result. A TextError is the
    check's, not the drafter's (the grammar passed its work budget on the draft): it stays one."""
    loop.draft_failed(exc, retries=retries)
    if isinstance(exc, TextError):
        exc.partial = loop.result()
        return exc
    if not isinstance(exc, ProviderError):
        exc = ProviderError(f"the drafter failed: {type(exc).__name__}: {exc}")
    provider_errors.masked(exc)  # a custom drafter's own ProviderError may quote a key
    exc.partial = loop.result()
    return exc


def guide(
    generate_fn: Any,
    grammar: Any,
    *,
    prompt: Prompt = "",
    target: LocalTarget | None = None,
    max_corrections: int = 8,
    max_draft_tokens: int = 512,
    temperature: float = 0.0,
    seed: int | None = None,
    max_attempts: int | None = None,
    **settings: Any,
) -> GuideResult:
    """Let `generate_fn` write, keep its output inside `grammar`, correct it locally.

    `generate_fn`: a callable `(prompt, prefix) -> str` (or `(text) -> str`, or a generator of
    chunks), or a Drafter from `providers`. `grammar`: a Grammar, a shipped name, Lark text, a
    JSON schema or a guidance grammar. `target`: the local model (default: SmolLM2-135M).
    `max_draft_tokens` bounds each draft round, for every drafter: API drafters ask for that many
    tokens, and the loop reads at most `max_draft_tokens * MAX_CHARS_PER_TOKEN` (32) characters of
    a round, then closes its stream and ends it as "length" (a function drafter counts no tokens,
    and one that never ends would grow without bound); `max_rounds` bounds the rounds. Further
    keyword arguments set budgets (see `backtrack.loop.Settings`).
    """
    drafter, loop, sampling = _setup(
        generate_fn,
        grammar,
        prompt,
        dict(settings, max_corrections=max_corrections, max_draft_tokens=max_draft_tokens),
        (temperature, 1.0, seed),
    )
    attempts = _attempts(max_attempts)
    session: TargetSession | None = _shared_session(drafter, target, prompt)
    while (step := loop.step()) != "done":
        if step == "draft":
            _draft_round(loop, drafter, attempts, session)
            continue
        text, until, max_tokens = loop.target_call()
        if loop.step() == "done":
            break
        session = session or (target or default_target()).session(prompt)
        try:
            loop.apply_correction(
                session.correct(
                    text, loop.grammar, max_tokens=max_tokens, until=until, sampling=sampling
                )
            )
        except TargetError as exc:
            loop.target_failed(exc)  # the partial result rides on the error
            raise
    return loop.result()


def _end_round(loop: GuideLoop, stream: Any, retries: int) -> None:
    """Report a finished draft stream (sync or async) to the loop."""
    loop.end_draft(
        finish_reason=stream.finish_reason,
        input_tokens=stream.usage.input_tokens,
        output_tokens=stream.usage.output_tokens,
        request_id=stream.request_id,
        retries=retries,
        stripped=stream.stripped,
    )


def _draft_round(loop: GuideLoop, drafter: Any, attempts: int, session: Any) -> None:
    retries = 0

    def count(n: int, _exc: BaseException) -> None:
        nonlocal retries
        retries = n

    try:
        for attempt in retry_policy.retrying(max_attempts=attempts, on_retry=count):
            with attempt:
                stream = drafter.draft(replace(loop.draft_request(), session=session))
                try:
                    for chunk in stream:
                        if not loop.on_chunk(chunk, stripped=stream.stripped):
                            break
                finally:
                    stream.close()
                if empty := loop.empty_reply(stream):
                    raise empty
    except Exception as exc:
        error = _fail(loop, exc, retries)
        if error is exc:
            raise  # a ProviderError already: its own cause stays, it is not made its own
        raise error from exc
    _end_round(loop, stream, retries)


async def aguide(
    generate_fn: Any,
    grammar: Any,
    *,
    prompt: Prompt = "",
    target: LocalTarget | None = None,
    max_corrections: int = 8,
    max_draft_tokens: int = 512,
    temperature: float = 0.0,
    seed: int | None = None,
    max_attempts: int | None = None,
    **settings: Any,
) -> GuideResult:
    """The async twin of guide(): drafts stream with `await`; corrections run in a thread."""
    drafter, loop, sampling = _setup(
        generate_fn,
        grammar,
        prompt,
        dict(settings, max_corrections=max_corrections, max_draft_tokens=max_draft_tokens),
        (temperature, 1.0, seed),
    )
    attempts = _attempts(max_attempts)
    session: TargetSession | None = await asyncio.to_thread(
        _shared_session, drafter, target, prompt
    )
    while (step := loop.step()) != "done":
        if step == "draft":
            await _adraft_round(loop, drafter, attempts, session)
            continue
        text, until, max_tokens = loop.target_call()
        if loop.step() == "done":
            break
        if session is None:
            local = target if target is not None else await asyncio.to_thread(default_target)
            session = await asyncio.to_thread(local.session, prompt)
        cancel = threading.Event()
        try:
            correction = await asyncio.to_thread(
                session.correct,
                text,
                loop.grammar,
                max_tokens=max_tokens,
                until=until,
                sampling=sampling,
                cancel=cancel,
            )
            loop.apply_correction(correction)
        except asyncio.CancelledError:
            # The worker thread cannot be cancelled: stop it before its next forward pass, or it
            # writes the rest of the correction on the shared target for nobody.
            cancel.set()
            raise
        except TargetError as exc:
            loop.target_failed(exc)  # the partial result rides on the error
            raise
    return loop.result()


async def _adraft_round(loop: GuideLoop, drafter: Any, attempts: int, session: Any) -> None:
    retries = 0

    def count(n: int, _exc: BaseException) -> None:
        nonlocal retries
        retries = n

    try:
        async for attempt in retry_policy.async_retrying(max_attempts=attempts, on_retry=count):
            with attempt:
                stream = await drafter.adraft(replace(loop.draft_request(), session=session))
                try:
                    async for chunk in stream:
                        if not await _afeed(loop, chunk, stream.stripped):
                            break
                finally:
                    await stream.aclose()
                if empty := loop.empty_reply(stream):
                    raise empty
    except Exception as exc:
        error = _fail(loop, exc, retries)
        if error is exc:
            raise  # a ProviderError already: its own cause stays, it is not made its own
        raise error from exc
    _end_round(loop, stream, retries)


async def _afeed(loop: GuideLoop, chunk: str, stripped: str) -> bool:
    """`loop.on_chunk(chunk)`, a long chunk in slices with a turn for other tasks after each. Every
    slice goes in even after one says stop, as the whole chunk would: the loop keeps the rest of
    the chunk as rejected text."""
    if len(chunk) <= CHECK_SLICE:
        return loop.on_chunk(chunk, stripped=stripped)
    more = True
    for i in range(0, len(chunk), CHECK_SLICE):
        more = loop.on_chunk(chunk[i : i + CHECK_SLICE], stripped=stripped) and more
        await asyncio.sleep(0)
    return more
