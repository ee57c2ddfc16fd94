"""Drafts under a JSON schema are read with JSON's semantics: keys in any order, `1.0` for an
integer, blanks around the document. A whole document is then validated against the schema
itself: a required key that is missing is inserted where its object ends and the target writes
its value; anything else the schema refuses is checked again in the schema's own order.

The APIs replay fixed text and never read the grammar (tests/support/scripted.py); the target is a
ScriptedTarget, so a test fails if a correction is asked for that the test did not script.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import providers
from backtrack import Grammar, GuideResult, guide
from backtrack.cli.commands import DEMO_SCHEMA
from grammars.json_schema.build import Validator, loosen
from tests.support.scripted import ScriptedAPI, ScriptedTarget

PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "age": {"type": "integer"},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["name", "age"],
    "additionalProperties": False,
}
TEAM = {
    "type": "object",
    "properties": {"team": {"type": "string"}, "people": {"type": "array", "items": PERSON}},
    "required": ["team", "people"],
}
GRAMMAR = Grammar.from_json_schema(PERSON)
TEAM_GRAMMAR = Grammar.from_json_schema(TEAM)
# The schema's own grammar, in its order (drafts are read in any key order).
STRICT = GRAMMAR.schema.strict if GRAMMAR.schema else None


def run(grammar: Grammar, draft: str, target: ScriptedTarget, **options: Any) -> GuideResult:
    api = ScriptedAPI(draft)
    result = guide(providers.FunctionDrafter(api), grammar, prompt="p", target=target, **options)
    assert api.calls == result.api_calls
    return result


@pytest.mark.parametrize(
    "draft",
    [
        pytest.param('{"age": 42, "name": "Bob", "tags": ["a"]}', id="keys-reordered"),
        pytest.param('{"tags": [], "age": 1, "name": "x"}', id="optional-key-first"),
        pytest.param('{"name": "Bob", "age": 42.0}', id="integer-as-1.0"),
        pytest.param('{\n  "age": 7,\n  "name": "Al"\n}', id="pretty-printed"),
    ],
)
def test_a_valid_document_in_another_key_order_passes_untouched(draft: str) -> None:
    target = ScriptedTarget()  # fails the test if asked for a correction
    result = run(GRAMMAR, draft, target)
    assert (result.text, result.valid, result.api_calls, result.corrections) == (draft, True, 1, 0)
    assert STRICT is None or not target.calls


@pytest.mark.parametrize("chunk", [0, 1, 3])
@pytest.mark.parametrize(
    "draft",
    [
        pytest.param('{"name": "caf\\u00e9", "age": 1}', id="accent"),
        pytest.param('{"name": "smile \\ud83d\\ude00!", "age": 2}', id="surrogate-pair"),
        pytest.param('{"name": "\\u00c9l\\u00e8ve", "age": 3}', id="two-escapes"),
    ],
)
def test_unicode_escapes_become_the_characters_they_stand_for(draft: str, chunk: int) -> None:
    """The schema's strings take `\\u` escapes only for control characters: the same string is
    written with the characters themselves, with one call and no correction."""
    api = ScriptedAPI(draft, chunk=chunk)
    fn = api.stream if chunk else api
    result = guide(providers.FunctionDrafter(fn), GRAMMAR, prompt="p", target=ScriptedTarget())
    assert json.loads(result.text) == json.loads(draft)
    assert (result.valid, result.api_calls, result.corrections) == (True, 1, 0)


def test_nested_objects_in_another_order_pass_untouched() -> None:
    draft = (
        '{"people": [{"age": 3, "name": "A"}, {"tags": ["x"], "name": "B", "age": 4}], "team": "t"}'
    )
    result = run(TEAM_GRAMMAR, draft, ScriptedTarget())
    assert (result.text, result.valid, result.api_calls) == (draft, True, 1)


def test_blanks_around_the_document_are_dropped_not_corrected() -> None:
    result = run(GRAMMAR, '\n{"name": "x", "age": 1}\n', ScriptedTarget())
    assert (result.text, result.valid, result.corrections) == ('{"name": "x", "age": 1}', True, 0)


def test_a_missing_required_key_is_inserted_where_its_object_ends() -> None:
    target = ScriptedTarget("25")
    result = run(GRAMMAR, '{"tags": ["a"], "name": "Bob"}', target)
    assert result.text == '{"tags": ["a"], "name": "Bob", "age": 25}'
    assert (result.valid, result.api_calls, result.corrections) == (True, 1, 1)
    assert target.calls == [('{"tags": ["a"], "name": "Bob", "age": ', "terminal")]
    # The API's order is kept: the target writes under the schema with its keys in that order.
    (grammar,) = target.grammars
    assert grammar not in (GRAMMAR, STRICT) and grammar.matches(result.text)
    origins = [(s.origin, s.text) for s in result.trace.spans]
    assert ("deleted", "}") in origins and ("edit", ', "age": ') in origins


@pytest.mark.parametrize(
    ("grammar", "draft", "completion", "repeat"),
    [
        (GRAMMAR, '{"age": 42, "tags": ["a"]', ', "name": "Bob"}', ', "age": 1'),
        (GRAMMAR, '{"tags": [], "na', 'me": "Al", "age": 3}', 'me": "Al", "tags"'),
        (TEAM_GRAMMAR, '{"team": "t", "people": [{"age": 2', ', "name": "B"}]}', ', "age": 3'),
        (
            TEAM_GRAMMAR,
            '{"people": [{"age": 2, "name": "A"}], "te',
            'am": "t"}',
            'am": "t", "people"',
        ),
        # Items of one schema in two orders: the target writes under either.
        (
            TEAM_GRAMMAR,
            '{"team": "t", "people": [{"age": 1, "name": "A"}, {"name": "B"',
            ', "age": 2}]}',
            ', "name": "C"',
        ),
    ],
    ids=["top-level", "inside-a-key", "nested", "nested-closed", "two-orders"],
)
def test_the_target_writes_on_out_of_order_without_repeating_a_key(
    grammar: Grammar, draft: str, completion: str, repeat: str
) -> None:
    """Under the any-order grammar a key may come again, and a target wrote one over and over
    until its budget ended (issue 23): it writes under the schema in the draft's key order."""
    target = ScriptedTarget(completion)
    result = run(grammar, draft, target)
    assert (result.text, result.valid, result.corrections) == (draft + completion, True, 1)
    (written_under,) = target.grammars
    assert written_under.check(draft + repeat).chars < len(draft + repeat)


