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
made bare, one edit, goes first). The engine checks each candidate in microseconds
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

from collections.abc import Callable
from dataclasses import dataclass, replace

from backtrack.repair.notations import (
    BARE,
    CLOSERS,
    COMMENTS,
    END_TAG,
    OPERATORS,
    PHRASES,
    WORD,
    bare_value,
    changes_words,
    characters,
    comment_at,
    common,
    decoded,
    distance,
    edit_distance,
    flips_tag,
    is_comment,
    is_end_tag,
    json_member,
    moves_end_tag,
    quote_count,
    quoted_name,
    requoted,
    spaced,
    unlike_classes,
    word_at,
    written,
)
from grammars import Checker
from grammars.checker import PRINTABLE, takes_free_text

_INSERTABLE = PRINTABLE | {ord("\n"), ord("\t")}


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


def _comment_inserts(checker: Checker, rest: str) -> list[tuple[str, int | None]]:
    """Where the draft goes on with a comment the grammar refuses: deleting it, or writing it as
    a comment of the same kind in a notation the grammar takes (`# note` for `; note` in TOML),
    with the skip past it."""
    comment = comment_at(rest)
    if comment is None:
        return []
    length, opening, text = comment
    found: list[tuple[str, int | None]] = [("", length)]
    for other, closing in COMMENTS.items():
        if other == opening or (closing == "\n") != (COMMENTS[opening] == "\n"):
            continue  # a line comment stays one, so does a block comment
        written = other + text + (closing if closing != "\n" else "")
        if checker.fits(written) == len(written):
            found.append((written, length))
    return found


def _skips(rest: str, limits: RepairLimits) -> list[int]:
    """How much of the draft a candidate may skip: a few characters, or its next word with the
    blanks after it."""
    skips = set(range(min(limits.max_skip, len(rest)) + 1))
    word = word_at(rest)
    if word:
        skips.add(word)
        skips.add(word + len(rest[word:]) - len(rest[word:].lstrip(" ")))
    return sorted(skips)


def _words(checker: Checker, limits: RepairLimits) -> list[str]:
    """Words the grammar allows here, letters only, breadth first within the node budget."""
    found: list[str] = []
    frontier = [""]
    nodes = 0
    start = checker.chars
    while frontier and nodes < limits.word_nodes:
        prefix = frontier.pop(0)
        checker.feed(prefix)
        following = checker.next_bytes()
        checker.rollback(start)
        if prefix and not following <= _WORD_BYTES:
            found.append(prefix)
        if len(prefix) < limits.max_word:
            for byte in sorted(following & _WORD_BYTES):
                frontier.append(prefix + chr(byte))
                nodes += 1
    return found


_WORD_BYTES = frozenset(ord(c) for c in WORD)
_ALNUM_BYTES = frozenset(b for b in range(128) if chr(b).isalnum())


def _inserts(
    checker: Checker, deleted: str, rest: str, limits: RepairLimits
) -> list[tuple[str, int | None]]:
    """(text to insert, the skip it goes with, None for any) where `deleted` was backed off. A
    grammar's word goes with skipping the draft's whole word."""
    following = checker.next_bytes()
    inserts: list[tuple[str, int | None]] = [("", None)]
    if not takes_free_text(following):  # in a string, a character is just content
        # Punctuation and blanks: a letter or digit inserted on its own would be made-up
        # content (a word the grammar offers is a candidate of its own, below).
        marks = [chr(b) for b in sorted(following & _INSERTABLE - _ALNUM_BYTES)]
        inserts += [(mark, None) for mark in marks]
        # ... or a closing bracket further back, the backed-off text read again after it: the
        # `]` the draft forgot before `, "size"`.
        if deleted.strip():
            inserts += [(mark + deleted, 0) for mark in marks if mark in CLOSERS]
    if len(deleted) > 1:  # one character deleted further back: the comma in "a, FROM"
        inserts.append((deleted[1:], None))
    word = word_at(rest)
    tail = len(deleted) - len(deleted.rstrip("".join(WORD)))
    if word and following & _WORD_BYTES and (not deleted or tail == len(deleted)):
        inserts += [(w, word) for w in _words(checker, limits)]
    inserts += _operator_inserts(checker, deleted, rest)
    if not deleted:
        inserts += _comment_inserts(checker, rest)
    quoted = requoted(rest) or bare_value(rest)
    if quoted is not None and ord('"') in following and not deleted:
        inserts.append((quoted[1], quoted[0]))
    before = checker.text[-1:]
    starts = deleted and not (before.isalnum() or before in BARE)  # a value's start backed off
    bare = bare_value(deleted + rest) if starts else None
    # `10.0.0.2`, taken for a number; not `3O`, a number with a stray letter
    if bare is not None and bare[0] > len(deleted) + 1 and ord('"') in following:
        inserts.append((bare[1], bare[0] - len(deleted)))
    name = quoted_name(rest)
    if name is not None and ord('"') not in following and not deleted:
        inserts.append((name[1], name[0]))
    if word and not deleted:  # a keyword left out: `fragment f on User`, `ORDER BY`
        last = next((c for c in reversed(checker.text) if c.isalpha()), "")  # the case to follow
        keyword = _keyword(checker, upper=last.isupper())
        if keyword:
            inserts += [(keyword + " ", 0), (keyword, 0)]
    return inserts


