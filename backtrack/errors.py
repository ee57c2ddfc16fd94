"""Every error backtrack raises, under one root.

    BacktrackError
    ├── GrammarError        the grammar cannot be used (syntax, unsupported construct, unknown)
    ├── TextError           a text is not what it must be (not UTF-8, does not parse)
    ├── ProviderError       the drafter (an API) failed; says whether a retry could help
    └── TargetError         the local model failed or was misused

Errors about a position carry both the character and the UTF-8 byte offset, and `context()` draws
a caret under the spot. Errors that interrupt a guided generation carry the partial result, so no
committed text is lost.
"""

from __future__ import annotations

from typing import Any


class BacktrackError(Exception):
    """Root of every error raised by backtrack."""


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
    the GuideResult of the work committed before it (else None)."""

    partial: Any = None

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


class ProviderError(BacktrackError):
    """The drafter failed. `partial` is the GuideResult of the work committed before the failure.

    `retry_after` is the wait in seconds the provider asked for (Retry-After), None when it did not.
    """

    def __init__(
        self,
        message: str,
        *,
        retryable: bool = False,
        status: int | None = None,
        request_id: str | None = None,
        partial: Any = None,
        retry_after: float | None = None,
    ) -> None:
        self.message = message
        self.retryable = retryable
        self.status = status
        self.request_id = request_id
        self.partial = partial
        self.retry_after = retry_after
        extra = [f"status {status}"] if status is not None else []
        if request_id:
            extra.append(f"request id {request_id}")
        super().__init__(f"{message} ({', '.join(extra)})" if extra else message)


class TargetError(BacktrackError):
    """The local target model failed or was used wrongly. When it ends a guided generation,
    `partial` is the GuideResult of the work committed before it (else None)."""

    def __init__(self, message: str, *, partial: Any = None) -> None:
        self.partial = partial
        super().__init__(message)
