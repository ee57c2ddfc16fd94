"""A JSON schema whose objects list their properties in the order a text wrote them.

A draft's keys may come in any order (build.py `loosen`), but the any-order grammar also lets a
key come again, any number of times: a target writing under it may repeat a key until its budget
ends. The engine writes an object's properties in the order the schema lists them, each at most
once, the required ones all; so a target writing on from a text in another order writes under the
schema with its properties listed in that text's order (`in_text_order`): the keys the text has
first, as it wrote them, then the others in the schema's own order.

An object the text has closed without a key its schema requires (the any-order grammar leaves
`required` to the end) is taken as it stands: its schema requires only the keys it has, and an
array's item that is such an object gets a schema of its own (`prefixItems`), so the items the
target writes after it still need every key. The final check still asks for the missing key.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from grammars.json_schema.checks import resolve_ref

__all__ = ["in_text_order", "repeated_in_prefix"]

Path = tuple[str | int, ...]
_BRANCHES = ("anyOf", "oneOf", "allOf")
# The most orders one object schema is listed in: objects of one schema in more orders than this
# (array items each in its own) keep the last ones.
MAX_ORDERS = 8
# The most items of an array that get a schema of their own (a closed item without a required
# key): past that, the text takes the any-order grammar.
MAX_OWN_ITEMS = 16


@dataclass
class _Object:
    """An object in a JSON text: where it is, its keys in the order written, and the start of a
    key the text ends inside (None: none)."""

    path: Path
    keys: list[str] = field(default_factory=list)
    partial: str | None = None
    closed: bool = False
    # Its whole members: (key, where the member before it ends, where its value ends).
    members: list[tuple[str, int, int]] = field(default_factory=list)
    member_from: int = 0
    in_value: bool = False  # after a key, until its value ends

    def end_member(self, text: str, at: int) -> None:
        """The value of the member being read ends before `at` (a comma or the closing brace)."""
        if self.in_value:
            end = at
            while text[end - 1] in " \t\r\n":  # a value precedes: no further back than it
                end -= 1
            self.members.append((self.keys[-1], self.member_from, end))
            self.member_from, self.in_value = end, False

    def step(self) -> str:
        """The key of the value being written."""
        return self.keys[-1] if self.keys else ""


def in_text_order(schema: dict[str, Any], text: str) -> dict[str, Any] | None:
    """A copy of `schema` in which each object schema that an object of `text` (a prefix of a
    JSON document) stands under lists its properties in that object's order: the keys written
    first, then those the key `text` ends inside may be, then the rest in the schema's order.
    Where objects of one schema come in several orders (items of an array), it becomes an
    `anyOf` of the schema in each (the last MAX_ORDERS). None when no object of `text` changes
    an order. The caller checks the result against `text`."""
    out = copy.deepcopy(schema)
    objects = _objects(text)
    found: dict[int, tuple[dict[str, Any], list[list[str]]]] = {}
    for obj in objects:
        for node in _nodes(out, out, obj.path):
            order = _order(node, obj)
            orders = found.setdefault(id(node), (node, []))[1]
            if order is not None and order not in orders:
                orders.append(order)
    changed = False
    for node, orders in found.values():  # after the walk, which reads the schema as given
        if orders and orders != [list(node["properties"])]:
            _reorder(node, orders[-MAX_ORDERS:])
            changed = True
    # Then a closed object without a required key is taken as it stands (its own copy of the
    # orders found, where it is an array's item).
    for obj in objects:
        if _lacks(out, obj) and _own_items(out, obj.path):
            for node in _nodes(out, out, obj.path):
                if isinstance(node.get("required"), list):
                    node["required"] = [k for k in node["required"] if k in obj.keys]
                    changed = True
    return out if changed else None


def repeated_in_prefix(text: str) -> tuple[int, int] | None:
    """In a JSON text or a prefix of one, the first member (in the text's order) whose key its
    object already has: (start, end) to delete it, from the end of the member before it (its
    comma goes too) to the end of its value, or to the text's end where the text ends in its
    value. None: none."""
    found: list[tuple[int, int]] = []
    for obj in _objects(text):
        seen: set[str] = set()
        last = [(obj.keys[-1], obj.member_from, len(text))] if obj.in_value else []
        for key, start, end in obj.members + last:
            if key in seen:
                found.append((start, end))
                break
            seen.add(key)
    return min(found, default=None)


def _lacks(root: dict[str, Any], obj: _Object) -> bool:
    """Whether `obj` is closed without a key that a schema it stands under requires."""
    return obj.closed and any(
        isinstance(node.get("required"), list) and set(node["required"]) - set(obj.keys)
        for node in _nodes(root, root, obj.path)
    )


def _own_items(root: dict[str, Any], path: Path) -> bool:
    """Gives each array item on `path` a schema of its own (a copy of `items` as `prefixItems`,
    a `$ref` resolved), so that changing it changes no other item; False past MAX_OWN_ITEMS."""
    for at, step in enumerate(path):
        if not isinstance(step, int):
            continue
        if step >= MAX_OWN_ITEMS:
            return False
        for array in _nodes(root, root, path[:at]):
            prefix, items = array.get("prefixItems", []), array.get("items")
            if isinstance(prefix, list) and isinstance(items, dict) and len(prefix) <= step:
                named = resolve_ref(root, items.get("$ref"))
                own = named[0] if named is not None and len(items) == 1 else items
                array["prefixItems"] = prefix + [
                    copy.deepcopy(own) for _ in range(len(prefix), step + 1)
                ]
    return True


def _order(node: dict[str, Any], obj: _Object) -> list[str] | None:
    """The properties of the object schema `node` in `obj`'s order (None: `node` lists none)."""
    properties = node.get("properties")
    if not isinstance(properties, dict):
        return None
    first = [k for k in dict.fromkeys(obj.keys) if k in properties]
    if obj.partial is not None:
        first += [k for k in properties if k.startswith(obj.partial) and k not in first]
    return [*first, *(k for k in properties if k not in first)]


def _reorder(node: dict[str, Any], orders: list[list[str]]) -> None:
    """`node` with its properties in the order given, or an `anyOf` of it in each."""
    properties = node["properties"]
    copies = [{**node, "properties": {k: properties[k] for k in order}} for order in orders]
    node.clear()
    node.update(copies[0] if len(copies) == 1 else {"anyOf": copies})


def _nodes(root: dict[str, Any], node: Any, path: Path, depth: int = 0) -> Iterator[dict[str, Any]]:
    """The object schemas in `root` that the value at `path` under `node` stands under: through
    local `$ref`s and into every `anyOf`, `oneOf` and `allOf` branch."""
    if not isinstance(node, dict) or depth > 64:  # a `$ref` cycle
        return
    named = resolve_ref(root, node.get("$ref"))
    if named is not None:
        yield from _nodes(root, named[0], path, depth + 1)
    for key in _BRANCHES:
        for branch in node.get(key, ()) if isinstance(node.get(key), list) else ():
            yield from _nodes(root, branch, path, depth + 1)
    if not path:
        yield node
        return
    step, rest = path[0], path[1:]
    if isinstance(step, str):
        properties = node.get("properties")
        named = properties.get(step) if isinstance(properties, dict) else None
        inner = named if named is not None else node.get("additionalProperties")
    else:
        prefix = node.get("prefixItems")
        inner = prefix[step] if isinstance(prefix, list) and step < len(prefix) else None
        inner = inner if inner is not None else node.get("items")
    yield from _nodes(root, inner, rest, depth + 1)


def _objects(text: str) -> list[_Object]:
    """The objects of a JSON text or a prefix of one, in the order they open (a scan that trusts
    the text to be JSON so far, as the grammar has checked it)."""
    found: list[_Object] = []
    stack: list[_Object | _Array] = []
    key_next = False  # the next string is a key
    at = 0
    while at < len(text):
        char = text[at]
        top = stack[-1] if stack else None
        if char == '"':
            end = _string_end(text, at)
            if key_next and isinstance(top, _Object):
                if end is None:
                    top.partial = _decoded(text[at + 1 :])
                else:
                    top.keys.append(_decoded(text[at + 1 : end - 1]))
                    top.in_value = True
                key_next = False
            at = len(text) if end is None else end
            continue
        if char in "{[":
            path = () if top is None else (*top.path, top.step())
            if char == "{":
                found.append(_Object(path, member_from=at + 1))
                stack.append(found[-1])
                key_next = True
            else:
                stack.append(_Array(path))
        elif char in "}]" and stack:
            closed = stack.pop()
            if isinstance(closed, _Object):
                closed.end_member(text, at)
                closed.closed = True
        elif char == "," and top is not None:
            if isinstance(top, _Array):
                top.items += 1
            else:
                top.end_member(text, at)
                key_next = True
        at += 1
    return found


@dataclass
class _Array:
    path: Path
    items: int = 0

    def step(self) -> int:
        return self.items


def _string_end(text: str, at: int) -> int | None:
    """Past the closing quote of the string whose opening quote is at `at` (None where the text
    ends inside the string)."""
    at += 1
    while at < len(text):
        if text[at] == "\\":
            at += 2
        elif text[at] == '"':
            return at + 1
        else:
            at += 1
    return None


def _decoded(raw: str) -> str:
    """A JSON string's characters from its text between the quotes (an escape cut short at the
    end is left out)."""
    for end in range(len(raw), max(len(raw) - 6, 0) - 1, -1):
        try:
            value = json.loads(f'"{raw[:end]}"')
        except ValueError:
            continue
        return value if isinstance(value, str) else ""
    return ""