def test_a_closed_object_without_a_required_key_is_taken_as_it_stands() -> None:
    """A person without a name, closed: no order of the schema takes it, and under the any-order
    grammar a target wrote keys again and again (a playlist: 484 tokens). The target writes under
    the schema that takes that person as it stands, each key once; the final check inserts the
    name."""
    draft = '{"people": [{"age": 2}], "te'
    target = ScriptedTarget('am": "t"}', '"B"')
    result = run(TEAM_GRAMMAR, draft, target)
    assert (result.text, result.valid) == (
        '{"people": [{"age": 2, "name": "B"}], "team": "t"}',
        True,
    )
    written_under = target.grammars[0]
    assert written_under.check(draft + 'am": "t"}').chars == len(draft) + 9
    repeated = draft + 'am": "t", "people": []'
    assert written_under.check(repeated).chars < len(repeated)


def test_the_text_after_a_settled_key_waits_while_its_string_value_is_written() -> None:
    """The target writes the inserted name's value in two corrections (its opening quote, then
    the rest): the text after it (`}], "team": "t"}`) is reused once the string ends, not
    dropped as a string's content and asked of the API again."""
    draft = '{"people": [{"age": 2}], "te'
    target = ScriptedTarget('am": "t"}', '"', 'B"')
    result = run(TEAM_GRAMMAR, draft, target)
    assert (result.text, result.valid) == (
        '{"people": [{"age": 2, "name": "B"}], "team": "t"}',
        True,
    )
    assert [until for _, until in target.calls][1:] == ["terminal", "terminal"]
    assert [s.text for s in result.trace.spans if s.origin == "reused"] == ['}], "team": "t"}']


def test_a_missing_key_in_a_nested_object_is_inserted_there() -> None:
    draft = '{"team": "t", "people": [{"name": "A", "age": 1}, {"age": 2}]}'
    result = run(TEAM_GRAMMAR, draft, ScriptedTarget('"B"'))
    assert (
        result.text == '{"team": "t", "people": [{"name": "A", "age": 1}, {"age": 2, "name": "B"}]}'
    )
    assert (result.valid, result.api_calls) == (True, 1)


def test_an_empty_object_gets_each_missing_key_in_turn() -> None:
    target = ScriptedTarget('"x"', "3")
    result = run(GRAMMAR, "{}", target)
    assert result.text == '{"name": "x", "age": 3}'
    assert [text for text, _ in target.calls] == ['{"name": ', '{"name": "x", "age": ']
    # In the schema's order so far: the target writes under the schema's own grammar.
    assert STRICT is not None and target.grammars == [STRICT, STRICT]


