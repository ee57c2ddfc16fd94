"""After a cut in a draft round: the reply read on before a repair is looked for (backtrack.run.
draft), and what it opens with that is not the answer's continuation: a remark, a code fence's
opening, or the answer started over (backtrack.repair.restart)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from backtrack.repair.json_shapes import wrapper_end
from backtrack.repair.line_end import item_end
from backtrack.repair.restart import Restart
from backtrack.run.prose import sentence, spoken
from backtrack.run.trailing import LINE_MORE, through_line
from providers.align import FENCE_OPENING

if TYPE_CHECKING:
    from backtrack.run.output import Output
    from backtrack.trace.record import DropReason


@dataclass
class ReadAhead:
    """After a cut: the reply read on, to find a repair in. Where the cut came before the round
    added anything to the answer (`fresh`; or the first reply, before its first character fitted),
    the reply may open with a remark (`Sure! Here is the rest:`, `This is a continuation of the
    previous message.`, `Here are five tips:`) or start the answer over
    (`restart`): it is read on until its first line has ended, or enough has arrived to tell.
    A restart may have begun before the cut: the round's first characters (`taken`, a few, on
    one line) fitted where the answer was left (`{` in a string a correction left open)."""

    fresh: bool = False
    restart: Restart | None = None
    taken: str = ""
    pieces: list[str] = field(default_factory=list)
    chars: int = 0
    lines: bool = False  # a line end has arrived
    head: str = ""  # the first non-blank character
    complete: bool = False  # cut at a complete point: read through the window's line
    layout: bool = False  # the line before the cut's ends an item: read through the cut's line
    # The cut's line so far, where the text was complete at its start: it may be commentary
    # after the answer (`prose_lines_after`), told once two lines have ended, or the reply.
    line: str | None = None

    @classmethod
    def after(cls, output: Output, begun: int) -> ReadAhead:
        """At a cut in the output's text, in a continuation that began at character `begun`."""
        text = output.text
        answer, taken = text[:begun].strip(), text[begun:]
        # Or the first reply, cut before its first character fitted: `Here are five tips:`.
        fresh = (bool(answer) or not begun) and not taken.strip()
        # Or with a few characters taken, where no edit of this round (nor a promise: they are
        # the output's last few) holds them there.
        short = len(taken) <= _RESTART_TAKEN and "\n" not in taken
        begins = fresh or (short and output.edit_end <= begun)
        ahead = cls(fresh, Restart.of(text[:begun]) if answer and begins else None)
        ahead.complete = output.checker.complete
        ahead.layout = item_end(text, output.edit_end) is not None
        start, complete_at_start = output.checker.last_line()
        if start > 0 and complete_at_start:
            ahead.line = text[start:]
        if ahead.restart is not None and not fresh:
            ahead.taken, ahead.head = taken, taken.lstrip()[:1]
        return ahead

    @classmethod
    def at_cut(cls, output: Output, begun: int, repairs: bool) -> ReadAhead | None:
        """At a cut: the reply is read on where a repair may be sought (`repairs`), and, with no
        repair left, where it may open with a remark or start the answer over (a continuation's
        start): neither is a repair. Else None."""
        ahead = cls.after(output, begun)
        return ahead if repairs or ahead.fresh or ahead.restart is not None else None

    def add(self, piece: str) -> None:
        self.pieces.append(piece)
        self.chars += len(piece)
        self.lines = self.lines or "\n" in piece
        self.head = self.head or piece.lstrip()[:1]

    def waiting(self, window: int) -> bool:
        """Whether to read on before deciding: a repair's `window` has not arrived yet, or, after
        a complete text, the line it ends in (more document or commentary: `reads_on`), or,
        after a line that ends an item, the cut's line to its end (a mark the layout shows left
        out: backtrack.repair.line_end), or a JSON object or array at the cut to its end (a
        value wrapped: `unwrapped_whole`), or not enough to tell a remark or a restart."""
        if self.line is not None and self.chars < LINE_MORE and self._prose_so_far(self.line):
            return True
        remark = self.head.isalpha() or self.head == "`"
        if self.fresh and remark and not self.lines and self.chars < _MAX_REMARK:
            return True
        if self.restart is not None:
            if self.restart.hopeless(self.head):
                self.restart = None
            elif not self.restart.enough(self.taken + "".join(self.pieces)):
                return True
        if self.chars < window:
            return True
        if self.layout and not self.lines and self.chars < window + LINE_MORE:
            return True
        if not (self.complete or self.pieces[0][:1] in ("{", "[")):
            return False
        if self.chars >= window + LINE_MORE:
            return False
        arrived = "".join(self.pieces)
        if self.complete:
            return through_line(arrived, window) == arrived
        return wrapper_end(arrived) is None

    def _prose_so_far(self, line: str) -> bool:
        """Whether the lines after the answer (from the cut's `line` on) that have ended are,
        after the first (a sentence, or a line no edit may read on through:
        `prose_lines_after`), fewer than two, and each a sentence: a sentence the grammar reads
        on into (`This 6502 assembly program ...`, `This` a label) is commentary once more, or
        the reply's end, say so."""
        ended = (line + "".join(self.pieces)).split("\n")[:-1]
        said = [line for line in ended if line.strip()][1:]
        return len(said) < 2 and all(map(sentence, said))

    def opening(self, rest: str, *, final: bool) -> tuple[int, DropReason] | None:
        """What the reply opens with before its continuation, and why it goes: a first line
        that is a remark about the text or a code fence's opening, or a repeat of the answer
        (all of it; or, in a reply that ended there, `final`, a start of it: then the whole
        reply), or a rewrite of it (all of the reply so far, with nothing to go on from).
        None: none of them."""
        line, newline, _ = rest.partition("\n")
        if self.fresh and newline and len(line) < _MAX_REMARK:
            if spoken(line):
                return len(line) + 1, "preamble"
            if FENCE_OPENING.fullmatch(line + newline):
                return len(line) + 1, "fence"
        if self.restart is None:
            return None
        reply = self.taken + rest
        repeated = self.restart.end(reply)
        if repeated is None and final and self.restart.within(reply):
            repeated = len(reply)  # the answer's start again, and the reply ended
        if repeated is None and self.restart.rewrites(reply, final=final):
            return len(rest), "rewrite"  # the answer over, never back to where it stopped
        return None if repeated is None else (repeated - len(self.taken), "repeat")


_MAX_REMARK = 240  # characters of a continuation's first line that may be a remark
_RESTART_TAKEN = 8  # characters of a round, at most, that a restart of the answer began with
