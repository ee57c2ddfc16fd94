"""The end of a fenced answer: a reply that opens a markdown code fence ("```csv") ends its answer
with the closing fence, and what follows it is talk about the answer, whatever the grammar would
make of it ("```" is a valid CSV field, "Hope this helps!" a valid CSV row).

A reply opened a fence when the text dropped before its answer ends with a fence opening line (the
preamble `AnswerStart` skips) or starts with one (what a drafter's alignment stripped,
providers.align). `ClosingFence` then reads the answer as it streams and splits it where the
closing fence starts: three backticks at a line start (no indentation, whatever follows on the
line), or glued to the end of the answer's last line (`print(x)```` with a line end or the
reply's end after it). A piece that ends in a possible start of one ("\n", "\n`", "\n``"; "`",
"``" at a line start; up to three backticks, and blanks after them, anywhere) keeps that end
back until the next piece or the end of the reply (`flush`), so where the reply was split into
pieces never matters, and no character of a closing fence is ever checked, committed or passed
on as final.
"""

from __future__ import annotations

import re

from providers.align import FENCE, FENCE_OPENING

_CLOSING = "\n" + FENCE
_GLUED = re.compile(r"(?<![`\n])```[ \t]*\r?\n")  # a fence at a line's end
_GLUED_START = re.compile(r"(?<![`\n])`{1,3}[ \t]*\Z")  # what may become one
_OPENING_AT_END = re.compile(r"```[^`\n]*\n\s*\Z")  # and the blanks before the answer


class ClosingFence:
    """Splits a fenced answer's pieces at its closing fence; see the module's docstring."""

    def __init__(self, *, line_start: bool) -> None:
        self._held = ""  # a possible start of the closing fence, kept back
        self._line_start = line_start  # the character before `_held` ends a line

    @classmethod
    def after_preamble(cls, preamble: str) -> ClosingFence | None:
        """For an answer after `preamble` ("Here it is:\n```csv\n"), if that opens a fence."""
        return cls(line_start=True) if _OPENING_AT_END.search(preamble) else None

    @classmethod
    def after_stripped(cls, stripped: str) -> ClosingFence | None:
        """For a reply whose alignment stripped `stripped`, if that starts with a fence opening
        line (the repeat of the committed text after it may end mid-line)."""
        if not FENCE_OPENING.match(stripped):
            return None
        return cls(line_start=stripped.endswith("\n"))

    def split(self, piece: str) -> tuple[str, str | None]:
        """The answer's next text, and the reply from its closing fence on, once that is found
        (None before). What may start a closing fence at the end is kept back."""
        text = self._held + piece
        self._held = ""
        if self._line_start and text.startswith(FENCE):
            return "", text
        found = text.find(_CLOSING)
        glued = _GLUED.search(text[: found + 1] if found >= 0 else text)
        if glued is not None and glued.group().endswith("\n"):  # a line end after it
            return text[: glued.start()], text[glued.start() :]
        if found >= 0:
            return text[: found + 1], text[found + 1 :]
        keep = next((n for n in (3, 2, 1) if text.endswith(_CLOSING[:n])), 0)
        if self._line_start and len(text) < len(FENCE) and FENCE.startswith(text):
            keep = len(text)
        if (start := _GLUED_START.search(text)) is not None:
            keep = max(keep, len(text) - start.start())
        answer, self._held = text[: len(text) - keep], text[len(text) - keep :]
        if answer:
            self._line_start = answer.endswith("\n")
        return answer, None

    def flush(self) -> tuple[str, str | None]:
        """The reply is over: what was kept back is answer text after all, but for a fence
        glued to the end of its last line (as `split`: the answer, and the closing fence)."""
        held, self._held = self._held, ""
        if held.startswith(FENCE) and not held[len(FENCE) :].strip():
            return "", held
        return held, None