def test_a_repeated_key_is_checked_again_in_the_schema_order() -> None:
    target = ScriptedTarget('tags": []}')
    draft = '{"name": "Bob", "age": 4, "name": "Al"}'
    result = run(GRAMMAR, draft, target, repair_window=0)
    assert result.text == '{"name": "Bob", "age": 4, "tags": []}'
    assert result.valid and STRICT is not None
    assert target.grammars == [STRICT]


CAT_GRAMMAR = Grammar.from_json_schema(DEMO_SCHEMA)  # name, color and age; no other key


@pytest.mark.parametrize(
    ("draft", "deleted"),
    [
        # The demo's draft: the repair makes the refused key one the object has, and the member
        # then goes whole (the schema has no room for a description).
        (
            '{"name": "Felix", "age": 2, "color": "black", "description": "Aimless, a cat"}',
            ', "description": "Aimless, a cat"',
        ),
        # A key written twice: the later member goes; the first may already be passed on as final.
        ('{"name": "Felix", "color": "black", "age": 2, "name": "Rex"}', ', "name": "Rex"'),
    ],
    ids=["refused-key", "key-twice"],
)
def test_a_repeated_key_loses_its_later_member_and_keeps_the_rest(draft: str, deleted: str) -> None:
    result = run(CAT_GRAMMAR, draft, ScriptedTarget())
    assert (result.text, result.valid) == (draft.replace(deleted, ""), True)
    assert (result.api_calls, result.corrections) == (1, 0)


@pytest.mark.parametrize("after", ["", ', "tags": ["pt"]'], ids=["last", "more-after"])
def test_a_fraction_for_an_integer_is_deleted(after: str) -> None:
    """The API's own integer, and what it wrote after it, with no value written anew. Before,
    the text was cut at the fraction in the schema's order, the target wrote digits of its own
    there (SmolLM2: a population of 1.248750639 became 191), and the API's languages after it
    were lost."""
    result = run(GRAMMAR, f'{{"name": "Bob", "age": 42.5{after}}}', ScriptedTarget())
    assert (result.text, result.valid) == (f'{{"name": "Bob", "age": 42{after}}}', True)
    assert (result.api_calls, result.corrections) == (1, 0)
    assert [(s.origin, s.text) for s in result.trace.spans if s.origin == "deleted"] == [
        ("deleted", ".5")
    ]


def test_a_fraction_the_schema_refuses_for_more_than_its_fraction_is_cut() -> None:
    """`42` is no multiple of 5 either: the fraction is not deleted, the text is cut there."""
    age = {"type": "integer", "multipleOf": 5}
    under = {**PERSON, "properties": {**PERSON["properties"], "age": age}}
    target = ScriptedTarget("45}")
    result = run(Grammar.from_json_schema(under), '{"name": "Bob", "age": 42.5}', target)
    assert result.valid and target.calls[0][0] == '{"name": "Bob", "age": 42'  # cut there
    assert not any(s.origin == "deleted" and s.text == ".5" for s in result.trace.spans)


# -- the pieces ------------------------------------------------------------------------------------


def test_grammar_matches_with_json_semantics() -> None:
    assert GRAMMAR.matches('{"age": 3, "name": "a"}')
    assert GRAMMAR.matches('{"age": 3.0, "name": "a"}')
    assert not GRAMMAR.matches('{"age": 3.5, "name": "a"}')
    assert not GRAMMAR.matches('{"age": 3}')  # a required key missing
    assert not GRAMMAR.matches('{"age": 3, "name": "a", "age": 4}')  # a key twice
    assert not GRAMMAR.matches('{"age": 3, "name": "a", "x": 1}')  # no additional properties
    assert STRICT is not None and not STRICT.matches('{"age": 3, "name": "a"}')


def test_loosen_frees_the_order_and_keeps_value_schemas() -> None:
    loose = loosen(PERSON)
    assert "properties" not in loose and "required" not in loose
    assert loose["patternProperties"]["^age$"] == {"type": "number"}
    assert loose["additionalProperties"] is False
    # Names with regex characters match only themselves.
    odd = Grammar.from_json_schema(
        {
            "type": "object",
            "properties": {"a.b": {"type": "integer"}, "c+": {"type": "integer"}},
            "additionalProperties": False,
        }
    )
    assert odd.matches('{"c+": 1, "a.b": 2}') and not odd.matches('{"axb": 1}')


def test_an_object_with_pattern_properties_keeps_its_order() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "patternProperties": {"^x": {"type": "string"}},
    }
    loose = loosen(schema)
    assert loose["properties"] == {"a": {"type": "number"}, "b": {"type": "number"}}
    assert loose["patternProperties"] == schema["patternProperties"]
    grammar = Grammar.from_json_schema(schema)
    assert grammar.matches('{"a": 1.0, "b": 2}') and not grammar.matches('{"b": 2, "a": 1}')


