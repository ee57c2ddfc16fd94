"""What a byte matcher allows next, as people read it: '"true"', '[0-9]', 'end of text'.

Each allowed byte is extended by the bytes the grammar then forces ('t' -> "true"), runs of bytes
become ranges, and lead bytes of non-ASCII characters become the characters they may start.
"""

from __future__ import annotations

import llguidance

from grammars.engine import EOS

__all__ = ["allowed_bytes", "expected_after"]


def allowed_bytes(matcher: llguidance.LLMatcher) -> list[int]:
    """The bytes `matcher` allows next, EOS (256) included."""
    mask = matcher.compute_bitmask()
    return [
        at + bit
        for at, bits in zip(range(0, EOS + 1, 8), mask[: EOS // 8 + 1], strict=False)
        if bits
        for bit in _SET_BITS[bits]
        if at + bit <= EOS
    ]


_SET_BITS = tuple(tuple(i for i in range(8) if value >> i & 1) for value in range(256))
"""The bits set in each byte value, lowest first."""


def expected_after(matcher: llguidance.LLMatcher) -> tuple[str, ...]:
    """What may come next in `matcher`'s state, readable: each allowed byte extended by the bytes
    the grammar then forces ('t' -> "true"), runs of bytes as ranges, and 'end of text'."""
    allowed = allowed_bytes(matcher)
    continuations: dict[int, bytes] = {}
    for b in allowed:
        if b == EOS or b >= 128:
            continue
        if matcher.consume_token(b):
            continuations[b] = matcher.compute_ff_bytes()
            matcher.rollback(1)
    items = _describe([b for b in allowed if b < 128], continuations)
    items += _non_ascii(matcher, [b for b in allowed if 128 <= b < EOS])
    if EOS in allowed or (matcher.is_accepting() and not items):
        items += ("end of text",)
    return items


def _describe(byte_values: list[int], continuations: dict[int, bytes]) -> tuple[str, ...]:
    """Readable items: literal continuations ('"true"') and byte ranges ('[0-9]')."""
    items: list[str] = []
    run: list[int] = []

    def close_run() -> None:
        if len(run) >= 3:
            items.append(f"[{_show_char(run[0])}-{_show_char(run[-1])}]")
        else:
            items.extend(repr(chr(b)) if b < 128 else f"byte 0x{b:02x}" for b in run)
        run.clear()

    for b in byte_values:
        tail = continuations.get(b, b"")
        if tail:
            close_run()
            items.append(repr((bytes([b]) + tail).decode("utf-8", "replace")))
        elif run and b == run[-1] + 1 and b < 128:
            run.append(b)
        else:
            close_run()
            run.append(b)
    close_run()
    return tuple(items)


def _non_ascii(matcher: llguidance.LLMatcher, leads: list[int], limit: int = 16) -> tuple[str, ...]:
    """Whole characters that may start with the allowed lead bytes `leads` (at most `limit`)."""
    found: list[str] = []

    def walk(prefix: bytes) -> None:
        if len(found) >= limit:
            return
        try:
            found.append(repr(prefix.decode("utf-8")))
            return
        except UnicodeDecodeError:
            if len(prefix) >= 4:
                return
        mask = matcher.compute_bitmask()
        for b in range(128, 192):
            if mask[b // 8] >> (b % 8) & 1 and matcher.consume_token(b):
                walk(prefix + bytes([b]))
                matcher.rollback(1)

    for lead in leads:
        if matcher.consume_token(lead):
            walk(bytes([lead]))
            matcher.rollback(1)
    if len(found) >= limit:
        return (*found[: limit - 1], "other non-ASCII characters")
    return tuple(found)


def _show_char(b: int) -> str:
    return chr(b) if 32 < b < 127 else f"\\x{b:02x}"