def _operator_inserts(checker: Checker, deleted: str, rest: str) -> list[tuple[str, int | None]]:
    """Where the backed-off text and the draft's rest start with another notation's operator or
    another dialect's phrase (covering all of the backed-off text), its meanings that the
    grammar takes here, each with the skip past the slip."""
    found: list[tuple[str, int | None]] = []
    text = deleted + rest
    for slip, meanings in OPERATORS.items():
        if len(deleted) <= len(slip) and text.startswith(slip):
            skip = len(slip) - len(deleted)
            found += [(m, skip) for m in meanings if checker.fits(m) == len(m)]
    within_word = word_at(checker.text[-1:]) == 1  # a phrase starts a word
    for phrase, meaning in PHRASES:
        match = phrase.match(text)
        if match is not None and len(deleted) <= match.end() and not within_word:
            phrased = written(match, meaning)
            if checker.fits(phrased) == len(phrased):
                found.append((phrased, match.end() - len(deleted)))
    return found


def _escapes(checker: Checker, deleted: str, rest: str) -> list[str]:
    """Where `deleted` is a string's closing quote (and blanks after it) and the draft goes on
    with a word (after a blank, maybe), the quote escaped as the grammar takes it (`\\"` in JSON,
    `""` in CSV), the blanks kept: a quotation in the string's text (`"She said "hi" to me"`)."""
    quote, blanks = deleted[:1], deleted[1:]
    if (
        quote not in "\"'"
        or (blanks and not blanks.isspace())
        or not rest.lstrip(" ")[:1].isalnum()
    ):
        return []
    escapes = (f"\\{quote}", quote * 2)
    return [e + blanks for e in escapes if checker.fits(e + blanks) == len(e + blanks)]


def _keyword(checker: Checker, upper: bool) -> str:
    """The one word the grammar allows here, when it allows only one (blanks and comments
    aside), in upper case where `upper` and the grammar takes it so; "" otherwise. The checker
    is left where it was."""
    start = checker.chars
    word = ""
    while len(word) < _MAX_KEYWORD:
        letters = {chr(b) for b in checker.next_bytes() & _WORD_BYTES}
        if len({c.lower() for c in letters}) != 1:
            break
        char = max(letters) if not upper else min(letters)  # "B" < "b"
        word += char
        checker.feed(char)
    whole = bool(word) and not checker.next_bytes() <= _WORD_BYTES
    checker.rollback(start)
    return word if whole else ""


_MAX_KEYWORD = 16


def _end_tags(checker: Checker, deleted: str, rest: str) -> list[tuple[str, int | None]]:
    """Where the backed-off text starts an end tag the grammar refuses: that end tag deleted
    whole (one written twice); the one end tag the grammar allows there (`</a>` inside an `a`
    element, as `]` closes a list) with the draft's own read after it; and the two swapped, when
    the draft's next end tag is the one allowed (`</li></a>`)."""
    if not deleted.startswith(END_TAG):
        return []
    text = deleted + rest
    end = text.find(">") + 1
    if end <= len(deleted) or not is_end_tag(text[:end]):
        return []
    found: list[tuple[str, int | None]] = [("", end - len(deleted))]
    tag = _end_tag(checker)
    if tag:
        found.append((tag + deleted, 0))
        if text[end:].startswith(tag):
            found.append((tag + text[:end], end + len(tag) - len(deleted)))
    return found


