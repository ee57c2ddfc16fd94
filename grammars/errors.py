"""The root of every error backtrack raises, and the errors of grammars and texts.

    BacktrackError
    ├── GrammarError        the grammar cannot be used (syntax, unsupported construct, unknown)
    ├── TextError           a text is not what it must be (not UTF-8, does not parse)
    ├── ProviderError       the drafter (an API) failed; says whether a retry could help
    │                       (providers.errors)
    ├── TargetError         the local model failed or was misused (local_target.errors)
    │   └── ProcessorError  backtrack's logits processor failed a correction on a vLLM server
    └── TextLostError       a run left out more of the API's text than its limit allows
                            (backtrack.trace.result)

Errors about a position carry both the character and the UTF-8 byte offset, and `context()` draws
a caret under the spot. Errors that interrupt a guided generation carry the partial result, so no
committed text is lost.
"""

from __future__ import annotations

from typing import Protocol


class PartialResult(Protocol):
    """What a guided run had committed when an error ended it: a `backtrack.GuideResult` (this
    layer knows it by these fields only; narrow with isinstance for the rest)."""

    @property
    def text(self) -> str: ...

    @property
    def valid(self) -> bool: ...

    def to_html(self) -> str: ...


class BacktrackError(Exception):
    """Root of every error raised by backtrack. `partial` is the result committed before the error
    when the error ended a guided run, else None."""

    partial: PartialResult | None = None


def caret_view(text: str, char_offset: int, span: int = 40) -> str:
    """Two lines: the text around `char_offset` (one line of it) and a caret under the spot."""
    start = text.rfind("\n", 0, char_offset) + 1
    end = text.find("\n", char_offset)
    end = len(text) if end < 0 else end
    lo = max(start, char_offset - span)
    hi = min(end, char_offset + span)
    shown = text[lo:hi].replace("\t", " ").replace("\r", " ")
    return f"{shown}\n{' ' * (char_offset - lo)}^"


class GrammarError(BacktrackError):
    """A grammar the engine cannot take. `line` and `column` are 1-based, None when not known."""

    def __init__(
        self,
        message: str,
        *,
        line: int | None = None,
        column: int | None = None,
        source: str | None = None,
    ) -> None:
        self.message = message
        self.line = line
        self.column = column
        self.source = source
        where = f" at line {line}, column {column}" if line is not None else ""
        super().__init__(f"{message}{where}")

    def context(self) -> str:
        """The grammar line at fault with a caret under the column ('' when unknown)."""
        if self.source is None or self.line is None or self.column is None:
            return ""
        lines = self.source.splitlines()
        if not 1 <= self.line <= len(lines):
            return ""
        return f"{lines[self.line - 1]}\n{' ' * (self.column - 1)}^"


class TextError(BacktrackError, ValueError):
    """A text that is not what it must be, at `char_offset` (`byte_offset` in its UTF-8 form).
    When checking a draft stops a guided generation (a grammar past its work budget), `partial` is
    the GuideResult of the work committed before it."""

    def __init__(
        self,
        message: str,
        *,
        text: str = "",
        char_offset: int = 0,
        byte_offset: int = 0,
        expected: tuple[str, ...] = (),
    ) -> None:
        self.message = message
        self.text = text
        self.char_offset = char_offset
        self.byte_offset = byte_offset
        self.expected = expected
        wanted = f"; expected {', '.join(expected)}" if expected else ""
        super().__init__(f"{message} at character {char_offset} (byte {byte_offset}){wanted}")

    def context(self) -> str:
        return caret_view(self.text, self.char_offset)
