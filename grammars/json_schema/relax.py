"""JSON-schema keywords the engine cannot enforce, and the superset of the schema it can compile.

llguidance refuses a schema with a keyword it does not implement (`not`, `uniqueItems`, `if`, ...),
a `format` it does not know, `min/maxProperties` beside optional properties, or a `oneOf` whose
branches it cannot prove disjoint; and it answers wrongly on two it takes: a negative number under
any `multipleOf` is refused (`multipleOf: 2` refuses -4), and a key that both `properties` and a
`patternProperties` pattern name is checked against `properties` alone (a false accept).

`relax` returns a copy of the schema without what the engine cannot enforce, and notes of what it
took out, where. The copy is a superset: every document valid under the schema is valid under it.
Its grammar checks drafts, and the `jsonschema` validator, which reads the schema as written,
decides a whole document (`Grammar.matches`, a guided run's `valid`). A `oneOf` stays in the copy;
`Grammar.from_json_schema` lets the engine take it as `anyOf` only where it refuses it otherwise.
"""

from __future__ import annotations

import copy
import functools
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from grammars.json_schema.checks import resolve_ref

__all__ = ["Relaxation", "engine_knows_format", "relax"]

# Keywords the engine does not implement; each is dropped with whatever it alone gives meaning to.
_DROPPED = (
    ("not",),
    ("if", "then", "else"),
    ("dependencies",),
    ("dependentSchemas",),
    ("dependentRequired",),
    ("propertyNames",),
    ("unevaluatedProperties",),
    ("unevaluatedItems",),
    ("contains", "minContains", "maxContains"),
)
# Where subschemas are, as the engine and the validator read them.
_ONE = ("items", "additionalItems", "additionalProperties")
_LIST = ("anyOf", "oneOf", "allOf", "prefixItems", "items")
_MAP = ("properties", "patternProperties", "$defs", "definitions")
# Counts the engine takes only as integers, though JSON Schema takes any integral number (`2.0`).
_COUNTS = (
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "minContains",
    "maxContains",
)


@dataclass(frozen=True)
class Relaxation:
    """A keyword the grammar does not enforce, at `at` (a JSON pointer into the schema).
    `checked` says whether the validator checks it (False for `format`: an annotation to both)."""

    keyword: str
    at: str
    checked: bool = True

    def __str__(self) -> str:
        judge = "the validator decides" if self.checked else "not checked: an annotation"
        return f"{self.keyword} at {self.at!r} ({judge})"


def _pointer(path: tuple[str, ...]) -> str:
    return "#" + "".join("/" + p.replace("~", "~0").replace("/", "~1") for p in path)


@functools.lru_cache(maxsize=256)
def engine_knows_format(name: str) -> bool:
    """Whether the engine builds a grammar for strings of `format` `name` (it refuses the others).
    Asked of the engine itself, so that a newer one that knows more formats enforces them."""
    import llguidance

    from grammars.engine import byte_tokenizer

    try:
        ll = llguidance.LLMatcher.grammar_from_json_schema(
            json.dumps({"type": "string", "format": name})
        )
    except ValueError:
        return False
    return not llguidance.LLMatcher(byte_tokenizer(), ll, log_level=0).is_error()


def _children(node: dict[str, Any], path: tuple[str, ...]) -> Iterator[tuple[Any, tuple[str, ...]]]:
    for key in _ONE:
        if isinstance(node.get(key), dict):
            yield node[key], (*path, key)
    for key in _LIST:
        if isinstance(node.get(key), list):
            yield from ((s, (*path, key, str(i))) for i, s in enumerate(node[key]))
    for key in _MAP:
        if isinstance(node.get(key), dict):
            yield from ((s, (*path, key, name)) for name, s in node[key].items())


def _may_be_negative(node: dict[str, Any]) -> bool:
    low = node.get("minimum")
    exclusive = node.get("exclusiveMinimum")
    bounds = [b for b in (low, exclusive) if isinstance(b, int | float) and b is not True]
    return not any(b >= 0 for b in bounds)


def _overlaps(names: list[str], patterns: list[str]) -> bool:
    """Some property name is also matched by a pattern (Python's regex standing in for
    ECMA 262's; a pattern Python cannot read counts as matching)."""
    for pattern in patterns:
        try:
            compiled = re.compile(pattern)
        except (re.error, TypeError):
            return True
        if any(compiled.search(name) for name in names):
            return True
    return False


