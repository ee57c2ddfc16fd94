"""Several tokens per forward pass: proposals fed ahead and verified against the model's choices.

Each forward pass feeds the tokens already chosen but not yet in the KV cache (a chosen token and
the forced run after it, DESIGN 8) and, after them, a proposal: the tokens that followed the last
earlier occurrence of the text's final n-gram (prompt look-up: the prompt and the text so far
repeat themselves, as JSON keys and SQL column names do), looked for first in a hint: text that
may come next, as a draft's rejected rest during a correction (the API said what it meant). The
pass returns the model's output at every proposed position, so the choice at each is made exactly
as without speculation: the decoding policy chooses from the logits after the tokens accepted so
far (greedy, or one draw from the sampling generator). While the choices equal the proposal, its
tokens are already in the cache and cost no pass; at the first difference the rest is cropped
from the cache and the choice becomes the next pass's first token.

Choosing first and comparing after is the standard speculative acceptance rule for a proposal that
is one fixed token: it is kept with probability p(token). The chosen tokens, and the draws from a
seeded generator, are the same as without speculation; only the number of passes changes.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Protocol

from local_target.head import Next


class TokenSequence(Protocol):
    """What speculation needs of the session it writes in."""

    @property
    def ids(self) -> list[int]:
        """The token sequence in the KV cache."""
        ...

    @property
    def next(self) -> Next:
        """The model's output after the sequence."""
        ...

    def append(
        self, new: list[int], *, cancel: threading.Event | None = None, rows: int = 1
    ) -> list[Next]:
        """Append `new` (one forward pass); the model's output at its last `rows` positions."""
        ...

    def drop(self, n: int, after: Next) -> None:
        """Remove the last `n` tokens; `after` is the model's output after the rest."""
        ...


def propose(
    ids: list[int], limit: int, hint: Sequence[int] = (), *, longest: int = 3, shortest: int = 2
) -> list[int]:
    """Up to `limit` tokens that followed the last earlier occurrence of the final n-gram of `ids`
    (the longest n from `longest` down to `shortest` that occurred before), looked for in `hint`
    (text that may come next) first, at any n; [] when none did."""
    if limit < 1:
        return []
    for source in (hint, ids):
        for n in range(min(longest, len(ids) - 1), shortest - 1, -1):
            tail, first = ids[-n:], ids[-n]
            for start in range(len(source) - n - 1, -1, -1):
                # One comparison a position; a slice only where the first token matches.
                if source[start] == first and source[start : start + n] == tail:
                    return list(source[start + n : start + n + limit])
    return []


class Cursor:
    """Where the accepted tokens end, against what the session holds: tokens accepted but not yet
    fed (`unfed`), or a proposal fed beyond them (`ahead`, with `rows[i]` the model's output
    after its first i tokens)."""

    def __init__(
        self,
        seq: TokenSequence,
        cancel: threading.Event | None = None,
        hint: list[int] | None = None,
    ) -> None:
        self.seq = seq
        self.cancel = cancel
        self.hint = hint or []
        self.unfed: list[int] = []
        self.ahead: list[int] = []
        self.rows: list[Next] = [seq.next]

    def advance(self, tokens: list[int]) -> None:
        """The tokens are accepted (chosen or forced), in order."""
        for token in tokens:
            if not self.unfed and self.ahead and self.ahead[0] == token:
                self.ahead.pop(0)
                self.rows.pop(0)
                continue
            self._drop_ahead()
            self.rows = []
            self.unfed.append(token)

    def next(self, propose_up_to: int) -> Next:
        """The model's output after the accepted tokens; a forward pass when they are not in the
        cache yet, with up to `propose_up_to` proposed tokens after them."""
        if self.unfed or not self.rows:
            context = self.seq.ids  # a copy: the session's own stays as it is
            context.extend(self.unfed)
            proposal = propose(context, propose_up_to, self.hint)
            fed = self.seq.append(
                [*self.unfed, *proposal], cancel=self.cancel, rows=len(proposal) + 1
            )
            self.unfed, self.ahead, self.rows = [], proposal, fed
        return self.rows[0]

    def settle(self, *, append: bool = True) -> None:
        """Crop what is ahead of the accepted tokens and, with `append`, append the unfed ones: the
        session then holds exactly the accepted tokens."""
        self._drop_ahead()
        if append and self.unfed:
            self.seq.append(self.unfed, cancel=self.cancel)
            self.unfed = []

    def _drop_ahead(self) -> None:
        if self.ahead:
            self.seq.drop(len(self.ahead), self.rows[0])
            self.ahead = []
            self.rows = self.rows[:1]
