"""Regexes as JSON Schema reads them (ECMA-262): `\\d` and `\\w` are ASCII (grammars/ecma.py)."""

from __future__ import annotations

import pytest

from grammars.ecma import ascii_classes, ascii_schema_patterns
from grammars.grammar import Grammar


@pytest.mark.parametrize(
    ("pattern", "ascii"),
    [
        (r"\d{3}-\d{4}", "[0-9]{3}-[0-9]{4}"),
        (r"[\d-]+", "[0-9-]+"),  # inside a class: the ranges alone
        (r"[^\d]", "[^0-9]"),
        (r"\D\w\W", "[^0-9][A-Za-z0-9_][^A-Za-z0-9_]"),
        (r"\\d", r"\\d"),  # an escaped backslash, then the letter d
        (r"[]\d]", "[]0-9]"),  # a `]` first in a class is a literal: the class goes on
        (r"a\.b\s", r"a\.b\s"),
    ],
)
def test_digit_and_word_classes_are_ascii(pattern: str, ascii: str) -> None:
    assert ascii_classes(pattern) == ascii


def test_a_schema_pattern_takes_ascii_digits_only() -> None:
    grammar = Grammar.from_json_schema({"type": "string", "pattern": r"^\d{3}-\d{4}$"})
    assert grammar.matches('"123-4567"')
    assert not grammar.matches('"🯸🯸🯸-🯸🯸🯸🯸"')  # digits, but not ECMA-262's


def test_pattern_properties_keys_and_nested_patterns_are_read_alike() -> None:
    schema = {
        "type": "object",
        "patternProperties": {r"^\w+$": {"type": "array", "items": {"pattern": r"\d"}}},
    }
    converted = ascii_schema_patterns(schema)
    assert converted == {
        "type": "object",
        "patternProperties": {"^[A-Za-z0-9_]+$": {"type": "array", "items": {"pattern": "[0-9]"}}},
    }
    assert schema["patternProperties"] == {r"^\w+$": {"type": "array", "items": {"pattern": r"\d"}}}


def test_a_regex_grammar_takes_ascii_digits_only() -> None:
    digits = Grammar.from_regex(r"\d+")
    assert digits.matches("42") and not digits.matches("٤٢")
