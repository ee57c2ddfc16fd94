"""What a grammar may cost: GrammarLimits, and the size checked before anything else is read.

llguidance cannot be trusted with every input. It compiles Lark rules recursively (a chain of 3,000
rules overflowed the stack: SIGSEGV), builds one grammar node per array item of a JSON schema
(`minItems: 10**9`: abort on an 8 GiB allocation), and reads JSON at most 128 levels deep. None of
these is an exception Python can catch, so the inputs are measured first (grammars/lark/checks.py,
grammars/json_schema/checks.py), against `GrammarLimits`, and anything past a limit is a
GrammarError that names the limit to raise.
"""

from __future__ import annotations

import itertools
import operator
import re
from dataclasses import dataclass

from grammars.errors import GrammarError

__all__ = ["SCHEMA_MAX_DEPTH", "GrammarLimits", "check_size", "nesting_past"]

# llguidance reads the grammar's JSON with serde_json, which stops at 128 levels; the request that
# wraps a schema takes 4 of them. Not a GrammarLimits field: the engine fails past it anyway. A
# schema's walk through its `$ref`s (each one level) is held to it too: the `jsonschema` validator
# recurses through each, and a chain of 500 ran out of Python's stack.
SCHEMA_MAX_DEPTH = 124


@dataclass(frozen=True)
class GrammarLimits:
    """What one grammar may cost. Past a limit, building the grammar raises GrammarError (checking a
    text, TextError), with the field to raise in the message; nothing kills the process.

    max_source_bytes: the grammar as given (Lark text, regex, or the schema as JSON), in UTF-8
        bytes. Compiling costs more than linearly in the number of distinct literals (60,000 of
        them: about 12 s), so this also bounds the time spent compiling.
    max_depth: how deep the rules and terminals of a Lark grammar nest (the longest chain of
        references from `start`; rules that refer to each other count as deep as their group is
        large). The engine compiles them recursively with about 3 KB of stack a level, on a thread
        with a 64 MiB stack: about 20,000 levels fit.
    max_repeat: the largest minItems or maxItems of a JSON schema. The engine builds one node per
        item, about 100 bytes each (10**7 items: 0.9 GB).
    max_optional_properties: the most properties a JSON schema's object may have that are not
        `required`. The engine's work per byte of such an object's keys grows about as the square
        of their number (measured, keys in the schema's order: 100 of them 18 us a byte, 200 114
        us, 300 264 us, 600 1.1 ms, where a 3.7 KB draft took 21 s to check and held the GIL for
        0.2 s at a time); 256 keep a draft that names them all under a second.
    max_pattern_properties: the most `patternProperties` of a JSON schema's object. The engine
        compiles them into one lexer for the object's keys, at a cost that grows about as the cube
        of their number (measured, patterns like `^prefix_7_[a-z0-9]{2,8}$`: 100 0.3 s, 200 4.1 s,
        300 30 s); 128 keep a compile near a second.
    row_items: the work budget of a check: the Earley items that one position of the text may
        hold, beyond the length of the grammar as the engine reads it (a grammar's items per
        position grow with its alternatives: a schema of 600 optional properties needs 2,407).
        Measured on valid texts: JSON and CSV need 12 to 15 (1 MB documents included), the
        shipped SQL grammar at most 178 on its corpora, each far below its budget. An ambiguous
        or right-recursive grammar needs more with every byte, and its work per byte grows with
        that (cubically: 1 KB of `1+1+...` under `e: e "+" e | ...` took 6 s, 3 KB over two
        minutes; `x: "a" x | "a"` over 4,000 bytes, 23 s). Past the budget a check stops with
        TextError instead (that grammar: at character 353, in half a second).
    """

    max_source_bytes: int = 1 << 20
    max_depth: int = 5_000
    max_repeat: int = 100_000
    max_optional_properties: int = 256
    max_pattern_properties: int = 128
    row_items: int = 128


def check_size(what: str, size: int, limits: GrammarLimits) -> None:
    if size > limits.max_source_bytes:
        raise GrammarError(
            f"{what} is {size:,} bytes; at most GrammarLimits.max_source_bytes "
            f"({limits.max_source_bytes:,})"
        )


# A JSON string, to its closing quote (or the text's end when it has none).
_STRING = re.compile(rb'"(?:[^"\\]++|\\.?)*+"?', re.DOTALL)
_BRACKET = re.compile(rb"[\[\]{}]")
# Brackets as steps of depth: an opening one 2, a closing one 0 (minus 1 when read).
_STEPS = bytes.maketrans(b"[{]}", b"\2\2\0\0")
_NOT_BRACKETS = bytes(sorted(set(range(256)) - set(b"[]{}")))


def nesting_past(text: bytes, limit: int) -> int | None:
    """Where a JSON `text` nests arrays and objects more than `limit` levels deep: the byte offset
    of the first bracket past it; None when it stays within. Brackets in strings do not count;
    the text need not be valid JSON. Linear, in C but for a Python step per string where the
    limit is passed (a megabyte of brackets: about 0.02 s), so it may guard a recursive reader."""
    if text.count(b"[") + text.count(b"{") <= limit:
        return None
    steps = _STRING.sub(b"", text).translate(_STEPS, _NOT_BRACKETS)
    depths = list(itertools.accumulate(map(operator.sub, steps, itertools.repeat(1))))
    if max(depths) <= limit:
        return None
    blanked = _STRING.sub(lambda m: b" " * len(m[0]), text)  # offsets kept
    brackets = _BRACKET.finditer(blanked)
    return next(itertools.islice(brackets, depths.index(limit + 1), None)).start()
