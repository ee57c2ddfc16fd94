"""Grammar: constructors, errors, prefix checks, Unicode offsets, parse trees, coerce."""

from __future__ import annotations

import json
import time

import guidance
import lark
import pytest
from guidance import gen, select
from pydantic import BaseModel

from grammars.checker import PrefixCheck
from grammars.errors import GrammarError, TextError
from grammars.grammar import Grammar

JSON = Grammar.load("json")
QUOTE = repr('"')  # the readable item for a '"' (the three characters '"')


class Person(BaseModel):
    name: str
    age: int


PERSON_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
    "additionalProperties": False,
}


# -- constructors ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "kind", "good", "bad"),
    [
        pytest.param(lambda: Grammar.from_lark('start: "a" "b"+'), "lark", "abbb", "ac", id="lark"),
        pytest.param(lambda: Grammar.load("json"), "lark", '{"a": [1]}', "{1", id="load-json"),
        pytest.param(
            lambda: Grammar.load("json_keys", n=2),
            "lark",
            '{"a": "x", "b": "y"}',
            '{"a": 1}',
            id="load-json_keys",
        ),
        pytest.param(
            lambda: Grammar.from_json_schema(PERSON_SCHEMA),
            "json_schema",
            '{"name": "Ann", "age": 3}',
            '{"name": 3}',
            id="schema-dict",
        ),
        pytest.param(
            lambda: Grammar.from_json_schema(json.dumps(PERSON_SCHEMA, indent=2)),
            "json_schema",
            '{"name": "Ann", "age": 3}',
            '{"age": "x"}',
            id="schema-str",
        ),
        pytest.param(
            lambda: Grammar.from_json_schema(Person),
            "json_schema",
            '{"name": "Ann", "age": 3}',
            '{"name": "Ann", "age": true}',
            id="schema-pydantic",
        ),
        pytest.param(
            lambda: Grammar.from_regex(r"[a-z]+@[a-z]+\.com"), "regex", "x@y.com", "x@@", id="regex"
        ),
        pytest.param(
            lambda: Grammar.from_guidance(guidance.json(schema=Person)),
            "guidance",
            '{"name": "Ann", "age": 3}',
            '{"name": 1',
            id="guidance-json",
        ),
        pytest.param(
            lambda: Grammar.from_guidance(select(["yes", "no"])),
            "guidance",
            "no",
            "nope",
            id="guidance-select",
        ),
        pytest.param(
            lambda: Grammar.from_guidance(gen(regex=r"[0-9]{3}")),
            "guidance",
            "123",
            "12a",
            id="guidance-gen-regex",
        ),
        pytest.param(
            lambda: Grammar.from_guidance('{"n": ' + gen(regex="[0-9]+") + "}"),
            "guidance",
            '{"n": 42}',
            '{"n": x}',
            id="guidance-composed",
        ),
    ],
)
def test_constructors(make, kind, good, bad):
    grammar = make()
    assert grammar.kind == kind
    assert grammar.matches(good)
    assert not grammar.matches(bad)
    assert not grammar.check(bad).valid


def test_from_file(tmp_path):
    path = tmp_path / "ab.lark"
    path.write_text('// a then bs\nstart: "a" "b"*\n', encoding="utf-8")
    grammar = Grammar.from_file(path)
    assert grammar.name == "ab"
    assert Grammar.from_file(str(path)).matches("abb")


def test_load_names_the_grammar():
    assert JSON.name == "json"
    assert "json" in repr(JSON)


