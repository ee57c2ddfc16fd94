"""Text in pieces: kept as parts joined now and then (`append_piece`), cut on a character's
boundary (`char_aligned`)."""

from __future__ import annotations

# Pieces of text kept in a list are joined in runs of this many: a text streamed in 4-character
# chunks costs about its own size, not a str object (about 60 bytes) per chunk.
_JOIN_EVERY = 256


def append_piece(parts: list[str], piece: str) -> None:
    """Append `piece` to `parts` (whose concatenation is a text), joining the newest pieces into
    one now and then. Amortized linear; `"".join(parts)` is unchanged by the joins."""
    parts.append(piece)
    if len(parts) % _JOIN_EVERY == 0:
        parts[-_JOIN_EVERY:] = ["".join(parts[-_JOIN_EVERY:])]


def char_aligned(data: bytes, n: int) -> int:
    """The largest byte count <= n that ends on a UTF-8 character boundary of `data`."""
    while 0 < n < len(data) and (data[n] & 0xC0) == 0x80:
        n -= 1
    return n
