"""Grammar: the errors of building one, with their positions and context."""

from __future__ import annotations

import pytest
from guidance import gen

from grammars.errors import GrammarError
from grammars.grammar import Grammar

JSON = Grammar.load("json")

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


def test_a_tagged_dict_is_a_regex_or_lark_text_not_a_json_schema() -> None:
    digits = Grammar.coerce({"regex": "[0-9]+"})
    assert (digits.kind, digits.matches("123"), digits.matches("12a")) == ("regex", True, False)
    yes = Grammar.coerce({"lark": 'start: "yes"'})
    assert (yes.kind, yes.matches("yes"), yes.matches("no")) == ("lark", True, False)
    with pytest.raises(GrammarError, match="takes a string, not int"):
        Grammar.coerce({"regex": 5})


def test_a_dict_with_no_json_schema_keyword_is_refused_not_read_as_any_document() -> None:
    with pytest.raises(GrammarError, match=r"none of its keys \('regexp'\) is a JSON Schema"):
        Grammar.coerce({"regexp": "[0-9]+"})
    assert Grammar.coerce({}).matches('{"any": ["document"]}')  # `{}` says so on purpose
    assert Grammar.coerce({"title": "Anything"}).kind == "json_schema"
    assert not Grammar.coerce({"type": "integer"}).matches('"a"')