def _names_a_resource(node: Any) -> bool:
    """Some schema in `node` has an `$id` or an `$anchor`."""
    if isinstance(node, list):
        return any(_names_a_resource(v) for v in node)
    if not isinstance(node, dict):
        return False
    return any(
        k in ("$id", "$anchor") or (k not in ("enum", "const") and _names_a_resource(v))
        for k, v in node.items()
    )


def _normalise_node(node: dict[str, Any]) -> bool:
    """Write what the engine refuses in a form it takes, with the same meaning: an integral
    count as an integer, and no `uniqueItems: false` (no constraint). Whether anything changed."""
    changed = False
    for key in _COUNTS:
        value = node.get(key)
        if isinstance(value, float) and value.is_integer():
            node[key], changed = int(value), True
    if node.get("uniqueItems") is False:
        del node["uniqueItems"]
        changed = True
    return changed


def _relax_node(node: dict[str, Any], path: tuple[str, ...], notes: list[Relaxation]) -> None:
    where = _pointer(path)
    for group in _DROPPED:
        present = [k for k in group if k in node]
        if present:
            notes.append(Relaxation("/".join(present), where))
            for key in present:
                dropped = node.pop(key)
                if _names_a_resource(dropped):
                    # a `$ref` elsewhere may name a schema in it by its `$id` or `$anchor`
                    defs = node.setdefault("$defs", {})
                    if isinstance(defs, dict):
                        defs[f"backtrack-dropped-{key}"] = dropped
    if node.pop("uniqueItems", False) is True:
        notes.append(Relaxation("uniqueItems", where))
    form = node.get("format")
    if isinstance(form, str) and not engine_knows_format(form):
        del node["format"]
        notes.append(Relaxation(f"format {form!r}", where, checked=False))
    if "multipleOf" in node and _may_be_negative(node):
        del node["multipleOf"]
        notes.append(Relaxation("multipleOf", where))
    properties = node.get("properties")
    names = list(properties) if isinstance(properties, dict) else []
    counts = [k for k in ("minProperties", "maxProperties") if k in node]
    required = node.get("required")
    if counts and not set(names) <= set(required if isinstance(required, list) else []):
        notes.append(Relaxation("/".join(counts), where))
        for key in counts:
            del node[key]
    patterns = node.get("patternProperties")
    if names and isinstance(patterns, dict) and _overlaps(names, list(patterns)):
        # kept: the engine checks such a key against `properties` alone, a superset
        notes.append(Relaxation("patternProperties", where))


def relax(schema: dict[str, Any]) -> tuple[dict[str, Any], tuple[Relaxation, ...]]:
    """A copy of `schema` without what the engine cannot enforce (a superset of its documents),
    and what was taken out, where; what the engine refuses only for its form (`maxItems: 2.0`)
    is rewritten, unnoted. The schema itself when nothing changes."""
    out = copy.deepcopy(schema)
    notes: list[Relaxation] = []
    changed = False
    seen: set[int] = set()
    stack: list[tuple[Any, tuple[str, ...]]] = [(out, ())]
    while stack:
        node, path = stack.pop()
        if not isinstance(node, dict) or id(node) in seen:
            continue
        seen.add(id(node))
        changed |= _normalise_node(node)
        _relax_node(node, path, notes)
        # referenced subschemas may sit where no keyword puts a schema (`#/components/...`)
        target = resolve_ref(out, node.get("$ref"))
        if target is not None:
            stack.append(target)
        stack.extend(reversed(list(_children(node, path))))
    if not notes:
        return (out if changed else schema), ()
    notes.sort(key=lambda n: (n.at, n.keyword))
    return out, tuple(notes)


def one_of_places(schema: Any) -> list[str]:
    """Where `oneOf` is used in `schema` (for the notes, when the engine takes it as `anyOf`)."""
    places = []
    stack: list[tuple[Any, tuple[str, ...]]] = [(schema, ())]
    seen: set[int] = set()
    while stack:
        node, path = stack.pop()
        if not isinstance(node, dict) or id(node) in seen:
            continue
        seen.add(id(node))
        if "oneOf" in node:
            places.append(_pointer(path))
        target = resolve_ref(schema, node.get("$ref"))
        if target is not None:
            stack.append(target)
        stack.extend(_children(node, path))
    return sorted(places)