def _end_tag(checker: Checker) -> str:
    """The one end tag the grammar allows here, or "". The checker is left where it was."""
    start = checker.chars
    tag = END_TAG if checker.fits(END_TAG) == len(END_TAG) else ""
    checker.feed(tag)
    while tag and not tag.endswith(">") and len(tag) < _MAX_KEYWORD:
        following = checker.next_bytes()
        if ord(">") in following:  # the name ends here (blanks may come before the `>`)
            char = ">"
        elif len(following) == 1:
            char = chr(next(iter(following)))
        else:
            break
        tag += char
        checker.feed(char)
    checker.rollback(start)
    return tag if is_end_tag(tag) else ""


@dataclass(frozen=True)
class _Candidate:
    edit: Edit
    tail: str  # the draft's rest after the skip
    rank: tuple[int, int, int, int, int]  # after the cost, lower first: see _candidates

    @property
    def whole(self) -> bool:
        return self.edit.fits == len(self.tail)


def _candidates(
    checker: Checker, committed: str, rest: str, floor: int, limits: RepairLimits
) -> list[_Candidate]:
    """Every candidate edit after which at least one character of the rest fits (or all of an
    empty rest; or none, after a word or quoted text put right); leaves the checker backed off."""
    base = len(committed)
    was_free = checker.in_free_text()
    found: list[_Candidate] = []
    for back in range(min(limits.max_back, base - floor) + 1):
        checker.rollback(base - back)
        deleted = committed[base - back :]
        inserts: list[tuple[str, int | None]]
        if back and not was_free and checker.in_free_text():
            # Backed into a string: not trusted (see _trusted), but for its closing quote,
            # which may be a quote in its text the API did not escape.
            inserts = [(escaped, 0) for escaped in _escapes(checker, deleted, rest)]
        else:
            inserts = _inserts(checker, deleted, rest, limits)
        inserts += characters(deleted, rest) + _end_tags(checker, deleted, rest)
        member = json_member(deleted + rest)
        if member is not None and member > len(deleted):  # a key the grammar has no place for
            inserts.append(("", member - len(deleted)))
        for insert, only in inserts:
            for skip in [only] if only is not None else _skips(rest, limits):
                if (back, skip, insert) == (0, 0, "") or insert == deleted + rest[:skip]:
                    continue  # no edit: that is the cut itself
                if skip and skip == len(rest) and not insert:
                    continue  # the draft's whole rest dropped: that is no resynchronisation
                tail = rest[skip:]
                # Most candidates fail within a few characters: check those first, then the rest.
                taken = checker.fits(insert + tail[:_QUICK])
                if taken == len(insert) + min(_QUICK, len(tail)) and len(tail) > _QUICK:
                    taken = checker.fits(insert + tail)
                # A word or a quoted text put right may have the next slip right after it
                # (`'up',}`: the quotes mended, then the comma): a step of a path, see _best.
                if taken < len(insert) or (taken == len(insert) and tail and only is None):
                    continue
                fits = taken - len(insert)
                removed = deleted + rest[:skip]
                tag_edit = only is not None and moves_end_tag(removed, insert)
                quoted = only is not None and insert == f'"{removed}"'
                if only is not None and is_comment(removed, tail):
                    cost = 0 if insert else 1  # written in the grammar's notation, or deleted
                elif only is not None and decoded(removed) == (len(removed), insert):
                    cost = 0  # the same string: an escape written as its character
                elif only == 0 and insert[:1].isalpha() and not removed:
                    cost = 1  # the one keyword the grammar allows here, left out
                elif tag_edit:
                    cost = 1  # an end tag written twice, left out or swapped
                elif only is not None and not insert and json_member(removed) == len(removed):
                    cost = 2  # a JSON object's member deleted whole: a name and its value
                elif quoted:
                    cost = 1  # a bare value quoted (`10.0.0.2` too, taken for a number)
                else:
                    word_swap = only is not None and insert[:1].isalpha()
                    # A quote deleted or added right before a word makes it a name or text.
                    odd = quote_count(removed) % 2 != quote_count(insert) % 2
                    cost = (
                        distance(removed, insert)
                        + (
                            not word_swap
                            and changes_words(committed[: base - back], removed, insert, tail)
                        )
                        + (only is None and odd and word_at(tail) > 0)
                        + flips_tag(committed[: base - back], removed, insert, tail)
                    )
                loose = edit_distance(removed.lower(), insert.lower())
                # The end tag the grammar allows, left out, is not made up: of one inserted and
                # the draft's own deleted, both fitting as far as the draft has come, the first
                # closes what the API opened, the second leaves it open past where it ended. Nor
                # are quotes around the API's own value (`aria-label="nav"`, not `aria-label-nav`).
                invented = 0 if tag_edit or quoted else len(insert) - common(removed, insert)
                unlike = 0 if tag_edit else unlike_classes(removed, insert)
                edit = Edit(back, skip, insert, deleted, rest[:skip], fits, cost)
                rank = (unlike, -(skip + fits), invented, loose, back)
                found.append(_Candidate(edit, tail, rank))
    return found


