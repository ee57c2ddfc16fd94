"""JSON-schema keywords the engine cannot enforce (grammars/json_schema/relax.py): the grammar is
built from the schema without them (a superset), and the `jsonschema` validator decides whole
documents.

For each such keyword: the schema compiles, the grammar says which keyword it left out, a valid
document matches, and a document that breaks only that keyword is refused by `matches` (the
validator) though the draft checker takes it. A guided run whose complete text breaks such a
keyword is not reported valid: the value the validator refuses is written again, or the run ends
not valid. Schemas the engine cannot take even so keep a clear GrammarError.
"""

from __future__ import annotations

from typing import Any

import pytest

import providers
from backtrack import Grammar, GuideResult, guide
from grammars.errors import GrammarError
from grammars.json_schema.relax import Relaxation, relax
from tests.support.scripted import ScriptedAPI, ScriptedTarget

DRAFT_07 = "http://json-schema.org/draft-07/schema#"

# (schema, a valid document, a document that breaks only the relaxed keyword, the keyword noted)
CASES = [
    pytest.param(
        {"type": "object", "properties": {"a": {"type": "string", "not": {"const": "x"}}}},
        '{"a": "y"}',
        '{"a": "x"}',
        "not",
        id="not",
    ),
    pytest.param(
        {"type": "array", "items": {"type": "integer"}, "uniqueItems": True},
        "[1, 2]",
        "[1, 1]",
        "uniqueItems",
        id="uniqueItems",
    ),
    pytest.param(
        {
            "type": "object",
            "properties": {"kind": {"type": "string"}, "n": {"type": "integer"}},
            "if": {"properties": {"kind": {"const": "a"}}},
            "then": {"properties": {"n": {"minimum": 10}}},
            "else": {"properties": {"n": {"maximum": 0}}},
        },
        '{"kind": "a", "n": 12}',
        '{"kind": "b", "n": 12}',
        "if/then/else",
        id="if-then-else",
    ),
    pytest.param(
        {
            "$schema": DRAFT_07,
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "dependencies": {"a": ["b"]},
        },
        '{"a": 1, "b": 2}',
        '{"a": 1}',
        "dependencies",
        id="dependencies",
    ),
    pytest.param(
        {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "dependentRequired": {"a": ["b"]},
        },
        '{"a": 1, "b": 2}',
        '{"a": 1}',
        "dependentRequired",
        id="dependentRequired",
    ),
    pytest.param(
        {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "dependentSchemas": {"a": {"properties": {"b": {"minimum": 5}}}},
        },
        '{"a": 1, "b": 7}',
        '{"a": 1, "b": 2}',
        "dependentSchemas",
        id="dependentSchemas",
    ),
    pytest.param(
        {"type": "object", "propertyNames": {"pattern": "^[a-z]+$"}},
        '{"ab": 1}',
        '{"AB": 1}',
        "propertyNames",
        id="propertyNames",
    ),
    pytest.param(
        {"type": "array", "items": {"type": "integer"}, "contains": {"const": 3}},
        "[1, 3]",
        "[1, 2]",
        "contains",
        id="contains",
    ),
    pytest.param(
        {
            "type": "object",
            "allOf": [{"properties": {"a": {"type": "integer"}}}],
            "unevaluatedProperties": False,
        },
        '{"a": 1}',
        '{"a": 1, "b": 2}',
        "unevaluatedProperties",
        id="unevaluatedProperties",
    ),
    pytest.param(
        {"oneOf": [{"type": "string"}, {"type": "string", "maxLength": 3}]},
        '"abcd"',
        '"ab"',  # both branches take it: not exactly one
        "oneOf",
        id="oneOf",
    ),
    pytest.param(
        # The engine refuses every negative number under multipleOf (-4 here): left out.
        {"type": "integer", "multipleOf": 2},
        "-4",
        "-3",
        "multipleOf",
        id="multipleOf-negative",
    ),
    pytest.param(
        {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "minProperties": 1,
        },
        '{"b": 1}',
        "{}",
        "minProperties",
        id="minProperties",
    ),
    pytest.param(
        # The engine checks a key that `properties` lists against `properties` alone.
        {
            "type": "object",
            "properties": {"a1": {"type": "string"}},
            "patternProperties": {"^a": {"maxLength": 2}},
        },
        '{"a1": "xy"}',
        '{"a1": "xyz"}',
        "patternProperties",
        id="patternProperties-overlap",
    ),
]