# -- errors ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "message", "line", "column"),
    [
        pytest.param(lambda: Grammar.from_lark(""), "empty grammar", None, None, id="empty"),
        pytest.param(lambda: Grammar.from_lark("  \n\t"), "empty grammar", None, None, id="blank"),
        pytest.param(
            lambda: Grammar.from_lark('foo: "a"'), "no start rule", None, None, id="no-start"
        ),
        pytest.param(
            lambda: Grammar.from_lark('start: "a"\nfoo: ( "b"'),
            "Expected token ')'",
            2,
            11,
            id="syntax",
        ),
        pytest.param(
            lambda: Grammar.from_lark('start: "a"\n\n  x: "b" ) '),
            "expecting rule, token or statement",
            3,
            10,
            id="syntax-line-3",
        ),
        pytest.param(
            lambda: Grammar.from_lark("start: foo"), 'unknown name: "foo"', 1, 8, id="unknown-rule"
        ),
        pytest.param(
            lambda: Grammar.from_lark('start: "a"\nstart: "b"'),
            'duplicate rule: "start"',
            2,
            8,
            id="duplicate-rule",
        ),
        pytest.param(
            lambda: Grammar.from_lark('start: A\nA.2: "a"'),
            "priority not supported",
            2,
            6,
            id="terminal-priority",
        ),
        pytest.param(
            lambda: Grammar.from_lark('start: a\na.2: "x"'),
            "priority not supported",
            2,
            6,
            id="rule-priority",
        ),
        pytest.param(
            lambda: Grammar.from_lark('start: x\nx{a}: a "b"'),
            "params not supported",
            2,
            7,
            id="template",
        ),
        pytest.param(
            lambda: Grammar.from_lark('start: "a"\n%declare FOO'),
            "declare statement not supported",
            2,
            1,
            id="declare",
        ),
        pytest.param(
            lambda: Grammar.from_lark('start: "a"\n%override start: "b"'),
            "override statement not supported",
            2,
            1,
            id="override",
        ),
        pytest.param(
            lambda: Grammar.from_lark('start: "a"\n%import common.FOO'),
            "Unknown common regex: common.FOO",
            2,
            1,
            id="unknown-import",
        ),
        pytest.param(
            lambda: Grammar.from_lark("start: A\nA: /a(?=b)/"),
            'invalid regex "a(?=b)"',
            2,
            4,
            id="lookahead",
        ),
        pytest.param(
            lambda: Grammar.from_lark("start: A\nA: /(?<=a)b/"),
            'invalid regex "(?<=a)b"',
            2,
            4,
            id="lookbehind",
        ),
        pytest.param(
            lambda: Grammar.from_lark(r"start: A" "\n" r"A: /(a)\1/"),
            "invalid regex",
            2,
            4,
            id="backreference",
        ),
        pytest.param(
            lambda: Grammar.load("nope"),
            "no shipped grammar 'nope' (known: ",
            None,
            None,
            id="unknown-shipped",
        ),
        pytest.param(
            lambda: Grammar.load("json_keys", n=0),
            "json_keys needs a whole number of keys >= 1, got 0",
            None,
            None,
            id="bad-parameter",
        ),
        pytest.param(
            lambda: Grammar.load("json", n=2),
            "grammar 'json' takes no parameters",
            None,
            None,
            id="unexpected-parameter",
        ),
        pytest.param(
            lambda: Grammar.from_file("/nonexistent/dir/g.lark"),
            "cannot read grammar file '/nonexistent/dir/g.lark'",
            None,
            None,
            id="missing-file",
        ),
        pytest.param(
            lambda: Grammar.from_regex("a(b"), 'invalid regex "a(b"', ..., ..., id="regex-group"
        ),
        pytest.param(
            lambda: Grammar.from_regex("a(?=b)"),
            'invalid regex "a(?=b)"',
            ...,
            ...,
            id="regex-lookahead",
        ),
        pytest.param(
            lambda: Grammar.from_guidance(gen(regex="a(")),
            'invalid regex "a("',
            ...,
            ...,
            id="guidance-bad-regex",
        ),
        pytest.param(
            lambda: Grammar.from_json_schema('{"type": "object",\n  "properties": }'),
            "JSON schema is not valid JSON: Expecting value",
            2,
            17,
            id="schema-invalid-json",
        ),
        pytest.param(
            lambda: Grammar.from_json_schema("[1, 2]"),
            "a JSON schema must be an object or a boolean, not list",
            None,
            None,
            id="schema-not-object",
        ),
        pytest.param(
            lambda: Grammar.from_json_schema("false"),
            "the JSON schema `false` has no instance",
            None,
            None,
            id="schema-false",
        ),
        pytest.param(
            lambda: Grammar.from_json_schema({"type": "foo"}),
            "Invalid type: foo",
            None,
            None,
            id="schema-bad-type",
        ),
        pytest.param(
            lambda: Grammar.from_guidance(3),
            "not a guidance grammar object: int",
            None,
            None,
            id="guidance-not-a-grammar",
        ),
        pytest.param(
            lambda: Grammar.coerce(3), "cannot make a grammar from int", None, None, id="coerce-int"
        ),
        pytest.param(
            lambda: Grammar.coerce(["a"]),
            "cannot make a grammar from list",
            None,
            None,
            id="coerce-list",
        ),
    ],
)
def test_grammar_errors(make, message, line, column):
    with pytest.raises(GrammarError) as info:
        make()
    err = info.value
    assert message in err.message
    assert message in str(err)
    if line is None:
        assert (err.line, err.column) == (None, None)
        assert str(err) == err.message
    elif (
        line is not ...
    ):  # ...: position not checked here (see test_regex_error_position_is_in_the_pattern)
        assert (err.line, err.column) == (line, column)
        assert str(err).endswith(f"at line {line}, column {column}")


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        pytest.param(lambda: Grammar.from_regex("a(b"), "unclosed group", id="regex-group"),
        pytest.param(lambda: Grammar.from_regex("a(?=b)"), "look-around", id="regex-lookahead"),
        pytest.param(
            lambda: Grammar.from_lark("start: A\nA: /a(?=b)/"), "look-around", id="lark-lookahead"
        ),
    ],
)
def test_regex_error_names_the_construct(make, reason):
    with pytest.raises(GrammarError) as info:
        make()
    assert reason in str(info.value)
    assert not str(info.value).split(" at line ")[0].endswith(":")


