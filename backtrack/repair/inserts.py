"""What a repair may insert at a cut: punctuation the grammar takes, a word or the one keyword it
allows, the draft's own text quoted or requoted, an end tag, a comment in the grammar's notation, or
what another notation's operator or phrase means (backtrack.repair.notations). Each comes with the
skip through the draft it goes with (None: any)."""

from __future__ import annotations

from backtrack.repair.fields import quote_escapes
from backtrack.repair.json_shapes import null_text, unquoted
from backtrack.repair.notations import (
    BARE,
    CLOSERS,
    COMMENTS,
    END_TAG,
    LOOK_ALIKES,
    OPERATORS,
    REWRITES,
    WORD,
    bare_value,
    comment_at,
    is_end_tag,
    quoted_name,
    remark_at,
    requoted,
    word_at,
    written,
)
from grammars import Checker
from grammars.checker import PRINTABLE, takes_free_text

_INSERTABLE = PRINTABLE | {ord("\n"), ord("\t")}


def _comment_inserts(checker: Checker, rest: str) -> list[tuple[str, int | None]]:
    """Where the draft goes on with a comment the grammar refuses: deleting it (on a line of its
    own, with its line's end: a list has no blank item), or writing it as a comment of the same
    kind in a notation the grammar takes (`# note` for `; note` in TOML), with the skip past it."""
    comment = comment_at(rest)
    if comment is None:
        return []
    length, opening, text = comment
    found: list[tuple[str, int | None]] = [("", length)]
    if checker.text[-1:] in ("", "\n") and rest[length : length + 1] == "\n":
        found.append(("", length + 1))
    for other, closing in COMMENTS.items():
        if other == opening or (closing == "\n") != (COMMENTS[opening] == "\n"):
            continue  # a line comment stays one, so does a block comment
        written = other + text + (closing if closing != "\n" else "")
        if checker.fits(written) == len(written) and checker.free_after(other):
            found.append((written, length))
    return found


def _opened_comment(checker: Checker, deleted: str, rest: str) -> list[tuple[str, int | None]]:
    """Where the cut is inside a comment's opening the grammar took a part of (CSS's `/` of `//
    note`, read as the start of a `/*`), backed off to before that part (and the blanks before
    it): the comment's edits, as at its start."""
    opening = deleted.lstrip(" \t")
    comment = comment_at(opening + rest)
    if not opening or comment is None or len(opening) >= len(comment[1]):
        return []
    found = _comment_inserts(checker, opening + rest)
    if len(opening) < len(deleted):
        found = [(text, skip) for text, skip in found if not text]  # the blanks go with it
    return [(text, skip - len(opening)) for text, skip in found if skip and skip > len(opening)]


def _remark_deletion(checker: Checker, rest: str) -> list[tuple[str, int | None]]:
    """Where the draft goes on with a bracketed remark (`notations.remark_at`) and the grammar
    refuses every bracket here: deleting it whole, with the blanks before it (` {a developing
    move}` between a game's moves). Where a bracket of another kind fits, the bracket's kind is
    the slip (`[a 1]` for `(a 1)`), not what it holds."""
    length = remark_at(rest)
    if length is None or any(checker.fits(opener) for opener in "([{"):
        return []
    return [("", length)]


def _words(checker: Checker, max_word: int, word_nodes: int) -> list[str]:
    """Words the grammar allows here, of at most `max_word` letters, breadth first, exploring at
    most `word_nodes` prefixes."""
    found: list[str] = []
    frontier = [""]
    nodes = 0
    start = checker.chars
    while frontier and nodes < word_nodes:
        prefix = frontier.pop(0)
        checker.feed(prefix)
        following = checker.next_bytes()
        checker.rollback(start)
        if prefix and not following <= _WORD_BYTES:
            found.append(prefix)
        if len(prefix) < max_word:
            for byte in sorted(following & _WORD_BYTES):
                frontier.append(prefix + chr(byte))
                nodes += 1
    return found


_WORD_BYTES = frozenset(ord(c) for c in WORD)
_ALNUM_BYTES = frozenset(b for b in range(128) if chr(b).isalnum())
_ALNUM = "".join(chr(b) for b in sorted(_ALNUM_BYTES))