@pytest.mark.parametrize(
    ("text", "at", "inserted"),
    [
        ('{"age": 1}', 9, ', "name": '),
        ("{}", 1, '"name": '),
        ('{\n  "age": 1\n}', 12, ', "name": '),
        ('{"age": 1 , "tags": [ "a" ] }', 27, ', "name": '),
    ],
)
def test_missing_key_is_placed_after_the_last_member(text: str, at: int, inserted: str) -> None:
    missing = Validator(PERSON).missing_key(text)
    assert missing is not None and (missing.at, missing.key, missing.text) == (at, "name", inserted)


def test_missing_key_follows_the_path_into_arrays() -> None:
    text = '{"team": "t", "people": [{"name": "A", "age": 1}, {"name": "B"}]}'
    missing = Validator(TEAM).missing_key(text)
    assert missing is not None and (missing.key, text[: missing.at]) == ("age", text[:-3])


def test_an_object_with_very_many_properties_keeps_its_order() -> None:
    from grammars.json_schema.build import MAX_ANY_ORDER

    many = {f"p{i}": {"type": "string"} for i in range(MAX_ANY_ORDER + 1)}
    schema = {"type": "object", "properties": many}
    assert loosen(schema) == schema
    parts = Grammar.from_json_schema(schema).schema
    assert parts is not None and parts.strict is None


def test_required_beside_a_reference_is_left_to_the_end() -> None:
    # The properties are listed where the reference goes: the engine would want "b" first.
    schema = {
        "$ref": "#/$defs/pair",
        "required": ["b"],
        "$defs": {"pair": {"type": "object", "properties": {"a": {}, "b": {}}}},
    }
    assert "required" not in loosen(schema)
    grammar = Grammar.from_json_schema(schema)
    assert grammar.matches('{"a": 1, "b": 2}') and grammar.matches('{"b": 2, "a": 1}')
    assert not grammar.matches('{"a": 1}')


# Each from JSON-Schema-Test-Suite (draft 2020-12), where the draft grammar cut a valid document
# (scripts/schema_suite.py): (schema, valid documents, invalid documents).
BY_VALUE = [
    pytest.param({"const": 1}, ["1", "1.0"], ["2", "true", "1.5"], id="const-number"),
    pytest.param({"const": -2.0}, ["-2", "-2.0"], ["2", "-2.5"], id="const-negative-float"),
    pytest.param({"enum": [0, "a"]}, ['"a"', "0", "0.0"], ["false", '"b"', "1"], id="enum-number"),
    pytest.param({"enum": [[0]]}, ["[0]", "[0.0]"], ["[false]", "[0, 0]", "[]"], id="enum-array"),
    pytest.param(
        {"const": {"foo": "bar", "baz": "bax"}},
        ['{"foo": "bar", "baz": "bax"}', '{"baz": "bax", "foo": "bar"}'],
        ['{"foo": "bar"}', '{"baz": "bax", "foo": "bar", "x": 1}'],
        id="const-object-any-order",
    ),
    pytest.param(
        {"const": 9007199254740992},
        ["9007199254740992", "9007199254740992.0"],
        ["9007199254740993", "1"],
        id="const-past-2**53",
    ),
]


@pytest.mark.parametrize(("schema", "valid", "invalid"), BY_VALUE)
def test_const_and_enum_match_by_value(
    schema: dict[str, Any], valid: list[str], invalid: list[str]
) -> None:
    grammar = Grammar.from_json_schema(schema)
    assert [t for t in valid if not grammar.matches(t)] == []
    assert [t for t in invalid if grammar.matches(t)] == []


def test_a_string_enum_is_kept_as_the_engine_writes_it() -> None:
    schema = {"type": "string", "enum": ["a", "b"]}
    assert loosen(schema) == schema


@pytest.mark.parametrize(
    "schema",
    [
        pytest.param(
            {
                "allOf": [
                    {"properties": {"bar": {"type": "integer"}}, "required": ["bar"]},
                    {"properties": {"foo": {"type": "string"}}, "required": ["foo"]},
                ]
            },
            id="allOf",
        ),
        pytest.param(
            {
                "$ref": "#/$defs/bar",
                "properties": {"foo": {"type": "string"}},
                "unevaluatedProperties": False,
                "$defs": {"bar": {"properties": {"bar": {"type": "integer"}}}},
            },
            id="beside-a-ref",
        ),
    ],
)
def test_properties_merged_from_several_places_come_in_any_order(schema: dict[str, Any]) -> None:
    grammar = Grammar.from_json_schema(schema)
    assert grammar.matches('{"foo": "a", "bar": 2}') and grammar.matches('{"bar": 2, "foo": "a"}')
    assert not grammar.matches('{"foo": 1, "bar": 2}')