@pytest.mark.parametrize(("schema", "valid", "breaks", "keyword"), CASES)
def test_a_keyword_the_engine_cannot_enforce_is_left_to_the_validator(
    schema: dict[str, Any], valid: str, breaks: str, keyword: str
) -> None:
    grammar = Grammar.from_json_schema(schema)
    parts = grammar.schema
    assert parts is not None and keyword in [r.keyword for r in parts.relaxed]
    assert parts.validator is not None
    assert grammar.matches(valid)
    assert not grammar.matches(breaks)
    check = grammar.check(breaks)  # the draft checker takes it: a superset
    assert (check.valid, check.complete) == (True, True)
    if parts.strict is not None:  # the schema's own order decides the same way
        assert parts.strict.matches(valid) and not parts.strict.matches(breaks)


def test_a_schema_the_engine_takes_whole_is_not_relaxed() -> None:
    schema = {
        "type": "object",
        "properties": {"n": {"type": "number", "minimum": 0, "multipleOf": 0.5}},
        "oneOf": [{"required": ["n"]}],
    }
    grammar = Grammar.from_json_schema(schema)
    assert grammar.schema is not None and grammar.schema.relaxed == ()
    assert grammar.matches('{"n": 1.5}') and not grammar.matches('{"n": 1.25}')


def test_an_unknown_format_is_dropped_as_the_annotation_it_is() -> None:
    grammar = Grammar.from_json_schema({"type": "string", "format": "uri"})
    parts = grammar.schema
    assert parts is not None
    assert [(r.keyword, r.checked) for r in parts.relaxed] == [("format 'uri'", False)]
    assert parts.validator is None  # neither the grammar nor the validator checks it
    assert grammar.matches('"not a uri"')
    # A format the engine knows is enforced, not relaxed.
    dated = Grammar.from_json_schema({"type": "string", "format": "date"})
    assert dated.schema is not None and dated.schema.relaxed == ()
    assert not dated.matches('"yesterday"')


def test_relaxations_name_where_they_are_and_follow_references() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/odd"}, "b": {"$ref": "#/components/even"}},
        "$defs": {"odd": {"type": "integer", "not": {"multipleOf": 2}}},
        "components": {"even": {"type": "array", "uniqueItems": True}},
    }
    relaxed, notes = relax(schema)
    assert notes == (
        Relaxation("not", "#/$defs/odd"),
        Relaxation("uniqueItems", "#/components/even"),
    )
    assert "not" not in relaxed["$defs"]["odd"] and "not" in schema["$defs"]["odd"]  # a copy
    assert str(Relaxation("not", "#/$defs/odd")) == "not at '#/$defs/odd' (the validator decides)"
    grammar = Grammar.from_json_schema(schema)
    assert grammar.matches('{"b": [1, 2], "a": 3}')
    assert not grammar.matches('{"a": 4}') and not grammar.matches('{"b": [1, 1]}')


@pytest.mark.parametrize(
    ("schema", "valid", "invalid"),
    [
        pytest.param({"maxItems": 2.0}, "[1, 2]", "[1, 2, 3]", id="an-integral-decimal-count"),
        pytest.param({"minLength": 2.0}, '"ab"', '"a"', id="an-integral-decimal-length"),
        pytest.param(
            {"type": "array", "uniqueItems": False}, "[1, 1]", "{}", id="uniqueItems-false"
        ),
    ],
)
def test_a_keyword_the_engine_refuses_only_for_its_form_is_rewritten(
    schema: dict[str, Any], valid: str, invalid: str
) -> None:
    relaxed, notes = relax(schema)
    assert notes == () and relaxed is not schema  # a copy, rewritten
    grammar = Grammar.from_json_schema(schema)
    assert grammar.matches(valid) and not grammar.matches(invalid)


def test_a_schema_named_inside_a_dropped_keyword_is_still_found() -> None:
    # From JSON-Schema-Test-Suite: a `$ref` by `$id` to a schema that sits inside a `not`.
    schema = {
        "$id": "http://example.com/a.json",
        "$defs": {
            "x": {
                "$id": "http://example.com/b/c.json",
                "not": {"$defs": {"y": {"$id": "d.json", "type": "number"}}},
            }
        },
        "allOf": [{"$ref": "http://example.com/b/d.json"}],
    }
    grammar = Grammar.from_json_schema(schema)
    assert grammar.matches("1") and not grammar.matches('"a"')


