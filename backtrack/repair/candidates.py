"""Candidate edits at a cut: each way of backing off, skipping and inserting (backtrack.repair.
inserts) after which the draft goes on fitting, with its cost and rank (backtrack.repair.search
picks among them)."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from backtrack.repair.block_end import block_end
from backtrack.repair.conditionals import conditional_forms, conditionals
from backtrack.repair.fields import quoted_fields, quoted_pieces
from backtrack.repair.inserts import end_tags, escapes, inserts
from backtrack.repair.json_shapes import (
    json_member,
    renames_by_words,
    renames_key,
    unquoted,
    unwrapped_whole,
    wrapped_values,
)
from backtrack.repair.line_end import line_end
from backtrack.repair.notations import (
    BRACKETS,
    CLOSERS,
    CONTEXT,
    changes_words,
    characters,
    comment_at,
    common,
    decoded,
    distance,
    edit_distance,
    flips_tag,
    is_comment,
    moves_end_tag,
    quote_count,
    remark_at,
    unlike_classes,
    word_at,
)
from grammars import Checker


@dataclass(frozen=True)
class RepairLimits:
    """How far a repair may reach: `max_back` committed characters, `max_skip` draft characters
    (or the draft's next word), words of at most `max_word` letters with at most `word_nodes`
    prefixes explored, and `min_fit` characters of the draft that must fit after it."""

    max_back: int = 8
    max_skip: int = 4
    max_word: int = 8
    word_nodes: int = 96
    min_fit: int = 8


@dataclass(frozen=True)
class Edit:
    """Remove the last `back` committed characters (`deleted`), skip the draft's next `skip`
    characters (`skipped`), insert `insert`; then `fits` characters of the rest fit."""

    back: int
    skip: int
    insert: str
    deleted: str
    skipped: str
    fits: int
    cost: int


def skips(rest: str, limits: RepairLimits) -> list[int]:
    """How much of the draft a candidate may skip: a few characters, its next word with the
    blanks after it, or the first parts of that word (`concert_`, `concert` of `concertVenue`)."""
    found = set(range(min(limits.max_skip, len(rest)) + 1))
    word = word_at(rest)
    if word:
        found.add(word)
        found.add(word + len(rest[word:]) - len(rest[word:].lstrip(" ")))
        found.update(m.end() for m in _PART_END.finditer(rest, 1, word))
    return sorted(found)


_PART_END = re.compile(r"_+|(?<=[a-z0-9])(?=[A-Z])")  # where a word's first parts end


@dataclass(frozen=True)
class Candidate:
    edit: Edit
    tail: str  # the draft's rest after the skip
    rank: tuple[int, int, int, int, int, int]  # after the cost, lower first: see _scored
    own: int = 0  # characters of the insert that are the skipped text's own (a wrapper's value)

    @property
    def whole(self) -> bool:
        return self.edit.fits == len(self.tail)

    def reads(self, need: int) -> bool:
        """Whether `need` characters of the API's text are read after the edit (or all of its
        rest): what fits after it, and what of it the insert carries over."""
        return self.edit.fits + self.own >= min(max(need, 1), len(self.tail) + self.own)


def candidates(
    checker: Checker, committed: str, rest: str, floor: int, limits: RepairLimits
) -> list[Candidate]:
    """Every candidate edit after which at least one character of the rest fits (or all of an
    empty rest; or none, after a word or quoted text put right); leaves the checker backed off."""
    base = len(committed)
    was_free = checker.in_free_text()
    found: list[Candidate] = []
    for reach in (quoted_fields, conditionals):  # reaching further back; each backs it off
        for move in reach(checker, committed, rest, floor):
            found += _candidate(checker, committed, move, rest, move[2])
        checker.feed(committed[checker.chars :])
    block = block_end(committed, floor)
    if block is not None:  # the closer where the layout ended its block, the rest read again
        at, closer = block
        checker.rollback(at)
        found += _candidate(checker, committed, (base - at, closer + committed[at:], 0), rest, 0)
        checker.feed(committed[at:])
    left = line_end(committed, rest, floor)
    if left is not None:  # the mark the layout shows left out, at the end of the line before
        at, mark = left
        checker.rollback(at)
        found += _candidate(checker, committed, (base - at, mark + committed[at:], 0), rest, 0)
        checker.feed(committed[at:])
    for back in range(min(limits.max_back, base - floor) + 1):
        checker.rollback(base - back)
        deleted = committed[base - back :]
        for insert, only in _inserts_after(checker, deleted, rest, limits, was_free=was_free):
            for skip in [only] if only is not None else skips(rest, limits):
                if (back, skip, insert) == (0, 0, "") or insert == deleted + rest[:skip]:
                    continue  # no edit: that is the cut itself
                if skip and skip == len(rest) and only is None and _made_up(deleted, rest, insert):
                    continue  # the draft's whole rest replaced: that is no resynchronisation
                found += _candidate(checker, committed, (back, insert, skip), rest, only)
    found = _past_block_end(found, base, block, limits.min_fit)
    return _past_line_end(found, committed, left, limits.min_fit)


def _past_line_end(
    found: list[Candidate], committed: str, left: tuple[int, str] | None, need: int
) -> list[Candidate]:
    """The candidates, where the one that writes the mark the layout shows left out (`left`:
    where, in the `committed` text, and the mark) reads `need` characters of the rest: that one
    at no cost, every other one edit dearer."""
    if left is None:
        return found
    at, mark = left
    insert = mark + committed[at:]
    placed = [c for c in found if c.edit.back == len(committed) - at and c.edit.insert == insert]
    if not any(c.reads(need) for c in placed):
        return found
    return [
        replace(c, edit=replace(c.edit, cost=0 if c in placed else c.edit.cost + 1)) for c in found
    ]


def _past_block_end(
    found: list[Candidate], base: int, block: tuple[int, str] | None, need: int
) -> list[Candidate]:
    """The candidates, where one writes the block's closer where the layout ended the block
    (`block`: that place in the committed text, `base` long, and the closer) and `need`
    characters of the rest fit after it, those that write it after that place, or drop an
    opener of the line after it, one edit dearer: a closer goes where its block ended, and the
    next line's own brackets stay (`s218[`, not `s218`)."""
    if block is None:
        return found
    at, closer = block
    placed = (c for c in found if c.edit.back == base - at and c.edit.insert[:1] == closer)
    if not any(c.reads(need) for c in placed):
        return found
    return [
        replace(c, edit=replace(c.edit, cost=c.edit.cost + 1))
        if _past(c.edit, base - at, closer)
        else c
        for c in found
    ]


