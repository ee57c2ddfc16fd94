"""Longest valid prefix of a text under a grammar, checked byte by byte with llguidance.

The matcher here runs over a 256-entry byte vocabulary (plus EOS), so a check never depends on any
model's tokenizer. A cut never lands inside a multi-byte character: when the grammar accepts only
the first bytes of a character, the cut goes before it.

Cost: an Earley parser does work per byte in proportion to the items it holds at that position.
For an unambiguous grammar (and a lightly ambiguous one) that stays below a bound set by the
grammar, so a check costs time linear in the bytes. For an ambiguous or right-recursive grammar it
grows with the text, and the work per byte with it (cubically for `e: e "+" e | ...`). Every byte
is therefore committed to the engine under a budget of items per position (the grammar's
`max_items_in_row`, see GrammarLimits.row_items); where a position would need more, or the engine
reaches another of its limits, the check stops with TextError at that character, never with a
wrong cut and never after unbounded work.
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import llguidance

from grammars.errors import TextError, caret_view
from grammars.expected import allowed_bytes, expected_after
from grammars.pieces import FIRST_PIECE, next_piece
from grammars.text import append_piece, char_aligned

PRINTABLE = frozenset(range(0x20, 0x7F))
"""The printable ASCII bytes."""
# Where the grammar takes (nearly) any printable character next, the text is inside a free-text
# lexeme (a string, a quoted name): whatever comes next is read as its content.
_FREE_TEXT = 90


def takes_free_text(following: frozenset[int]) -> bool:
    """Whether `following` (a checker's `next_bytes()`) is a free-text lexeme's: a string's, a
    quoted name's, where (nearly) any printable character goes on."""
    return len(following & PRINTABLE) >= _FREE_TEXT


def as_text(text: str | bytes) -> str:
    """`text` as str; bytes must be UTF-8 and str free of lone surrogates, else TextError at the
    first bad byte or character."""
    if isinstance(text, str):
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise TextError(
                "text holds a lone surrogate, which has no UTF-8 form",
                text=text,
                char_offset=exc.start,
                byte_offset=len(text[: exc.start].encode("utf-8")),
            ) from exc
        return text
    if not isinstance(text, bytes | bytearray):
        raise TypeError(f"text must be str or bytes, not {type(text).__name__}")
    try:
        return bytes(text).decode("utf-8")
    except UnicodeDecodeError as exc:
        good = bytes(text[: exc.start]).decode("utf-8")
        raise TextError(
            f"text is not valid UTF-8 ({exc.reason})",
            text=good,
            char_offset=len(good),
            byte_offset=exc.start,
        ) from exc


@dataclass(frozen=True)
class PrefixCheck:
    """The longest prefix of `text` that some sentence of the grammar starts with.

    `chars` and `bytes` are the prefix's length in characters and in UTF-8 bytes. `complete` says
    whether the prefix is itself a full sentence; `expected` (computed on first access) what could
    come next at the cut.
    """

    text: str
    prefix: str
    chars: int
    bytes: int
    complete: bool
    _state: Any = field(repr=False, compare=False)  # the matcher after `prefix`; never advanced

    @property
    def valid(self) -> bool:
        """The whole text is a valid prefix (nothing was cut)."""
        return self.chars == len(self.text)

    @functools.cached_property
    def expected(self) -> tuple[str, ...]:
        return expected_after(self._state.deep_copy())

    def context(self) -> str:
        """The line of text around the cut, with a caret under it."""
        return caret_view(self.text, self.chars)

    def error(self) -> TextError:
        """The cut as an error (what a caller raises when the text had to be whole)."""
        return TextError(
            "text stops matching the grammar",
            text=self.text,
            char_offset=self.chars,
            byte_offset=self.bytes,
            expected=self.expected,
        )


def check(
    pristine: llguidance.LLMatcher,
    text: str | bytes,
    *,
    renew: Callable[[], llguidance.LLMatcher] | None = None,
) -> PrefixCheck:
    """One pass of the byte matcher over `text` (copied from `pristine`, left untouched); `renew`
    as for Checker. Raises TextError where the engine stops at a limit."""
    text = as_text(text)
    checker = Checker(pristine, renew=renew)
    checker.feed(text)
    return PrefixCheck(
        text, checker.text, checker.chars, checker.bytes, checker.complete, checker._matcher
    )


# The engine's errors when it stops at one of its limits (llguidance 1.5.0, first line).
_ROW_LIMIT = re.compile(r"Current row has \d+ items; max is (\d+)")
_LEXER_LIMIT = "lexer error"


def _at_limit(error: str) -> bool:
    first = error.partition("\n")[0]
    return bool(_ROW_LIMIT.search(first)) or first.startswith(_LEXER_LIMIT)


def _limit_reason(error: str) -> str:
    """What stopped the engine, readable (from the first line of its error: the rest is the
    parser's state and the whole grammar)."""
    first = error.partition("\n")[0]
    row = _ROW_LIMIT.search(first)
    if row:
        return (
            "the grammar is too ambiguous to check further in bounded work: this position needs "
            f"more than {row[1]} Earley items (GrammarLimits.row_items plus the grammar's size; "
            "raise it, or make the grammar unambiguous, or left- rather than right-recursive)"
        )
    if first.startswith(_LEXER_LIMIT):
        return (
            f"the grammar's lexer reached its limit ({first}): a regex with a large repeat count "
            "needs a new state for each byte it reads"
        )
    return f"the engine stopped: {first or 'no reason given'}"


class Checker:
    """An incremental check: feed text as it streams in; each feed costs time in its own bytes.

    Invariant: the matcher has consumed exactly the UTF-8 bytes of `text`. Once a feed is cut,
    `cut` is True and later feeds accept nothing until `rollback`. A feed that reaches one of the
    engine's limits takes the text before that point, is cut there, and raises TextError.

    `renew`, when given, compiles the pristine matcher anew: every copy of a matcher shares one
    lexer, so once its states run out, checks on any copy fail; the checker then replays its text on
    the new one and tries once more.
    """

    def __init__(
        self,
        pristine: llguidance.LLMatcher,
        *,
        renew: Callable[[], llguidance.LLMatcher] | None = None,
    ) -> None:
        self._pristine = pristine
        self._renew = renew
        self._matcher = pristine.deep_copy()
        self._piece = FIRST_PIECE  # bytes a piece (`_advance`), from the last piece's time
        self._parts: list[str] = []
        self.chars = 0
        self.bytes = 0
        self.cut = False
        self._line = 0  # where the text's last line starts
        self._line_complete: bool | None = (
            None  # whether the text is complete there (None: unknown)
        )

    @property
    def text(self) -> str:
        """Everything accepted so far."""
        if len(self._parts) > 1:
            self._parts[:] = ["".join(self._parts)]
        return self._parts[0] if self._parts else ""

    @property
    def complete(self) -> bool:
        """The accepted text is a full sentence of the grammar."""
        return bool(self._matcher.is_accepting())

    @property
    def stopped(self) -> bool:
        """No byte can follow: the grammar is finished (or the text was cut)."""
        return bool(self._matcher.is_stopped())

    def feed(self, chunk: str) -> int:
        """Append as much of `chunk` as keeps the text a valid prefix; return how many characters
        of it were taken. Fewer than `len(chunk)` means the next character cannot follow."""
        if not isinstance(chunk, str):
            raise TypeError(f"feed() takes str, not {type(chunk).__name__}")
        if self.cut or not chunk:
            return 0
        # Fed in two where a line starts inside it, to know at no cost whether the text is
        # complete where its last line starts (`last_line`).
        line = chunk.rfind("\n") + 1
        if 0 < line < len(chunk):
            taken = self._feed(chunk[:line])
            return taken if taken < line else taken + self._feed(chunk[line:])
        return self._feed(chunk)

    def last_line(self) -> tuple[int, bool]:
        """Where the text's last line starts, and whether the text is complete there."""
        if self._line_complete is None:
            text, line = self.text, self._line
            self.rollback(line)
            self._line_complete = self.complete
            self._feed(text[line:])
        return self._line, self._line_complete

    def _feed(self, chunk: str) -> int:
        """`feed` for a chunk with no line end before its last character."""
        try:
            data = chunk.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise TextError(
                "text holds a lone surrogate, which has no UTF-8 form",
                text=self.text + chunk,
                char_offset=self.chars + exc.start,
                byte_offset=self.bytes + len(chunk[: exc.start].encode("utf-8")),
            ) from exc
        try:
            n = self._advance(data, chunk)
        except TextError as stopped:  # at a limit: the text before it is taken, as at a cut
            n = stopped.byte_offset - self.bytes
            self._matcher.consume_tokens(list(data[:n]))
            if self._renew is not None:  # that may use up the lexer the grammar's copies share
                self._pristine = self._renew()
            self._took(chunk, data, n)
            raise
        return self._took(chunk, data, n)

    def _took(self, chunk: str, data: bytes, n: int) -> int:
        """Account for the first `n` bytes of `chunk` (UTF-8: `data`), which the matcher has
        consumed; the text stops taking more if that is not all of it."""
        taken = chunk if n == len(data) else data[:n].decode("utf-8")
        if taken:
            append_piece(self._parts, taken)
        line = taken.rfind("\n") + 1
        if line:
            self._line = self.chars + line
            self._line_complete = bool(self._matcher.is_accepting()) if line == len(taken) else None
        self.chars += len(taken)
        self.bytes += n
        self.cut = n < len(data)
        return len(taken)

    def _advance(self, data: bytes, chunk: str) -> int:
        """Commit the longest valid prefix of `data` that ends on a whole character; its length.

        Piece by piece: a speculative check (validate_tokens) runs fast but does not count Earley
        items against the budget; committing each piece before the next is looked at bounds the
        work past the budget to one piece. A piece's size follows the engine's time a byte, so
        that no piece holds the GIL much past PIECE_SECONDS (grammars.pieces)."""
        done = 0
        while done < len(data):
            piece = list(data[done : done + self._piece])
            started = time.perf_counter()
            valid = self._matcher.validate_tokens(piece)
            if valid and not self._matcher.consume_tokens(piece[:valid]):
                done = self._at_limit_in(data, chunk)
                break
            self._piece = next_piece(len(piece), time.perf_counter() - started)
            done += valid
            if valid < len(piece):
                # Refused by the grammar, or at a limit that a speculative check does not name.
                taken = self._matcher.try_consume_tokens(piece[valid : valid + 1])
                if self._matcher.is_error():
                    done = self._at_limit_in(data, chunk)
                    break
                if not taken:
                    break
                done += taken
        aligned = char_aligned(data, done)
        if aligned < done:
            self._matcher.rollback(done - aligned)
        return aligned

    def _at_limit_in(self, data: bytes, chunk: str) -> int:
        """After the engine stopped at a limit somewhere in `data`: feed `data` again byte by byte
        on a matcher rebuilt at `text`, and raise TextError at the byte where the limit is reached.
        A lexer out of states (shared by every copy of the pristine matcher) is first compiled
        anew, and again after the search, which may have used up the new one."""
        error = self._matcher.get_error()
        renew = self._renew if error.startswith(_LEXER_LIMIT) else None
        if renew is not None:
            self._pristine = renew()
        self._matcher = self._restart()
        at = next((i for i, b in enumerate(data) if not self._matcher.consume_token(b)), None)
        if at is None:
            return len(data)  # the new lexer took it all
        error = self._matcher.get_error()
        if renew is not None and error.startswith(_LEXER_LIMIT):
            self._pristine = renew()
        self._matcher = self._restart()
        if not _at_limit(error):  # a plain refusal after all: the cut is there
            self._matcher.consume_tokens(list(data[:at]))
            return at
        raise self._limit_error(chunk, data, at, error)

    def _restart(self) -> llguidance.LLMatcher:
        """A copy of the pristine matcher that has consumed `text`."""
        matcher: llguidance.LLMatcher = self._pristine.deep_copy()
        matcher.consume_tokens(list(self.text.encode("utf-8")))
        return matcher

    def _limit_error(self, chunk: str, data: bytes, at: int, error: str) -> TextError:
        at = char_aligned(data, at)
        return TextError(
            f"checking stopped: {_limit_reason(error)}",
            text=self.text + chunk,
            char_offset=self.chars + len(data[:at].decode("utf-8")),
            byte_offset=self.bytes + at,
        )

    def rollback(self, chars: int) -> None:
        """Return to the state after the first `chars` characters of `text`."""
        if not 0 <= chars <= self.chars:
            raise ValueError(f"cannot roll back to character {chars} of {self.chars}")
        text = self.text
        removed = len(text[chars:].encode("utf-8"))
        if removed:
            self._matcher.rollback(removed)
        self._parts[:] = [text[:chars]]
        self.chars = chars
        self.bytes -= removed
        self.cut = False
        if self._line > chars:
            self._line = text.rfind("\n", 0, chars) + 1
            self._line_complete = None

    def expected(self) -> tuple[str, ...]:
        """What may come next after `text`."""
        return expected_after(self._matcher.deep_copy())

    def next_bytes(self) -> frozenset[int]:
        """The bytes that may follow `text` (256 stands for the end of text)."""
        return frozenset(allowed_bytes(self._matcher))

    def forced(self) -> str:
        """The text the grammar forces after `text`: the characters it leaves no choice for
        (`else` after `e`, where only `else` may follow); not the first bytes of a character
        whose last ones are a choice (`é` or `è`: the forced bytes of a text are UTF-8 but
        for that end, which is left out)."""
        return bytes(self._matcher.compute_ff_bytes()).decode("utf-8", "ignore")

    def fits(self, chunk: str) -> int:
        """How many characters of `chunk` `feed` would take (the state is unchanged)."""
        data = chunk.encode("utf-8")
        n = self._matcher.validate_tokens(list(data))
        return len(data[:n].decode("utf-8", "ignore"))

    def in_free_text(self) -> bool:
        """Whether the text is inside a free-text lexeme (see `takes_free_text`)."""
        return takes_free_text(self.next_bytes())

    def free_after(self, chunk: str) -> bool:
        """Whether, after as much of `chunk` as fits, the text would be inside a free-text lexeme
        (the state is unchanged)."""
        at = self.chars
        self.feed(chunk)
        free = self.in_free_text()
        self.rollback(at)
        return free

    def allows(self, chunk: str) -> bool:
        """Whether `text + chunk` would still be a valid prefix (the state is unchanged)."""
        return self.fits(chunk) == len(chunk)
