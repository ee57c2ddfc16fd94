"""A reply that starts the answer over. Asked to continue a text, a weak model often writes it
again from its first character, with small changes (`12345` where the text has `"12345"`, a
line indented otherwise), and then goes on. What it repeats is no slip to repair: it goes, as an
exact repeat does (providers.align), and the reply is read on from where the repeat ends.

A reply repeats the answer `committed` when their non-blank characters, from the first, align
within `RESTART_SLACK` edits per 100 of the answer's (Levenshtein's distance, the reply's end
free). The alignment is a dynamic program banded to that many edits, so it costs
O(answer x slack): answers of more than `MAX_INK` non-blank characters are not compared (a reply
that repeats one is cut and repaired as any other).
"""

from __future__ import annotations

from dataclasses import dataclass

RESTART_SLACK = 10  # edits per 100 non-blank characters of the answer
MIN_INK = 16  # shorter answers are repeated too easily by a true continuation
MAX_INK = 1000


@dataclass(frozen=True)
class Restart:
    """The answer a continuation may start over: `ink`, its non-blank characters, and the edits
    a repeat of it may differ by."""

    ink: str
    slack: int

    @classmethod
    def of(cls, committed: str) -> Restart | None:
        """None where `committed` is too short to tell a repeat or too long to compare."""
        ink = "".join(committed.split())
        if not MIN_INK <= len(ink) <= MAX_INK:
            return None
        return cls(ink, max(1, len(ink) * RESTART_SLACK // 100))

    def hopeless(self, reply: str) -> bool:
        """The reply's first non-blank character is not the answer's: no repeat."""
        first = reply.lstrip()[:1]
        return bool(first) and first != self.ink[0]

    def enough(self, ink: int) -> bool:
        """Whether `ink` non-blank characters of the reply are enough to decide."""
        return ink >= len(self.ink) + self.slack

    def end(self, reply: str) -> int | None:
        """Where the reply's text after its repeat of the answer starts (right after the
        repeat's last non-blank character); None where the reply does not repeat the answer."""
        best = self._aligned(reply)[0]
        return None if best is None else best[1] + 1

    def within(self, reply: str) -> bool:
        """Whether the whole of a reply that has ended repeats the answer's start (at least
        `MIN_INK` non-blank characters of it, within the slack): it stopped before where the
        answer ends, and says nothing new (the answer again, short of what the local model
        added)."""
        ink = len(reply) - sum(map(str.isspace, reply))
        return ink >= MIN_INK and self._aligned(reply)[1]

    def _aligned(self, reply: str) -> tuple[tuple[int, int] | None, bool]:
        """The best repeat of the whole answer in the reply, as (distance, offset of its last
        character), or None; and whether all of the reply aligns with a start of the answer."""
        if self.hopeless(reply):
            return None, False
        offsets = [i for i, char in enumerate(reply) if not char.isspace()]
        ink, slack, size = self.ink, self.slack, len(self.ink)
        # row[i]: the distance between ink[:i] and the reply's first j non-blank characters,
        # kept only where it may be within slack (|i - j| <= slack); `far` stands for more.
        far = slack + 1
        row = [min(i, far) for i in range(size + 1)]
        best: tuple[int, int] | None = None  # (distance, offset of the repeat's last character)
        for j, at in enumerate(offsets, start=1):
            low, high = max(1, j - slack), min(size, j + slack)
            if low > high:  # past the answer's end by more than the slack
                return best, False
            diagonal = row[low - 1]
            left = far
            if low == 1:
                left = row[0] = min(j, far)
            for i in range(low, high + 1):
                above = row[i]
                left = min(above + 1, left + 1, diagonal + (ink[i - 1] != reply[at]), far)
                diagonal, row[i] = above, left
            if high == size and row[size] <= slack and (best is None or row[size] < best[0]):
                best = (row[size], at)
            if min(row[low : high + 1]) > slack:
                return best, False
        return best, bool(offsets)