def test_boolean_schemas() -> None:
    anything = Grammar.from_json_schema(True)
    assert anything.matches('{"a": [1]}') and anything.matches("null")
    assert Grammar.from_json_schema("true").matches("2")
    with pytest.raises(GrammarError, match="no instance"):
        Grammar.from_json_schema(False)


def test_a_property_named_like_a_keyword_is_not_touched() -> None:
    schema = {"type": "object", "properties": {"not": {"type": "integer"}}, "required": ["not"]}
    relaxed, notes = relax(schema)
    assert (relaxed, notes) == (schema, ())
    assert Grammar.from_json_schema(schema).matches('{"not": 1}')


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        pytest.param({"not": {}, "type": "foo"}, "foo", id="bad-type-beside-a-relaxed-keyword"),
        pytest.param(
            {"type": "object", "$ref": "https://example.com/other.json", "uniqueItems": True},
            "example.com",
            id="remote-ref",
        ),
        pytest.param(
            {"type": "object", "patternProperties": {"^a": {}, "^ab": {}}, "not": {}},
            "not disjoint",
            id="overlapping-patterns",
        ),
    ],
)
def test_a_schema_that_cannot_compile_still_says_why(schema: dict[str, Any], message: str) -> None:
    with pytest.raises(GrammarError, match=message):
        Grammar.from_json_schema(schema)


# -- guided runs -----------------------------------------------------------------------------------

UNIQUE = {"type": "array", "items": {"type": "string"}, "uniqueItems": True}


def run(schema: dict[str, Any], draft: str, target: ScriptedTarget, **options: Any) -> GuideResult:
    api = ScriptedAPI(draft)
    grammar = Grammar.from_json_schema(schema)
    return guide(providers.FunctionDrafter(api), grammar, prompt="p", target=target, **options)


def test_a_value_only_the_validator_refuses_is_written_again() -> None:
    target = ScriptedTarget('["a", "b"]')
    pieces: list[str] = []
    result = run(UNIQUE, '["a", "a"]', target, on_text=pieces.append)
    assert (result.text, result.valid) == ('["a", "b"]', True)
    assert pieces == ['["a", "b"]']  # nothing was passed on that the validator took back
    assert target.calls[0][0] == ""  # the whole array went: uniqueItems is the array's
    assert ("deleted", '["a", "a"]') in [(s.origin, s.text) for s in result.trace.spans]


def test_a_nested_value_only_the_validator_refuses_is_cut_where_it_starts() -> None:
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "tags": UNIQUE},
        "required": ["name", "tags"],
    }
    target = ScriptedTarget('["x"]')
    result = run(schema, '{"name": "n", "tags": ["a", "a"]}', target)
    assert target.calls[0][0] == '{"name": "n", "tags": '  # the name stays
    # The API then carries on from the target's text with its own ', "a"]}' (a repair).
    assert (result.text, result.valid) == ('{"name": "n", "tags": ["x", "a"]}', True)


def test_a_run_that_keeps_breaking_such_a_keyword_ends_not_valid() -> None:
    # The target writes the refused value again each time: after a few cuts the run ends.
    target = ScriptedTarget(*['["a", "a"]'] * 3)
    result = run(UNIQUE, '["a", "a"]', target)
    assert (result.text, result.complete, result.valid) == ('["a", "a"]', True, False)
    assert len(target.calls) == 3


@pytest.mark.parametrize("dialect", [None, "https://json-schema.org/draft/2020-12/schema"])
def test_dependencies_is_enforced_in_any_dialect(dialect: str | None) -> None:
    # The 2020-12 validator alone ignores it (JSON-Schema-Test-Suite, optional/
    # dependencies-compatibility.json, expects it enforced).
    schema: dict[str, Any] = {
        "type": "object",
        "dependencies": {"a": ["b"], "c": {"required": ["d"]}},
    }
    if dialect:
        schema["$schema"] = dialect
    grammar = Grammar.from_json_schema(schema)
    assert grammar.matches('{"a": 1, "b": 2}') and grammar.matches('{"c": 1, "d": 2}')
    assert not grammar.matches('{"a": 1}') and not grammar.matches('{"c": 1}')