def _past(edit: Edit, back: int, closer: str) -> bool:
    """Whether `edit` writes `closer` after the place `back` characters before the cut, or
    drops an opener there."""
    removed = (edit.deleted + edit.skipped).strip(" \t")
    return edit.back < back and (edit.insert[:1] == closer or removed in BRACKETS)


def _made_up(deleted: str, rest: str, insert: str) -> bool:
    """Whether `insert`, in place of `deleted` and all of the draft's `rest` (none of which is
    read after it), is made up: anything but its characters' like, class for class (`]` for
    `}`). Seen: an enum's value and the object's `}` replaced by a line end, or a quote."""
    removed = deleted + rest
    return len(insert) != len(removed) or unlike_classes(removed, insert) > 0 or not insert.strip()


def _candidate(
    checker: Checker, committed: str, move: tuple[int, str, int], rest: str, only: int | None
) -> list[Candidate]:
    """The candidate that backs off, inserts and skips as `move` says, scored, where the draft
    goes on fitting after it (the checker is backed off already); else none."""
    back, insert, skip = move
    tail = rest[skip:]
    # Most candidates fail within a few characters: check those first, then the rest.
    taken = checker.fits(insert + tail[:_QUICK])
    if taken == len(insert) + min(_QUICK, len(tail)) and len(tail) > _QUICK:
        taken = checker.fits(insert + tail)
    # A word or a quoted text put right may have the next slip right after it
    # (`'up',}`: the quotes mended, then the comma): a step of a path, see search.
    if taken < len(insert) or (taken == len(insert) and tail and only is None):
        return []
    base = len(committed)
    deleted = committed[base - back :]
    edit = Edit(back, skip, insert, deleted, rest[:skip], taken - len(insert), 0)
    # Scoring reads CONTEXT characters before the edit: not a copy of a long text.
    before = committed[max(0, base - back - CONTEXT) : base - back]
    return [_scored(before, edit, deleted + rest[:skip], tail, only)]


_QUICK = 4  # characters checked first for each candidate


