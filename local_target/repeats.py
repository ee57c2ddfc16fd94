"""Loops in what a model writes: the block of bytes a text ends with several copies of in a row
(`DecodingPolicy.max_repeats`), and blanks past the text's own indentation. Imports nothing but
Python, so it loads inside vLLM's environment as well as ours."""

from __future__ import annotations


def repeated_block(text: bytes | bytearray, copies: int) -> bytes | None:
    """The shortest block of `_BLOCK` bytes that `text` ends with `copies` copies of in a row,
    and that holds more than blanks and closers (the closers of deep nesting repeat, and must):
    the bytes one more copy would begin with. None where there is none."""
    for size in range(_BLOCK.start, min(_BLOCK.stop, len(text) // copies + 1)):
        block = bytes(text[-size:])
        if text[-size * copies :] == block * copies and block.translate(None, _CLOSING).strip():
            return block
    return None


_BLOCK = range(8, 65)  # the sizes of a repeated block `repeated_block` looks for
_CLOSING = b")]}>\"'"


def deepest_indent(text: bytes | bytearray) -> int:
    """The most blanks any line of `text` starts with before its first non-blank."""
    lines = bytes(text).split(b"\n")
    return max((len(ln) - len(ln.lstrip(b" \t")) for ln in lines if ln.strip()), default=0)


def padding(run: bytes | bytearray, deepest: int, past: int) -> bool:
    """Whether the run of blanks a text ends in is padding that may not grow: a line started
    (or, without a line end, a gap) already `past` blanks deeper than the text's deepest
    indentation, or two blank lines."""
    start = run.rfind(b"\n") + 1
    return run.count(b"\n") > 2 or len(run) - start >= deepest + past