def inserts(
    checker: Checker, deleted: str, rest: str, *, max_word: int, word_nodes: int
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
        # `]` the draft forgot before `, "size"`, or before its line's end.
        if deleted:
            inserts += [(mark + deleted, 0) for mark in marks if mark in CLOSERS]
    elif rest[:1] in ("\r", "\n"):
        # Free text cut at a line's end, which it refuses: its closing bracket or quote was left
        # out (`[flake8` for `[flake8]`, an INI section's name).
        inserts += [(mark, None) for mark in CLOSERS + "\"'" if ord(mark) in following]
    if len(deleted) > 1:  # one character deleted further back: the comma in "a, FROM"
        inserts.append((deleted[1:], None))
    # A character in place of the one it looks like (`0-0` for castling's `O-O`).
    inserts += [(c, 1) for c in LOOK_ALIKES.get(rest[:1], "") if ord(c) in following]
    word = word_at(rest)
    tail = len(deleted) - len(deleted.rstrip("".join(WORD)))
    if word and following & _WORD_BYTES and (not deleted or tail == len(deleted)):
        inserts += [(w, word) for w in _words(checker, max_word, word_nodes)]
    inserts += _operator_inserts(checker, deleted, rest)
    if not deleted:
        inserts += _comment_inserts(checker, rest) + _requoted(following, rest)
        inserts += _remark_deletion(checker, rest)
    elif not deleted.strip(" \t"):  # the blanks before a comment or remark, deleted with it
        inserts += [(text, skip) for text, skip in _comment_inserts(checker, rest) if not text]
        inserts += _remark_deletion(checker, rest)
    inserts += _opened_comment(checker, deleted, rest)
    before = checker.text[-1:]
    starts = deleted and not (before.isalnum() or before in BARE)  # a value's start backed off
    bare = bare_value(deleted + rest) if starts else None
    # `10.0.0.2`, taken for a number; not `3O`, a number with a stray letter
    if bare is not None and bare[0] > len(deleted) + 1 and ord('"') in following:
        inserts.append((bare[1], bare[0] - len(deleted)))
    name = quoted_name(rest)
    if name is not None and ord('"') not in following and not deleted:
        inserts.append((name[1], name[0]))
    if not deleted:
        inserts += _keyword_inserts(checker, rest)
    return inserts


def _keyword_inserts(checker: Checker, rest: str) -> list[tuple[str, int | None]]:
    """Where the draft goes on with a word: a keyword left out before it (`fragment f on User`,
    `ORDER BY`); with digits: the ones the grammar must have in their place (`proto2` for
    `proto3`)."""
    if word_at(rest):
        last = next((c for c in reversed(checker.text) if c.isalpha()), "")  # the case to follow
        keyword = _keyword(checker, upper=last.isupper())
        return [(keyword + " ", 0), (keyword, 0)] if keyword else []
    if rest[:1].isdigit():
        forced = _keyword(checker, upper=False, alphabet=_ALNUM_BYTES)
        return [(forced, len(rest) - len(rest.lstrip(_ALNUM)))] if forced else []
    return []


def _requoted(following: frozenset[int], rest: str) -> list[tuple[str, int | None]]:
    """The draft's next value quoted as the grammar takes it here, each with the skip past it:
    other quotes made double ones, a bare word quoted, a quoted number or literal bare, and
    `null` as the empty string."""
    string = ord('"') in following
    found: list[tuple[str, int | None]] = []
    quoted = requoted(rest) or bare_value(rest)
    if quoted is not None and string:
        found.append((quoted[1], quoted[0]))
    bare = unquoted(rest)
    if bare is not None and not string:
        found.append((bare[1], bare[0]))
    null = null_text(rest)
    if null is not None and string:
        found.append(('""', null))
    return found


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
    for phrase, meaning in REWRITES:
        match = phrase.match(text)
        if match is not None and len(deleted) <= match.end() and not within_word:
            phrased = written(match, meaning)
            if checker.fits(phrased) == len(phrased):
                found.append((phrased, match.end() - len(deleted)))
    return found


def escapes(checker: Checker, deleted: str, rest: str) -> list[str]:
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
    return [e + blanks for e in quote_escapes(quote) if checker.fits(e + blanks) == len(e + blanks)]


def _keyword(checker: Checker, upper: bool, alphabet: frozenset[int] = _WORD_BYTES) -> str:
    """The one word the grammar allows here, when it allows only one (blanks and comments
    aside), in upper case where `upper` and the grammar takes it so; "" otherwise. A word is of
    the `alphabet`'s characters (digits too where the draft has a number there). The checker is
    left where it was."""
    start = checker.chars
    word = ""
    while len(word) < _MAX_KEYWORD:
        letters = {chr(b) for b in checker.next_bytes() & alphabet}
        if len({c.lower() for c in letters}) != 1:
            break
        char = max(letters) if not upper else min(letters)  # "B" < "b"
        word += char
        checker.feed(char)
    whole = bool(word) and not checker.next_bytes() <= alphabet
    checker.rollback(start)
    return word if whole else ""


_MAX_KEYWORD = 16


def end_tags(checker: Checker, deleted: str, rest: str) -> list[tuple[str, int | None]]:
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
