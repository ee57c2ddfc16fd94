"""A guided run's output as it is made: the committed text, the spans it came in, the API's text
left out, how far back a later step may still change it, and how much more of it the target's
context can read (`room`, backtrack.run.context). The loop (backtrack.run.loop) and
what it calls (backtrack.run.draft, backtrack.run.schema, backtrack.run.trailing) share one.

Invariant: `checker.text` is the committed output, and it is always a valid prefix of the grammar.
No step changes its first `passed` characters; nor its first `promised` ones, but for a closer the
API left out lines back (backtrack.run.layout), where none was passed on.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from backtrack.repair.candidates import RepairLimits
from backtrack.repair.conditionals import conditional_pieces
from backtrack.repair.fields import quoted_pieces
from backtrack.repair.notations import moved
from backtrack.run.context import ContextRoom
from backtrack.trace.record import Drop, DropReason, Origin, Repair, Span
from backtrack.trace.spans import SpanLog

if TYPE_CHECKING:
    from backtrack.repair.candidates import Edit
    from grammars.grammar import Grammar

logger = logging.getLogger(__name__)

# How far a repair may reach (backtrack.repair.search): the defaults, measured on the repair set.
REPAIR_LIMITS = RepairLimits()


class Output:
    def __init__(self, grammar: Grammar, room: ContextRoom | None = None) -> None:
        self.checker = grammar.checker()
        self.room = room if room is not None else ContextRoom(None, 0)  # None: no known context
        self.log = SpanLog()
        self.drops: list[Drop] = []
        self.round = 0  # the round under way: its spans and drops carry this index
        # No repair takes back text before this point: the end of the last edit.
        self.edit_end = 0
        # The most characters passed on as final (GuideLoop.final_chars): none of them changes.
        self.promised = 0
        # Of those, the characters the caller was given as they came (`on_text`); none without.
        self.passed = 0
        # None of the text past this is final yet (a continuation inside a string: stray_reply).
        self.hold: int | None = None
        # Phrases a repair deleted whose meaning goes further on (backtrack.run.moves): where
        # each was deleted, and what the grammar writes for it there.
        self.moves: list[tuple[int, str]] = []

    @property
    def text(self) -> str:
        return self.checker.text

    @property
    def chars(self) -> int:
        return self.checker.chars

    @property
    def spans(self) -> tuple[Span, ...]:
        """Every span so far, in order."""
        return self.log.all()

    def add(self, text: str, origin: Origin) -> None:
        """A span of `origin` in the trace (committed text, or text shown beside it)."""
        self.log.add(text, origin, self.round)

    def drop(self, text: str, reason: DropReason) -> None:
        """Leave the API's `text` out, where the output now ends, for `reason`."""
        if text:
            self.add(text, "dropped")
            self.drops.append(Drop(text, reason, self.round, self.checker.chars))

    def take_back(self, at: int) -> None:
        """The text from character `at` on goes (shown as deleted); a repair may reach back to
        `at` again."""
        self.log.retract(self.checker.chars - at)
        self._rollback(at)
        self.edit_end = min(self.edit_end, at)

    def unread(self, start: int) -> None:
        """The text from character `start` on was not answer after all: it leaves the output and
        the trace (the caller shows it as dropped), and the checker is no longer at a cut."""
        if start < self.checker.chars:
            self.log.retract(self.checker.chars - start, shown=False)
        self._rollback(start)

    def delete(self, start: int, end: int) -> None:
        """Characters `start` to `end` go (shown as deleted), and the text after them is read
        again: it must fit where they were."""
        tail = self.text[end:]
        self.log.delete(start, end)
        self._rollback(start)
        if self.checker.feed(tail) != len(tail):
            raise RuntimeError("the text after a deletion does not fit where it was")
        self.edit_end = min(self.edit_end, start)

    def insert(self, at: int, text: str) -> Repair:
        """`text` goes in before character `at` as an edit, and the text after it is read again:
        it must fit after it. Returns its record."""
        tail = self.text[at:]
        self.log.insert(at, text, "edit", self.round)
        self.checker.rollback(at)
        if self.checker.feed(text + tail) != len(text) + len(tail):
            raise RuntimeError("the text after an insertion does not fit after it")
        self.edit_end = at + len(text)
        self.moves = [(w + len(text) * (w > at), there) for w, there in self.moves]
        return Repair(at, "", "", text, len(tail))

    def make(self, edit: Edit) -> Repair:
        """Make `edit`: the committed text backs off (shown as deleted), the draft's skipped text
        is shown as skipped, the inserted text is committed as an edit. Returns its record."""
        checker = self.checker
        at = checker.chars - edit.back
        # An insertion further back (`]` before `, "b"`) reads the backed-off text again: it is
        # moved, not deleted. So is a field quoted whole, or a conditional in the grammar's form:
        # the API's text in it is its own.
        removed = edit.deleted + edit.skipped
        quoted = quoted_pieces(removed, edit.insert) or conditional_pieces(removed, edit.insert)
        reread = edit.deleted if edit.deleted and edit.insert.endswith(edit.deleted) else ""
        self.log.retract(edit.back, shown=not (reread or quoted))
        checker.rollback(at)
        if checker.feed(edit.insert) != len(edit.insert):
            raise RuntimeError("a repair's inserted text does not fit where it was checked")
        inserted = edit.insert[: len(edit.insert) - len(reread)]
        if quoted is not None:
            for piece, own in quoted:
                self.add(piece, "draft" if own else "edit")
        else:
            self._moved(edit, inserted, reread)
        self.edit_end = checker.chars
        there = moved(removed, edit.insert)
        if there is not None:
            self.moves.append((checker.chars, there))
        deleted = "" if reread else edit.deleted
        logger.debug(
            "repair at character %d: %d deleted, %d skipped, %d inserted; %d characters fit",
            at,
            len(deleted),
            len(edit.skipped),
            len(inserted),
            edit.fits,
        )
        return Repair(at, deleted, edit.skipped, inserted, edit.fits)

    def _rollback(self, at: int) -> None:
        """The text goes back to its first `at` characters, and the moves of repairs past them."""
        self.checker.rollback(at)
        self.moves = [(where, there) for where, there in self.moves if where <= at]

    def _moved(self, edit: Edit, inserted: str, reread: str) -> None:
        """The spans of an edit that inserts `inserted` and reads `reread` (backed off) again:
        where the insert is the API's own skipped text, moved (a value read out of its wrapper,
        a number out of quotes), that is shown as the draft's."""
        moved = edit.skipped.find(edit.insert) if edit.insert and not edit.back else -1
        skipped, after = edit.skipped, ""
        if moved >= 0:
            skipped, after = edit.skipped[:moved], edit.skipped[moved + len(edit.insert) :]
        self.add(skipped, "skipped")
        self.add(inserted, "edit" if moved < 0 else "draft")
        self.add(reread, "draft")
        self.add(after, "skipped")
