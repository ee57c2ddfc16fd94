"""Grammar.check: prefix checks, what is expected at a cut (and parse()'s TextError there), Unicode
offsets, linear cost."""

from __future__ import annotations

import json
import time

import pytest
from guidance import select

from grammars.checker import PrefixCheck
from grammars.errors import TextError
from grammars.grammar import Grammar

JSON = Grammar.load("json")
QUOTE = repr('"')  # the readable item for a '"' (the three characters '"')


# -- check ----------------------------------------------------------------------------------------


def test_done_when_examples():
    partial = JSON.check('{"a": tru')
    assert partial.prefix == '{"a": tru'
    assert partial.valid and not partial.complete
    trailing = JSON.check('{"a": 1,}')
    assert trailing.prefix == '{"a": 1,'
    assert not trailing.valid and not trailing.complete


def test_prefix_check_fields():
    result = JSON.check('{"a": 1,}')
    assert isinstance(result, PrefixCheck)
    assert result.text == '{"a": 1,}'
    assert result.prefix == '{"a": 1,'
    assert (result.chars, result.bytes) == (8, 8)
    assert result.valid is False
    assert result.complete is False
    assert QUOTE in result.expected
    assert result.context() == '{"a": 1,}\n        ^'
    err = result.error()
    assert isinstance(err, TextError) and isinstance(err, ValueError)
    assert (err.char_offset, err.byte_offset) == (8, 8)
    assert err.expected == result.expected
    assert "at character 8 (byte 8)" in str(err)
    with pytest.raises(AttributeError):
        result.chars = 3  # type: ignore[misc]


@pytest.mark.parametrize(
    ("grammar", "text", "prefix", "complete"),
    [
        pytest.param(JSON, "", "", False, id="empty-text"),
        pytest.param(JSON, "  \n", "  \n", False, id="leading-blanks"),
        pytest.param(JSON, '{"a": [1, 2.5e3, true, null]}', None, True, id="whole"),
        pytest.param(JSON, '{"a": [1, 2.5e3, tr', None, False, id="partial-literal"),
        pytest.param(JSON, '{"a": "unclosed', None, False, id="partial-string"),
        pytest.param(JSON, '{"a": 1}x', '{"a": 1}', True, id="trailing-junk"),
        pytest.param(JSON, '{"a": 01}', '{"a": 0', False, id="leading-zero"),
        pytest.param(JSON, "[1 2]", "[1 ", False, id="missing-comma"),
        pytest.param(
            Grammar.load("json_keys"),
            '{"a": "1", "b": 2',
            '{"a": "1", "b": ',
            False,
            id="json_keys-non-string",
        ),
    ],
)
def test_check_cases(grammar, text, prefix, complete):
    prefix = text if prefix is None else prefix
    result = grammar.check(text)
    assert result.prefix == prefix
    assert result.valid == (prefix == text)
    assert result.complete == complete
    assert grammar.matches(text) == (result.valid and complete)


@pytest.mark.parametrize(
    ("grammar", "text", "expected"),
    [
        pytest.param(JSON, '{"a": tru', ("'e'",), id="forced-letter"),
        pytest.param(
            Grammar.from_guidance(select(["yes", "no"])), "", ("'no'", "'yes'"), id="forced-words"
        ),
        pytest.param(Grammar.from_regex("ab?"), "a", ("'b'", "end of text"), id="optional"),
    ],
)
def test_expected_exact(grammar, text, expected):
    assert grammar.check(text).expected == expected


@pytest.mark.parametrize(
    ("text", "items"),
    [
        pytest.param('{"a": 1,', [QUOTE, "' '"], id="after-comma"),
        pytest.param('{"a": 1,}', [QUOTE], id="at-cut"),
        pytest.param("", ["'{'", "'['", "'true'", "'false'", "'null'", "[0-9]", "'-'"], id="start"),
        pytest.param('{"a": 1', ["','", "'}'", "[0-9]", "'.'"], id="in-number"),
    ],
)
def test_expected_contains(text, items):
    expected = JSON.check(text).expected
    for item in items:
        assert item in expected
    assert "end of text" not in expected


