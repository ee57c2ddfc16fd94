"""The decisions of a guided run, with no I/O: its state, its rounds and its result.
backtrack.run.driver turns them into effects for the sync and async shells.

The driver asks `step()` what to do next, and reports back:
  "draft"    -> `draft_request()`; each chunk goes to `receive()` (False: close the stream);
                then `end_draft(...)`, or `draft_failed(...)` when the provider failed for good.
  "correct"  -> `target_call()` gives the TargetCall for the local target (None: the run ends
                instead); its Correction goes to `apply_correction()`, a TargetError to
                `target_failed()`.
  "done"     -> `result()`.

The loop calls on the modules beside it: backtrack.run.draft reads a draft's reply (the answer's
start, repairs), backtrack.run.trailing decides on what follows a cut (commentary after a
complete answer; the draft's rest after a correction), backtrack.run.schema settles a complete
text a JSON schema's validator refuses. They share the output (backtrack.run.output).

Invariant: `output.checker.text` is the committed output, and it is always a valid prefix of the
grammar. Its first `final_chars()` characters never change again: every later text, the result's
included, starts with them (what a streaming consumer may pass on at once).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from backtrack.run.draft import DraftReader
from backtrack.run.options import GuideOptions
from backtrack.run.output import REPAIR_LIMITS, Output
from backtrack.run.schema import policy_for
from backtrack.run.trailing import HandBack, drop_final_blanks, is_trailing, open_line_after_answer
from backtrack.trace.record import Origin, Round, RoundEnd, RoundKind, Span, StopReason, Trace
from backtrack.trace.result import GuideResult
from local_target.errors import TargetError
from providers.base import AsyncDraftStream, DraftRequest, DraftStream, Prompt
from providers.errors import ProviderError, redact

if TYPE_CHECKING:
    from backtrack.repair.search import Prefer
    from grammars.grammar import Grammar
    from local_target import Correction
    from local_target.decoding import Until

Step = Literal["draft", "correct", "done"]

logger = logging.getLogger(__name__)

# Stop reasons of a run whose text is complete, checked once more by the grammar's own test.
_COMPLETE = ("complete", "target_completed", "trailing_dropped")

_TOKEN_ORIGIN: dict[str, Origin] = {
    "healed": "healed",
    "forced": "forced",
    "sampled": "correction",
    "masked": "correction",
    "closing": "correction",
}


@dataclass(frozen=True)
class TargetCall:
    """What the local target is asked: continue `text` until `until`, in at most `max_tokens`."""

    text: str
    until: Until
    max_tokens: int
    grammar: Grammar
    hint: str = ""  # what the API wrote after the cut: proposals the target verifies, if it agrees


class GuideLoop:
    """One guided run's decisions (see the module's docstring): what was committed and how
    (`output`), its rounds, what comes next, and its result."""

    def __init__(
        self,
        grammar: Grammar,
        prompt: Prompt,
        options: GuideOptions,
        prefer: Prefer | None = None,
    ) -> None:
        self.prompt = prompt
        self.options = options
        self.prefer = prefer  # breaks ties between repairs: the local model's likelihood
        self.schema = policy_for(grammar)  # a JSON schema's settling; a no-op for the others
        self.output = Output(grammar)
        self.rounds: list[Round] = []
        self.stop_reason: StopReason | None = None
        self._next: Step = "draft"
        self._draft: DraftReader | None = None  # the draft round under way
        self._hand_back = HandBack()  # the last cut draft's rest, for the next correction
        self._started = time.perf_counter()
        self._target_completes = False  # the target's call is the last: the budget is spent
        self._short_reply_continued = False  # a reply that stopped short was continued by the API

    @property
    def grammar(self) -> Grammar:
        """The grammar the run checks with (a JSON schema's run may move to the schema's own
        order: backtrack.run.schema)."""
        return self.schema.grammar

    @property
    def text(self) -> str:
        return self.output.text

    @property
    def spans(self) -> tuple[Span, ...]:
        """Every span so far, in order."""
        return self.output.spans

    def final_chars(self) -> int:
        """How many characters of `text` are final: no later step changes them (never fewer than
        an earlier call said). A repair takes back at most `REPAIR_LIMITS.max_back` characters
        and none before the last edit's end; a complete text's trailing blanks may go with
        dropped trailing text, so a final part never ends in a blank run it could be part of,
        nor takes in a line after a complete text before the line ends (it may be commentary).
        Under a JSON schema, less may be final before the run ends (`schema.final_limit`)."""
        output = self.output
        text, edit_end = output.text, output.edit_end
        final = max(edit_end, len(text) - REPAIR_LIMITS.max_back)
        final = min(final, open_line_after_answer(output) or final)
        while final > edit_end and text[final - 1].isspace():
            final -= 1
        final = min(final, self.schema.final_limit(output))
        output.promised = max(output.promised, final)
        return output.promised

    def step(self) -> Step:
        while self.stop_reason in _COMPLETE and not self.schema.met(self.text):
            if not self._settle_schema():
                break  # nothing left to try: the run ends, not valid
        if self.stop_reason is not None:
            return "done"
        if self._next == "draft" and (
            len(self.rounds) >= self.options.max_rounds or self._out_of_time()
        ):
            self._next = "correct"
        return self._next

    def _out_of_time(self) -> bool:
        """The run has used its `max_seconds`: no more API text, the target completes."""
        limit = self.options.max_seconds
        return limit is not None and time.perf_counter() - self._started >= limit

    def _settle_schema(self) -> bool:
        """The text is complete but the JSON schema refuses it: the policy changes it
        (`schema.SchemaSettling.settle`); a cut goes to the target, with what followed the cut
        when the policy offers it. False when nothing is left to try."""
        settled = self.schema.settle(self.output)
        if settled is None:
            return False
        if settled.cut:
            self._hand_back = HandBack(settled.rest or "", reply_ended=settled.rest is not None)
            self.stop_reason = None
            self._next = "correct"
        return True

    def _record(self, round_: Round) -> None:
        """The round is over: later spans and drops are the next one's."""
        self.rounds.append(round_)
        self.output.round = len(self.rounds)

    # -- drafts ---------------------------------------------------------------------------------

    def draft_request(self) -> DraftRequest:
        """The request for a draft; called again for each retry of a round's failed attempt."""
        failed = self._draft  # an earlier attempt of this round: what it committed stays
        if failed is not None:
            failed.drop_unread()
        # A failed attempt may have stopped at a cut, reading on for a repair: the retry asks for
        # the text from the committed end, so the cut and what was read after it are gone.
        self.output.checker.rollback(self.output.chars)
        self._draft = DraftReader(
            self.output,
            self.grammar,
            self.options,
            self.prefer,
            repairs_before=sum(len(r.repairs) for r in self.rounds),
            retry_of=failed,
        )
        return DraftRequest(self.prompt, self.text, self.options.max_draft_tokens)

    def _reading(self, caller: str) -> DraftReader:
        if self._draft is None:
            raise RuntimeError(f"{caller}() outside a draft round")
        return self._draft

    def receive(self, chunk: str, *, stripped: str = "") -> bool:
        """Read a streamed chunk of the draft; False means: close the stream now.

        `stripped` is what the drafter's alignment removed from its reply so far (a repeat of the
        committed text, a fence opening): the trace shows it as dropped, where it was removed."""
        draft = self._reading("receive")
        more = draft.receive(chunk, stripped)
        if more and self._out_of_time():
            logger.debug("max_seconds reached: the draft is closed, the target completes")
            draft.over_budget = True
            return False
        return more

    def checks_only(self, chunk: str) -> bool:
        """`receive(chunk)` would only check the chunk: no search for where the answer starts
        or for a repair can run in it. (A check costs microseconds a character; a repair search
        on a large grammar, up to a few hundred milliseconds.)"""
        return self._draft is not None and self._draft.checks_only(chunk)

    def empty_reply(self, stream: DraftStream | AsyncDraftStream) -> ProviderError | None:
        """The error for an API reply that ended with the provider's finish reason but without one
        character while the text is not complete (a 200 reply with no content): a provider fault,
        retried from the committed text like a dropped connection, not a drafter that has
        finished. A drafter function that returns nothing has finished (`stream.finished` is the
        provider's word, and only API streams carry it)."""
        draft = self._draft
        if draft is None or not draft.received_nothing or self.output.checker.complete:
            return None
        if not stream.finished or stream.finish_reason not in ("stop", "length"):
            return None
        if stream.finish_reason == "length":  # the same request would spend its budget again
            return ProviderError(
                "the reply spent its whole token budget without writing text (a reasoning model "
                "thinks within it): raise max_draft_tokens",
                request_id=stream.request_id,
            )
        return ProviderError(
            "the reply was empty while the text is not complete",
            retryable=True,
            request_id=stream.request_id,
        )

    def end_draft(
        self,
        *,
        finish_reason: str,
        input_tokens: int = 0,
        output_tokens: int = 0,
        request_id: str | None = None,
        retries: int = 0,
        stripped: str = "",
    ) -> None:
        """The draft's stream is over (the provider's `finish_reason`): the round ends where its
        reply left the text, and the next step is decided."""
        draft = self._reading("end_draft")
        reason = draft.finish(finish_reason, stripped)
        checker = self.output.checker
        rest, closing = "".join(draft.rest), draft.closing or ""
        at_fence = draft.closing is not None and not draft.cut
        trailing = checker.complete and (at_fence or (draft.cut and is_trailing(checker, rest)))
        cut_at = checker.chars if draft.cut or trailing else None
        expected = checker.expected() if cut_at is not None else ()
        ended = self._after_draft(draft, reason, rest, trailing=trailing)
        self.output.drop(closing, "fence")
        rejected = len(rest) + len(closing)
        logger.debug(
            "draft round %d ended %s (%s): %d characters accepted, %d rejected%s",
            len(self.rounds),
            ended,
            reason,
            draft.accepted,
            rejected,
            f", cut at character {cut_at}" if cut_at is not None else "",
        )
        self._record(
            Round(
                index=len(self.rounds),
                kind="draft",
                ended=ended,
                seconds=time.perf_counter() - draft.started,
                accepted_chars=draft.accepted,
                rejected_chars=rejected,
                cut_at=cut_at,
                expected=expected,
                input_tokens=input_tokens,
                output_tokens=output_tokens,
                retries=retries,
                closed_early=draft.closed_early,
                request_id=request_id,
                repairs=tuple(draft.repairs),
            )
        )
        self._draft = None

    def _after_draft(
        self, draft: DraftReader, reason: str, rest: str, *, trailing: bool
    ) -> RoundEnd:
        """What follows a draft that ended for `reason` with its rejected `rest`: the run ends
        where the text is complete (with the rest dropped when it is `trailing`), a correction
        follows a cut, another draft a reply that stopped short. How the round ended."""
        checker = self.output.checker
        if trailing:
            drop_final_blanks(self.output)
            self.output.drop(rest, "trailing")
            self.stop_reason = "trailing_dropped"
            return "trailing"
        if draft.cut:
            self.output.add(rest, "rejected")
            self._hand_back = HandBack(rest, reply_ended=reason == "stop")
            self._next = "correct"
            return "cut"
        if checker.complete and (reason != "length" or checker.stopped):
            self.stop_reason = "complete"
        elif draft.accepted and (reason == "length" or self._may_go_on(reason)):
            self._short_reply_continued = self._short_reply_continued or reason == "stop"
            self._next = "draft"
        else:
            self._next = "correct"
        return "drafter_ended"

    def _may_go_on(self, finish_reason: str) -> bool:
        """A reply that stopped before the text is complete (truncated, or a closing bracket
        forgotten) is continued by the API, which knows better than the local model what it
        meant; once a run: after that, a reply that stops short is corrected (an API that keeps
        stopping short would otherwise cost a call more for every correction)."""
        return finish_reason == "stop" and not self._short_reply_continued

    def draft_failed(self, error: BaseException, *, retries: int) -> None:
        """The provider failed for good; what was committed stays, the run ends."""
        draft = self._draft
        started = draft.started if draft else time.perf_counter()
        if draft is not None:
            draft.drop_unread()
        self._record(
            Round(
                index=len(self.rounds),
                kind="draft",
                ended="error",
                seconds=time.perf_counter() - started,
                accepted_chars=draft.accepted if draft else 0,
                retries=retries,
                error=redact(str(error)),
                repairs=tuple(draft.repairs) if draft else (),
            )
        )
        self._draft = None
        self.stop_reason = "error"

    def stopped(self, error: BaseException, *, retries: int) -> None:
        """The run was stopped from outside (a time limit): a draft round under way ends as
        failed (`draft_failed`); what was committed stays, the run ends."""
        if self._draft is not None:
            self.draft_failed(error, retries=retries)
        self.stop_reason = "error"

    # -- corrections ----------------------------------------------------------------------------

    def target_call(self) -> TargetCall | None:
        """The target's next correction, or None when the budget is spent and the caller opted
        out of completion (the run ends)."""
        corrections = sum(1 for r in self.rounds if r.kind != "draft")
        self._target_completes = (
            corrections >= self.options.max_corrections
            or len(self.rounds) >= self.options.max_rounds
            or self._out_of_time()
        )
        if self._target_completes and not self.options.complete_on_budget:
            self.stop_reason = "max_corrections"
            return None
        until: Until = "complete" if self._target_completes else "terminal"
        budget = (
            self.options.completion_tokens
            if self._target_completes
            else self.options.correction_tokens
        )
        grammar = self.schema.target_grammar(self.text)
        return TargetCall(self.text, until, budget, grammar, self._hand_back.rest)

    def apply_correction(self, correction: Correction) -> None:
        """Commit the target's correction: up to where the draft's rest goes on after it (all of
        it when the target completes), then what of that rest fits (`trailing.HandBack`)."""
        self._check_correction(correction)
        keep = len(correction.text)
        if not self._target_completes:
            keep = self._hand_back.kept(self.output.checker, correction.text)
        self._commit_correction(correction, keep)
        reused = self._hand_back.reuse(self.output, self.options.min_reuse_chars)
        kind: RoundKind = "completion" if self._target_completes else "correction"
        logger.debug(
            "%s round %d: %d characters in %d local tokens (%s), %d characters of the draft reused",
            kind,
            len(self.rounds),
            len(correction.text),
            len(correction.tokens),
            correction.stop_reason,
            len(reused),
        )
        self._record(
            Round(
                index=len(self.rounds),
                kind=kind,
                ended="target_stopped",
                seconds=correction.seconds,
                accepted_chars=len(reused),
                local_tokens=len(correction.tokens),
                target_stop=correction.stop_reason,
            )
        )
        self._after_correction(reused)

    def _check_correction(self, correction: Correction) -> None:
        """The correction must fit the committed text (the draft's cut is cleared first)."""
        checker = self.output.checker
        start = checker.chars
        checker.rollback(start)  # clears the draft's cut; nothing is removed
        taken = checker.fits(correction.text)
        if taken != len(correction.text):
            raise TargetError(
                f"the target wrote text the grammar refuses at character {start + taken}"
            )

    def _commit_correction(self, correction: Correction, keep: int) -> None:
        """Commit the correction's first `keep` characters, each token's in its origin's span."""
        self.output.checker.feed(correction.text[:keep])
        at = 0
        for flag, piece in correction.runs:
            self.output.add(piece[: max(0, keep - at)], _TOKEN_ORIGIN[flag])
            at += len(piece)

    def _after_correction(self, reused: str) -> None:
        """The run ends after a completion, or where the text is complete and nothing is left to
        write or the drafter had finished; else the rest left after a slip is corrected next, or
        the API drafts on."""
        checker = self.output.checker
        if self._target_completes:
            self.stop_reason = "target_completed" if checker.complete else "incomplete"
        elif checker.complete and (checker.stopped or (reused and self._hand_back.reply_ended)):
            self.stop_reason = "complete"
        else:
            self._next = "correct" if self._hand_back.rest else "draft"

    def target_failed(self, error: TargetError) -> None:
        """The target failed for good (a context too short for the text, a model error): what was
        committed stays, the run ends, and the error carries the partial result."""
        self._record(
            Round(
                index=len(self.rounds),
                kind="completion" if self._target_completes else "correction",
                ended="error",
                seconds=0.0,
                error=redact(str(error)),
            )
        )
        self.stop_reason = "error"
        error.partial = self.result()

    # -- the end --------------------------------------------------------------------------------

    def result(self) -> GuideResult:
        text = self.text
        complete = self.output.checker.complete
        trace = Trace(
            _prompt_text(self.prompt), self.spans, tuple(self.rounds), tuple(self.output.drops)
        )
        return GuideResult(
            text=text,
            valid=complete and self.schema.met(text),
            complete=complete,
            stop_reason=self.stop_reason or "error",
            trace=trace,
            seconds=time.perf_counter() - self._started,
            grammar=self.grammar,
        )


def _prompt_text(prompt: Prompt) -> str:
    if isinstance(prompt, str):
        return prompt
    return "\n".join(f"{m.get('role', '')}: {m.get('content', '')}" for m in prompt)
