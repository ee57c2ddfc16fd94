"""A reply that starts the answer over. Asked to continue a text, a weak model often writes it
again from its first character, with small changes (`12345` where the text has `"12345"`, a
line indented otherwise), and then goes on. What it repeats is no slip to repair: it goes, as an
exact repeat does (providers.align), and the reply is read on from where the repeat ends.

A reply repeats the answer `committed` when their non-blank characters, from the first, align
within `RESTART_SLACK` edits per 100 of the answer's (Levenshtein's distance, the reply's end
free). The alignment is a dynamic program banded to that many edits, so it costs
O(answer x slack): answers of more than `MAX_INK` non-blank characters are not compared (a reply
that repeats one is cut and repaired as any other).

A weak model may also write the answer over in its own way: another value, a member more or
less, an object where the answer has a string (SmolLM2 asked to go on after `{"hotel": "Eurek",
"nights":` wrote `{"hotel": {"name": "Eurek", "description": "..."}, "nights": 1, ...`). Such a
reply starts as the answer does (its first `SAME_START` non-blank characters) and, where it gets
to where the answer ends, writes the answer's last characters again (the `anchor`: the fewest,
`MIN_ANCHOR` or more, that occur once in the answer): the reply goes on after them. Its rewrite
before them goes, as a repeat does. A reply that starts over and never gets there (by its end,
or within twice the answer's non-blank characters and `REWRITE_MORE`) has nothing to go on from:
read on at the cut, its text would be the answer's start again, inside the answer (`{` in a
string, then keys as the string's text).
"""

from __future__ import annotations

from dataclasses import dataclass

RESTART_SLACK = 10  # edits per 100 non-blank characters of the answer
MIN_INK = 16  # shorter answers are repeated too easily by a true continuation
MAX_INK = 1000
SAME_START = 8  # the non-blank characters a rewrite of the answer starts with, as the answer
MIN_ANCHOR = 8
MAX_ANCHOR = 32
REWRITE_MORE = 64  # a rewrite reaches the anchor within twice the answer's ink and this many


@dataclass(frozen=True)
class Restart:
    """The answer a continuation may start over: `ink`, its non-blank characters, the edits
    a repeat of it may differ by, and the `anchor` a rewrite of it ends with ("" where no end of
    the answer occurs once in it)."""

    ink: str
    slack: int
    anchor: str

    @classmethod
    def of(cls, committed: str) -> Restart | None:
        """None where `committed` is too short to tell a repeat or too long to compare."""
        ink = _ink(committed)
        if not MIN_INK <= len(ink) <= MAX_INK:
            return None
        return cls(ink, max(1, len(ink) * RESTART_SLACK // 100), _anchor(ink))

    def hopeless(self, reply: str) -> bool:
        """The reply's first non-blank character is not the answer's: no repeat."""
        first = reply.lstrip()[:1]
        return bool(first) and first != self.ink[0]

    def enough(self, reply: str) -> bool:
        """Whether the reply so far is enough to decide: the answer's ink and its slack have
        arrived and, where the reply starts as the answer does, the anchor or as much as a
        rewrite takes to reach it."""
        ink = _ink(reply)
        if len(ink) < len(self.ink) + self.slack:
            return False
        if not self._starts_over(ink):
            return True
        return (bool(self.anchor) and self.anchor in ink) or len(ink) >= self._reach()

    def rewrites(self, reply: str, *, final: bool) -> bool:
        """Whether `reply`, which neither repeats the answer nor gets to its anchor (`end` found
        nothing), starts as the answer does and has ended (`final`) or gone past the reach of a
        rewrite: the answer written over, with nothing to go on from."""
        ink = _ink(reply)
        return self._starts_over(ink) and (final or len(ink) >= self._reach())

    def end(self, reply: str) -> int | None:
        """Where the reply's text after its repeat (or rewrite) of the answer starts (right
        after the repeat's last non-blank character); None where the reply does neither."""
        best = self._aligned(reply)[0]
        return best[1] + 1 if best is not None else self._rewritten(reply)

    def _rewritten(self, reply: str) -> int | None:
        """Where a rewrite of the answer in `reply` ends: after the first anchor within its reach
        (`_reach`), in a reply that starts as the answer does; else None."""
        offsets = [i for i, char in enumerate(reply) if not char.isspace()]
        ink = "".join(reply[i] for i in offsets)[: self._reach()]
        if not self.anchor or not self._starts_over(ink):
            return None
        found = ink.find(self.anchor, 1)
        return None if found < 0 else offsets[found + len(self.anchor) - 1] + 1

    def _starts_over(self, ink: str) -> bool:
        return ink[:SAME_START] == self.ink[:SAME_START]

    def _reach(self) -> int:
        """The non-blank characters of a rewrite within which it gets to the anchor."""
        return 2 * len(self.ink) + REWRITE_MORE

    def within(self, reply: str) -> bool:
        """Whether the whole of a reply that has ended repeats the answer's start (at least
        `MIN_INK` non-blank characters of it, within the slack): it stopped before where the
        answer ends, and says nothing new (the answer again, short of what the local model
        added)."""
        return len(_ink(reply)) >= MIN_INK and self._aligned(reply)[1]

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


def _ink(text: str) -> str:
    return "".join(text.split())


def _anchor(ink: str) -> str:
    """The fewest last characters of the answer's `ink`, from `MIN_ANCHOR` to `MAX_ANCHOR`,
    that occur once in it; "" where none does."""
    for size in range(MIN_ANCHOR, min(MAX_ANCHOR, len(ink)) + 1):
        if ink.find(ink[-size:]) == len(ink) - size:
            return ink[-size:]
    return ""
