"""The one Lark tokenizer (grammars/lark/lexer.py): what the reader of a grammar and the checks made
before compiling it both read, and where the checks leave a grammar to the engine's lexer."""

from __future__ import annotations

import pytest

from grammars.errors import GrammarError
from grammars.grammar import Grammar
from grammars.lark.lexer import position, statements, tokens


def test_tokens_keep_offsets_and_skip_blanks_and_comments():
    text = 'start: "a" // note\n  | /b\nc/i A'
    found = [(t.kind, t.text) for t in tokens(text)]
    assert found == [
        ("name", "start"),
        ("punct", ":"),
        ("string", '"a"'),
        ("nl", "\n"),
        ("punct", "|"),
        ("regexp", "/b\nc/i"),
        ("name", "A"),
    ]
    assert all(text[t.start : t.end] == t.text for t in tokens(text))


def test_json_after_a_directive_is_one_token_with_its_value():
    (_, _, json_token) = tokens('x: %json {"type": "integer"}')
    assert json_token.kind == "json"
    assert json_token.value == {"type": "integer"}


def test_a_nested_grammar_is_opaque_and_one_statement():
    text = 'start: %lark {\n  start: "x"\n}\nb: "y"'
    first, second = statements(tokens(text))
    assert [t.kind for t in first.toks[3:]] == ["opaque"] * (len(first.toks) - 3)
    assert second.toks[0].text == "b"


def test_a_line_starting_with_a_bar_continues_the_statement():
    (statement,) = statements(tokens('a: "x"\n\n   | "y"'))
    assert [t.text for t in statement.toks] == ["a", ":", '"x"', "|", '"y"']


def test_position_is_one_based():
    assert position("ab\ncd", 4) == (2, 2)


@pytest.mark.parametrize(
    ("text", "line", "column"),
    [
        pytest.param('start: a\n?a: "x" a', 2, 1, id="inlined-rule"),
        pytest.param('start: a\n!a: "x" a', 2, 1, id="kept-rule"),
        pytest.param("start: x\nx: /a\nb/ x", 2, 1, id="regexp-over-two-lines"),
        pytest.param('start: a\na: "x" a // \\ in a comment\n  | "y" a', 2, 1, id="comment"),
    ],
)
def test_checks_read_what_the_reader_reads(text, line, column):
    with pytest.raises(GrammarError, match="can never be completed") as info:
        Grammar.from_lark(text)
    assert (info.value.line, info.value.column) == (line, column)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param('start: fooBar\nfooBar: "x" fooBar', id="mixed-case-name"),
        pytest.param('start: "a"?b\nb: "x" b', id="question-mark-before-a-name"),
        pytest.param('start: x{0x10}\nx: "a" x', id="hex-number"),
        pytest.param('start: a ~ 1..3\na: "x" a', id="range-read-as-a-fraction"),
    ],
)
def test_what_the_engines_lexer_reads_otherwise_is_the_engines_error(text):
    # llguidance's lexer reads these tokens otherwise than lark's: its own error is the one shown
    with pytest.raises(GrammarError) as info:
        Grammar.from_lark(text)
    assert "can never be completed" not in info.value.message


def test_a_schema_in_a_nested_grammar_is_checked():
    text = 'start: %lark {\n  start: %json {"type": "array", "minItems": 1000000000}\n}'
    with pytest.raises(GrammarError, match=r"GrammarLimits\.max_repeat"):
        Grammar.from_lark(text)
