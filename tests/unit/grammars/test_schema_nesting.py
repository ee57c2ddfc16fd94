"""Deep JSON schemas, by nesting and by `$ref` chains, are a GrammarError that says how deep and
where, never a RecursionError: every walk of a schema (checks, relax, the drafts' loose form, the
validator) is iterative or bounded by SCHEMA_MAX_DEPTH, and a `$ref` counts as one level."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from grammars.errors import GrammarError, TextError
from grammars.grammar import Grammar
from grammars.limits import SCHEMA_MAX_DEPTH


def nested_objects(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema


def ref_chain(length: int, *, through: str = "") -> dict[str, Any]:
    """`#` -> d0 -> d1 -> ... -> d{length - 1}, a string: `length` `$ref`s. `through`: the keyword
    each link sits in (`allOf`, or directly)."""

    def link(i: int) -> dict[str, Any]:
        ref = {"$ref": f"#/$defs/d{i}"}
        return {through: [ref]} if through else ref

    defs = {f"d{i}": link(i + 1) for i in range(length - 1)}
    defs[f"d{length - 1}"] = {"type": "string"}
    return {**link(0), "$defs": defs}


@pytest.mark.parametrize("depth", [2_000, 100_000])
def test_a_schema_nested_deep_is_a_grammar_error(depth: int):
    text = '{"items":' * depth + "{}" + "}" * depth
    with pytest.raises(GrammarError, match=r"nested more than 124 levels deep at byte 1,116 "):
        Grammar.from_json_schema(text)
    with pytest.raises(GrammarError, match=r"more than 124 levels deep at '#/properties/a/"):
        Grammar.from_json_schema(nested_objects(depth))


@pytest.mark.parametrize("length", [500, 3_000])
@pytest.mark.parametrize("through", ["", "allOf"])
def test_a_long_ref_chain_is_a_grammar_error_that_says_where(length: int, through: str):
    schema = ref_chain(length, through=through)
    assert len(json.dumps(schema)) > 16_000
    with pytest.raises(GrammarError) as info:
        Grammar.from_json_schema(schema)
    message = info.value.message
    assert "each `$ref` counted as a level" in message
    assert f"passes {SCHEMA_MAX_DEPTH} at '#/$defs/d" in message, message
    assert not isinstance(info.value.__cause__, RecursionError)


def test_refs_count_toward_the_depth_up_to_the_limit():
    assert Grammar.from_json_schema(ref_chain(SCHEMA_MAX_DEPTH)).matches('"x"')
    with pytest.raises(GrammarError, match=r"125 levels deep .* after 125 `\$ref`s"):
        Grammar.from_json_schema(ref_chain(SCHEMA_MAX_DEPTH + 1))


def test_refs_and_nesting_add_up():
    """Each link an object with a property that refers to the next: 3 levels a link."""
    defs = {
        f"d{i}": {"type": "object", "properties": {"x": {"$ref": f"#/$defs/d{i + 1}"}}}
        for i in range(100)
    }
    defs["d100"] = {"type": "string"}
    with pytest.raises(GrammarError, match=r"passes 124 at '#/\$defs/d41/properties/x'"):
        Grammar.from_json_schema({"$ref": "#/$defs/d0", "$defs": defs})


def test_recursion_through_the_document_is_no_depth():
    """A tree refers to itself from inside an item: the document bounds that recursion."""
    tree = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "kids": {"type": "array", "items": {"$ref": "#"}},
        },
        "required": ["name"],
    }
    grammar = Grammar.from_json_schema(tree)
    assert grammar.matches('{"name": "a", "kids": [{"name": "b", "kids": []}]}')


@pytest.mark.parametrize(
    "schema",
    [
        pytest.param({"anyOf": [{"$ref": "#"}, {"type": "string"}]}, id="anyOf"),
        pytest.param(
            {
                "allOf": [{"$ref": "#/$defs/a"}],
                "$defs": {"a": {"oneOf": [{"type": "string"}, {"$ref": "#"}]}},
            },
            id="allOf-oneOf",
        ),
        pytest.param(
            {
                "properties": {"x": {"$ref": "#/$defs/b"}},  # b is first reached from a property
                "allOf": [{"$ref": "#/$defs/a"}],
                "$defs": {
                    "a": {"anyOf": [{"type": "string"}, {"$ref": "#/$defs/b"}]},
                    "b": {"allOf": [{"$ref": "#/$defs/a"}]},
                },
            },
            id="reached-from-a-property-first",
        ),
    ],
)
def test_a_ref_cycle_that_never_enters_the_document_is_refused(schema: dict[str, Any]):
    with pytest.raises(GrammarError, match="without entering a part of the document"):
        Grammar.from_json_schema(schema)


TREE = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "kids": {"type": "array", "items": {"$ref": "#"}}},
    "required": ["name"],
}


def tree_document(depth: int) -> str:
    return '{"name": "a", "kids": [' * depth + '{"name": "b"}' + "]}" * depth


def test_a_document_as_deep_as_the_validator_reads_is_decided():
    assert Grammar.from_json_schema(TREE).matches(tree_document(100))  # 201 levels


@pytest.mark.parametrize("depth", [300, 100_000])
def test_a_document_too_deep_for_the_validator_is_a_text_error_that_says_where(depth: int):
    with pytest.raises(
        TextError, match="more than 256 levels deep; the JSON schema validator"
    ) as info:
        Grammar.from_json_schema(TREE).matches(tree_document(depth))
    assert info.value.byte_offset == 23 * 128  # the 257th bracket: the `{` of level 129


def test_a_document_whose_validation_runs_out_of_stack_is_a_text_error():
    """250 levels under a schema that recurses at each: within the depth, past the stack."""
    schema = {"type": "array", "items": {"$ref": "#"}, "uniqueItems": True}
    with pytest.raises(TextError, match="too deeply for the JSON schema validator under this"):
        Grammar.from_json_schema(schema).matches("[" * 250 + "]" * 250)


def test_the_finite_check_is_linear_in_the_references():
    """3,000 `$defs`, each requiring the next, listed backwards and referred to by nothing: the
    check that every subschema can end took 20 s (a pass per change); now a worklist."""
    defs: dict[str, Any] = {
        f"d{i}": {
            "type": "object",
            "required": ["x"],
            "properties": {"x": {"$ref": f"#/$defs/d{i + 1}"}},
        }
        for i in reversed(range(3_000))
    }
    defs["d3000"] = {"type": "string"}
    started = time.perf_counter()
    assert Grammar.from_json_schema({"type": "string", "$defs": defs}).matches('"x"')
    assert time.perf_counter() - started < 5
