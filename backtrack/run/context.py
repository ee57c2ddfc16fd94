"""How much of the target's context a guided run's text may fill (backtrack.run.budget).

The target reads the prompt and the committed text before it writes (local_target.session); a
text it cannot read can be neither corrected nor completed. So the run holds its drafts to what
the target can still read: the prompt, the committed text, and room for the final completion
(`completion_tokens`) and a correction, with `SLACK_TOKENS` more, within the context. Where a
draft would pass that, drafting stops (`full`) and the target completes the text; each target
call writes at most what the context has left (`most_tokens`), and none where nothing is.

Tokens are counted with the target's own tokenizer (`Count`: the tokens its context has left
after the prompt and a text), and seldom. A token of text holds at least one byte, so between two
counts the text may grow by as many UTF-8 bytes as the last count left tokens (`draft_end`): it is
counted again only where it grows past that, then once before each target call (`most_tokens`). A
count that leaves less than `LEAST_BYTES` ends the drafts; so a run counts a few times at most
(each count leaves at most what the last one did, less the tokens of the text between them).
Before its first count, a run whose target is not loaded yet takes `UNLOADED_FREE_BYTES` for free:
counting loads it, which a run that never grows so long need not do.

Where the target's context is not known (`count` is None, or gives None), nothing is bounded;
where the prompt alone leaves it too little room to finish a text, the drafts are not held back
(only the API can write the answer), and a target call finds no room and ends the run.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from grammars.text import char_aligned

if TYPE_CHECKING:
    from backtrack.run.options import GuideOptions
    from grammars import Checker

logger = logging.getLogger(__name__)

# The tokens the context's room is under-counted by at most: a count of a text followed by more
# may tokenize their join otherwise, a repair takes a few characters back, a correction writes past
# its budget to finish a character or its healed token, and a vLLM target asks its server for
# 16 tokens more than the budget (local_target.vllm_target).
SLACK_TOKENS = 16
# Where a count leaves the drafts less room than this (in bytes), the drafts are over: another
# count would come after a few characters more.
LEAST_BYTES = 256
# The bytes a run drafts before its first count where counting would load the target.
UNLOADED_FREE_BYTES = 4096

Count = Callable[[str], "int | None"]
"""The tokens the target's context has left after the run's prompt and a text (negative past it),
or None where its context is not known."""


class ContextRoom:
    """The room the target's context has left for a run's text (see the module's docstring)."""

    def __init__(self, count: Count | None, reserve: int, *, free_bytes: int = 0) -> None:
        self._count = count
        self.reserve = reserve + SLACK_TOKENS  # tokens kept for the target's last calls
        # At the last count: the tokens left after the prompt and the text, and the text's bytes.
        # Before the first, drafts may commit `free_bytes`.
        self._left: int | None = None
        self._free = free_bytes
        self._at = 0
        self.full = False  # the drafts are over: the target completes in the room left
        # False where the prompt alone leaves the target too little room to finish a text: only
        # the API can, so its drafts are not held back.
        self.bounds_drafts = True

    @classmethod
    def of(cls, options: GuideOptions, count: Count | None, *, loaded: bool) -> ContextRoom:
        """A run's room: the completion and a correction kept back; `loaded`: counting is cheap
        (the target is loaded), else the first bytes are free (`UNLOADED_FREE_BYTES`)."""
        reserve = options.completion_tokens + options.correction_tokens
        return cls(count, reserve, free_bytes=0 if loaded else UNLOADED_FREE_BYTES)

    def _draft_bytes(self, checker: Checker) -> int:
        """The bytes drafts may still commit before the text must be counted again."""
        grown = checker.bytes - self._at
        if self._left is None:
            return self._free - grown
        return self._left - self.reserve - grown

    def draft_end(self, chunk: str, checker: Checker) -> int | None:
        """Where a draft's `chunk` ends the draft, after the checker's text: None within the
        bound (all of it is read, and more may follow). At the bound the text is counted: the
        draft ends after the characters of the chunk the room left admits, and where less than
        `LEAST_BYTES` was left, the drafts are over (`full`)."""
        if self.full:
            return 0
        if self._count is None or not self.bounds_drafts:
            return None
        data = chunk.encode("utf-8")
        if len(data) <= self._draft_bytes(checker):
            return None
        self.count(checker)
        room = self._draft_bytes(checker)
        if self._left is None or not self.bounds_drafts or (room >= len(data) and not self.full):
            return None
        return len(data[: char_aligned(data, max(0, room))].decode("utf-8"))

    def count(self, checker: Checker) -> None:
        """Count the checker's text with the target's tokenizer (the drafts are over where less
        than `LEAST_BYTES` is left for them)."""
        if self._count is None:
            return
        if self._left is None:  # the first count: can the target finish a text at all?
            alone = self._count("")
            self.bounds_drafts = alone is None or alone - self.reserve >= LEAST_BYTES
        left = self._count(checker.text)
        if left is None:
            self._count = None
            return
        self._left, self._at = left, checker.bytes
        if left - self.reserve < LEAST_BYTES and self.bounds_drafts and not self.full:
            self.full = True
            logger.info(
                "the target's context has %d tokens left after the prompt and %d characters:"
                " drafting stops, the target completes",
                left,
                checker.chars,
            )

    def most_tokens(self, checker: Checker) -> int | None:
        """The most tokens a target call may write after the checker's text, counted first; None
        where the context is not known."""
        self.count(checker)
        return None if self._left is None else self._left - SLACK_TOKENS
