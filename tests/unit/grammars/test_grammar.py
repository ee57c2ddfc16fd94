"""Grammar: constructors, matches, parse trees, coerce."""

from __future__ import annotations

import json

import guidance
import lark
import pytest
from guidance import gen, select
from pydantic import BaseModel

from grammars.errors import GrammarError, TextError
from grammars.grammar import Grammar

JSON = Grammar.load("json")


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