HOTEL = {
    "type": "object",
    "properties": {
        "hotel": {"type": "string"},
        "nights": {"type": "integer"},
        "guests": {"type": "integer"},
        "breakfast": {"type": "boolean"},
    },
    "required": ["hotel", "nights", "guests", "breakfast"],
    "additionalProperties": False,
}
HOTEL_KEYS = list(HOTEL["properties"])


@pytest.mark.parametrize(
    "draft",
    [
        '{"hotel": "description", "guests": -1',
        '{"guests": -1',
        '{"hotel": "Ritz", "guests": 2',
    ],
)
def test_smollm2_completes_an_object_out_of_schema_order_with_each_key_once(
    target: Any, draft: str
) -> None:
    """SmolLM2 wrote `, "nights": -1` forty times after such a draft until its budget ended
    (issue 23, bench_real_drafts' hotel task through llama.cpp)."""
    keys = ", ".join(HOTEL_KEYS)
    prompt = f"Give a JSON object describing a hotel booking, with the keys {keys}."
    api = ScriptedAPI(draft)
    result = guide(providers.FunctionDrafter(api), HOTEL, prompt=prompt, target=target)
    assert result.valid and result.text.startswith(draft), result.text
    assert sorted(json.loads(result.text)) == sorted(HOTEL_KEYS)
    # Nothing written had to go again: no key came twice.
    deleted = [s.text for s in result.trace.spans if s.origin == "deleted"]
    assert not deleted, deleted


def test_a_comma_after_an_objects_last_key_is_taken_back_for_the_target() -> None:
    """Every key written, out of the schema's order, and a comma: no order of the schema goes
    on from there, and under the any-order grammar a target wrote the keys again and again. The
    comma is taken back; the target writes under the text's order."""
    draft = '{"tags": ["x"], "age": 1, "name": "A", "'
    target = ScriptedTarget("}")
    result = run(GRAMMAR, draft, target)
    assert (result.text, result.valid) == ('{"tags": ["x"], "age": 1, "name": "A"}', True)
    assert [s.text for s in result.trace.spans if s.origin == "deleted"] == [', "']


def test_a_key_its_object_has_is_taken_back_before_the_target_writes() -> None:
    """The API's reply ends in the value of a key its object already has: under the any-order
    grammar the target wrote keys again and again (SmolLM2, a user's settings: 192 tokens). The
    repeated member is taken back, and the target writes under the schema's order."""
    draft = '{"name": "A", "age": 1, "name": '
    target = ScriptedTarget(' "tags": []}')
    result = run(GRAMMAR, draft, target, max_corrections=0)
    assert (result.text, result.valid) == ('{"name": "A", "age": 1, "tags": []}', True)
    assert target.grammars[0] is STRICT


@pytest.mark.parametrize(
    ("grammar", "draft", "written", "text", "deleted"),
    [
        (
            GRAMMAR,
            '{"name": "A", "age": 1, "name": "B",\n "tags": ["x"',
            "]}",
            '{"name": "A", "age": 1, "tags": ["x"]}',
            'name": "B",\n "',
        ),
        # The object ends after it: taken back to the final point, the target writes on.
        (
            TEAM_GRAMMAR,
            '{"team": "t", "people": [{"name": "A", "age": 1, "name": "B"}, {"name": "C"',
            'tags": []}]}',
            '{"team": "t", "people": [{"name": "A", "age": 1, "tags": []}]}',
            'name": "B"}, {"name": "C"',
        ),
    ],
    ids=["deleted", "taken-back"],
)
def test_a_key_its_object_has_past_the_final_point_goes_before_the_target_writes(
    grammar: Grammar, draft: str, written: str, text: str, deleted: str
) -> None:
    """The schema's order took the repeated member's `, "` as its next key's, and that is final:
    the member cannot be deleted from its comma, and under the any-order grammar a target wrote
    `"nights"` again and again (SmolLM2 planning a trip, 491 tokens). The next member's
    separator goes in its place (its blanks may differ), or the text is taken back to the final
    point."""
    target = ScriptedTarget(written)
    result = run(grammar, draft, target, max_corrections=0)
    assert (result.text, result.valid) == (text, True)
    assert grammar.schema is not None and target.grammars == [grammar.schema.strict]
    assert [s.text for s in result.trace.spans if s.origin == "deleted"] == [deleted]
