"""Repairs as edits: at a cut, the smallest edit after which the draft fits the grammar again.

A bounded form of the minimum-distance error-correcting parse (Aho and Peterson, 1972). At a cut
the committed text is C and the draft's rejected rest is R (as much of it as has arrived, up to a
window). A candidate edit backs off `back` characters of C (back into the lexeme the cut is in, or
the comma before a `}`), skips `skip` characters of R, and inserts a short `insert` the grammar
allows there: nothing, one character, a word the grammar allows where R has a word (`True` for
`true`), the one keyword the grammar allows (`ORDER BY`), R's own quoted text with its quotes
made the ones the grammar takes (`'a'` for `"a"`), an end tag (HTML, XML) left out, written
twice or swapped, as a bracket is, or what another notation's slip means
(backtrack.repair.notations:
operators, other dialects' phrases, comments, escapes). A JSON member the grammar has no place
for (a key a schema lacks) is skipped whole, as two edits (a name and its value: a quoted name
made bare, one edit, goes first). A closer the draft left out may also go where its layout
ended the block, further back (backtrack.repair.block_end); a bracketed remark where the
grammar takes no bracket is deleted whole. The engine checks each candidate in microseconds
without changing state (`Checker.fits`).

The best candidate is the one after which the most of R fits (all of it, ending a complete text,
first), then the cheapest (the edit distance between what it removes and what it inserts), then
the one that inserts least: a repair deletes the API's slip rather than inventing content around
it. A candidate that leaves the text inside a string it opened is not trusted to resynchronise:
the draft's own structure would fit there as the string's content. A candidate resynchronises
when at least `min_fit` characters of R fit after it (or all of R, when shorter); otherwise there
is no repair, and the local model writes a correction instead. Candidates that tie go to the
local model's likelihood (`prefer`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from typing import NamedTuple

from backtrack.repair.candidates import Candidate, Edit, RepairLimits, candidates
from backtrack.repair.inserts import escapes
from backtrack.repair.notations import (
    characters,
    is_comment,
    moves_end_tag,
    spaced,
)
from backtrack.repair.spacing import ended, fits_at, glued
from grammars import Checker

Prefer = Callable[[list[str]], int]
"""Given texts that differ only in their ends, the index of the one a model finds likeliest."""


class Reads(NamedTuple):
    """What an edit must read to resynchronise at once: `need` characters of the rest after it,
    and the rest as far as its character `through` (0: no such point)."""

    need: int
    through: int


def search(
    checker: Checker,
    rest: str,
    *,
    final: bool,
    floor: int,
    limits: RepairLimits,
    prefer: Prefer | None = None,
    alone: bool = False,
) -> Edit | None:
    """The cheapest edit at `checker`'s cut after which the draft's `rest` (all of the reply's
    rest when `final`) fits again, backing off no further than character `floor`; None when no
    edit resynchronises. `alone`: only an edit after which `limits.min_fit` characters fit at
    once, not the first of a path of edits. Edits that tie (`2(x` as `2*(x` or `2%(x`) go to
    `prefer`, given each one's text with the next `_SCORED` characters of the draft after it.
    The checker is left where it was."""
    budget = [_SEARCHES]
    ties: list[Edit] = []
    best = _best(
        checker,
        rest,
        final=final,
        floor=floor,
        limits=limits,
        reads=Reads(limits.min_fit, 0 if alone else _line_end(rest)),
        budget=budget,
        depth=_MAX_DEPTH if alone else 0,  # at the deepest, no path is looked through
        ties=ties if prefer is not None else None,
    )
    if best is None:
        return None
    chosen = best[0]
    if prefer is not None and ties and ties[0] is chosen:
        committed = checker.text
        texts: dict[str, Edit] = {}
        for edit in ties:
            after = rest[edit.skip :][:_SCORED]
            texts.setdefault(committed[: len(committed) - edit.back] + edit.insert + after, edit)
        if len(texts) > 1:
            chosen = list(texts.values())[prefer(list(texts))]
    chosen = _with_its_line(checker, _spaced(checker, chosen, rest), rest, floor)
    return ended(checker, glued(checker, chosen, rest, floor), rest, floor)


def _line_end(rest: str) -> int:
    """Where in the draft's `rest` the line the cut is on ends (after its line end), where that
    is near (`_LINE_NEED`), else 0: an edit resynchronises at once only where the draft reads
    on through it (`_reads_through`); one after which the line slips again is the first of a
    path, whose total cost tells (`'a' 'b'` as `"a" "b"`, not `a" "b`)."""
    return rest.find("\n", 0, _LINE_NEED) + 1


_LINE_NEED = 32


def _spaced(checker: Checker, edit: Edit, rest: str) -> Edit:
    """`edit`, its inserted operator spaced as the draft spaces its own, where the grammar takes
    that as far as the edit fitted."""
    if edit.back or edit.skip:
        return edit
    insert = spaced(checker.text, edit.insert, rest)
    if insert == edit.insert or checker.fits(insert + rest) < len(insert) + edit.fits:
        return edit
    return replace(edit, insert=insert)


_SCORED = 16  # characters of the draft after an edit that its likelihood takes in
_LINE_BEFORE = re.compile(r"\r?\n[ \t]*\Z")  # a line end and the next line's indentation
_LINE_AFTER = re.compile(r"[ \t]*(?=\r?\n)")  # blanks before a line end
_INDENT_REACH = 256  # characters of a line's indentation and text a repair reads back


def _with_its_line(checker: Checker, edit: Edit, rest: str, floor: int) -> Edit:
    """`edit`, where it deletes the whole of a line's text (a member a schema lacks, on its own
    line), with the line end before it and the blanks around it: the draft's layout goes on as
    it was, not with a blank line in it. The line end after the text stays, so the next line
    keeps its own indentation. Where that does not fit as far as the edit did, `edit`."""
    committed = checker.text
    start = len(committed) - edit.back
    tail = rest[edit.skip :]
    line = _LINE_BEFORE.search(committed, max(floor, start - _INDENT_REACH), start)
    after = _LINE_AFTER.match(tail)
    if edit.insert or not (edit.deleted or edit.skipped) or line is None or after is None:
        return edit
    if edit.fits < after.end():
        return edit  # the blanks after the text did not fit: the edit read none of that line end
    skip = edit.skip + after.end()
    fitting = rest[skip : edit.skip + edit.fits]
    if fits_at(checker, line.start(), fitting) != len(fitting):
        return edit
    back = len(committed) - line.start()
    return replace(
        edit,
        back=back,
        skip=skip,
        deleted=committed[line.start() :],
        skipped=rest[:skip],
        fits=len(fitting),
    )


Total = tuple[int, int]
"""What a path of edits costs: the edits (edit distance), then the characters it inserts."""


def _best(
    checker: Checker,
    rest: str,
    *,
    final: bool,
    floor: int,
    limits: RepairLimits,
    reads: Reads,
    budget: list[int],
    depth: int = 0,
    ties: list[Edit] | None = None,
) -> tuple[Edit, Total] | None:
    """The edit to make, and the total cost of the edits it takes to resynchronise.

    An edit resynchronises when `reads.need` characters of the rest fit after it, and the rest
    is read as far as its character `reads.through` (`_reads_through`; or the whole rest fits,
    which then, for a final reply, completes the text). An edit after which fewer fit
    resynchronises when edits at the next cuts do, up to `_MAX_DEPTH` slips in a row
    (`{'a': 1, 'b': 2}`): the path of least total cost wins. A path that costs more edits than
    the `limits.min_fit` characters it must read is none: chipping a key away a character at a
    time to reach a bracket that fits (`"severity": 3,\n "steps": [`, where an enum's value
    goes) is no slip put right, and the local model writes there instead. `ties`, when given,
    gets the edit that resynchronises at once at the least cost and the others ranked alike,
    in order."""
    budget[0] -= 1
    committed = checker.text
    was_free = checker.in_free_text()
    found = candidates(checker, committed, rest, floor, limits)
    found.sort(key=lambda c: (c.edit.cost, c.rank))
    direct = [c for c in found if _reads_through(c, reads)]
    best = _best_direct(checker, committed, direct, final=final, was_free=was_free, ties=ties)
    if depth < _MAX_DEPTH:
        tried = 0
        for c in (c for c in found if not _reads_through(c, reads)):
            if tried >= (_LOOK_AHEAD if depth == 0 else 1) or budget[0] <= 0:
                break
            if best is not None and c.edit.cost > best[1][0]:
                continue
            if not _trusted(checker, committed, c, was_free=was_free):
                continue
            tried += 1
            rest_of_path = _path_after(checker, committed, c, final, limits, reads, budget, depth)
            if rest_of_path is not None:
                total = (c.edit.cost + rest_of_path[0], len(c.edit.insert) + rest_of_path[1])
                if total[0] > limits.min_fit:
                    continue
                if best is None or total < best[1]:
                    best = (c.edit, total)
    _restore(checker, committed)
    return best


def _best_direct(
    checker: Checker,
    committed: str,
    direct: list[Candidate],
    *,
    final: bool,
    was_free: bool,
    ties: list[Edit] | None,
) -> tuple[Edit, Total] | None:
    """Of the candidates after which enough of the rest fits at once (cheapest first), the best
    one that is trusted, and its total; `ties` gets it and those ranked alike."""
    best: tuple[Edit, Total] | None = None
    key = None  # the ranking of the best direct edit that completes
    for c in direct:
        if best is not None and c.edit.cost > best[1][0]:
            break
        if key is not None and (ties is None or (c.edit.cost, c.rank) != key):
            break
        if not _trusted(checker, committed, c, was_free=was_free):
            continue
        # A final reply that fits whole but leaves the text unfinished counts one edit more
        # than one that completes it: `["a", "b",{}` does not beat `["a", "b"]`.
        unfinished = final and c.whole and not _completes(checker, committed, c)
        total = (c.edit.cost + unfinished, len(c.edit.insert))
        if key is not None:
            if not unfinished and ties is not None:
                ties.append(c.edit)
            continue
        if best is None or total < best[1]:
            best = (c.edit, total)
        if not unfinished:
            key = (c.edit.cost, c.rank)
            if ties is not None:
                ties.append(c.edit)
    return best


def _reads_through(c: Candidate, reads: Reads) -> bool:
    """Whether candidate `c` resynchronises at once: `reads.need` characters of the rest fit
    after it (`Candidate.reads`), and what it skips and what fits after it reach the rest's
    character `reads.through` (or all of the rest fits)."""
    return c.reads(reads.need) and (c.edit.skip + c.edit.fits >= reads.through or c.whole)


def _path_after(
    checker: Checker,
    committed: str,
    c: Candidate,
    final: bool,
    limits: RepairLimits,
    reads: Reads,
    budget: list[int],
    depth: int,
) -> Total | None:
    """What the edits at the next cuts cost after candidate `c`, None when none resynchronise;
    `reads`: what it was to read (`_best`)."""
    _apply(checker, committed, c.edit, c.tail[: c.edit.fits])
    read = c.edit.skip + c.edit.fits
    following = _best(
        checker,
        c.tail[c.edit.fits :],
        final=final,
        floor=len(committed) - c.edit.back + len(c.edit.insert),
        limits=limits,
        reads=Reads(reads.need - c.edit.fits, max(0, reads.through - read)),
        budget=budget,
        depth=depth + 1,
    )
    return None if following is None else following[1]


_MAX_DEPTH = 5  # slips in a row one search looks through
_LOOK_AHEAD = 3  # edits followed to the next cut at the first level (one at deeper ones)
_SEARCHES = 32  # searches of the next cuts, at most, for one repair


def _apply(checker: Checker, committed: str, edit: Edit, fitting: str) -> None:
    """The checker at the committed text with `edit` made and `fitting` fed after it."""
    _restore(checker, committed[: len(committed) - edit.back])
    checker.feed(edit.insert)
    checker.feed(fitting)


def _restore(checker: Checker, text: str) -> None:
    """The checker at exactly `text`, which shares a prefix with what it holds."""
    held = checker.text
    limit = min(len(held), len(text))
    # They differ near their ends only: compare the long start at once, the rest one by one.
    keep = max(0, limit - 512)
    if held[:keep] != text[:keep]:
        keep = 0
    while keep < limit and held[keep] == text[keep]:
        keep += 1
    checker.rollback(keep)
    checker.feed(text[keep:])


def _trusted(checker: Checker, committed: str, c: Candidate, *, was_free: bool) -> bool:
    """Whether edit `c` resynchronises for real. Outside a string at the cut, an edit that backs
    off into a string, or leaves the text inside one, is not trusted: the draft's own structure
    would fit there as the string's content, however well it then fits (a backquote before
    `::integer AS price FROM items;` makes all of it one quoted name)."""
    edit = c.edit
    _restore(checker, committed[: len(committed) - edit.back])
    inside = not was_free and checker.in_free_text()
    if inside and edit.insert in escapes(checker, edit.deleted, edit.skipped + c.tail):
        # A quote escaped in a string: trusted when the draft's rest that fits then closes that
        # string itself, with a quote of the same kind.
        return edit.deleted[0] in c.tail[: edit.fits]
    if (edit.insert, edit.skip) in characters(edit.deleted, edit.skipped + c.tail):
        return True  # an escape as its character: the string's bounds are the draft's own
    if moves_end_tag(edit.deleted + edit.skipped, edit.insert):
        return True  # an end tag inserted or deleted: the element's text ends as it did
    checker.feed(edit.insert)
    # A line comment written in the grammar's notation is open until its line's end, next.
    inside = inside or (
        not was_free and checker.in_free_text() and not is_comment(edit.insert, c.tail)
    )
    # Blanks inserted before a line's free text (`-Build` as `- Build`) open nothing themselves.
    blanks = not edit.insert.strip()
    return not inside or (blanks and _line_ends_it(checker, c.tail[: edit.fits]))


def _line_ends_it(checker: Checker, fitting: str) -> bool:
    """Whether the free text the checker is in is a line's (a list item's text, an INI value):
    the draft's next line end, within `fitting` or (where all of it is in the free text) after
    it, ends it, and leaves what follows it to be read as structure, not as its content. A
    JSON string refuses a line end; an HTML element's text goes on after one."""
    line_end = fitting.find("\n")
    checker.feed(fitting if line_end < 0 else fitting[:line_end])
    if not checker.in_free_text() or checker.fits("\n") != 1:
        return False
    checker.feed("\n")
    return not checker.in_free_text()


def _completes(checker: Checker, committed: str, c: Candidate) -> bool:
    """Whether the text is complete after edit `c` and the rest that fits."""
    _apply(checker, committed, c.edit, c.tail[: c.edit.fits])
    return checker.complete


def completes(checker: Checker, edit: Edit, fitting: str) -> bool:
    """Whether the text is complete after `edit` and `fitting`, the draft's text that fits after
    it; the checker is left at the text it holds."""
    committed = checker.text
    _apply(checker, committed, edit, fitting)
    complete = checker.complete
    _restore(checker, committed)
    return complete