def _inserts_after(
    checker: Checker, deleted: str, rest: str, limits: RepairLimits, *, was_free: bool
) -> list[tuple[str, int | None]]:
    """What may be inserted where `deleted` was backed off, each with its skip (None: any)."""
    if deleted and not was_free and checker.in_free_text():
        # Backed into a string: not trusted (see search), but for its closing quote, which may
        # be a quote in its text the API did not escape.
        found: list[tuple[str, int | None]] = [
            (escaped, 0) for escaped in escapes(checker, deleted, rest)
        ]
    else:
        found = inserts(
            checker, deleted, rest, max_word=limits.max_word, word_nodes=limits.word_nodes
        )
    found += characters(deleted, rest) + end_tags(checker, deleted, rest)
    member = json_member(deleted + rest)
    if member is not None and member > len(deleted):  # a key the grammar has no place for
        found.append(("", member - len(deleted)))
    return found + _unwrapped(checker.text[-_ITEM_CONTEXT:], deleted, rest)


_ITEM_CONTEXT = 256  # characters before a cut that tell an array's item (its `[` or `,`, blanks)


def _unwrapped(before: str, deleted: str, rest: str) -> list[tuple[str, int | None]]:
    """A value wrapped in an object or an array where the grammar wants another value: one of
    its first values in its place (`wrapped_values`), read on from there; as an array's item,
    in place of all of it (`unwrapped_whole`). Backed off into an opening the grammar took, only
    an object or array in its place: the whole answer wrapped (`{"data": [{...}]}`), not an
    object the grammar takes written with a quoted name (GraphQL's `{ "x": 1.5 }`)."""
    text = deleted + rest
    starts = wrapped_values(text)
    inside = [at for at in starts if at > len(deleted)]
    found: list[tuple[str, int | None]] = [
        ("", at - len(deleted)) for at in inside if not deleted or text[at] in "{["
    ]
    if not deleted and before.rstrip()[-1:] in ("[", ","):
        found += [(value, end) for value, end, _ in unwrapped_whole(rest)]
    return found


def _requotes(removed: str, insert: str) -> bool:
    """A bare value quoted, a quoted number unquoted, or a field quoted whole with its quotes
    escaped (backtrack.repair.fields): the API's own value either way."""
    return (
        insert == f'"{removed}"'
        or unquoted(removed) == (len(removed), insert)
        or quoted_pieces(removed, insert) is not None
    )


def _leaves_blanks(before: str, tail: str) -> bool:
    """Whether text `before` ends in blanks that now stand before blanks, a line end, a mark
    or a closer (`tail` goes on with one, or is all of the draft's text)."""
    return before[-1:] in (" ", "\t") and tail[:1] in (" ", "\t", "\n", "\r", "", *",;)]}")


def _closer_astray(before: str, insert: str, tail: str) -> bool:
    """Whether `insert` puts a closer away from what it closes: after a separator (`;]`), inside
    a word (`s168]2`), or at a line's start with more on its line (`\n\t]A1 -> B1`, `\n]}`). It
    goes right after the content: `[shape=plaintext];` (one edit more, so a closer there wins
    the tie)."""
    if not insert or insert[0] not in CLOSERS:
        return False
    after = (insert[1:] + tail)[:1]
    line_start = before.rstrip(" \t")[-1:] in ("\n", "\r")
    alone = tail.lstrip(" \t")[:1] in ("", "\n", "\r")  # nothing else on its line
    splits = before[-1:].isalnum() and after.isalnum()
    return before[-1:] in (",", ";") or splits or (line_start and not alone)


def _takes_comment_apart(before: str, removed: str, tail: str) -> bool:
    """Whether the edit takes away the start of what reads as a line comment after blanks, not
    all of it (`))  ; done` read as two statements, `; ` as a line end): one edit more than
    another notation's operator costs, where deleting the comment costs one."""
    opening = removed.lstrip(" \t")
    comment = comment_at(opening + tail)
    spaced = (before + removed[: len(removed) - len(opening)])[-1:] in (" ", "\t")
    return spaced and comment is not None and 0 < len(opening) < comment[0]


def _deletes_lone(before: str, removed: str, insert: str, tail: str) -> bool:
    """Whether the edit, in all, deletes one character that doubles neither character beside
    it: of two such edits that read the draft alike, one deleting a doubled character is
    likelier the slip (`-->` as `->`, not `--`)."""
    if len(removed) != len(insert) + 1:
        return False
    at = 0 if removed.endswith(insert) else len(insert) if removed.startswith(insert) else -1
    if at < 0:
        return False
    left, right = (before + removed[:at])[-1:], (removed[at + 1 :] + tail)[:1]
    return removed[at] not in (left, right)


