"""in_text_order: a JSON schema whose objects list their properties in the order a text (a prefix
of a JSON document) wrote them, for a target that writes on from that text each key once."""

from __future__ import annotations

import json
from typing import Any

import pytest

from grammars import Grammar
from grammars.json_schema.order import MAX_OWN_ITEMS, in_text_order, repeated_in_prefix


def obj(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties)}


S, INT = {"type": "string"}, {"type": "integer"}
HOTEL = obj(hotel=S, nights=INT, guests=INT, breakfast={"type": "boolean"})


def orders(schema: Any) -> list[list[str]]:
    """Every object schema's property names, in order, depth first."""
    if isinstance(schema, list):
        return [o for s in schema for o in orders(s)]
    if not isinstance(schema, dict):
        return []
    own = [list(schema["properties"])] if isinstance(schema.get("properties"), dict) else []
    return own + [o for v in schema.values() for o in orders(v)]


@pytest.mark.parametrize(
    ("schema", "text", "expected"),
    [
        # The keys written first, as written; then the rest in the schema's order.
        (HOTEL, '{"hotel": "Ritz", "guests": 2', [["hotel", "guests", "nights", "breakfast"]]),
        # A key the text ends inside: the properties it may be come next.
        (HOTEL, '{"breakfast": true, "gu', [["breakfast", "guests", "hotel", "nights"]]),
        # Strings with braces, quotes and escapes are not structure; an escaped key is decoded.
        (obj(a=S, b=S), '{"b": "}{\\"", "a', [["b", "a"]]),
        (obj(a=S, é=S), '{"\\u00e9": "x"', [["é", "a"]]),
        # Nested objects, through arrays, each under its own schema.
        (
            obj(x=S, ys={"type": "array", "items": obj(p=INT, q=INT)}),
            '{"ys": [{"q": 1, "p": 2}, {"q": 3',
            [["ys", "x"], ["q", "p"]],
        ),
        # Objects of one schema in two orders: an anyOf of the schema in each.
        (
            obj(x=S, ys={"type": "array", "items": obj(p=INT, q=INT)}),
            '{"ys": [{"q": 1, "p": 2}, {"p": 3',
            [["ys", "x"], ["q", "p"], ["p", "q"]],
        ),
        # Through a $ref (the definition is reordered) and into every anyOf branch.
        (
            {"$ref": "#/$defs/h", "$defs": {"h": HOTEL}},
            '{"nights": 1',
            [["nights", "hotel", "guests", "breakfast"]],
        ),
        (
            {"anyOf": [obj(a=S, b=S), obj(b=INT, c=INT)]},
            '{"b": 1',
            [["b", "a"], ["b", "c"]],
        ),
    ],
    ids=[
        "top-level",
        "inside-a-key",
        "strings",
        "escaped-key",
        "nested",
        "two-orders",
        "ref",
        "any-of",
    ],
)
def test_objects_list_their_keys_in_the_text_order(
    schema: dict[str, Any], text: str, expected: list[list[str]]
) -> None:
    ordered = in_text_order(schema, text)
    assert ordered is not None and orders(ordered) == expected
    assert orders(schema) != expected  # the schema given is left as it was


@pytest.mark.parametrize("text", ['{"hotel": "Ritz", "nights": 2', '{"hot', "[1, 2", ""])
def test_a_text_in_the_schema_order_changes_nothing(text: str) -> None:
    assert in_text_order(HOTEL, text) is None


def test_the_grammar_in_the_text_order_takes_no_key_twice() -> None:
    text = '{"hotel": "Ritz", "guests": 2'
    ordered = in_text_order(HOTEL, text)
    assert ordered is not None
    grammar = Grammar.from_json_schema(ordered)
    strict = grammar.schema.strict if grammar.schema else None
    assert strict is not None and strict.matches(text + ', "nights": 1, "breakfast": true}')
    for more in (', "guests": 3', ', "hotel": "', ', "nights": 1, "nights"'):
        assert strict.check(text + more).chars < len(text + more), more


def test_a_closed_item_without_a_required_key_is_taken_as_it_stands() -> None:
    """The item is given its own schema, which requires only what it has; the items after it
    still need every key, in the text's order."""
    schema = obj(ys={"type": "array", "items": obj(p=INT, q=INT)})
    text = '{"ys": [{"q": 1}, {"q": 2, "p": 3}, {"q": 4}, {"'
    ordered = in_text_order(schema, text)
    assert ordered is not None
    strict = Grammar.from_json_schema(ordered).schema
    assert strict is not None and strict.strict is not None
    assert strict.strict.matches(text + 'q": 5, "p": 6}]}')
    for more in ('q": 5}', 'q": 5, "q"'):
        assert strict.strict.check(text + more).chars < len(text + more), more
    assert "prefixItems" not in json.dumps(schema)  # the schema given is left as it was


def test_items_past_the_bound_keep_the_shared_schema() -> None:
    schema = obj(ys={"type": "array", "items": obj(p=INT, q=INT)})
    items = ", ".join(['{"p": 1, "q": 2}'] * MAX_OWN_ITEMS)
    for text, own in (
        ('{"ys": [' + items + ', {"q": 1}, {"', False),
        ('{"ys": [{"q": 1}, ' + items + ', {"', True),
    ):
        ordered = in_text_order(schema, text)
        assert ordered is not None and ("prefixItems" in json.dumps(ordered)) == own


@pytest.mark.parametrize(
    ("text", "repeated"),
    [
        ('{"a": 1, "b": {"x": 2}, "a": [3, 4], "c"', ', "a": [3, 4]'),
        ('{"a": {"b": 1, "b": 2}}', ', "b": 2'),
        ('{"a": {"x": 1, "x": 2}, "a": 3}', ', "x": 2'),  # the first in the text's order
        ('{"t": "dark"\n\n,\n "t": \n 5', '\n\n,\n "t": \n 5'),  # its value goes to the end
        ('[{"p": "L", "p"\n :"P", "q": 1}]', ', "p"\n :"P"'),
        ('{"a": 1, "b": "a", "c": {"a": 2}}', None),  # a value, another object's key
        ('{"a": 1, "a', None),  # a key begun
    ],
)
def test_a_member_whose_key_its_object_has(text: str, repeated: str | None) -> None:
    found = repeated_in_prefix(text)
    assert (found and text[found[0] : found[1]]) == repeated
