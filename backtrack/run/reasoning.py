"""A reasoning block before the answer: what reasoning models served through OpenAI-compatible
servers write in the reply's text before answering (`<think> ... </think>`), of any length.

`ReasoningBlock` reads the start of a first draft: while the reply (after blanks) may still be
opening a block it holds the text back; inside a block it holds everything up to the closing tag;
then it hands on what follows, and `block` is the reasoning, for the trace. A reply that opens no
block passes through at once; one whose block never closes comes out whole at `finish()` (no
answer followed it: the answer search and the repairs see it as they would have).
"""

from __future__ import annotations

import re
from typing import Literal

# The tags reasoning models use (DeepSeek-R1, Qwen3, QwQ: `think`; others `thinking`, `reasoning`).
_TAGS = ("think", "thinking", "reasoning")
_OPENING = re.compile(rf"\s*<({'|'.join(_TAGS)})>")
_LONGEST_OPENING = max(len(f"<{tag}>") for tag in _TAGS)


class ReasoningBlock:
    def __init__(self) -> None:
        self._held = ""
        self._closing = ""
        self._scanned = 0  # how much of `_held` was searched for the closing tag
        self._end = -1  # where the closing tag ends, once found
        self._state: Literal["opening", "inside", "done"] = "opening"
        self.block = ""  # the reasoning, tags and the blanks after it included, once closed

    @property
    def held(self) -> str:
        """The text held back so far (what a failed attempt leaves unread)."""
        return self._held

    @property
    def done(self) -> bool:
        """The reply's start is decided: from here on, chunks pass through unchanged."""
        return self._state == "done"

    def skip(self, chunk: str) -> str:
        """What of the reply, `chunk` included, follows the block ("" while it is held)."""
        if self._state == "done":
            return chunk
        self._held += chunk
        if self._state == "opening":
            opened = _OPENING.match(self._held)
            if opened is None:
                body = self._held.lstrip()
                if len(body) >= _LONGEST_OPENING or not any(
                    f"<{tag}>".startswith(body) for tag in _TAGS
                ):
                    return self._release("")
                return ""  # blanks, or "<thi" so far
            self._closing = f"</{opened[1]}>"
            self._state = "inside"
        if self._end < 0:  # look for the closing tag only where it may have newly arrived
            found = self._held.find(self._closing, max(0, self._scanned - len(self._closing)))
            self._scanned = len(self._held)
            if found < 0:
                return ""
            self._end = found + len(self._closing)
        after = self._end + len(self._held[self._end :]) - len(self._held[self._end :].lstrip())
        if after == len(self._held):
            return ""  # blanks may follow in the next chunk: they go with the block
        return self._release(self._held[:after])

    def finish(self) -> str:
        """The reply is over: what is still held (a block never closed is not skipped)."""
        if self._state == "done":
            return ""
        closed = self._end >= 0  # and only blanks after it
        return self._release(self._held if closed else "")

    def _release(self, block: str) -> str:
        self.block, rest, self._held = block, self._held[len(block) :], ""
        self._state = "done"
        return rest