def _closes(removed: str, insert: str) -> bool:
    """Whether `insert` is closing brackets and then the `removed` text read again."""
    opened = insert[: len(insert) - len(removed)]
    return bool(opened) and insert.endswith(removed) and not opened.strip(CLOSERS)


def _same_text(removed: str, insert: str) -> bool:
    """Whether `insert` says what `removed` says in the grammar's notation: the same string, an
    escape written as its character; another notation's conditional, its words in the
    grammar's order (backtrack.repair.conditionals)."""
    return decoded(removed) == (len(removed), insert) or insert in conditional_forms(removed)


def _aside_cost(before: str, removed: str, insert: str, tail: str) -> int | None:
    """The cost of an edit of a comment or a bracketed remark (`removed` whole, after the text
    `before`, `tail` after it): written in the grammar's notation, or deleted with the blanks
    before it where they would be left before blanks, a line's end or a mark (`f200 l170  //
    next side`, `709000 (approx.),`). A remark deleted costs one more: it may hold content.
    None for other edits."""
    if is_comment(removed.lstrip(" \t"), tail):
        return 0 if insert else 1 + _leaves_blanks(before, tail)
    if not insert and remark_at(removed) == len(removed):
        return 2 + _leaves_blanks(before, tail)
    return None


def _scored(before: str, edit: Edit, removed: str, tail: str, only: int | None) -> Candidate:
    """`edit`, which removes `removed` after the text `before` (its last CONTEXT characters) and
    leaves `tail` to read, with its cost and rank; `only`: the insert's skip (None: any)."""
    insert = edit.insert
    own = 0
    tag_edit = only is not None and moves_end_tag(removed, insert)
    deletes = only is not None and not insert  # a notation's whole span, deleted
    quoted = only is not None and _requotes(removed, insert)
    aside = _aside_cost(before, removed, insert, tail) if only is not None else None
    if aside is not None:
        cost = aside
    elif only is not None and _same_text(removed, insert):
        cost = 0  # an escape written as its character; a conditional in the grammar's order
    elif only == 0 and insert[:1].isalpha() and not removed:
        cost = 1  # the one keyword the grammar allows here, left out
    elif tag_edit:
        cost = 1  # an end tag written twice, left out or swapped
    elif deletes and json_member(removed) == len(removed):
        cost = 2  # a JSON object's member deleted whole: a name and its value
    elif deletes and len(removed) in (starts := wrapped_values(removed + tail)):
        cost = 1 + starts.index(len(removed))  # a wrapper opened
    elif whole := [c for v, end, c in unwrapped_whole(removed) if (v, end) == (insert, only)]:
        cost, own = whole[0], len(insert)  # a wrapper read as its value
    elif only is None and renames_by_words(before, removed, insert, tail):
        cost = 1  # a key with a word more or less than the grammar's: `cuisine_type`
    elif quoted:
        cost = 1  # a bare value quoted (`10.0.0.2` too, taken for a number), or `"31"` bare
    else:
        word_swap = only is not None and insert[:1].isalpha()
        # A quote deleted or added right before a word makes it a name or text.
        odd = quote_count(removed) % 2 != quote_count(insert) % 2
        cost = (
            distance(removed, insert, taken=not edit.skip)
            + (not word_swap and changes_words(before, removed, insert, tail))
            + (only is None and odd and word_at(tail) > 0)
            + flips_tag(before, removed, insert, tail)
            + (word_swap and renames_key(before, removed, insert, tail)) * len(insert)
            + _takes_comment_apart(before, removed, tail)
            + _closer_astray(before, insert, tail)
        )
    loose = edit_distance(removed.lower(), insert.lower())
    # Not made up: the end tag the grammar allows, left out (inserted, it closes what the API
    # opened; the draft's deleted would leave it open); quotes around the API's own value
    # (`aria-label="nav"`, not `aria-label-nav`); a bracket closed where the API opened it.
    kept = tag_edit or quoted or _closes(removed, insert)
    invented = 0 if kept else len(insert) - common(removed, insert)
    unlike = 0 if tag_edit else unlike_classes(removed, insert)
    lone = _deletes_lone(before, removed, insert, tail)
    rank = (unlike, -(edit.skip + edit.fits), invented, loose, lone, edit.back)
    return Candidate(replace(edit, cost=cost), tail, rank, own)