Prefer = Callable[[list[str]], int]
"""Given texts that differ only in their ends, the index of the one a model finds likeliest."""


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
        need=limits.min_fit,
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
    return _spaced(checker, chosen, rest)


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


Total = tuple[int, int]
"""What a path of edits costs: the edits (edit distance), then the characters it inserts."""


def _best(
    checker: Checker,
    rest: str,
    *,
    final: bool,
    floor: int,
    limits: RepairLimits,
    need: int,
    budget: list[int],
    depth: int = 0,
    ties: list[Edit] | None = None,
) -> tuple[Edit, Total] | None:
    """The edit to make, and the total cost of the edits it takes to resynchronise.

    An edit resynchronises when `need` characters of the rest fit after it (or the whole rest,
    which then, for a final reply, completes the text). An edit after which fewer fit
    resynchronises when edits at the next cuts do, up to `_MAX_DEPTH` slips in a row
    (`{'a': 1, 'b': 2}`): the path of least total cost wins. `ties`, when given, gets the edit
    that resynchronises at once at the least cost and the others ranked alike, in order."""
    budget[0] -= 1
    committed = checker.text
    was_free = checker.in_free_text()
    candidates = _candidates(checker, committed, rest, floor, limits)
    direct = [c for c in candidates if c.edit.fits >= min(max(need, 1), len(c.tail))]
    direct.sort(key=lambda c: (c.edit.cost, c.rank))
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
    if depth < _MAX_DEPTH:
        partial = [c for c in candidates if c.edit.fits < min(max(need, 1), len(c.tail))]
        partial.sort(key=lambda c: (c.edit.cost, c.rank))
        tried = 0
        for c in partial:
            if tried >= (_LOOK_AHEAD if depth == 0 else 1) or budget[0] <= 0:
                break
            if best is not None and c.edit.cost > best[1][0]:
                continue
            if not _trusted(checker, committed, c, was_free=was_free):
                continue
            tried += 1
            _apply(checker, committed, c.edit, c.tail[: c.edit.fits])
            following = _best(
                checker,
                c.tail[c.edit.fits :],
                final=final,
                floor=len(committed) - c.edit.back + len(c.edit.insert),
                limits=limits,
                need=need - c.edit.fits,
                budget=budget,
                depth=depth + 1,
            )
            if following is not None:
                cost, inserted = following[1]
                total = (c.edit.cost + cost, len(c.edit.insert) + inserted)
                if best is None or total < best[1]:
                    best = (c.edit, total)
    _restore(checker, committed)
    return best


_QUICK = 4  # characters checked first for each candidate
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


def _trusted(checker: Checker, committed: str, c: _Candidate, *, was_free: bool) -> bool:
    """Whether edit `c` resynchronises for real. Outside a string at the cut, an edit that backs
    off into a string, or leaves the text inside one, is not trusted: the draft's own structure
    would fit there as the string's content, however well it then fits (a backquote before
    `::integer AS price FROM items;` makes all of it one quoted name)."""
    edit = c.edit
    _restore(checker, committed[: len(committed) - edit.back])
    inside = not was_free and checker.in_free_text()
    if inside and edit.insert in _escapes(checker, edit.deleted, edit.skipped + c.tail):
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
    return not inside


def _completes(checker: Checker, committed: str, c: _Candidate) -> bool:
    """Whether the text is complete after edit `c` and the rest that fits."""
    _apply(checker, committed, c.edit, c.tail[: c.edit.fits])
    return checker.complete
