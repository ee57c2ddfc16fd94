"""The decisions of a guided run, with no I/O: what is committed, where a draft is cut, when to
correct, what of a draft's rest is reused. backtrack.run.driver turns them into effects for the sync
and async shells.

The driver asks `step()` what to do next, and reports back:
  "draft"    -> `draft_request()`; each chunk goes to `on_chunk()` (False: close the stream);
                then `end_draft(...)`, or `draft_failed(...)` when the provider failed for good.
  "correct"  -> `target_call()` gives the TargetCall for the local target (None: the run ends
                instead); its Correction goes to `apply_correction()`, a TargetError to
                `target_failed()`.
  "done"     -> `result()`.

Invariant: `checker.text` is the committed output, and it is always a valid prefix of the grammar.
Its first `final_chars()` characters never change again: every later text, the result's included,
starts with them (what a streaming consumer may pass on at once).
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Literal

from backtrack.repair.candidates import Edit, RepairLimits
from backtrack.repair.search import Prefer, search
from backtrack.run.answer_start import AnswerStart, preamble, prose, states_value
from backtrack.run.fence import ClosingFence
from backtrack.run.options import GuideOptions
from backtrack.run.reasoning import ReasoningBlock
from backtrack.trace.record import (
    Drop,
    DropReason,
    Origin,
    Repair,
    Round,
    RoundEnd,
    RoundKind,
    Span,
    StopReason,
    Trace,
)
from backtrack.trace.result import GuideResult
from backtrack.trace.spans import SpanLog
from grammars.json_schema.build import repeated_member
from local_target.errors import TargetError
from providers.base import AsyncDraftStream, DraftRequest, DraftStream, Prompt
from providers.errors import ProviderError, redact

if TYPE_CHECKING:
    from grammars import Checker
    from grammars.grammar import Grammar
    from local_target import Correction
    from local_target.decoding import Until

Step = Literal["draft", "correct", "done"]

logger = logging.getLogger(__name__)

_BLANKS_OR_END = frozenset(b" \t\r\n") | {256}
_LETTERS = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")

# How far a repair may reach (backtrack.repair.search): the defaults, measured on the repair set.
REPAIR_LIMITS = RepairLimits()

# At most this many repairs within this many characters of a draft (see GuideLoop._may_repair).
_CROWDED_REPAIRS = 3
_CROWDED_WITHIN = 16
# Text after a complete point that reads as commentary is still more document when a repair at
# the cut lets everything read after it parse, and at least this much of it or on into another
# line (a CSV row or a TOML line goes on; ` = 10` after an expression does not).
_READS_ON = 16
_READ_ON_LIMITS = replace(REPAIR_LIMITS, min_fit=_READS_ON)
_ANOTHER_LINE = re.compile(r"[\r\n]\s*\S")
# A correction is cut where this much of the draft's rest fits after it (`_hand_back`).
_HAND_BACK_PROBE = 64
# Stop reasons of a run whose text is complete, checked once more by the grammar's own test.
_COMPLETE = ("complete", "target_completed", "trailing_dropped")
# At most this many cuts per run at a value that only a JSON schema's validator refuses (a keyword
# the grammar does not enforce): the target writes under that grammar and may write it again.
_MAX_VALIDATOR_CUTS = 3

# A draft round reads at most max_draft_tokens * this many characters, whatever the drafter: a
# function drafter knows no token budget, and one that never ends must not grow without bound.
# Generous: a real token is rarely longer than 16 characters.
MAX_CHARS_PER_TOKEN = 32

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


@dataclass
class _Draft:
    """What the current draft round has seen."""

    started: float
    accepted: int = 0
    rest: list[str] = field(default_factory=list)  # rejected text after the cut
    cut: bool = False
    seeker: AnswerStart | None = None  # while nothing is committed: where does the answer start?
    reasoning: ReasoningBlock | None = None  # before that: a `<think>` block to skip?
    stripped: int = 0  # how much of the stream's `stripped` text the trace shows already
    read: int = 0  # characters received this round
    # The round read its character budget, or the run's time ran out: it ends as "length".
    over_budget: bool = False
    pending: list[str] | None = None  # after a cut: the draft read on to find a repair
    pending_chars: int = 0
    repairs: list[Repair] = field(default_factory=list)
    fence: ClosingFence | None = None  # the reply opened a code fence: where does it close?
    closing: str | None = None  # the reply from its closing fence on: the answer ended there


class GuideLoop:
    def __init__(
        self,
        grammar: Grammar,
        prompt: Prompt,
        options: GuideOptions,
        prefer: Prefer | None = None,
    ) -> None:
        self.grammar = grammar
        self.prompt = prompt
        self.options = options
        self.prefer = prefer  # breaks ties between repairs: the local model's likelihood
        self.checker = grammar.checker()
        self._log = SpanLog()
        self.rounds: list[Round] = []
        self.stop_reason: StopReason | None = None
        self._next: Step = "draft"
        self._completing = False
        self._draft: _Draft | None = None
        self._rest = ""  # the last cut draft's remainder, offered for reuse after a correction
        self._rest_is_all = False  # ... and it runs to the end of the drafter's reply
        self._started = time.perf_counter()
        self._repairs = 0  # edits made so far in the run
        self._final = 0  # committed characters no repair may take back (before the last edit)
        self._inserted_keys: set[str] = set()  # required keys a JSON schema run inserted
        self._final_seen = 0  # the largest final_chars() given so far
        self._order: Checker | None = None  # a JSON schema's own order, over the committed text
        # A JSON schema with keywords its grammar does not enforce: only the validator can tell,
        # once the text is complete, what must be written again.
        self._validator_only = any(r.checked for r in grammar.relaxed)
        self._validator_cuts = 0
        self._went_on = False  # a reply that stopped short was continued by the API
        self._drops: list[Drop] = []

    @property
    def text(self) -> str:
        return self.checker.text

    def _span(self, text: str, origin: Origin) -> None:
        self._log.add(text, origin, len(self.rounds))

    def _drop(self, text: str, reason: DropReason) -> None:
        """Leave the API's `text` out, where the output now ends, for `reason`."""
        if text:
            self._span(text, "dropped")
            self._drops.append(Drop(text, reason, len(self.rounds), self.checker.chars))

    @property
    def spans(self) -> tuple[Span, ...]:
        """Every span so far, in order."""
        return self._log.all()

    def final_chars(self) -> int:
        """How many characters of `text` are final: no later step changes them (never fewer than
        an earlier call said). A repair takes back at most `REPAIR_LIMITS.max_back` characters
        and none before the last repair (`_final`); a complete text's trailing blanks may go with
        dropped trailing text, so a final part never ends in a blank run it could be part of.
        Under a JSON schema read in any key order, text the schema's own order refuses may be
        taken back when the text is complete (`_settle_schema`): only text in that order is
        final before the run ends. Under a schema with keywords only its validator checks, any
        value may be taken back then: nothing is final before the run ends."""
        if self._validator_only:
            return self._final_seen
        text = self.text
        final = max(self._final, len(text) - REPAIR_LIMITS.max_back)
        while final > self._final and text[final - 1].isspace():
            final -= 1
        if self.grammar.strict is not None:
            final = min(final, self._in_schema_order(text))
        self._final_seen = max(self._final_seen, final)
        return self._final_seen

    def _in_schema_order(self, text: str) -> int:
        """How much of `text` the JSON schema's own order takes. Its checker rolls back no further
        than the last final point (nothing before it changes), so a call costs the new text."""
        strict = self.grammar.strict
        if strict is None:
            return len(text)
        if self._order is None:
            self._order = strict.checker()
        order = self._order
        order.rollback(min(order.chars, self._final_seen))
        order.feed(text[order.chars :])
        return order.chars

    def step(self) -> Step:
        while self.stop_reason in _COMPLETE and not self._meets_schema():
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

    def _meets_schema(self) -> bool:
        """The complete text is valid under a JSON schema whose grammar is not its whole test
        (drafts checked in any key order, keywords the grammar does not enforce); True for every
        other grammar: its check already decided."""
        return self.grammar.validator is None or self.grammar.matches(self.text)

    def _settle_schema(self) -> bool:
        """The text is complete but not valid under the JSON schema. A required key that is
        missing is inserted where its object ends, for the target to write its value (once per
        key). Anything else (a key twice, a fraction where an integer goes) and from here on the
        run checks and writes in the schema's own order, cut where that order refuses the text;
        where it takes the whole text (the validator refuses what no grammar here enforces), the
        cut is at the value the validator refuses, and that value is not offered again. Either
        way the text after the cut is taken back. False when nothing is left to try."""
        validator, strict = self.grammar.validator, self.grammar.strict
        if validator is None:
            raise RuntimeError("no JSON schema validator to settle with")  # _meets_schema() held
        text = self.text
        if self._drop_repeated_member(text):
            return True
        missing = validator.missing_key(text) if strict is not None else None
        reuse = True
        if missing is not None and missing.key not in self._inserted_keys:
            self._inserted_keys.add(missing.key)
            at = missing.at
            logger.debug("JSON schema: required key inserted at character %d", at)
        else:
            missing = None
            at = len(text)
            if strict is not None:
                self.grammar = strict
                self.checker = strict.checker()
                at = self.checker.feed(text)
                logger.debug(
                    "JSON schema not met in any key order: its order from character %d", at
                )
            if at == len(text):
                refused = validator.refused_value(text)
                if (
                    refused is None
                    or refused < self._final_seen
                    or self._validator_cuts >= _MAX_VALIDATOR_CUTS
                ):
                    return False
                self._validator_cuts += 1
                at, reuse = refused, False
                logger.debug("JSON schema: the validator refuses the value at character %d", at)
        self._log.retract(len(text) - at)
        self.checker.rollback(at)
        if missing is not None:
            self.checker.feed(missing.text)
            self._span(missing.text, "edit")
        self._final = min(self._final, at)
        self._rest, self._rest_is_all = (text[at:], True) if reuse else ("", False)
        self.stop_reason = None
        self._next = "correct"
        return True

    def _drop_repeated_member(self, text: str) -> bool:
        """A key its object already has (a repair that wrote an existing key for one the schema
        refuses, or the API writing a key twice): its later member is deleted, comma and value,
        and the text after it read again. Not before a point already passed on as final."""
        repeated = repeated_member(text)
        if repeated is None or repeated[0] < self._final_seen:
            return False
        start, end = repeated
        tail = text[end:]
        self._log.delete(start, end)
        self.checker.rollback(start)
        if self.checker.feed(tail) != len(tail):  # JSON without a member: the same grammar takes it
            raise RuntimeError("the text without a repeated member does not fit the grammar")
        self._final = min(self._final, start)
        logger.debug("JSON schema: a repeated key's member deleted at character %d", start)
        return True

    # -- drafts ---------------------------------------------------------------------------------

    def draft_request(self) -> DraftRequest:
        """The request for a draft; called again for each retry of a round's failed attempt."""
        failed = self._draft  # an earlier attempt of this round: what it committed stays
        if failed is not None:
            self._drop_unread(failed)
        # A failed attempt may have stopped at a cut, reading on for a repair: the retry asks for
        # the text from the committed end, so the cut and what was read after it are gone.
        self.checker.rollback(self.checker.chars)
        self._draft = _Draft(
            started=failed.started if failed else time.perf_counter(),
            accepted=failed.accepted if failed else 0,
            repairs=failed.repairs if failed else [],
            seeker=None
            if self.text
            else AnswerStart(self.grammar, limit=self.options.max_preamble_chars),
            reasoning=None if self.text else ReasoningBlock(),
        )
        return DraftRequest(self.prompt, self.text, self.options.max_draft_tokens)

    def on_chunk(self, chunk: str, *, stripped: str = "") -> bool:
        """Take a streamed chunk; False means: close the stream now.

        `stripped` is what the drafter's alignment removed from its reply so far (a repeat of the
        committed text, a fence opening): the trace shows it as dropped, where it was removed."""
        draft = self._draft
        if draft is None:
            raise RuntimeError("on_chunk() outside a draft round")
        self._note_stripped(draft, stripped)
        budget = self.options.max_draft_tokens * MAX_CHARS_PER_TOKEN
        if draft.read + len(chunk) > budget:
            chunk = chunk[: budget - draft.read]
            draft.over_budget = True
        draft.read += len(chunk)
        more = self._receive(draft, chunk) and not draft.over_budget
        if more and self._out_of_time():
            logger.debug("max_seconds reached: the draft is closed, the target completes")
            draft.over_budget = True
            return False
        return more

    def checks_only(self, chunk: str) -> bool:
        """`on_chunk(chunk)` would only check the chunk: no search for where the answer starts
        or for a repair can run in it. (A check costs microseconds a character; a repair search
        on a large grammar, up to a few hundred milliseconds.)"""
        draft = self._draft
        if draft is None or draft.seeker is not None or draft.pending is not None:
            return False
        window = self.options.repair_window
        return window == 0 or len(chunk) < window  # a cut in it cannot read a window past it

    def _receive(self, draft: _Draft, chunk: str) -> bool:
        """The reply's next piece: to the seeker while the answer's start is sought; else, in a
        fenced reply, split at the closing fence, after which nothing is answer text (it goes to
        `draft.closing`, and the stream is closed)."""
        if draft.reasoning is not None:
            chunk = draft.reasoning.feed(chunk)
            if not draft.reasoning.done:
                return True
            self._drop(draft.reasoning.block, "reasoning")
            draft.reasoning = None
            if not chunk:
                return True
        if draft.seeker is not None:
            return self._seek_start(draft, draft.seeker.feed(chunk), final=False)
        if draft.closing is not None:
            draft.closing += chunk
            return False
        if draft.fence is not None:
            chunk, draft.closing = draft.fence.split(chunk)
        more = self._take(draft, chunk) if chunk else True
        return more and draft.closing is None

    def _take(self, draft: _Draft, chunk: str) -> bool:
        if draft.cut:
            draft.rest.append(chunk)
            return False
        if draft.pending is not None:
            draft.pending.append(chunk)
            draft.pending_chars += len(chunk)
            return self._repair_when_read(draft)
        start = self.checker.chars
        try:
            taken = self.checker.feed(chunk)
        finally:  # a TextError (the grammar's work budget) keeps what came before its position
            self._span(chunk[: self.checker.chars - start], "draft")
            draft.accepted += self.checker.chars - start
        if taken < len(chunk):
            rest = chunk[taken:]
            # Text that only looks like commentary (a word after a blank, a new line) is read on
            # for a repair's window: what fits after the best repair tells (`_repair`).
            if self._may_repair(draft) and not self._answer_ended(rest):
                draft.pending = [rest]
                draft.pending_chars = len(rest)
                return self._repair_when_read(draft)
            draft.cut = True
            draft.rest.append(rest)
            return False
        return True

    # -- repairs --------------------------------------------------------------------------------

    def _may_repair(self, draft: _Draft) -> bool:
        """Repairs are on, within budget, and not crowding: a draft that needs an edit every few
        characters is not slipping but writing something else (prose where JSON goes), which an
        edit per word would only blank out."""
        if self.options.repair_window == 0 or self._repairs >= self.options.max_repairs:
            return False
        near = self.checker.chars - _CROWDED_WITHIN
        return sum(1 for r in draft.repairs if r.at >= near) < _CROWDED_REPAIRS

    def _repair_when_read(self, draft: _Draft) -> bool:
        """Once a window of the draft past the cut has arrived, look for a repair."""
        if draft.pending_chars < self.options.repair_window:
            return True
        return self._repair(draft, final=False)

    def _repair(self, draft: _Draft, *, final: bool) -> bool:
        """At the cut, with the draft's rest read so far (all of the reply when `final`): make
        the best edit after which the draft fits again and read on (True), or, when none
        resynchronises, end the draft at the cut for a correction (False)."""
        rest = "".join(draft.pending or ())
        draft.pending = None
        window = rest[: self.options.repair_window]
        edit = None
        # A complete text with what reads as commentary after it: more document only where one
        # edit lets everything read after it parse, and a good stretch of it.
        looks_trailing = self.checker.complete and self._is_trailing(rest)
        if not self._answer_ended(rest):
            edit = search(
                self.checker,
                window,
                final=final and len(rest) <= len(window),
                floor=self._final,
                limits=_READ_ON_LIMITS if looks_trailing else REPAIR_LIMITS,
                prefer=self.prefer,
                alone=looks_trailing,
            )
        if looks_trailing and edit and not self._reads_on(edit, window):
            edit = None
        if edit is None:
            draft.cut = True
            draft.rest.append(rest)
            return False
        self._make(draft, edit)
        return self._take(draft, rest[edit.skip :])

    def _make(self, draft: _Draft, edit: Edit) -> None:
        """Make `edit`: the committed text backs off (shown as deleted), the draft's skipped text
        is shown as skipped, the inserted text is committed as an edit."""
        at = self.checker.chars - edit.back
        # An insertion further back (`]` before `, "b"`) reads the backed-off text again: it is
        # moved, not deleted.
        reread = edit.deleted if edit.deleted and edit.insert.endswith(edit.deleted) else ""
        self._log.retract(edit.back, shown=not reread)
        self.checker.rollback(at)
        self._span(edit.skipped, "skipped")
        if self.checker.feed(edit.insert) != len(edit.insert):
            raise RuntimeError("a repair's inserted text does not fit where it was checked")
        inserted = edit.insert[: len(edit.insert) - len(reread)]
        self._span(inserted, "edit")
        self._span(reread, "draft")
        self._final = self.checker.chars
        self._repairs += 1
        deleted = "" if reread else edit.deleted
        draft.repairs.append(Repair(at, deleted, edit.skipped, inserted, edit.fits))
        logger.debug(
            "repair at character %d: %d deleted, %d skipped, %d inserted; %d characters fit",
            at,
            len(deleted),
            len(edit.skipped),
            len(inserted),
            edit.fits,
        )

    def _drop_unread(self, draft: _Draft) -> None:
        """A failed attempt's text, received before its answer was found, goes unread."""
        if draft.reasoning is not None:
            self._drop(draft.reasoning.held, "unread")
        if draft.seeker is not None:
            self._drop(draft.seeker.text, "unread")

    def _note_stripped(self, draft: _Draft, stripped: str) -> None:
        self._drop(stripped[draft.stripped :], "repeat")
        if draft.fence is None and not draft.read:
            draft.fence = ClosingFence.after_stripped(stripped)
            if draft.fence is not None and draft.seeker is not None:
                draft.seeker.fence_opened()
        draft.stripped = max(draft.stripped, len(stripped))

    def _seek_start(self, draft: _Draft, start: int | None, *, final: bool) -> bool:
        """Before anything is committed: once the seeker knows where the answer starts in what
        was received (`start`), drop what comes before and take the rest. Returns whether to keep
        reading."""
        seeker = draft.seeker
        if seeker is None:
            raise RuntimeError("no answer start is being sought")
        if start is None:
            if seeker.length < self.options.max_preamble_chars and not final:
                return True
            start = 0  # no answer found: treat the draft as an ordinary (cut) draft
        draft.seeker = None
        received = seeker.text
        if start and not preamble(received[:start]) and self._repairable(received[:start]):
            start = 0  # a slip early in the answer, for the repairs, not a preamble to drop
        elif start and seeker.inside and self._repairable(received):
            start = 0  # the reply is the answer with a slip, not a sentence around one
        while start and received[start : start + 1].isspace():
            start += 1  # the blanks between a preamble and its answer go with the preamble
        self._drop(received[:start], "preamble")
        if draft.fence is None:
            draft.fence = ClosingFence.after_preamble(received[:start])
        return self._receive(draft, received[start:]) if received[start:] else True

    def _repairable(self, text: str) -> bool:
        """Whether `text`, from the reply's start, fits the grammar or has a repair at its first
        cut (a slip early in the answer: `x = 1; y = 2; `, `; a comment`)."""
        checker = self.grammar.checker()
        taken = checker.feed(text)
        if taken == len(text):
            return True
        window = text[taken : taken + self.options.repair_window]
        return search(checker, window, final=False, floor=0, limits=REPAIR_LIMITS) is not None

    def empty_reply(self, stream: DraftStream | AsyncDraftStream) -> ProviderError | None:
        """The error for an API reply that ended with the provider's finish reason but without one
        character while the text is not complete (a 200 reply with no content): a provider fault,
        retried from the committed text like a dropped connection, not a drafter that has
        finished. A drafter function that returns nothing has finished (`stream.finished` is the
        provider's word, and only API streams carry it)."""
        draft = self._draft
        if draft is None or draft.read or draft.stripped or self.checker.complete:
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
        draft = self._draft
        if draft is None:
            raise RuntimeError("end_draft() outside a draft round")
        self._note_stripped(draft, stripped)
        if draft.over_budget:
            finish_reason = "length"
        if draft.reasoning is not None:  # a block never closed: the text as it came
            held, draft.reasoning = draft.reasoning.finish(), None
            self._receive(draft, held)
        if draft.seeker is not None:
            self._seek_start(draft, draft.seeker.finish(), final=True)
        if draft.fence is not None and draft.closing is None:
            self._take(draft, draft.fence.flush())  # no closing fence: what was kept back is text
        # A closing fence ends the answer: as if the drafter had stopped there.
        reason = "stop" if draft.closing is not None else finish_reason
        while draft.pending is not None:  # the reply ended while a repair was being read for
            self._repair(draft, final=reason == "stop")
        rest, closing = "".join(draft.rest), draft.closing or ""
        at_fence = draft.closing is not None and not draft.cut
        trailing = self.checker.complete and (at_fence or (draft.cut and self._is_trailing(rest)))
        cut_at = self.checker.chars if draft.cut or trailing else None
        expected = self.checker.expected() if cut_at is not None else ()
        ended: RoundEnd = "cut" if draft.cut else "drafter_ended"
        if trailing:
            ended = "trailing"
            self._drop_final_blanks()
            self._drop(rest, "trailing")
            self.stop_reason = "trailing_dropped"
        elif draft.cut:
            self._span(rest, "rejected")
            self._rest = rest
            self._rest_is_all = reason == "stop"
            self._next = "correct"
        elif self.checker.complete and (reason != "length" or self.checker.stopped):
            self.stop_reason = "complete"
        elif draft.accepted and (reason == "length" or self._may_go_on(reason)):
            self._went_on = self._went_on or reason == "stop"
            self._next = "draft"
        else:
            self._next = "correct"
        self._drop(closing, "fence")
        logger.debug(
            "draft round %d ended %s (%s): %d characters accepted, %d rejected%s",
            len(self.rounds),
            ended,
            reason,
            draft.accepted,
            len(rest) + len(closing),
            f", cut at character {cut_at}" if cut_at is not None else "",
        )
        self.rounds.append(
            Round(
                index=len(self.rounds),
                kind="draft",
                ended=ended,
                seconds=time.perf_counter() - draft.started,
                accepted_chars=draft.accepted,
                rejected_chars=len(rest) + len(closing),
                cut_at=cut_at,
                expected=expected,
                input_tokens=input_tokens,
                output_tokens=output_tokens,
                retries=retries,
                closed_early=(draft.cut or draft.closing is not None) and finish_reason == "closed",
                request_id=request_id,
                repairs=tuple(draft.repairs),
            )
        )
        self._draft = None

    def _may_go_on(self, finish_reason: str) -> bool:
        """A reply that stopped before the text is complete (truncated, or a closing bracket
        forgotten) is continued by the API, which knows better than the local model what it
        meant; once a run: after that, a reply that stops short is corrected (an API that keeps
        stopping short would otherwise cost a call more for every correction)."""
        return finish_reason == "stop" and not self._went_on

    def draft_failed(self, error: BaseException, *, retries: int) -> None:
        """The provider failed for good; what was committed stays, the run ends."""
        draft = self._draft
        started = draft.started if draft else time.perf_counter()
        if draft is not None:
            self._drop_unread(draft)
        self.rounds.append(
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

    def _drop_final_blanks(self) -> None:
        """Blanks that end a complete text before dropped trailing text go with the trailing text
        where the text without them is complete and they are no line's end (`1 + 2 ` before
        `= 3`), or the grammar would take nothing but blanks after it (JSON). Elsewhere they stay:
        a CSV record's line end, and before a closing fence too, whose block's content ends with
        its last line's break, as CommonMark has it. Never blanks already passed on as final."""
        text = self.text
        kept = len(text.rstrip())
        if kept == len(text) or kept < max(self._final, self._final_seen):
            return
        self.checker.rollback(kept)
        line_end = "\n" in text[kept:] or "\r" in text[kept:]
        if not (
            self.checker.complete and (not line_end or self.checker.next_bytes() <= _BLANKS_OR_END)
        ):
            self.checker.feed(text[kept:])
            return
        self._log.retract(len(text) - kept, shown=False)
        self._drop(text[kept:], "trailing")

    @staticmethod
    def _reads_on(edit: Edit, window: str) -> bool:
        """Whether, after `edit`, what looked like commentary after a complete text is more
        document: everything read after the edit parses, a good stretch of it or on into another
        line, and its first line is no sentence (which CSV, say, would take as a record)."""
        after = window[edit.skip :]
        line = next((ln for ln in after.splitlines() if ln.strip()), "")
        sentence = prose(line) and len(line.split()) >= 3
        stretch = edit.fits >= _READS_ON or _ANOTHER_LINE.search(after) is not None
        return edit.fits == len(after) and stretch and not sentence

    def _answer_ended(self, rest: str) -> bool:
        """At a complete point, the grammar takes nothing more but blanks, and `rest` is more
        than blanks: no repair can make it document."""
        if not (self.checker.complete and rest.strip()):
            return False
        return self.checker.stopped or self.checker.next_bytes() <= _BLANKS_OR_END

    def _is_trailing(self, rest: str) -> bool:
        """At a complete point, is the rejected rest commentary rather than a slip? It is when the
        grammar cannot go on at all or only with blanks, when the rest is a blank and a word where
        no word may follow (SQL after its ";" takes only blanks and comments), when it states the
        text's value where no `=` may follow (` = 10` after an expression), or when it starts a
        new line or a code fence (and is not more of the answer, below)."""
        following = self.checker.next_bytes()
        if self.checker.stopped or not rest.strip() or following <= _BLANKS_OR_END:
            return True
        after_blank = rest[:1].isspace() or self.text[-1:].isspace()
        if after_blank and rest.lstrip()[:1].isalpha() and not following & _LETTERS:
            return True  # a word after a blank (right after a closing quote, a slip in the text)
        if ord("=") not in following and states_value(rest):
            return True
        text = self.text
        tail = text[len(text.rstrip()) :]
        if not ("\n" in tail or rest.lstrip(" \t").startswith(("\n", "\r", "```"))):
            return False
        # A new line: commentary, unless it is more of the answer after blank lines the grammar
        # refuses (an empty line between CSV records): not prose, and it fits to its end.
        after = rest.lstrip()
        line = after.split("\n", 1)[0]
        more = not prose(line) and self.checker.fits(after) >= min(len(after), len(line) + 1)
        return not more

    # -- corrections ----------------------------------------------------------------------------

    def target_call(self) -> TargetCall | None:
        """The target's next correction, or None when the budget is spent and the caller opted
        out of completion (the run ends)."""
        corrections = sum(1 for r in self.rounds if r.kind != "draft")
        self._completing = (
            corrections >= self.options.max_corrections
            or len(self.rounds) >= self.options.max_rounds
            or self._out_of_time()
        )
        if self._completing and not self.options.complete_on_budget:
            self.stop_reason = "max_corrections"
            return None
        until: Until = "complete" if self._completing else "terminal"
        budget = (
            self.options.completion_tokens if self._completing else self.options.correction_tokens
        )
        return TargetCall(self.text, until, budget, self._target_grammar(), self._rest)

    def _target_grammar(self) -> Grammar:
        """The grammar the target writes under: a JSON schema's own order while the committed
        text keeps it (the target then writes every required key), else the drafts' any-order
        grammar (the API put keys in another order; the final check still holds)."""
        strict = self.grammar.strict
        if strict is not None and strict.check(self.text).chars == len(self.text):
            return strict
        return self.grammar

    def apply_correction(self, correction: Correction) -> None:
        start_chars = self.checker.chars
        self.checker.rollback(start_chars)  # clears the draft's cut; nothing is removed
        taken = self.checker.fits(correction.text)
        if taken != len(correction.text):
            raise TargetError(
                f"the target wrote text the grammar refuses at character {start_chars + taken}"
            )
        keep = self._hand_back(correction.text)
        self.checker.feed(correction.text[:keep])
        at = 0
        for flag, piece in correction.runs:
            self._span(piece[: max(0, keep - at)], _TOKEN_ORIGIN[flag])
            at += len(piece)
        reused = self._reuse_rest()
        kind: RoundKind = "completion" if self._completing else "correction"
        logger.debug(
            "%s round %d: %d characters in %d local tokens (%s), %d characters of the draft reused",
            kind,
            len(self.rounds),
            len(correction.text),
            len(correction.tokens),
            correction.stop_reason,
            len(reused),
        )
        self.rounds.append(
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
        if self._completing:
            self.stop_reason = "target_completed" if self.checker.complete else "incomplete"
        elif self.checker.complete and (self.checker.stopped or (reused and self._rest_is_all)):
            self.stop_reason = "complete"  # nothing left to write, or the drafter had finished
        else:
            self._next = "correct" if self._rest else "draft"

    def target_failed(self, error: TargetError) -> None:
        """The target failed for good (a context too short for the text, a model error): what was
        committed stays, the run ends, and the error carries the partial result."""
        self.rounds.append(
            Round(
                index=len(self.rounds),
                kind="completion" if self._completing else "correction",
                ended="error",
                seconds=0.0,
                error=redact(str(error)),
            )
        )
        self.stop_reason = "error"
        error.partial = self.result()

    def _hand_back(self, written: str) -> int:
        """How much of the target's `written` text to keep: all of it where the draft's rest
        goes on after it (as far as a repair needs to resynchronise) or there is no rest, else
        the longest start after which it does (` 4,` is cut to ` 4` where the rest goes on with
        `], "b"`): the draft takes over there."""
        probe = self._rest[:_HAND_BACK_PROBE]
        if not probe or self._completing:
            return len(written)
        # As much as resynchronises a repair; less only where that is the reply's whole rest (a
        # stream closed at the cut left only the start of its rest: no evidence).
        need = (
            min(len(probe), REPAIR_LIMITS.min_fit) if self._rest_is_all else REPAIR_LIMITS.min_fit
        )
        if len(probe) < need:
            return len(written)
        start = self.checker.chars
        for keep in range(len(written), 0, -1):
            if self.checker.fits(written[:keep] + probe) - keep < need:
                continue
            self.checker.feed(written[:keep])
            inside = self.checker.in_free_text()  # the rest would be a string's content
            self.checker.rollback(start)
            if not inside:
                return keep
        return len(written)

    def _reuse_rest(self) -> str:
        rest, self._rest = self._rest, ""
        if not rest:
            return ""
        if self.checker.in_free_text():
            return ""  # inside a string the correction opened: the rest would become its content
        before = self.checker.chars
        taken = self.checker.feed(rest)
        long_enough = len(rest) >= self.options.min_reuse_chars
        if taken == len(rest) and (self.checker.complete or long_enough):
            self._span(rest, "reused")
            return rest
        if taken >= self.options.min_reuse_chars and not self.checker.in_free_text():
            # The rest fits up to another slip: keep what fits, and the target corrects there
            # with the remainder before it, not the API writing the rest again.
            self._span(rest[:taken], "reused")
            self._rest = rest[taken:]
            return rest[:taken]
        self.checker.rollback(before)
        return ""

    # -- the end --------------------------------------------------------------------------------

    def result(self) -> GuideResult:
        text = self.text
        complete = self.checker.complete
        return GuideResult(
            text=text,
            valid=complete and self._meets_schema(),
            complete=complete,
            stop_reason=self.stop_reason or "error",
            trace=Trace(
                _prompt_text(self.prompt), self.spans, tuple(self.rounds), tuple(self._drops)
            ),
            seconds=time.perf_counter() - self._started,
            grammar=self.grammar,
        )


def _prompt_text(prompt: Prompt) -> str:
    if isinstance(prompt, str):
        return prompt
    return "\n".join(f"{m.get('role', '')}: {m.get('content', '')}" for m in prompt)
