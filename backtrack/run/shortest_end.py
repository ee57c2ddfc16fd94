"""The last resort of a run whose completion ended with the text incomplete: the grammar's own
short way to a complete text, found by a bounded best-first search over what the grammar allows,
where closing what is open (backtrack.run.trailing.close_up) is not enough.

Seen: a reply's first lines taken for a preamble left a Protocol Buffers file that must start
with `syntax = "proto3";`, and the local model, free to write comments there, wrote `//` lines
until its 512-token budget ended: the text incomplete, the run not valid. Here the search writes
`syntax="proto3";`.

A move is a character and the text the grammar then forces (`e` then `lse`, where only `else`
may follow; `<` `/` then `li>`, where only the open element's end tag may), or an opening
bracket with its closer where the grammar takes both (`{}`). Each move costs one, and one more
for each move preferred to it at its text: closing ones first (those ending in a closing
bracket), then blanks, then marks, a keyword's first letter, opening brackets, digits and other
letters; what opens free text (a comment, a string: an INI key's `=` before its value) after
those. Inside free text only what ends it is tried (a string's quote, a comment's line end; a
backslash never does). Moves after which the same bytes may follow as after another move from
the same text lead to the same place, near enough, and only the first is kept; a letter, a blank
or a mark that leaves what may follow as it was is no move at all (a name growing, GraphQL's
commas). At most `_WIDTH` moves are kept at each text, and after a blank up to `_KEYWORDS`
keywords more (`else`, `AS`: the words the grammar forces once begun). Where the search finds
nothing, one move at each text is followed alone (`_dive`: 40 closing brackets): the first
preferred that closes, or after which one does (`<` before `/span>`, not `&` before an entity).

It is bounded in length (`MAX_CHARS`) and in the texts it checks (`MAX_NODES`). Where the text
has no ending within them, `grammar_ending` looks for one back through the text the target wrote
last, and what the target wrote after it goes; else the text stays as it was, and the run ends
incomplete. Measured on prefixes of the repair corpora's documents (every seventh character:
`python -m benchmarks.bench_shortest_end`, BENCHMARKS.md): no ending found for 459 of the 2,808
looked at before this search, none now (8 HTML ones before the dive looked a move ahead); on
the third corpus's held half, 81 of 1,872 before, none now; at most about half a second a search
(up to 5.8 s before).
"""

from __future__ import annotations

import heapq
import string
from typing import TYPE_CHECKING

from backtrack.run.trailing import CLOSING_BRACKETS
from backtrack.trace.record import OUTPUT_ORIGINS
from grammars.checker import PRINTABLE, takes_free_text

if TYPE_CHECKING:
    from collections.abc import Callable

    from backtrack.run.output import Output
    from grammars import Checker

MAX_CHARS = 48
MAX_NODES = 2048
_WIDTH = 3  # the most moves kept at each text, keywords and blanks aside
_KEYWORDS = 2  # the most keywords kept after a blank
_BLANKS = " \n"
_PAIRS = {"(": ")", "[": "]", "{": "}"}
_LETTERS = frozenset(string.ascii_letters)
_TEXT = PRINTABLE | frozenset(b"\n")

Move = tuple[str, bool]  # the text it adds, and whether the text is complete after it
Signature = tuple[bool, frozenset[int]]  # complete, and the bytes that may follow


def grammar_ending(output: Output, met: Callable[[str], bool]) -> bool:
    """Write the grammar's shortest ending (`shortest_end`) after the output's text, as an edit,
    where `met` takes the text it completes; where there is none, at the latest point before
    that has one in the text the target wrote last (after a blank or a mark, at most
    `_BACK_TRIES` points back; never into the API's text, nor a token the target healed): what
    the target wrote after that point goes (shown as deleted). Seen: SmolLM2 opened brackets
    deeper than an ending of `MAX_CHARS` closes. Returns whether it completed the text."""
    checker, text = output.checker, output.text
    for at in _own_points(output)[:_BACK_TRIES]:
        checker.rollback(at)
        ending = shortest_end(checker)
        checker.feed(text[at:])
        if ending is not None and met(text[:at] + ending):
            output.take_back(at)
            checker.feed(ending)
            output.add(ending, "edit")
            return True
    return False


_BACK_TRIES = 16


