"""What a guided run may still spend (backtrack.run.loop): its rounds, its corrections, its time
(GuideOptions' max_rounds, max_corrections, max_seconds), the target's context (`room`:
backtrack.run.context), and one continuation of a reply that stopped short. Once drafts are
spent, the target completes the text.
"""

from __future__ import annotations

import logging
import math
import time
from typing import TYPE_CHECKING

from backtrack.run.context import ContextRoom
from backtrack.run.target_prompt import refused_answer
from backtrack.trace.record import ink

if TYPE_CHECKING:
    from collections.abc import Sequence

    from backtrack.run.options import GuideOptions
    from backtrack.run.output import Output
    from backtrack.trace.record import Round, StopReason

logger = logging.getLogger(__name__)


# The most tokens the target writes to finish what an ended reply left (HandBack.api_finished):
# little is left, and where the grammar never ends (moves, rows) the local model would otherwise
# go on to its whole completion budget.
_FINISH_TOKENS = 48


class Budget:
    def __init__(self, options: GuideOptions, room: ContextRoom | None = None) -> None:
        self.options = options
        self.room = room if room is not None else ContextRoom(None, 0)  # None: no known context
        self.started = time.perf_counter()
        self._short_reply_continued = False  # a reply that stopped short was continued by the API
        self._said_all = False  # and its continuation stopped short too

    def out_of_time(self) -> bool:
        """The run has used its `max_seconds`: no more API text, the target completes."""
        limit = self.options.max_seconds
        return limit is not None and time.perf_counter() - self.started >= limit

    def seconds_left(self) -> float:
        """What is left of `max_seconds` (infinite without a bound; 0 once it passed)."""
        limit = self.options.max_seconds
        if limit is None:
            return math.inf
        return max(0.0, limit - (time.perf_counter() - self.started))

    def drafts_spent(self, rounds: Sequence[Round]) -> bool:
        """No more drafts: the run has had its `max_rounds`, used its time, or filled what the
        target's context holds for drafts."""
        spent = len(rounds) >= self.options.max_rounds or self.out_of_time()
        return spent or self.room.full

    def no_more_drafts(self, rounds: Sequence[Round], output: Output) -> bool:
        """No more drafts, not even to go on with a reply that stopped short: they are spent
        (`drafts_spent`), or the last was a continuation its repairs threw away
        (`_thrown_away`: asked to go on, the API writes more of the same), or one that added
        nothing to the text (`_fruitless`)."""
        spent = self.drafts_spent(rounds)
        return spent or _thrown_away(rounds, output) or _fruitless(rounds)

    def target_completes(
        self, rounds: Sequence[Round], output: Output, settling: bool = False
    ) -> bool:
        """The target's next call is the last: the corrections or the drafts are spent, or the
        API is stuck on one slip (its drafts' text: the `output`'s spans), or has said all; not
        for the last of these where the call is `settling` a JSON schema (the value of a key it
        inserted, the run's own text after it: no API call follows that)."""
        corrections = sum(1 for r in rounds if r.kind != "draft")
        spent = corrections >= self.options.max_corrections or self.drafts_spent(rounds)
        return spent or (not settling and (self._said_all or _stuck(rounds, output)))

    def api_done(self, rounds: Sequence[Round], output: Output) -> bool:
        """The API will write no more of an answer the committed text holds: it has said all it
        means to (`said_all`), or is stuck (`_stuck`). Its completion only finishes the text: in
        at most `_FINISH_TOKENS`, closing from its first token (`call`). Where its first reply
        was refused whole, the answer is not in the text but in that reply, which the target
        reads and writes again in full (backtrack.run.target_prompt): not done then. Seen on
        SmolLM2's sampled drafts: completing after a stuck API, the local model wrote list
        items of its own (three more players, one server name six times: 76 and 93 tokens)."""
        if refused_answer(rounds, output) is not None:
            return False
        return self._said_all or _stuck(rounds, output)

    def call(
        self, output: Output, completes: bool, api_finished: bool
    ) -> tuple[StopReason | None, int | None]:
        """For the target's next call (a completion where it `completes`): why the run ends
        instead (the caller opted out of completion, or the target's context has no room left
        after the output's text), else None and the most tokens it may write, where less than
        its budget (what an ended reply left: `api_finished`; what the context has left)."""
        if completes and not self.options.complete_on_budget:
            return ("context_full" if self.room.full else "max_corrections"), None
        most = self.room.most_tokens(output.checker)
        if api_finished:
            most = _FINISH_TOKENS if most is None else min(most, _FINISH_TOKENS)
        if most is not None and most < 1:
            logger.warning("the target's context has no room left after the committed text")
            return "context_full", None
        return None, most

    def completed(self, complete: bool) -> StopReason:
        """Why the run ended once the target completed the text (`complete` or not)."""
        if self.room.full:
            return "context_full"
        return "target_completed" if complete else "incomplete"

    def goes_on(self, finish_reason: str, *, wrote: bool, rounds: Sequence[Round]) -> bool:
        """Whether the API continues its reply that ended for `finish_reason` before the text is
        complete, having `wrote` text that fits. A truncated one ("length") goes on. One that
        stopped ("stop": truncated, or a closing bracket forgotten) goes on once a run, the API
        knowing better than the local model what it meant, but not where it continued the
        target's correction (`rounds` holds one): that reply, or one that stops short again
        after going on, has said all it means to (`said_all`), and the target completes the
        text (asked again, an API repeats what it wrote, or starts its answer over: SmolLM2
        through llama.cpp, a call more in two of nine runs). An empty reply says nothing: the
        target corrects, and the API is asked again."""
        stopped = finish_reason == "stop"
        after_correction = wrote and any(r.kind != "draft" for r in rounds)
        said_all = stopped and (self._short_reply_continued or after_correction)
        if wrote and (finish_reason == "length" or (stopped and not said_all)):
            self._short_reply_continued = self._short_reply_continued or stopped
            return True
        self._said_all = self._said_all or said_all
        return False

    @property
    def said_all(self) -> bool:
        """The API stopped short after it went on once, or after a correction (`goes_on`)."""
        return self._said_all


