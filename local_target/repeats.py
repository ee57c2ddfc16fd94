"""Loops in what a model writes: the block of bytes a text ends with several copies of in a row
(`DecodingPolicy.max_repeats`), lines of marks alone (`bare_lines`), blanks past the text's own
indentation, a run of digits, and text that has stopped being new (`looping`).
Imports nothing but Python, so it loads inside vLLM's environment as well as ours."""

from __future__ import annotations

import re
import zlib


def repeated_block(text: bytes | bytearray, copies: int) -> bytes | None:
    """The shortest block of `_BLOCK` bytes that `text` ends with `copies` copies of in a row,
    and that holds more than blanks and closers (the closers of deep nesting repeat, and must):
    the bytes one more copy would begin with. None where there is none."""
    return _ending_block(text, copies, _BLOCK)


def _ending_block(text: bytes | bytearray, copies: int, sizes: range) -> bytes | None:
    """The shortest block of a size in `sizes`, more than blanks and closers, that `text` ends
    with `copies` copies of in a row (one copy is no loop: `copies` counts from two)."""
    copies = max(copies, 2)
    for size in range(sizes.start, min(sizes.stop, len(text) // copies + 1)):
        if text[-1] != text[-1 - size]:
            continue  # the cheap test first: most sizes end here
        block = bytes(text[-size:])
        if text[-size * copies :] == block * copies and block.translate(None, _CLOSING).strip():
            return block
    return None


_BLOCK = range(8, 65)  # the sizes of a repeated block `repeated_block` looks for
_LONG_BLOCK = range(_BLOCK.stop, 513)  # the sizes `long_loop` looks for
_CLOSING = b")]}>\"'"


def repeated_shape(text: bytes | bytearray, copies: int) -> bytes | None:
    """Where `text` ends in `copies` copies in a row of one block that differ in their blanks
    and numbers only (SmolLM2 finishing an invoice counted `"qty"` up to 15, a line indented
    otherwise now and then): the non-blank bytes one more copy would begin with, up to its first
    number (None where there is none: `repeated_block` finds exact copies)."""
    shape = ink(_DIGITS.sub(_NUMBER, bytes(text[-_SHAPE_BYTES:])))
    block = repeated_block(shape, copies)
    start = None if block is None else block.split(_NUMBER)[0]
    return start if start and start.translate(None, _CLOSING) else None


def bare_lines(text: bytes | bytearray, copies: int) -> bytes | None:
    """Where `text` stands at a line's start after `copies` lines in a row (blank ones aside) of
    marks alone, none a closer or a quote: a comment with nothing in it, written again and again
    (`#`, `;`, `//`, seen where a small model may write comments in a grammar that makes them
    cost nothing). The bytes those lines start with, each to be refused at the next line's
    start; None otherwise. Lines of closers, which deep nesting writes, are none of these."""
    tail = bytes(text[-_BARE_BYTES:])
    if b"\n" not in tail or tail[tail.rfind(b"\n") + 1 :].strip(b" \t"):
        return None  # not at a line's start
    lines = [ln.strip() for ln in tail.split(b"\n")[:-1] if ln.strip()][-copies:]
    if len(lines) < copies or not all(_bare(ln) for ln in lines):
        return None
    return bytes(sorted({ln[0] for ln in lines}))


def _bare(line: bytes) -> bool:
    return not any(chr(b).isalnum() or b > 127 or b in _CLOSING for b in line)


_BARE_BYTES = 512  # the end of a text `bare_lines` reads


def digit_run(text: bytes | bytearray, most: int) -> bool:
    """Whether `text` ends in more than `most` digits in a row
    (`DecodingPolicy.max_digit_run`)."""
    tail = bytes(text[-most - 1 :])
    return len(tail) > most and tail.isdigit()


def looping(text: bytes | bytearray, least: float) -> bool:
    """Whether the last `NOVELTY_BYTES` of `text` compress to less than `least` of their size
    (`DecodingPolicy.min_novelty`): what the model writes has stopped being new."""
    tail = bytes(text[-NOVELTY_BYTES:])
    return len(tail) == NOVELTY_BYTES and len(zlib.compress(tail, 9)) < least * NOVELTY_BYTES


NOVELTY_BYTES = 384


def long_loop(text: bytes | bytearray, copies: int) -> bool:
    """Whether `text` ends in `copies` copies in a row of one block longer than those
    `repeated_block` steers round (65 to 512 bytes: `_LONG_BLOCK`), more than blanks and
    closers: a model that writes whole lines again, too long a period for `looping` to see in
    its window (seen: SmolLM2 completing an SQL comment, `# Create a table with a custom
    column named 'customers' and add an auto-incrementing primary key` and a line end, 97
    bytes, to its budget of 512 tokens). No document of the repair corpora's look half holds
    two such copies in a row."""
    return _ending_block(text, copies, _LONG_BLOCK) is not None


BLANKS = b" \t\r\n"  # the bytes a text's blanks are made of


def ink(data: bytes) -> bytes:
    """`data` without its blanks (spaces, tabs, line ends)."""
    return data.translate(None, BLANKS)


_DIGITS = re.compile(rb"[0-9]+")
_NUMBER = b"\x00"  # a number, in a text compared with its numbers left out (no text holds it)
_SHAPE_BYTES = 2048  # the end of a text `repeated_shape` compares


def deepest_indent(text: bytes | bytearray) -> int:
    """The most blanks any line of `text` starts with before its first non-blank."""
    lines = bytes(text).split(b"\n")
    return max((len(ln) - len(ln.lstrip(b" \t")) for ln in lines if ln.strip()), default=0)


def padding(run: bytes | bytearray, deepest: int, past: int) -> bool:
    """Whether the run of blanks a text ends in is padding that may not grow: a line started
    (or, without a line end, a gap) already `past` blanks deeper than the text's deepest
    indentation, or two blank lines."""
    return run.count(b"\n") > 2 or line_gap(run) >= deepest + past


def line_gap(blanks: bytes | bytearray) -> int:
    """The blanks after the last line end of `blanks` (all of them, without one)."""
    return len(blanks) - (blanks.rfind(b"\n") + 1)


class OwnText:
    """What a session's model wrote at the end of the text after its last correction (one
    lexeme may take several corrections, 16 tokens a round): a correction from exactly that text
    gives it to the loop guards (`Correcting`'s `earlier`), so that a run of digits or copies
    written over several rounds is counted as one. Text written in between (a draft's) starts
    the count again."""

    def __init__(self) -> None:
        self._text = ""  # the text after the last correction
        self._bytes = b""  # the end of what the model wrote up to there

    def before(self, text: str) -> bytes:
        """What the model wrote up to the end of `text`, where it is the text after the last
        correction; else nothing."""
        return self._bytes if text and text == self._text else b""

    def wrote(self, text: str, written: str, own: bytes) -> None:
        """A correction from `text` wrote `written`; `own` is what the model wrote up to its
        end (the correction's `own`: `before(text)`, then `written`)."""
        self._text = text + written
        self._bytes = own[-_OWN_BYTES:]


_OWN_BYTES = 4096  # the most of what the model wrote before that the loop guards are given
