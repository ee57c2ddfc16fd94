"""The last resort of a run whose completion ended with the text incomplete: the grammar's own
short way to a complete text, found by a bounded search over the characters the grammar allows,
where closing what is open (backtrack.run.trailing.close_up) is not enough.

Seen: a reply's first lines taken for a preamble left a Protocol Buffers file that must start
with `syntax = "proto3";`, and the local model, free to write comments there, wrote `//` lines
until its 512-token budget ended: the text incomplete, the run not valid. Here the search writes
`syntax="proto3";`. Inside a string or comment it writes first what ends it; elsewhere it
prefers closing brackets, other marks, opening brackets, digits, then letters; it opens a comment
or a string after those (an INI key's `=` opens its value's free text: seen, the local model
looping in a key, `-import-python-...`, where `=` and a line end complete the text), and goes on
from a blank only where nothing else is allowed, though a blank that completes a text ends the
search at once (a line end, where the grammar's lines end). It is bounded in length
(`MAX_CHARS`) and in the texts it checks (`MAX_NODES`): a text it cannot complete so stays as it
was, and the run ends incomplete, as before.
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING

from backtrack.run.trailing import CLOSING_BRACKETS
from grammars.checker import PRINTABLE

if TYPE_CHECKING:
    from grammars import Checker

MAX_CHARS = 48
MAX_NODES = 2048
_WIDTH = 3  # the most characters tried after each text
_BLANKS = " \n"
_OPENERS = "([{<"
_TEXT = PRINTABLE | frozenset(b"\n")


def shortest_end(checker: Checker) -> str | None:
    """A short text after which the checker's text is complete ("" where it is), or None: the
    first complete one the search reaches, in the order of each text's length plus the ranks of
    the choices made on the way (a character not preferred costs as much as one more
    character). The checker is left at the text it had."""
    if checker.complete:
        return ""
    start, heap, nodes = checker.chars, [(0, 0, "")], 0  # (length + choices' ranks, length, text)
    try:
        while heap and nodes < MAX_NODES:
            cost, _, text = heapq.heappop(heap)
            checker.feed(text)
            choices = _choices(checker)
            checker.rollback(start)
            for rank, char in enumerate([*choices, *_BLANKS]):
                nodes += 1
                checker.feed(text + char)
                done = checker.complete
                checker.rollback(start)
                if done:
                    return text + char
                if rank < len(choices) and len(text) + 1 < MAX_CHARS:
                    heapq.heappush(heap, (cost + 1 + rank, len(text) + 1, text + char))
        return None
    finally:
        checker.rollback(start)


def _choices(checker: Checker) -> list[str]:
    """The characters to try next, at most `_WIDTH`: closing brackets, other marks, opening
    brackets, digits, then letters (after a word's character, marks only where one goes), first
    those that do not only open free text (a comment, a string), then those; the blanks allowed
    (a space, a line end) only where nothing else goes (`shortest_end` checks after each text
    whether a blank completes it, and goes on from a blank only from here). Inside free text:
    first what ends it (a string's quote, a line comment's line end)."""
    if checker.in_free_text():
        leaving = _leaving(checker)
        if leaving:
            return leaving
    allowed = sorted(chr(b) for b in checker.next_bytes() & PRINTABLE if chr(b) not in _BLANKS)
    allowed.sort(key=lambda c: (c not in CLOSING_BRACKETS, c in _OPENERS, c.isalpha(), c.isdigit()))
    marks = [c for c in allowed if not _word(c)]
    if marks and _word(checker.text[-1:]):
        allowed = marks  # a word is ended as soon as it may be: `_` then `{`, not `__`
    plain: list[str] = []
    for char in allowed:
        if len(plain) == _WIDTH:
            break
        if not _opens_free_text(checker, char):
            plain.append(char)
    if allowed:  # then those that open free text (an INI key's `=`, before its value)
        return (plain + [c for c in allowed if c not in plain])[:_WIDTH]
    return [c for c in _BLANKS if ord(c) in checker.next_bytes()]


def _leaving(checker: Checker) -> list[str]:
    """The characters after which the text is out of the free text it is in, at most `_WIDTH`;
    else the marks after which one is (a block comment's `*` before its `/`)."""
    allowed = [chr(b) for b in sorted(checker.next_bytes() & _TEXT)]
    found = [c for c in allowed if not checker.free_after(c)]
    if found:
        return found[:_WIDTH]
    marks = [c for c in allowed if not c.isalnum()]
    for c in marks:
        if any(not checker.free_after(c + after) for after in marks):
            found.append(c)
            if len(found) == _WIDTH:
                break
    return found


def _word(char: str) -> bool:
    return char.isalnum() or char == "_"


def _opens_free_text(checker: Checker, char: str) -> bool:
    """Whether, after `char`, the text is in free text (a string's, a comment's), or is after
    every character that may follow it (`/` before `//` and `/*`)."""
    if checker.free_after(char):
        return True
    at = checker.chars
    checker.feed(char)
    following = [chr(b) for b in checker.next_bytes() & PRINTABLE]
    checker.rollback(at)
    return bool(following) and all(checker.free_after(char + after) for after in following)