def test_expected_non_ascii_is_readable():
    expected = ACCENTS.check("").expected
    assert "'é'" in expected and "'ü'" in expected


@pytest.mark.parametrize(
    ("grammar", "text"),
    [
        pytest.param(JSON, '{"a": 1} ', id="json-trailing-blank"),
        pytest.param(JSON, "[1]\n", id="json-trailing-newline"),
        pytest.param(JSON, ' \n{ "a" : [ 1 , true ] ,\t"b":{ } }\r\n', id="json-everywhere"),
        pytest.param(Grammar.load("json_keys", n=1), ' {"a": "b"}', id="json_keys-leading-blank"),
        pytest.param(Grammar.load("json_keys", n=1), '{"a": "b"}\n', id="json_keys-trailing"),
        pytest.param(
            Grammar.load("json_keys", n=2), '\n{ "a" : "b" ,\n "c":"d" }\n', id="json_keys-2"
        ),
    ],
)
def test_shipped_grammars_allow_blanks_around(grammar, text):
    assert grammar.matches(text)
    assert grammar.parse(text).data == "start"


def test_expected_at_the_end():
    expected = JSON.check('{"a": 1}').expected
    assert expected[-1] == "end of text"
    assert "' '" in expected and "'}'" not in expected


# -- Unicode --------------------------------------------------------------------------------------

EMOJI_CJK = '{"名前": "日本語 😀👍🏽", "e\u0301": "a\u0308\u0301"}'


@pytest.mark.parametrize(
    "text",
    [
        pytest.param('{"a": "😀"}', id="emoji"),
        pytest.param('{"a": "👩‍👩‍👧 🇯🇵 👍🏽"}', id="emoji-sequences"),
        pytest.param('{"日本": "中文字符 한국어"}', id="cjk"),
        pytest.param('{"e\u0301": "n\u0303o\u0308\u0323"}', id="combining"),
        pytest.param(EMOJI_CJK, id="mixed"),
        pytest.param('"\U0010ffff\u200b\ufeff"', id="edge-code-points"),
    ],
)
def test_unicode_strings(text):
    result = JSON.check(text)
    assert result.valid and result.complete
    assert (result.chars, result.bytes) == (len(text), len(text.encode("utf-8")))
    assert JSON.check(text.encode("utf-8")) == result
    assert JSON.parse(text)


@pytest.mark.parametrize(
    ("text", "prefix"),
    [
        pytest.param('{"名前": "日本語"}x', '{"名前": "日本語"}', id="cjk-then-junk"),
        pytest.param('{"😀": 1,}', '{"😀": 1,', id="emoji-key-trailing-comma"),
        pytest.param('["e\u0301", 01]', '["e\u0301", 0', id="combining-then-bad-number"),
        pytest.param(EMOJI_CJK + "]", EMOJI_CJK, id="mixed-then-bracket"),
        pytest.param('"😀\n"', '"😀', id="control-char-in-string"),
    ],
)
def test_char_and_byte_offsets(text, prefix):
    result = JSON.check(text)
    assert result.prefix == prefix
    assert result.chars == len(prefix)
    assert result.bytes == len(prefix.encode("utf-8"))
    assert result.chars != result.bytes
    err = result.error()
    assert (err.char_offset, err.byte_offset) == (result.chars, result.bytes)


ACCENTS = Grammar.from_lark('start: "é" | "ü"')


@pytest.mark.parametrize(
    ("grammar", "text", "prefix"),
    [
        # é = c3 a9, ü = c3 bc, ö = c3 b6: the first byte of "ö" is valid, the second is not
        pytest.param(ACCENTS, "ö", "", id="lark-2-byte"),
        pytest.param(ACCENTS, "üö", "ü", id="lark-after-char"),
        # 本 = e6 9c ac, 朝 = e6 9c 9d: two of three bytes are valid
        pytest.param(Grammar.from_regex("日本"), "日朝", "日", id="regex-3-byte"),
        # 😀 = f0 9f 98 80, 😁 = f0 9f 98 81: three of four bytes are valid
        pytest.param(Grammar.from_regex("😀+"), "😀😀😁", "😀😀", id="regex-4-byte"),
        pytest.param(Grammar.from_lark('start: "a" "é"'), "aè", "a", id="lark-accent"),
    ],
)
def test_cut_never_inside_a_character(grammar, text, prefix):
    result = grammar.check(text)
    assert result.prefix == prefix
    assert (result.chars, result.bytes) == (len(prefix), len(prefix.encode("utf-8")))
    assert not result.valid
    assert grammar.check(text.encode("utf-8")) == result


