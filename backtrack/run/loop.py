"""The decisions of a guided run, with no I/O: its state, its rounds and its result.
backtrack.run.driver turns them into effects for the sync and async shells.

The driver asks `step()` what to do next, and reports back:
  "draft"    -> `draft_request()`; each chunk goes to `receive()` (False: close the stream);
                then `end_draft(...)`, or `draft_failed(...)` when the provider failed for good.
  "correct"  -> `target_call()` gives the TargetCall for the local target (None: the run ends
                instead); its Correction goes to `apply_correction()`, a TargetError to
                `target_failed()`.
  "done"     -> `result()`.

The loop holds the round under way and decides what follows it. The modules beside it do the
rest: a draft round (backtrack.run.draft_round) reads the API's reply with backtrack.run.draft
(the answer's start, repairs) and says what it left; a correction round
(backtrack.run.correction_round) commits the local target's text, then what of the draft's rest
fits after it; backtrack.run.trailing decides on what follows a cut (commentary after a complete
answer; the draft's rest after a correction); backtrack.run.schema settles a complete text a JSON
schema's validator refuses; backtrack.run.budget says what the run may still spend. They share
the output (backtrack.run.output).

Invariant: `output.checker.text` is the committed output, and it is always a valid prefix of the
grammar. Its first `final_chars()` characters never change again once passed on: every later
text, the result's included, starts with them (what a streaming consumer may pass on at once).
A run whose text nobody reads as it comes may still place a closer the API left out lines back
(backtrack.run.layout).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Literal

from backtrack.run.budget import Budget
from backtrack.run.correction_round import CorrectionRound, TargetCall
from backtrack.run.draft_round import DraftRound, ReplyEnd
from backtrack.run.hand_back import HandBack
from backtrack.run.layout import close_forgotten
from backtrack.run.options import GuideOptions
from backtrack.run.output import Output
from backtrack.run.schema import policy_for
from backtrack.run.shortest_end import grammar_ending
from backtrack.run.stray_reply import leave_out_stray
from backtrack.run.trailing import close_up, final_point
from backtrack.trace.record import Round, StopReason, Trace
from backtrack.trace.result import GuideResult
from providers.align import Echo
from providers.base import AsyncDraftStream, DraftRequest, DraftStream, Prompt, Usage

if TYPE_CHECKING:
    from backtrack.repair.search import Prefer
    from backtrack.run.context import ContextRoom
    from backtrack.run.draft import DraftReader
    from grammars.grammar import Grammar
    from local_target import Correction
    from local_target.errors import TargetError
    from local_target.policy import Until
    from providers.errors import ProviderError

Step = Literal["draft", "correct", "done"]

logger = logging.getLogger(__name__)

# Stop reasons of a run whose text is complete, checked once more by the grammar's own test.
_COMPLETE = ("complete", "target_completed", "trailing_dropped")


class GuideLoop:
    """One guided run's decisions (see the module's docstring): what was committed and how
    (`output`), its rounds, what comes next, and its result."""

    def __init__(
        self,
        grammar: Grammar,
        prompt: Prompt,
        options: GuideOptions,
        prefer: Prefer | None = None,
        room: ContextRoom | None = None,
    ) -> None:
        self.prompt = prompt
        self.options = options
        self.prefer = prefer  # breaks ties between repairs: the local model's likelihood
        self.schema = policy_for(grammar)  # a JSON schema's settling; a no-op for the others
        self.output = Output(grammar, room)  # room: the target's context (None: not known)
        self.rounds: list[Round] = []
        self.stop_reason: StopReason | None = None
        self._next: Step = "draft"
        self._draft: DraftRound | None = None  # the draft round under way
        self._correction: CorrectionRound | None = None  # the correction round under way
        self._hand_back = HandBack()  # the last cut draft's rest, for the next correction
        self._api_finished = False  # the API's reply ended just after a slip: the target finishes
        self._capped = True  # a finish in few tokens (Budget.call) until one was not enough
        self.budget = Budget(options, self.output.room)

    @property
    def grammar(self) -> Grammar:
        """The grammar the run checks with (a schema's run may take its order: run.schema)."""
        return self.schema.grammar

    @property
    def text(self) -> str:
        return self.output.text

    def final_chars(self) -> int:
        """How many characters of `text` are final (trailing.final_point; schema.final_limit)."""
        return final_point(self.output, self.schema.final_limit(self.output))

    def step(self) -> Step:
        while self.stop_reason in _COMPLETE and not self.schema.met(self.text):
            if not self._settle_schema():
                break  # nothing left to try: the run ends, not valid
        if self.stop_reason is not None:
            return "done"
        if self._next == "draft" and self.budget.no_more_drafts(self.rounds, self.output):
            self._next = "correct"
        return self._next

    def _settle_schema(self) -> bool:
        """The text is complete but the JSON schema refuses it: the policy changes it
        (`schema.SchemaSettling.settle`); a cut goes to the target, with what followed the cut
        when the policy offers it. False when nothing is left to try."""
        settled = self.schema.settle(self.output)
        if settled is None:
            return False
        if settled.cut:
            self._hand_back = HandBack.after_settling(settled.rest)
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
        if self._draft is None:
            self._draft = DraftRound(
                self.output,
                self.grammar,
                self.options,
                self.prefer,
                index=len(self.rounds),
                repairs_before=sum(len(r.repairs) for r in self.rounds),
                echo=Echo(_prompt_text(self.prompt)),
            )
        else:
            self._draft.retry()
        return DraftRequest(self.prompt, self.text, self.options.max_draft_tokens)

    def _drafting(self, caller: str) -> DraftRound:
        if self._draft is None:
            raise RuntimeError(f"{caller}() outside a draft round")
        return self._draft

    def receive(self, chunk: str, *, stripped: str = "", reasoning: str = "") -> bool:
        """Read a streamed chunk of the draft; False means: close the stream now.

        `stripped` (what the drafter's alignment removed from its reply so far: a repeat, a fence
        opening) and `reasoning` (what the API sent apart from the answer as reasoning, never
        read as the draft) are shown in the trace as dropped, where they arrived."""
        reader = self._drafting("receive").reader
        more = reader.receive(chunk, stripped, reasoning)
        if more and self.budget.out_of_time():
            logger.debug("max_seconds reached: the draft is closed, the target completes")
            reader.over_budget = True
            return False
        return more

    def checks_only(self, chunk: str) -> bool:
        """`receive(chunk)` would only check the chunk: no search for where the answer starts
        or for a repair can run in it. (A check costs microseconds a character; a repair search
        on a large grammar, up to a few hundred milliseconds.)"""
        return self._draft is not None and self._draft.reader.checks_only(chunk)

    def empty_reply(self, stream: DraftStream | AsyncDraftStream) -> ProviderError | None:
        """The error for an empty reply to retry (`DraftRound.empty_reply`); else None."""
        return None if self._draft is None else self._draft.empty_reply(stream)

    def end_draft(
        self,
        *,
        finish_reason: str,
        usage: Usage | None = None,
        request_id: str | None = None,
        retries: int = 0,
        stripped: str = "",
        reasoning: str = "",
    ) -> None:
        """The draft's stream is over (the provider's `finish_reason`): the round ends where its
        reply left the text, and the next step is decided."""
        draft = self._drafting("end_draft")
        end = draft.finish(finish_reason, stripped, reasoning)
        self._after_draft(draft.reader, end)
        record = draft.close(end, usage=usage or Usage(), request_id=request_id, retries=retries)
        self._record(record)
        self._draft = None

    def _after_draft(self, reader: DraftReader, end: ReplyEnd) -> None:
        """What follows a draft that ended as `end` says: the run ends where the text is complete
        (trailing text dropped), a correction follows a cut, another draft a reply that stopped
        short; a continuation that stopped inside the string it began in is left out, and the
        target finishes the text (backtrack.run.stray_reply)."""
        checker = self.output.checker
        if end.trailing:
            self.stop_reason = "trailing_dropped"
        elif end.cut:
            self._hand_back = HandBack(end.rest, reply_ended=end.reason == "stop")
            self._next = "correct"
        elif checker.complete and (end.reason != "length" or checker.stopped):
            self.stop_reason = "complete"
        elif end.reason == "stop" and (stray := leave_out_stray(self.output, reader.begun)):
            reader.accepted -= stray
            self._api_finished, self._next = True, "correct"  # the target finishes the text
        elif closed := close_forgotten(self.output, reader.begun, end):
            reader.repairs.append(closed)
            self.stop_reason = "complete"
        elif self.budget.goes_on(end.reason, wrote=bool(reader.accepted), rounds=self.rounds):
            self._next = "draft"
        elif self.budget.said_all and close_up(self.output, self.schema.met):
            self.stop_reason = "complete"
        else:
            self._next = "correct"

    def draft_failed(self, error: BaseException, *, retries: int) -> None:
        """The provider failed for good; what was committed stays, the run ends."""
        self._record(self._drafting("draft_failed").failed(error, retries=retries))
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
        """The target's next correction, or None when the run ends instead: the budget is spent
        and the caller opted out of completion, or the target's context is full (Budget.call)."""
        settling = self._hand_back.settling()  # its value, then the run's own text reused
        done = self._api_finished or self.budget.api_done(self.rounds, self.output)
        finishing = done and not settling
        completes = finishing or self.budget.target_completes(self.rounds, self.output, settling)
        capped = finishing and self._capped
        self.stop_reason, most = self.budget.call(self.output, completes, capped)
        if self.stop_reason is not None:
            return None
        until: Until = "close" if capped else "complete" if completes else "terminal"
        self._correction = CorrectionRound(self.output, self._hand_back, until, most)
        return self._correction.call(self.schema.target_grammar(self.output), self.options)

    def _correcting(self, caller: str) -> CorrectionRound:
        if self._correction is None:
            raise RuntimeError(f"{caller}() outside a correction round")
        return self._correction

    def apply_correction(self, correction: Correction) -> None:
        """Commit the target's correction (`CorrectionRound.apply`) and decide what follows."""
        round_ = self._correcting("apply_correction")
        said_all = self._hand_back.api_finished()
        record, reused = round_.apply(correction, self.options.min_reuse_chars)
        self._record(record)
        self._correction = None
        self._after_correction(round_, bool(reused) or said_all)
        finishes = said_all and not reused and self.options.complete_on_budget
        if self.stop_reason is None and self._next == "draft" and finishes:
            self._api_finished = True  # the target finishes the text (HandBack.api_finished)
            self._next = "correct"

    def _after_correction(self, round_: CorrectionRound, ended: bool) -> None:
        """The run ends after a completion (closed up, else given the grammar's own ending where
        incomplete: run.shortest_end), or where the text is complete and nothing is left to
        write or the drafter had finished (`ended`: its rest reused, or only its slip and
        closers); else the slip left is corrected next, or the API drafts on. A finish in a few
        tokens that left the text incomplete (a required list of objects) gets the whole budget."""
        checker = self.output.checker
        if round_.until == "close" and not checker.complete and self._capped:
            self._capped = False
            self._next = "correct"
        elif round_.completes:
            if not checker.complete and not close_up(self.output, self.schema.met):
                grammar_ending(self.output, self.schema.met)
            self.stop_reason = self.budget.completed(checker.complete)
        elif checker.complete and (checker.stopped or (ended and self._hand_back.reply_ended)):
            self.stop_reason = "complete"
        else:
            self._next = "correct" if self._hand_back.rest else "draft"

    def target_failed(self, error: TargetError) -> None:
        """The target failed for good (a context too short for the text, a model error): what was
        committed stays, the run ends, and the error carries the partial result."""
        self._record(self._correcting("target_failed").failed(error))
        self._correction = None
        self.stop_reason = "error"
        error.partial = self.result()

    # -- the end --------------------------------------------------------------------------------

    def result(self) -> GuideResult:
        text = self.text
        complete = self.output.checker.complete
        spans, drops = self.output.spans, tuple(self.output.drops)
        return GuideResult(
            text=text,
            valid=complete and self.schema.met(text),
            complete=complete,
            stop_reason=self.stop_reason or "error",
            trace=Trace(_prompt_text(self.prompt), spans, tuple(self.rounds), drops),
            seconds=time.perf_counter() - self.budget.started,
            grammar=self.grammar,
        )


def _prompt_text(prompt: Prompt) -> str:
    if isinstance(prompt, str):
        return prompt
    return "\n".join(f"{m.get('role', '')}: {m.get('content', '')}" for m in prompt)