def _stuck(rounds: Sequence[Round], output: Output) -> bool:
    """The API's last two drafts both made no headway (`_no_headway`), or its last one only
    wrote the committed text again, or was a continuation its repairs mostly threw away
    (`_thrown_away`) or that added nothing (`_fruitless`), and another call would only repeat
    them. API calls are bounded by the slips the API makes, not by how often it makes one."""
    drafts = [r for r in rounds if r.kind == "draft"]
    if drafts and _only_repeated(drafts[-1]):
        return True
    if _thrown_away(rounds, output) or _fruitless(rounds):
        return True
    return len(drafts) > 1 and all(_no_headway(r) for r in drafts[-2:])


def _thrown_away(rounds: Sequence[Round], output: Output) -> bool:
    """The last draft is a continuation (not the run's first draft) of which the repairs threw
    away (skipped, or deleted) more than twice the non-blank characters they kept: asked to go
    on after a correction, the API wrote its answer again in another shape than the grammar's,
    or wrote on against the correction, and asked again it does so again (SmolLM2 through
    llama.cpp: three calls where two gave the same text; six in one run). The rest of a cut
    draft is not counted: the correction that follows may reuse it. A JSON schema's settling
    counts too: it deletes the member it refuses."""
    drafts = [r for r in rounds if r.kind == "draft"]
    if len(drafts) < 2:
        return False
    draft, kept, thrown = drafts[-1], 0, 0
    for span in output.spans:
        if span.round == draft.index and span.origin == "draft":
            kept += ink(span.text)
        elif span.round == draft.index and span.origin in ("skipped", "deleted"):
            thrown += ink(span.text)
    return 2 * kept < thrown


def _fruitless(rounds: Sequence[Round]) -> bool:
    """The last draft is a continuation (not the run's first draft) that wrote text and added
    nothing to the text: not one of its characters fitted (prose, an answer started over), and
    the correction after it reused none of its rest. Asked again, an API that answered so does
    it again: in SmolLM2's sampled drafts through llama.cpp, five of six such continuations were
    followed by another that added nothing (the sixth kept ten characters of a mangled line),
    each a call of up to 9 s. The target completes the text instead. An empty reply is no such
    answer: it says nothing, and the few characters the target writes may be what the API
    needed to go on (SmolLM2 through llama.cpp answered an odd prefix with nothing, then went on
    after the correction); two in a row are `_no_headway`."""
    drafts = [r for r in rounds if r.kind == "draft"]
    if len(drafts) < 2 or drafts[-1].ended == "empty":
        return False
    last = drafts[-1]
    after = [r for r in rounds if r.index > last.index]
    return bool(after) and not any(r.accepted_chars for r in (last, *after))


def _only_repeated(draft: Round) -> bool:
    """A draft that wrote the answer again from its start and stopped where the committed text
    ends, or before: asked to go on, the API has nothing to add (a weak model restarts so after
    each correction; SmolLM2 through llama.cpp took a call more each time, three in one run)."""
    return bool(draft.repeated_chars) and not (draft.accepted_chars or draft.rejected_chars)


def _no_headway(draft: Round) -> bool:
    """A draft that was cut, or that wrote the committed text again, and of which less than a
    third of its text fitted as new text: after each correction the API goes back to the same
    slip (`cut before a character of theirs fit`), restarts its answer in another shape than the
    grammar's (a weak model's nested `"hotel": {"name": ...}` where a string goes), or writes
    the answer again and stops where it stopped before (a required key it never writes); or
    that added nothing at all (an empty reply)."""
    if not (draft.accepted_chars or draft.rejected_chars or draft.repeated_chars):
        return True
    if draft.cut_at is None and not draft.repeated_chars:
        return False
    accepted = draft.accepted_chars
    return not accepted or 2 * accepted < draft.rejected_chars + draft.repeated_chars
