"""How many bytes a check hands the engine at once (grammars.checker.Checker._advance).

llguidance holds the GIL through each call, so every other thread of the process (a server's event
loop among them) waits as long as a call takes. A byte's cost varies a thousandfold between
grammars and within one text (under a JSON schema of 600 optional properties, about 1.1 ms a byte
where keys are, microseconds in a string): 256-byte pieces held the GIL 0.1 to 0.3 s there. So each
piece's size is chosen from the last piece's time.
"""

from __future__ import annotations

# The most bytes a piece holds (checked speculatively, then committed: see Checker._advance).
MAX_PIECE = 256
# How long one piece's engine calls should take.
PIECE_SECONDS = 0.005
# The first piece's bytes, before any piece's time is known.
FIRST_PIECE = 16


def next_piece(size: int, seconds: float) -> int:
    """The next piece's bytes, after a piece of `size` took `seconds`: as many as fit in
    PIECE_SECONDS at that rate, but at most twice as many as before (a cheap stretch may end where
    bytes cost a thousand times more), at least 1, at most MAX_PIECE."""
    fit = size * PIECE_SECONDS / seconds if seconds > 0 else MAX_PIECE
    return max(1, min(MAX_PIECE, 2 * size, int(fit)))
