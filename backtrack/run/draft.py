"""The reading of one draft round's reply into the output (backtrack.run.output), chunk by chunk.

Before anything is committed, a reasoning block is skipped and a JSON envelope's string read as
the answer's text (backtrack.run.reply_start), and the answer's start is sought
(backtrack.run.answer_start); in a fenced reply, the answer ends at its closing fence
(backtrack.run.fence). Each piece of the answer is checked: what fits is committed;
at the first character that does not (the cut), the reply is read on for a window, and the best
repair after which the draft fits again is made (backtrack.repair.search), or the draft ends at
the cut and the rest is kept, rejected, for the loop to decide on.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from backtrack.repair.json_shapes import wrapper_end
from backtrack.repair.line_end import line_through
from backtrack.repair.search import Prefer
from backtrack.run.answer_start import AnswerStart
from backtrack.run.early_slip import answer_offset
from backtrack.run.fence import ClosingFence
from backtrack.run.prose import commentary
from backtrack.run.read_ahead import ReadAhead
from backtrack.run.remarks import closing_remarks, prose_lines_after
from backtrack.run.reply_start import ReplyStart
from backtrack.run.stray_reply import feed_watching, watch
from backtrack.run.trailing import LINE_MORE, answer_ended, edit_at_cut
from backtrack.trace.record import Repair

if TYPE_CHECKING:
    from backtrack.run.options import GuideOptions
    from backtrack.run.output import Output
    from grammars.grammar import Grammar
    from providers.align import Echo

logger = logging.getLogger(__name__)

# At most this many repairs within this many characters of a draft (see `crowded`).
_CROWDED_REPAIRS = 3
_CROWDED_WITHIN = 16

# A draft round reads at most max_draft_tokens * this many characters, whatever the drafter: a
# function drafter knows no token budget, and one that never ends must not grow without bound.
# Generous: a real token is rarely longer than 16 characters.
MAX_CHARS_PER_TOKEN = 32


class DraftReader:
    """What one draft round has read, and the reading of the rest (see the module's docstring).

    A retry of the round's failed attempt reads with a new reader that carries on the failed
    one's count of accepted characters, its repairs and its start time (`retry_of`)."""

    def __init__(
        self,
        output: Output,
        grammar: Grammar,
        options: GuideOptions,
        prefer: Prefer | None,
        *,
        repairs_before: int,
        echo: Echo,
        retry_of: DraftReader | None = None,
    ) -> None:
        self.output = output
        self.grammar = grammar
        self.options = options
        self.prefer = prefer  # breaks ties between repairs: the local model's likelihood
        self._repairs_before = repairs_before  # repairs the run made in earlier rounds
        self.started: float = retry_of.started if retry_of else time.perf_counter()
        self.accepted: int = retry_of.accepted if retry_of else 0
        self.repairs: list[Repair] = retry_of.repairs if retry_of else []
        self.rest: list[str] = []  # rejected text after the cut
        self.begun: int = retry_of.begun if retry_of else len(output.text)  # the answer's end then
        self.cut = False
        # While nothing is committed: a `<think>` block to skip and a JSON envelope to read the
        # answer out of, then where does the answer start?
        first = not output.text
        self.start = ReplyStart(output, grammar) if first else None
        limit = preamble_limit(options)
        self.seeker = AnswerStart(grammar, limit=limit, echo=echo) if first else None
        self.stripped_shown = 0  # how much of the stream's stripped text the trace shows already
        self.reasoning_shown = 0  # and of the reasoning it sent apart from the answer
        self.read = 0  # characters received this round
        # Over its character budget, the run's time or the target's context: it ends as "length".
        self.over_budget = False
        self.read_ahead: ReadAhead | None = None  # after a cut, while a repair is looked for
        self.fence: ClosingFence | None = None  # a code fence the reply opened, which closes it
        self.closing: str | None = None  # the reply from the closing fence on (the answer ended)
        self.closed_early = False  # the stream was closed at a cut or a closing fence (`finish`)
        watch(output)  # a continuation inside a string is held back while it stays there

    # -- the reply, chunk by chunk --------------------------------------------------------------

    def receive(self, chunk: str, stripped: str, reasoning: str = "") -> bool:
        """Read a streamed chunk; False means: close the stream now. `stripped` and `reasoning`:
        see GuideLoop.receive."""
        self._note(stripped, reasoning)
        budget = self.options.max_draft_tokens * MAX_CHARS_PER_TOKEN
        if self.read + len(chunk) > budget:
            chunk = chunk[: budget - self.read]
            self.over_budget = True
        self.read += len(chunk)
        return self._receive(chunk) and not self.over_budget

    def checks_only(self, chunk: str) -> bool:
        """`receive(chunk)` would only check the chunk: no search for where the answer starts or
        for a repair can run in it."""
        if self.seeker is not None or self.read_ahead is not None:
            return False
        window = self.options.repair_window
        return window == 0 or len(chunk) < window  # a cut in it cannot read a window past it

    def finish(self, finish_reason: str, stripped: str, reasoning: str = "") -> str:
        """The reply is over, for the provider's `finish_reason`: what is still held back is read
        (a reasoning block never closed, an undecided answer start, a fence's possible start, a
        repair's read-ahead). Returns why the draft ended: "stop" at a closing fence or a JSON
        envelope's end (as if the drafter had stopped there), "length" over budget."""
        self._note(stripped, reasoning)
        if self.over_budget:
            finish_reason = "length"
        if self.start is not None and (held := self.start.finish()):
            self._answer(held)
        if self.seeker is not None:
            self._seek_start(self.seeker, self.seeker.finish(), final=True)
        if self.fence is not None and self.closing is None:
            held, self.closing = self.fence.flush()  # what was kept back, or a glued fence
            self._take(held)
        if self.start is not None and self.start.end is not None:  # the answer is over
            self.closing = (self.closing or "") + self.start.end
        reason = "stop" if self.closing is not None else finish_reason
        while self.read_ahead is not None:  # the reply ended while a repair was being read for
            self._repair(final=reason == "stop")
        if not self.cut and (remarks := closing_remarks(self.output)) is not None:
            self._end_before(remarks, "")  # the reply's last lines were remarks, not document
        self.closed_early = (self.cut or self.closing is not None) and finish_reason == "closed"
        return reason

    @property
    def received_nothing(self) -> bool:
        """Not one character of the reply arrived, stripped text included."""
        return not self.read and not self.stripped_shown

    def drop_unread(self) -> None:
        """A failed attempt's text, received before its answer was found, goes unread."""
        sought = self.seeker.text if self.seeker is not None else ""
        self.output.drop((self.start.held if self.start is not None else "") + sought, "unread")

    def _note(self, stripped: str, reasoning: str) -> None:
        """The trace shows the reasoning the API sent apart from the answer (never checked), and
        what alignment stripped, as dropped, where they arrived; a fence opening stripped from the
        reply's start opens the fenced answer."""
        self.output.drop(reasoning[self.reasoning_shown :], "reasoning")
        self.reasoning_shown = max(self.reasoning_shown, len(reasoning))
        self.output.drop(stripped[self.stripped_shown :], "repeat")
        if self.fence is None and not self.read:
            self.fence = ClosingFence.after_stripped(stripped)
            if self.fence is not None and self.seeker is not None:
                self.seeker.fence_opened()
        self.stripped_shown = max(self.stripped_shown, len(stripped))

    def _receive(self, chunk: str) -> bool:
        """The reply's next piece, past what may come before the answer's text (reply_start: the
        stream is closed at a JSON envelope's end), on as the answer's (`_answer`)."""
        start = self.start
        if start is not None:
            chunk = start.read(chunk)
        more = self._answer(chunk) if chunk else True
        return more and (start is None or start.end is None)

    def _answer(self, chunk: str) -> bool:
        """The answer's next piece: to the seeker while the answer's start is sought; else, in a
        fenced reply, split at the closing fence, after which nothing is answer text (it goes
        to `closing`, and the stream is closed)."""
        if self.seeker is not None:
            return self._seek_start(self.seeker, self.seeker.seek(chunk), final=False)
        if self.closing is not None:
            self.closing += chunk
            return False
        if self.fence is not None:
            chunk, self.closing = self.fence.split(chunk)
        more = self._take(chunk) if chunk else True
        return more and self.closing is None

    def _seek_start(self, seeker: AnswerStart, start: int | None, *, final: bool) -> bool:
        """Before anything is committed: once the `seeker` knows where the answer starts in what
        was received (`start`), drop what comes before and take the rest. Returns whether to keep
        reading."""
        if start is None:
            if seeker.length < preamble_limit(self.options) and not final:
                return True
            start = 0  # no answer found: treat the draft as an ordinary (cut) draft
        self.seeker = None
        received = seeker.text
        start = answer_offset(self.grammar, seeker, start, window=self.options.repair_window)
        skipped = received[:start]
        self.output.drop(skipped, "preamble" if commentary(skipped) else "before_answer")
        if self.fence is None:
            self.fence = ClosingFence.after_preamble(received[:start])
        return self._answer(received[start:]) if received[start:] else True

    def _take(self, chunk: str) -> bool:
        """Check the answer's next piece: commit what fits (up to what the target's context takes:
        run.context); at a cut, read on for a repair where one may help, else keep the rest."""
        if self.cut:
            return self._end_at_cut(chunk)
        if self.read_ahead is not None:
            self.read_ahead.add(chunk)
            return self._repair_when_read()
        if (end := self.output.room.draft_end(chunk, self.output.checker)) is not None:
            chunk, self.over_budget = chunk[:end], True
        checker = self.output.checker
        start = checker.chars
        try:
            taken = feed_watching(self.output, chunk)
        finally:  # a TextError (the grammar's work budget) keeps what came before its position
            self.output.add(chunk[: checker.chars - start], "draft")
            self.accepted += checker.chars - start
        if taken == len(chunk):
            return True
        rest = chunk[taken:]
        # Text that only looks like commentary (a word after a blank, a new line) is read on for
        # a repair's window: what fits after the best repair tells (`_repair`).
        if self.options.repair_window and not answer_ended(checker, rest, self.grammar):
            self.read_ahead = ReadAhead.at_cut(self.output, self.begun, self._may_repair())
            if self.read_ahead is not None:
                self.read_ahead.add(rest)
                return self._repair_when_read()
        return self._end_at_cut(rest)

    def _end_at_cut(self, rest: str) -> bool:
        """The draft ends at the cut, the reply's `rest` after it; whether to read on: up to
        `read_after_cut` where the text is incomplete, for a correction to hand back to."""
        self.cut = True
        self.rest.append(rest)
        most = self.options.read_after_cut if self.options.repair_window else 0
        return not self.output.checker.complete and sum(map(len, self.rest)) < most

    # -- repairs --------------------------------------------------------------------------------

    def _may_repair(self) -> bool:
        made = self._repairs_before + len(self.repairs)
        return may_repair(self.options, made, self.repairs, self.output.chars)

    def _repair_when_read(self) -> bool:
        """Once a window of the draft past the cut has arrived, look for a repair; where the
        reply may start the answer over, once enough of it has arrived to tell."""
        if self.read_ahead is not None and self.read_ahead.waiting(self.options.repair_window):
            return True
        return self._repair(final=False)

    def _repair(self, *, final: bool) -> bool:
        """At the cut, with the draft's rest read so far (all of the reply when `final`): make
        the best edit after which the draft fits again and read on (True), or, when none
        resynchronises, end the draft at the cut for a correction (False)."""
        ahead, self.read_ahead = self.read_ahead, None
        rest = "".join(ahead.pieces if ahead else ())
        opening = ahead.opening(rest, final=final) if ahead else None
        if opening is not None:  # a remark, a repeat or a rewrite before the continuation
            at, reason = opening
            taken = ahead.taken if ahead and reason in ("repeat", "rewrite") else ""
            self.accepted -= len(taken)
            self.output.unread(self.output.checker.chars - len(taken))  # no longer at the cut
            self.output.drop(taken + rest[:at], reason)
            self.cut = reason == "rewrite"  # nothing to go on from: no more of it is read
            return not self.cut and self._take(rest[at:])
        # A JSON object or array at the cut is read whole: it may be a value wrapped; the cut's
        # line, where the layout may show a mark left out before it (repair.line_end).
        layout = line_through(self.output.text, rest, self.output.edit_end, LINE_MORE)
        window = rest[: max(self.options.repair_window, wrapper_end(rest) or 0, layout)]
        start = prose_lines_after(self.output, rest, final=final)
        if start is not None:  # commentary after the answer: the draft ends where it starts
            return self._end_before(start, rest)
        edit = None
        if self._may_repair():
            edit = edit_at_cut(
                self.output, self.grammar, rest, window, final=final, prefer=self.prefer
            )
        if edit is None:
            # A line no edit reads on through, before commentary: it goes with the commentary
            # (where the text is complete at the cut, what follows the cut goes).
            stray = not self.output.checker.complete
            start = prose_lines_after(self.output, rest, final=final, stray=True) if stray else None
            if start is not None:
                return self._end_before(start, rest)
            return self._end_at_cut(rest)
        self.repairs.append(self.output.make(edit))
        return self._take(rest[edit.skip :])

    def _end_before(self, start: int, rest: str) -> bool:
        """The draft ends at character `start` of the text, where commentary after the answer
        starts (the text after it and the draft's `rest`)."""
        after = self.output.text[start:]
        self.accepted -= len(after)
        self.output.unread(start)
        self._end_at_cut(after + rest)
        return False  # not read on: commentary


def may_repair(options: GuideOptions, made: int, repairs: list[Repair], chars: int) -> bool:
    """Repairs are on, within budget (`made` in the run so far), and not crowding (`crowded`)."""
    if options.repair_window == 0 or made >= options.max_repairs:
        return False
    return not crowded(repairs, chars)


def crowded(repairs: list[Repair], chars: int) -> bool:
    """Whether the draft's repairs crowd its end (`_CROWDED_REPAIRS` within `_CROWDED_WITHIN`
    characters of `chars`, told apart by what they take and write): a draft that needs a new
    edit every few characters is not slipping but writing something else (prose where JSON
    goes), which an edit per word would only blank out; one that needs the same edit again is
    writing a neighbouring notation (`1.2, 3.4, 5.6` where blanks part a list)."""
    near = chars - _CROWDED_WITHIN
    edits = {(r.deleted, r.skipped, r.inserted) for r in repairs if r.at >= near}
    return len(edits) >= _CROWDED_REPAIRS


def preamble_limit(options: GuideOptions) -> int:
    """How much of the first draft the answer's start is sought in: all of it by default."""
    limit = options.max_preamble_chars
    return options.max_draft_tokens * MAX_CHARS_PER_TOKEN if limit is None else limit
