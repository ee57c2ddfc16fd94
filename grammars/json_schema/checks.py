"""Checks made on a JSON schema before the engine compiles it: what it may cost, and whether it can
end.

The engine builds one grammar node per array item (`minItems: 10**9`: abort on an 8 GiB
allocation) and reads JSON at most SCHEMA_MAX_DEPTH levels deep; both are measured here first, and
anything past a limit is a GrammarError that names it. The engine also accepts schemas that no
document completes (an object that requires a property of its own schema): a schema that has no
finite instance is refused here.

Depth counts `$ref`s: a walk through the schema as a validator walks it (into each subschema, and
through each reference as one more level) may go at most SCHEMA_MAX_DEPTH levels deep, and no
cycle of references may stay at one place of the document. Every walk here is iterative; what
walks a schema recursively after these checks (relax's copy, loosen, the `jsonschema` validator)
is then bounded by that depth, with Python's stack to spare.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, TypeGuard

from grammars.errors import GrammarError
from grammars.limits import SCHEMA_MAX_DEPTH, GrammarLimits, check_size, nesting_past

__all__ = ["check_schema", "resolve_ref"]

# Keywords whose value is a subschema, a list of them, or a map of them (as the engine reads them).
_ONE = ("items", "additionalItems", "additionalProperties", "contains", "not", "if", "then", "else",
        "propertyNames", "unevaluatedItems", "unevaluatedProperties")  # fmt: skip
_MANY = ("anyOf", "oneOf", "allOf", "prefixItems")
_MAP = ("properties", "patternProperties", "dependentSchemas")
_DEFS = ("$defs", "definitions")  # subschemas kept for `$ref`, applied to nothing themselves


def _pointer(path: tuple[str, ...]) -> str:
    return "#" + "".join("/" + p.replace("~", "~0").replace("/", "~1") for p in path)


def _json_depth(schema: Any) -> None:
    """Raise GrammarError past SCHEMA_MAX_DEPTH levels (walked without recursion, so a schema
    nested 2,000 deep or a dict that contains itself ends here, not in a RecursionError)."""
    stack: list[tuple[Any, tuple[str, ...]]] = [(schema, ())]
    while stack:
        value, path = stack.pop()
        if len(path) >= SCHEMA_MAX_DEPTH:
            if isinstance(value, dict | list):
                raise GrammarError(
                    f"the JSON schema is nested more than {SCHEMA_MAX_DEPTH} levels deep at "
                    f"{_pointer(path[:8]) + '/...'!r} (llguidance reads at most {SCHEMA_MAX_DEPTH})"
                )
            continue
        if isinstance(value, dict):
            stack.extend((v, (*path, str(k))) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((v, (*path, str(i))) for i, v in enumerate(value))


def _applied(node: dict[str, Any]) -> Iterator[tuple[tuple[str, ...], Any]]:
    """The subschemas `node` applies to an instance (not its `$defs`), with the keys to each."""
    for key in _ONE:
        if isinstance(node.get(key), list):  # "items": [...] in older drafts
            yield from (((key, str(i)), s) for i, s in enumerate(node[key]))
        elif key in node:
            yield (key,), node[key]
    for key in _MANY:
        if isinstance(node.get(key), list):
            yield from (((key, str(i)), s) for i, s in enumerate(node[key]))
    for key in _MAP:
        if isinstance(node.get(key), dict):
            yield from (((key, str(k)), s) for k, s in node[key].items())


def _subschemas(schema: Any) -> Iterator[tuple[tuple[str, ...], dict[str, Any]]]:
    """Every subschema (as a dict) with its path, the root first."""
    stack: list[tuple[tuple[str, ...], Any]] = [((), schema)]
    while stack:
        path, node = stack.pop()
        if not isinstance(node, dict):
            continue
        yield path, node
        stack.extend(((*path, *keys), s) for keys, s in _applied(node))
        for key in _DEFS:
            if isinstance(node.get(key), dict):
                stack.extend(((*path, key, str(k)), s) for k, s in node[key].items())


def resolve_ref(root: Any, ref: Any) -> tuple[Any, tuple[str, ...]] | None:
    """The subschema of `root` a local `$ref` names, with its path; None for any other reference
    (not a local JSON pointer, or one that names nothing)."""
    if not isinstance(ref, str) or not (ref == "#" or ref.startswith("#/")):
        return None
    node, path = root, tuple[str, ...]()
    for part in ref[2:].split("/") if ref != "#" else ():
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
        path = (*path, part)
    return node, path


# A step of a validator from a subschema: to the next one, its path, and the keys the step takes
# (0 for a `$ref`, which counts as one level).
_Step = tuple[dict[str, Any], tuple[str, ...], int]
# Keywords a validator applies to the instance in place, not to a part of it.
_IN_PLACE = frozenset(("allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas"))


@dataclass
class _Visit:
    """A subschema on the walk: its path, the step that reached it (None for the root), the steps
    left to take from it, and the deepest walk below it (its levels and first step)."""

    node: dict[str, Any]
    path: tuple[str, ...]
    entry: _Step | None
    steps: Iterator[_Step]
    height: int = 0
    below: _Step | None = None

    def climb(self, step: _Step, child: _Visit) -> None:
        """Take the walk below `child`, reached by `step`, if it is the deepest yet."""
        levels = step[2] or 1
        if levels + child.height > self.height:
            self.height, self.below = levels + child.height, step


def _steps(root: Any, node: dict[str, Any], path: tuple[str, ...]) -> Iterator[_Step]:
    for keys, child in _applied(node):
        if isinstance(child, dict):
            yield child, (*path, *keys), len(keys)
    found = resolve_ref(root, node.get("$ref"))
    if found is not None and isinstance(found[0], dict):
        yield found[0], found[1], 0


def _walk_depth(root: dict[str, Any]) -> list[_Visit]:
    """Raise GrammarError where a walk through the schema as a validator walks it (into each
    subschema, and through each `$ref` as one more level) passes SCHEMA_MAX_DEPTH levels; else
    every subschema the walk reached. Iterative, each subschema walked once: a `$ref` back to a
    subschema on the walk is recursion that the document bounds, and ends the walk there."""
    done: dict[int, _Visit] = {}
    frames = [_Visit(root, (), None, _steps(root, root, ()))]
    active = {id(root)}
    while frames:
        top = frames[-1]
        step = next(top.steps, None)
        if step is None:
            frames.pop()
            active.discard(id(top.node))
            done[id(top.node)] = top
            if frames and top.entry is not None:
                frames[-1].climb(top.entry, top)
        elif id(step[0]) in done:
            top.climb(step, done[id(step[0])])
        elif id(step[0]) not in active:
            active.add(id(step[0]))
            frames.append(_Visit(step[0], step[1], step, _steps(root, step[0], step[1])))
    _refuse_deeper(done, done[id(root)])
    return list(done.values())


def _in_place(root: Any, node: dict[str, Any], path: tuple[str, ...]) -> Iterator[_Step]:
    """The steps from `node` that stay at the same part of the instance."""
    return (s for s in _steps(root, node, path) if s[2] == 0 or s[1][-s[2]] in _IN_PLACE)


def _endless(root: Any, visits: list[_Visit]) -> str | None:
    """Where references go round without entering a part of the instance (a validator would
    recurse on them without end): a cycle of in-place steps, found by a walk of those alone."""
    left: dict[int, bool] = {}  # False while on the walk, True once left
    for start in visits:
        if id(start.node) in left:
            continue
        left[id(start.node)] = False
        frames = [(start.node, start.path, _in_place(root, start.node, start.path))]
        while frames:
            node, path, steps = frames[-1]
            step = next(steps, None)
            if step is None:
                frames.pop()
                left[id(node)] = True
            elif left.get(id(step[0])) is False:
                return (
                    f"the JSON schema refers from {_pointer(path)!r} back to "
                    f"{_pointer(step[1])!r} without entering a part of the document: a validator "
                    "would never end"
                )
            elif id(step[0]) not in left:
                left[id(step[0])] = False
                frames.append((step[0], step[1], _in_place(root, step[0], step[1])))
    return None


def _refuse_deeper(done: dict[int, _Visit], root: _Visit) -> None:
    """Raise GrammarError naming where the deepest walk from `root` passes SCHEMA_MAX_DEPTH."""
    if root.height <= SCHEMA_MAX_DEPTH:
        return
    levels = refs = 0
    visit = root
    while visit.below is not None and levels <= SCHEMA_MAX_DEPTH:
        child, _, keys = visit.below
        levels, refs = levels + (keys or 1), refs + (keys == 0)
        visit = done[id(child)]
    raise GrammarError(
        f"the JSON schema is {root.height:,} levels deep as a validator walks it, each `$ref` "
        f"counted as a level: it passes {SCHEMA_MAX_DEPTH} at {_pointer(visit.path)!r}, after "
        f"{refs:,} `$ref`{'s' * (refs != 1)} from the root (at most {SCHEMA_MAX_DEPTH} levels)"
    )


class _SchemaGraph:
    """Which subschemas have a finite instance: the least fixpoint of rules that over-approximate
    it (an unknown keyword, reference or type never makes a schema unfinishable), so a schema
    refused here truly has no finite instance."""

    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root
        self.paths = dict(_subschemas(root))
        self.where = {id(node): _pointer(path) for path, node in self.paths.items()}
        self.finite: set[int] = set()

    def resolve(self, ref: Any) -> Any:
        """The subschema a local `$ref` names; None when it is not a local JSON pointer."""
        found = resolve_ref(self.root, ref)
        return None if found is None else found[0]

    def ok(self, node: Any) -> bool:
        if node is False:
            return False
        return not isinstance(node, dict) or id(node) in self.finite

    def blocked(self, node: dict[str, Any]) -> tuple[str, Any] | None:
        """Why `node` has no finite instance as far as is known, and the subschema to blame next
        (None when there is none); None when it has one."""
        here = repr(self.where.get(id(node), "#"))
        target = self.resolve(node.get("$ref"))
        if target is not None and not self.ok(target):
            return f"{here} refers to {self.where.get(id(target), '#')!r}", target
        parts = node.get("allOf")
        for part in parts if isinstance(parts, list) else ():
            if not self.ok(part):
                return f"{here} needs all of its allOf", part
        for key in ("anyOf", "oneOf"):
            options = node.get(key)
            if isinstance(options, list) and options and not any(self.ok(s) for s in options):
                return f"{here} needs one of its {key}, and none can be completed", None
        types = node.get("type")
        if "enum" in node or "const" in node or not isinstance(types, str | list):
            return None
        reasons = [
            self.blocked_as(node, t, here) for t in ([types] if isinstance(types, str) else types)
        ]
        return None if not reasons or any(r is None for r in reasons) else reasons[0]

    def blocked_as(self, node: dict[str, Any], kind: Any, here: str) -> tuple[str, Any] | None:
        if kind == "object":
            properties = node.get("properties", {})
            for name in node.get("required", []):
                if isinstance(properties, dict) and name in properties:
                    sub = properties[name]
                elif node.get("patternProperties"):
                    continue  # a pattern may admit the name; not decided here
                else:
                    sub = node.get("additionalProperties", True)
                if not self.ok(sub):
                    return f"{here} requires property {name!r}", sub
        if kind == "array":
            least = node.get("minItems", 0)
            items = node.get("items", True)
            prefix = node.get("prefixItems", items if isinstance(items, list) else [])
            rest = node.get("additionalItems", True) if isinstance(items, list) else items
            if not isinstance(least, int) or not isinstance(prefix, list):
                return None
            needed = [*prefix[:least], *([rest] if least > len(prefix) else [])]
            stuck = next((s for s in needed if not self.ok(s)), None)
            if stuck is not None or False in needed:
                return f"{here} needs at least {least} item{'s' * (least != 1)}", stuck
        return None

    def solve(self) -> None:
        """A worklist: a subschema is looked at again only when one it uses is found finite, so
        the work is linear in the schema's references (a pass per change was quadratic: 3,000
        chained `$defs` listed backwards took 20 s)."""
        users: dict[int, list[dict[str, Any]]] = {}
        for node in self.paths.values():
            for child, _, _ in _steps(self.root, node, ()):
                users.setdefault(id(child), []).append(node)
        todo = [node for _, node in sorted(self.paths.items(), key=lambda p: len(p[0]))]
        while todo:  # children first (popped from the end), so a tree settles at once
            node = todo.pop()
            if id(node) not in self.finite and self.blocked(node) is None:
                self.finite.add(id(node))
                todo.extend(users.get(id(node), ()))

    def explain(self, node: Any) -> str:
        """The chain of reasons from `node`, until it comes back to a subschema already named."""
        reasons: list[str] = []
        seen: set[int] = set()
        while isinstance(node, dict) and id(node) not in seen:
            seen.add(id(node))
            found = self.blocked(node)
            if found is None:
                break
            reasons.append(found[0])
            node = found[1]
        return ", and ".join(reasons)


def _check_costs(path: tuple[str, ...], node: dict[str, Any], limits: GrammarLimits) -> None:
    """Refuse a subschema whose grammar would cost past `limits`: its item counts, its optional
    properties, its patternProperties."""
    for key in ("minItems", "maxItems"):
        count = node.get(key)
        if isinstance(count, int) and count > limits.max_repeat:
            raise GrammarError(
                f"{key} {count} at {_pointer(path)!r}: the engine builds one grammar node per "
                f"item; at most GrammarLimits.max_repeat ({limits.max_repeat})"
            )
    properties = node.get("properties")
    if isinstance(properties, dict) and len(properties) > limits.max_optional_properties:
        required = node.get("required")
        optional = set(properties) - set(required if isinstance(required, list) else ())
        if len(optional) > limits.max_optional_properties:
            raise GrammarError(
                f"the object at {_pointer(path)!r} has {len(optional):,} optional properties (not "
                "`required`): checking its keys costs about the square of their number a byte; "
                f"at most GrammarLimits.max_optional_properties ({limits.max_optional_properties})"
            )
    patterns = node.get("patternProperties")
    if isinstance(patterns, dict) and len(patterns) > limits.max_pattern_properties:
        raise GrammarError(
            f"the object at {_pointer(path)!r} has {len(patterns):,} patternProperties: compiling "
            "them costs about the cube of their number; at most "
            f"GrammarLimits.max_pattern_properties ({limits.max_pattern_properties})"
        )


def check_schema(schema: Any, limits: GrammarLimits) -> None:
    """Refuse, with GrammarError, what the engine cannot take from a JSON schema."""
    _json_depth(schema)
    visits = _walk_depth(schema) if isinstance(schema, dict) else []
    for path, node in _subschemas(schema):
        _check_costs(path, node, limits)
    if isinstance(schema, dict):
        graph = _SchemaGraph(schema)
        graph.solve()
        if id(schema) not in graph.finite:
            raise GrammarError(
                "the JSON schema can never be completed (it has no finite instance): "
                + graph.explain(schema)
            )
    endless = _endless(schema, visits)
    if endless is not None:  # after the finite check, which names `{"$ref": "#"}` better
        raise GrammarError(endless)


def is_pydantic_model(spec: object) -> TypeGuard[type[Any]]:
    """Whether `spec` is a pydantic model class (read by its `model_json_schema`: pydantic is
    not imported)."""
    return isinstance(spec, type) and hasattr(spec, "model_json_schema")


def read_schema(
    schema: dict[str, Any] | bool | str | type, limits: GrammarLimits
) -> dict[str, Any]:
    """A JSON schema as a dict, checked: from a dict, a boolean schema, a JSON string or a
    pydantic model class. GrammarError says what is wrong with it."""
    if is_pydantic_model(schema):
        schema = schema.model_json_schema()
    if isinstance(schema, str):
        raw = schema.encode("utf-8", "surrogatepass")
        check_size("the JSON schema", len(raw), limits)
        past = nesting_past(raw, SCHEMA_MAX_DEPTH)
        if past is not None:
            raise GrammarError(
                f"the JSON schema is nested more than {SCHEMA_MAX_DEPTH} levels deep at byte "
                f"{past:,} (llguidance reads at most {SCHEMA_MAX_DEPTH})"
            )
        try:
            schema = json.loads(schema)
        except json.JSONDecodeError as exc:
            raise GrammarError(
                f"JSON schema is not valid JSON: {exc.msg}", line=exc.lineno, column=exc.colno
            ) from exc
    if schema is True:  # JSON Schema's boolean schemas: `true` takes any document
        schema = {}
    elif schema is False:
        raise GrammarError("the JSON schema `false` has no instance: no document is valid")
    if not isinstance(schema, dict):
        raise GrammarError(
            f"a JSON schema must be an object or a boolean, not {type(schema).__name__}"
        )
    check_schema(schema, limits)
    return schema