def _own_points(output: Output) -> list[int]:
    """The output's end, then the points after a blank or a mark in the text the target wrote
    at the output's end (its corrections' and forced spans there), latest first."""
    own = 0
    for span in reversed(output.spans):
        if span.origin in ("correction", "forced"):
            own += len(span.text)
        elif span.origin in OUTPUT_ORIGINS:
            break
    text, end = output.text, output.chars
    earlier = range(end - 1, max(end - own, 1) - 1, -1)
    return [end, *(at for at in earlier if not _word(text[at - 1]))]


def shortest_end(checker: Checker) -> str | None:
    """A short text after which the checker's text is complete ("" where it is), or None: the
    first complete one the search reaches, cheapest first. The checker is left at the text it
    had."""
    if checker.complete:
        return ""
    return _Search(checker).run()


class _Search:
    def __init__(self, checker: Checker) -> None:
        self.checker = checker
        self.start = checker.chars
        self.checks = 0  # texts checked, up to MAX_NODES
        self._leaving: dict[tuple[Signature, str], list[str]] = {}

    def run(self) -> str | None:
        heap = [(0, 0, "")]  # (cost, length, text)
        try:
            while heap and self.checks < MAX_NODES:
                cost, _, text = heapq.heappop(heap)
                for rank, (move, done) in enumerate(self._moves_at(text)):
                    if done:
                        return text + move
                    if len(text) + len(move) < MAX_CHARS:
                        heapq.heappush(heap, (cost + 1 + rank, len(text) + len(move), text + move))
            return self._dive()
        finally:
            self.checker.rollback(self.start)

    def _dive(self) -> str | None:
        """Where the best-first search found nothing: the text that one move at each text leads
        to (`_toward_closing`), where it completes the text within `MAX_CHARS` (closing brackets
        as deep as the text is: the search explores every cheaper text first, too many where 40
        brackets are open)."""
        text, moves = "", self._moves_at("")
        while moves and len(text) < MAX_CHARS:
            move, after = self._toward_closing(text, moves)
            text += move[0]
            if move[1]:
                return text if len(text) <= MAX_CHARS else None
            moves = self._moves_at(text) if after is None else after
        return None

    def _toward_closing(self, text: str, moves: list[Move]) -> tuple[Move, list[Move] | None]:
        """The first of `moves` that is complete or closes, or after which a move closes (`<`
        before `/span>`, not `&` before an entity's letters); else the first. With it, the moves
        after it where they were looked at (None: not)."""
        for move in moves:
            if _ends_or_closes(move):
                return move, None
            after = self._moves_at(text + move[0])
            if any(_ends_or_closes(m) for m in after):
                return move, after
        return moves[0], None

    def _moves_at(self, text: str) -> list[Move]:
        """The moves after `text` (written after the checker's own text, which it is left at)."""
        self.checker.feed(text)
        moves = self._moves()
        self.checker.rollback(self.start)
        return moves

    def _moves(self) -> list[Move]:
        """The moves from the checker's text, in the order preferred."""
        checker = self.checker
        following = checker.next_bytes()
        here = (checker.complete, following)
        if takes_free_text(following):
            leaving = self._leaving_chars(here)
            if leaving:
                return [self._after(c)[0] for c in leaving]
        seen: set[tuple[Signature, str]] = set()
        plain: list[Move] = []
        free: list[Move] = []
        for chunk in _candidates(checker, following):
            char = chunk[0]
            move, sig = self._after(chunk)
            key = (sig, move[0][len(chunk) :])  # moves that differ in what was forced differ
            if key in seen or (sig == here and len(move[0]) == 1 and _idle(char)):
                continue
            seen.add(key)
            if _opens_free_text(checker, char):
                free.append(move)
            elif len(plain) < _WIDTH:
                plain.append(move)
            if len(plain) == _WIDTH:
                break
        plain.sort(key=lambda m: not _closes(m))
        chosen = (plain + free)[:_WIDTH]
        chosen += self._keywords(following, {m[0][0] for m in chosen}, seen)
        closing = [m for m in chosen if _closes(m)]
        rest = [m for m in chosen if not _closes(m)]
        return closing + self._blanks(following, here) + rest

    def _after(self, chunk: str, forced: bool = True) -> tuple[Move, Signature]:
        """`chunk` and (where `forced`) what the grammar forces after it, as a move; and the
        signature of the text after it."""
        self.checks += 1
        checker, at = self.checker, self.checker.chars
        checker.feed(chunk)
        if forced:
            checker.feed(checker.forced())
        sig = (checker.complete, checker.next_bytes())
        move = (checker.text[at:], sig[0])
        checker.rollback(at)
        return move, sig

    def _blanks(self, following: frozenset[int], here: Signature) -> list[Move]:
        """A space, a line end: each where it changes what may follow (and not as the other)."""
        found: list[Move] = []
        seen = {here}
        for blank in _BLANKS:
            if ord(blank) in following:
                move, sig = self._after(blank, forced=False)
                if sig not in seen:
                    seen.add(sig)
                    found.append(move)
        return found

    def _keywords(
        self, following: frozenset[int], taken: set[str], seen: set[tuple[Signature, str]]
    ) -> list[Move]:
        """After a blank where only some letters may follow: up to `_KEYWORDS` words the grammar
        forces once their first letter is written (`else`, `AS`), not among the moves taken."""
        checker = self.checker
        letters = sorted(chr(b) for b in following if chr(b) in _LETTERS)
        if not checker.text[-1:].isspace() or len(letters) == len(_LETTERS):
            return []
        found: list[Move] = []
        for letter in letters:
            if len(found) == _KEYWORDS:
                break
            if letter in taken or not _forces_after(checker, letter):
                continue
            move, sig = self._after(letter)
            key = (sig, move[0][1:])
            if key not in seen:
                seen.add(key)
                found.append(move)
        return found

    def _leaving_chars(self, here: Signature) -> list[str]:
        """`_leaving`, kept for each signature (`here`, the text's) and last two characters of
        the text (a block comment's texts ask the same)."""
        key = (here, self.checker.text[-2:])
        if key not in self._leaving:
            self._leaving[key] = _leaving(self.checker)
        return self._leaving[key]