def test_regex_error_position_is_in_the_pattern():
    pattern = "a(b"
    with pytest.raises(GrammarError) as info:
        Grammar.from_regex(pattern)
    err = info.value
    assert err.line is None or (err.line == 1 and err.column <= len(pattern))


def test_unknown_shipped_name_lists_the_known_ones():
    with pytest.raises(GrammarError) as info:
        Grammar.load("../zzz")
    known = str(info.value).split("(known: ")[1].rstrip(")").split(", ")
    assert {"json", "json_keys"} <= set(known)


def test_type_errors():
    with pytest.raises(TypeError, match="must be str"):
        Grammar.from_lark(b'start: "a"')  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="must be str"):
        Grammar.from_regex(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="str or bytes"):
        JSON.check(3)  # type: ignore[arg-type]


def test_grammar_error_context_caret():
    with pytest.raises(GrammarError) as info:
        Grammar.from_lark('start: "a"\n%declare FOO')
    assert info.value.context() == "%declare FOO\n^"
    with pytest.raises(GrammarError) as info:
        Grammar.from_lark('start: "a"\nfoo: ( "b"')
    assert info.value.context() == 'foo: ( "b"\n' + " " * 10 + "^"


def test_grammar_error_context_from_file(tmp_path):
    path = tmp_path / "bad.lark"
    path.write_text('start: A\nA.5: "a"\n', encoding="utf-8")
    with pytest.raises(GrammarError) as info:
        Grammar.from_file(path)
    assert (info.value.line, info.value.column) == (2, 6)
    assert info.value.context() == 'A.5: "a"\n     ^'


@pytest.mark.parametrize(
    "err",
    [
        pytest.param(GrammarError("x"), id="no-position"),
        pytest.param(GrammarError("x", line=1, column=1), id="no-source"),
        pytest.param(GrammarError("x", line=9, column=1, source="a\nb"), id="line-out-of-range"),
    ],
)
def test_grammar_error_context_empty(err):
    assert err.context() == ""


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


# -- matches, parse, coerce -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param('{"a": 1}', True, id="object"),
        pytest.param(' \n[1 , "x",null]', True, id="blanks"),
        pytest.param('{"a": 1', False, id="incomplete"),
        pytest.param('{"a": 1}}', False, id="extra"),
        pytest.param("", False, id="empty"),
        pytest.param(b'"\xc3\xa9"', True, id="bytes"),
    ],
)
def test_matches(text, expected):
    assert JSON.matches(text) is expected


