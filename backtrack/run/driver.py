"""One driver for guide() and aguide(): a run's steps as effects, with no I/O.

A Run's steps are a generator: `start()` gives the first effect; after performing one, the shell
hands its outcome to `send()` (or what it raised to `throw()`) and gets the next effect, until it
gets the GuideResult. The effects:

    Draft(request)  open the drafter's stream, hand each chunk to `run.receive()` (False: stop
                    reading), close it; send the stream back, or throw in what it raised
    Wait(seconds)   sleep, then send None (a retry's backoff)
    Correct(call)   run the local target's correction; send the Correction back, or throw in
                    the TargetError

and returns the GuideResult. Retries, the partial result on every error, and the end of the run
are decided here once; backtrack.run.guide holds the two short shells that perform the effects.

`on_text`, when given, is called with each piece of the output as it becomes final (the loop's
`final_chars()`): after a chunk, a correction or a round's end, and the rest with the result. The
pieces concatenated are the result's text; a run that fails has passed on a prefix of its partial
text.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Generator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, TypeAlias

from backtrack.local_drafter import SessionDrafter
from backtrack.run.context import ContextRoom
from backtrack.run.correction_round import TargetCall
from backtrack.run.loop import GuideLoop
from backtrack.run.options import GuideOptions
from backtrack.run.target_prompt import TargetPrompt
from backtrack.trace.result import GuideResult, TextLostError
from grammars import Grammar, GrammarLike, TextError
from local_target import Correction
from local_target.engine import CountsTokens
from local_target.errors import TargetError
from providers import as_drafter
from providers.base import (
    AsyncDrafter,
    AsyncDraftStream,
    Drafter,
    DraftRequest,
    DraftStream,
    Prompt,
)
from providers.errors import ProviderError, masked, masked_cause
from providers.retry import next_wait

if TYPE_CHECKING:  # they import torch, which a run needs only when its target is used
    from local_target import LocalTarget, Session, Target

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Draft:
    request: DraftRequest


@dataclass(frozen=True)
class Wait:
    seconds: float


@dataclass(frozen=True)
class Correct:
    call: TargetCall


Effect = Draft | Wait | Correct
Outcome: TypeAlias = DraftStream | AsyncDraftStream | Correction | None

_default_target: LocalTarget | None = None
_default_lock = threading.Lock()


def default_target() -> LocalTarget:
    """The shared LocalTarget.default() (SmolLM2-135M), loaded on first use."""
    from local_target import LocalTarget

    global _default_target
    with _default_lock:
        if _default_target is None:
            _default_target = LocalTarget.default()
        return _default_target


class Run:
    """One guided run: its checked arguments, its loop, and its target session.

    Everything is checked before any call: a bad argument never costs an API call."""

    def __init__(
        self,
        drafter: object,
        grammar: GrammarLike,
        prompt: Prompt,
        target: Target | None,
        options: GuideOptions,
        on_text: Callable[[str], None] | None = None,
    ) -> None:
        self.options = options
        self.on_text = on_text
        self.drafter: Drafter | AsyncDrafter = as_drafter(drafter)
        self.prompt = prompt
        self.target: Target | None = target
        # A drafter on the target's own model drafts in the run's session: one KV cache.
        self._shares = isinstance(self.drafter, SessionDrafter) and (
            target is None or target is self.drafter.target
        )
        loaded = target is not None or self._shares or _default_target is not None
        self._room = ContextRoom.of(options, self._tokens_left, loaded=loaded)
        self.loop = GuideLoop(Grammar.coerce(grammar), prompt, options, self._likeliest, self._room)
        self._session: Session | None = None
        self._session_prompt: Prompt = prompt  # what the session was started on
        # The target reads the prompt its session shares with the drafter, if it does.
        self._prompts = TargetPrompt(prompt, self._left, self._room.reserve, fixed=self._shares)
        self._effects: Generator[Effect, Outcome, GuideResult] | None = None
        self._retries = 0  # of the draft round under way

    def prepare(self) -> None:
        """Load what the run needs before its first draft: the shared session, when the drafter
        drafts on the target's model (a forward pass over the prompt; the async shell runs this
        in a thread)."""
        if self._shares and isinstance(self.drafter, SessionDrafter):
            self.target = self.drafter.target
            shared = self.drafter.target.session(self.prompt)
            self._session = shared
            self.drafter = self.drafter.in_session(shared)

    def session(self) -> Session:
        """The run's session on the target (loads the default target on first use), started
        again where the target's prompt changed (`target_prompt`)."""
        prompt = self.target_prompt()
        if self._session is None or prompt is not self._session_prompt:
            self._session = self._target().session(prompt)
            self._session_prompt = prompt
        return self._session

    def target_prompt(self) -> Prompt:
        """What the target reads before the text (backtrack.run.target_prompt)."""
        return self._prompts.now(self.loop.rounds, self.loop.output)

    def _target(self) -> Target:
        """The run's target (loads the default target on first use)."""
        if self.target is None:
            self.target = default_target()
        return self.target

    def _tokens_left(self, text: str) -> int | None:
        """The tokens the target's context has left after its prompt (`target_prompt`) and `text`
        (counted by its own tokenizer; backtrack.run.context); None where it does not say."""
        return self._left(self.target_prompt(), text)

    def _left(self, prompt: Prompt, text: str) -> int | None:
        target = self._target()
        return target.tokens_left(prompt, text) if isinstance(target, CountsTokens) else None

    def _likeliest(self, texts: list[str]) -> int:
        """Which of repairs that tie the target finds likeliest (blocking: forward passes)."""
        return self.session().likeliest(texts)

    def correct(self, call: TargetCall, cancel: threading.Event | None = None) -> Correction:
        """The target's correction for `call` (blocking: forward passes)."""
        return self.session().correct(
            call.text,
            call.grammar,
            max_tokens=call.max_tokens,
            until=call.until,
            sampling=self.options.sampling,
            cancel=cancel,
            hint=call.hint,
        )

    def receive(self, chunk: str, stream: DraftStream | AsyncDraftStream) -> bool:
        """A chunk of the current draft for the loop (`loop.receive`) from `stream`, with what the
        drafter's alignment removed from its reply so far and the reasoning it sent apart; False:
        stop reading."""
        more = self.loop.receive(chunk, stripped=stream.stripped, reasoning=stream.reasoning)
        self._pass_on(self.loop.final_chars())
        return more

    def out_of_time(self, stream: DraftStream | AsyncDraftStream | None) -> DraftStream:
        """max_seconds passed while the drafter was called (backtrack.run.deadline): the draft
        ends as when a chunk comes past the bound, as "length"; the stream to end it with, what
        the drafter's said so far (its own may still change in a thread left to a blocked call)."""
        logger.debug("max_seconds reached in a drafter call: the draft ends, the target completes")
        self.loop.receive(  # past the bound
            "",
            stripped="" if stream is None else stream.stripped,
            reasoning="" if stream is None else stream.reasoning,
        )
        if stream is None:
            return DraftStream(chunks=iter(()), finish_reason="length")
        return DraftStream(
            chunks=iter(()),
            usage=replace(stream.usage),
            finish_reason="length",
            request_id=stream.request_id,
            stripped=stream.stripped,
            reasoning=stream.reasoning,
        )

    def _pass_on(self, final: int, text: str | None = None) -> None:
        """Give on_text the output's characters up to `final` it has not had."""
        output = self.loop.output  # its `passed`: the characters on_text has had
        if self.on_text is not None and final > output.passed:
            piece = (self.loop.text if text is None else text)[output.passed : final]
            output.passed = final
            self.on_text(piece)

    def start(self) -> Effect | GuideResult:
        """The first effect to perform (or the result already)."""
        self._effects = self._steps()
        return self.send(None)

    def send(self, outcome: Outcome) -> Effect | GuideResult:
        """The next effect, after the last one gave `outcome`; the result at the end."""
        return self._resume(lambda steps: steps.send(outcome))

    def throw(self, failure: Exception) -> Effect | GuideResult:
        """The next effect, after the last one raised `failure` (or the error that ends the
        run, raised here with its partial result)."""
        return self._resume(lambda steps: steps.throw(failure))

    def stop(self, error: Exception) -> GuideResult:
        """End the run from outside (its time limit), between two steps: the result so far, a
        draft round under way recorded as failed with `error`. The run takes no more steps."""
        if self._effects is not None:
            self._effects.close()
        self.loop.stopped(error, retries=self._retries)
        return self.loop.result()

    def _resume(
        self, step: Callable[[Generator[Effect, Outcome, GuideResult]], Effect]
    ) -> Effect | GuideResult:
        if self._effects is None:
            raise RuntimeError("the run was not started")
        try:
            return step(self._effects)
        except StopIteration as done:
            result: GuideResult = done.value
            self._pass_on(len(result.text), result.text)
            return result

    def _steps(self) -> Generator[Effect, Outcome, GuideResult]:
        loop = self.loop
        while (step := loop.step()) != "done":
            if step == "draft":
                yield from self._draft_round()
                continue
            call = loop.target_call()
            if call is None:
                continue  # the budget is spent and completion is off: the loop is done
            try:
                correction = yield Correct(call)
            except TargetError as exc:
                logger.warning("the local target failed: %s", exc)
                loop.target_failed(exc)  # the partial result rides on the error
                raise
            if not isinstance(correction, Correction):
                raise TypeError(f"a Correct effect needs a Correction back, got {correction!r}")
            loop.apply_correction(correction)
            self._pass_on(loop.final_chars())
        result = loop.result()
        limit = self.options.max_lost_chars
        if limit is not None and result.lost_chars > limit:
            raise TextLostError(result, limit)
        return result

    def _draft_round(self) -> Generator[Effect, Outcome, None]:
        """One draft round, retried as a whole from the committed text while the policy says so."""
        loop = self.loop
        attempt = 1
        self._retries = 0
        empty: ProviderError | None = None
        faults = 0  # failed attempts that were no empty reply
        while True:
            try:
                sent = yield Draft(loop.draft_request())
                if not isinstance(sent, (DraftStream, AsyncDraftStream)):
                    raise TypeError(f"a Draft effect needs a stream back, got {sent!r}")
                stream = sent
                if empty := loop.empty_reply(stream):
                    raise empty
                break
            except Exception as exc:
                wait = next_wait(attempt, exc, self.options.max_attempts)
                faults += exc is not empty
                if wait is None and exc is empty and empty.retryable and not faults:
                    # A real model asked to go on from an odd prefix often says nothing, and
                    # says it again when asked again: it stopped, it did not fail. The round
                    # ends "empty" and the local target writes on from the committed text. (A
                    # server that also failed otherwise is failing: its error is raised.)
                    logger.info("the API replied nothing %d times: the target writes on", attempt)
                    break
                if wait is None:
                    error = self._failed(exc, attempt - 1)
                    if error is exc:
                        raise  # its own cause stays; it is not made its own
                    raise error from masked_cause(exc)
                logger.debug(
                    "attempt %d failed (%s); retry in %.2fs", attempt, type(exc).__name__, wait
                )
                yield Wait(wait)
                attempt += 1
                self._retries = attempt - 1
        loop.end_draft(
            finish_reason="empty" if empty is not None else stream.finish_reason,
            usage=stream.usage,
            request_id=stream.request_id,
            retries=attempt - 1,
            stripped=stream.stripped,
            reasoning=stream.reasoning,
        )
        self._pass_on(loop.final_chars())

    def _failed(self, exc: Exception, retries: int) -> Exception:
        """Record a draft round that failed for good; the error to raise, carrying the partial
        result. A TextError is the check's, not the drafter's (the grammar passed its work
        budget on the draft): it stays one. Anything else that is no ProviderError becomes one."""
        self.loop.draft_failed(exc, retries=retries)
        error: TextError | ProviderError
        if isinstance(exc, TextError):
            error = exc
        elif isinstance(exc, ProviderError):
            error = masked(exc)  # a custom drafter's own error may quote a key
        else:
            error = masked(ProviderError(f"the drafter failed: {type(exc).__name__}: {exc}"))
        error.partial = self.loop.result()
        logger.warning("the run ended after %d retries: %s", retries, error)
        return error