def test_combining_marks_are_code_points():
    """The cut is per code point: a base letter may be kept without its combining mark."""
    grammar = Grammar.from_regex("e\u0301x")
    result = grammar.check("e\u0308x")
    assert (result.prefix, result.chars, result.bytes) == ("e", 1, 1)
    assert grammar.matches("e\u0301x")
    assert not grammar.matches("\u00e9x")  # precomposed é is another string


@pytest.mark.parametrize(
    ("data", "char_offset", "byte_offset", "reason"),
    [
        pytest.param(b'{"a": "\xc3\xa9\xff"}', 8, 9, "invalid start byte", id="bad-byte"),
        pytest.param(b'"\xe6\x97', 1, 1, "unexpected end of data", id="truncated-cjk"),
        pytest.param(b"\x80", 0, 0, "invalid start byte", id="lone-continuation"),
        pytest.param(b'"\xf0\x9f\x98\x80\xc3("', 2, 5, "invalid continuation", id="after-emoji"),
        pytest.param(b'"\xed\xa0\x80"', 1, 1, "invalid continuation", id="encoded-surrogate"),
    ],
)
def test_invalid_utf8_bytes(data, char_offset, byte_offset, reason):
    assert JSON.matches(data) is False  # not a sentence of the grammar: no error to catch
    for call in (JSON.check, JSON.parse):
        with pytest.raises(TextError) as info:
            call(data)
        err = info.value
        assert (err.char_offset, err.byte_offset) == (char_offset, byte_offset)
        assert "not valid UTF-8" in str(err) and reason in str(err)
        assert f"at character {char_offset} (byte {byte_offset})" in str(err)
        assert err.text == data[:byte_offset].decode("utf-8")


def test_bytearray_is_accepted():
    assert JSON.check(bytearray(b'{"a": 1}')).complete


@pytest.mark.parametrize(
    ("small", "big"),
    [
        pytest.param(50_000, 500_000, id="500KB"),
        pytest.param(1_000_000, 10_000_000, id="10MB", marks=pytest.mark.slow),
    ],
)
def test_check_is_linear(small, big):
    """A text ten times as long costs about ten times as much (quadratic would be a hundred
    times): 500 KB against 50 KB daily, 10 MB against 1 MB under `make test`."""
    item = json.dumps(
        {"id": 1, "name": "héllo 日本 😀", "tags": ["a", "b"], "x": 1.5e3}, ensure_ascii=False
    )

    def draft(size: int) -> str:
        return "[" + ", ".join([item] * (size // (len(item.encode()) + 2))) + "]"

    def cost(text: str) -> float:
        start = time.process_time()
        result = JSON.check(text)
        elapsed = time.process_time() - start
        assert result.valid and result.bytes == len(text.encode("utf-8"))
        return elapsed

    base = min(cost(draft(small)) for _ in range(3))
    assert cost(draft(big)) < 40 * base


@pytest.mark.parametrize(
    ("text", "message", "char_offset", "byte_offset", "item"),
    [
        pytest.param('{"a": 1,}', "stops matching", 8, 8, QUOTE, id="bad-char"),
        pytest.param('{"日": 1,}', "stops matching", 8, 10, QUOTE, id="bad-char-after-cjk"),
        pytest.param('{"a": 1', "ends before the grammar is complete", 7, 7, "'}'", id="short"),
        pytest.param('["😀"', "ends before the grammar is complete", 4, 7, "']'", id="short-emoji"),
    ],
)
def test_parse_text_errors(text, message, char_offset, byte_offset, item):
    with pytest.raises(TextError) as info:
        JSON.parse(text)
    err = info.value
    assert message in str(err)
    assert (err.char_offset, err.byte_offset) == (char_offset, byte_offset)
    assert item in err.expected
    assert err.text == text
    assert err.context().endswith("\n" + " " * char_offset + "^")