def _candidates(checker: Checker, following: frozenset[int]) -> list[str]:
    """The characters to try, in the order preferred: closing brackets, openers that may close
    at once (each with its closer), the first letter where only some may follow (a keyword's),
    other marks, opening brackets, digits, then letters; after a word's character, marks only
    where one goes (`_` then `{`, not `__`). One digit stands for all, and one letter where any
    may follow."""
    allowed = [chr(b) for b in sorted(following & PRINTABLE) if chr(b) not in _BLANKS]
    marks = [c for c in allowed if not _word(c)]
    if marks and _word(checker.text[-1:]):
        allowed = marks
    letters = [c for c in allowed if c in _LETTERS]
    keyword = letters[0] if letters and len(letters) < len(_LETTERS) else None
    digit = next((c for c in allowed if c.isdigit()), None)
    allowed = [
        c
        for c in allowed
        if (c not in _LETTERS or c == letters[0] or keyword) and (not c.isdigit() or c == digit)
    ]

    chunks = [
        c + _PAIRS[c] if c in _PAIRS and checker.allows(c + _PAIRS[c]) else c for c in allowed
    ]

    def rank(chunk: str) -> tuple[bool, ...]:
        c = chunk[0]
        closer = c in CLOSING_BRACKETS or len(chunk) == 2
        return (not closer, c != keyword, c in _PAIRS, c in _LETTERS, c.isdigit())

    return sorted(chunks, key=rank)


def _closes(move: Move) -> bool:
    return move[0][-1] in CLOSING_BRACKETS


def _ends_or_closes(move: Move) -> bool:
    return move[1] or _closes(move)


def _idle(char: str) -> bool:
    """A character that, where it leaves what may follow as it was, gets the text no nearer its
    end: a letter (a name growing), a mark (GraphQL's comma); not a digit (a date's fields) nor
    a closing bracket (`(()` after `((`)."""
    return not char.isdigit() and char not in CLOSING_BRACKETS


def _forces_after(checker: Checker, char: str) -> bool:
    """Whether the grammar forces text after `char` (a keyword begun)."""
    at = checker.chars
    checker.feed(char)
    forced = bool(checker.forced())
    checker.rollback(at)
    return forced


def _leaving(checker: Checker) -> list[str]:
    """The characters after which the text is out of the free text it is in, at most `_WIDTH`
    (a backslash never: it escapes what follows); else the marks after which one is (a block
    comment's `*` before its `/`)."""
    allowed = [chr(b) for b in sorted(checker.next_bytes() & _TEXT)]
    found = [c for c in allowed if c != "\\" and not checker.free_after(c)]
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