def test_parse_tree():
    tree = JSON.parse('{"a": [1, 2.5, "é"], "b": {"c": null}}')
    assert isinstance(tree, lark.Tree)
    assert tree.data == "start"
    keys = [pair.children[0] for pair in tree.find_data("pair")]
    assert sorted(str(k) for k in keys) == ['"a"', '"b"', '"c"']
    assert [str(t) for t in tree.scan_values(lambda v: v.type == "NUMBER")] == ["1", "2.5"]
    assert JSON.parse(b"[1]") == JSON.parse("[1]")


def test_parse_inline_grammar():
    tree = Grammar.from_lark('start: word+\nword: /[a-z]+/\n%ignore " "').parse("ab cd")
    assert [str(w.children[0]) for w in tree.find_data("word")] == ["ab", "cd"]


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


@pytest.mark.parametrize(
    ("grammar", "kind"),
    [
        pytest.param(lambda: Grammar.from_regex("a+"), "regex", id="regex"),
        pytest.param(
            lambda: Grammar.from_json_schema({"type": "integer"}), "json_schema", id="json_schema"
        ),
        pytest.param(lambda: Grammar.from_guidance(select(["a"])), "guidance", id="guidance"),
    ],
)
def test_parse_needs_lark_grammar(grammar, kind):
    with pytest.raises(
        GrammarError, match=f"parse trees need a Lark grammar; this one is a {kind}"
    ):
        grammar().parse("a")


def test_parse_llguidance_only_grammar():
    grammar = Grammar.from_lark('start: %json {"type": "integer"}')
    assert grammar.matches("12")
    with pytest.raises(GrammarError, match="the lark library cannot read this grammar"):
        grammar.parse("12")


@pytest.mark.parametrize(
    ("spec", "kind", "sample"),
    [
        pytest.param("json", "lark", "[1]", id="shipped-name"),
        pytest.param('start: "a"+', "lark", "aaa", id="lark-text"),
        pytest.param({"type": "integer"}, "json_schema", "12", id="dict"),
        pytest.param(Person, "json_schema", '{"name": "x", "age": 1}', id="pydantic"),
        pytest.param(select(["a", "b"]), "guidance", "b", id="guidance"),
        pytest.param(
            guidance.json(schema={"type": "integer"}), "guidance", "12", id="guidance-json"
        ),
    ],
)
def test_coerce(spec, kind, sample):
    grammar = Grammar.coerce(spec)
    assert grammar.kind == kind
    assert grammar.matches(sample)
    assert Grammar.coerce(grammar) is grammar


def test_coerce_shipped_name_before_lark_text():
    assert Grammar.coerce("json").name == "json"
    with pytest.raises(GrammarError, match=r"Expected token ':'.* at line 1, column 7"):
        Grammar.coerce("jsonx y")  # not one word, so read as (bad) Lark text


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        pytest.param("jsno", "no shipped grammar 'jsno'; did you mean 'json'?", id="typo"),
        pytest.param(" csvv\n", "no shipped grammar 'csvv'; did you mean 'csv'?", id="blanks"),
        pytest.param("jsonkeys", "did you mean 'json_keys'?", id="underscore"),
        pytest.param("banana", "no shipped grammar 'banana' (known: arithmetic, csv,", id="far"),
    ],
)
def test_coerce_word_that_is_no_shipped_name(spec, message):
    with pytest.raises(GrammarError) as info:
        Grammar.coerce(spec)
    assert message in str(info.value)


def test_load_suggests_the_closest_name():
    with pytest.raises(
        GrammarError, match=r"no shipped grammar 'sqllite'; did you mean 'sqlite'\?"
    ):
        Grammar.load("sqllite")


@pytest.mark.filterwarnings("ignore:Possible nested set:FutureWarning")
def test_parse_reports_an_engine_disagreement_as_text_error():
    # Rust's regex reads [[:digit:]] as a POSIX class; Python's re reads a set of ':[digt'.
    grammar = Grammar.from_lark("start: /[[:digit:]]+/")
    assert grammar.matches("12")
    with pytest.raises(
        TextError, match="llguidance accepts this text but the lark library"
    ) as info:
        grammar.parse("12")
    assert (info.value.char_offset, info.value.byte_offset) == (0, 0)
