"""A phrase of another dialect that the grammar writes elsewhere: SQL Server's `SELECT TOP 5
name FROM t` is SQLite's `SELECT name FROM t LIMIT 5`. A repair deletes it where the API wrote it
(backtrack.repair.notations.MOVES), and once the reply is over and the text complete, what the
grammar writes for it goes to the first place after that where the whole text is complete with
it: in the brackets the phrase was in (a subquery's `TOP` goes in its subquery), after a word,
before a blank, a `;`, a closer or the end; not where the text was passed on as it came
(`on_text`); and only where the grammar does not take it where the phrase stood (`SELECT LIMIT
5` is no SQL: in free text, no place would tell). Where no place is found, it is not written,
and the deleted phrase counts as lost (`GuideResult.lost_chars`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from backtrack.run.layout import completes_with

if TYPE_CHECKING:
    from backtrack.run.output import Output
    from backtrack.trace.record import Repair
    from grammars import Checker

MAX_REACH = 1024  # characters after the deletion that a move's place is looked for in
_OPENERS, _CLOSERS, _QUOTES = "([{", ")]}", "'\"`"
_BEFORE = " \t\r\n;" + _CLOSERS  # what the meaning may go before, after a word's end


def place_moves(output: Output) -> list[Repair]:
    """Write each deleted phrase's meaning where the output's text is complete with it; the
    records of those written (the others are forgotten)."""
    placed = []
    while output.moves:
        where, there = output.moves.pop(0)
        if _fits_at(output.checker, where, there):
            continue  # free text, not a grammar that writes it elsewhere: no place tells
        at = _place(output, where, " " + there)
        if at is not None:
            placed.append(output.insert(at, " " + there))
    return placed


def _fits_at(checker: Checker, at: int, text: str) -> bool:
    """Whether the grammar takes `text` at character `at`, where the phrase stood; the checker
    is left at the text it holds."""
    held = checker.text
    checker.rollback(at)
    fits = checker.fits(text) == len(text)
    checker.feed(held[at:])
    return fits


def _place(output: Output, start: int, insert: str) -> int | None:
    """The first character at or after `start` (within MAX_REACH) and after the text passed on,
    in the brackets the phrase was in (not in a bracket or a quote opened after it), that ends a
    word, where the text with `insert` there is complete; None where there is none."""
    text = output.text
    depth, quote = 0, ""
    for at in range(start, min(len(text), start + MAX_REACH) + 1):
        before = text[at - 1] if at else ""
        if quote:
            quote = "" if before == quote else quote
        elif before in _QUOTES and at > start:
            quote = before
        elif before in _OPENERS and at > start:
            depth += 1
        elif before in _CLOSERS and at > start:
            depth -= 1
            if depth < 0:
                return None  # the brackets the phrase was in are closed
        after = text[at : at + 1]
        at_word_end = before and not before.isspace() and (not after or after in _BEFORE)
        free = not depth and not quote and at >= output.passed
        if free and at_word_end and completes_with(output.checker, at, insert):
            return at
    return None
