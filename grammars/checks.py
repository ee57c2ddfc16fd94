"""Checks made on a grammar before the engine compiles it: what it may cost, and whether it can end.

llguidance cannot be trusted with every input. It compiles Lark rules recursively (a chain of 3,000
rules overflowed the stack: SIGSEGV), builds one grammar node per array item of a JSON schema
(`minItems: 10**9`: abort on an 8 GiB allocation), and reads JSON at most 128 levels deep. None of
these is an exception Python can catch, so the inputs are measured here first, against
`GrammarLimits`, and anything past a limit is a GrammarError that names the limit to raise.

It also accepts grammars that no text completes (`start: a`, `a: "x" a`): every prefix of "xxx..."
looks valid and none ends. A grammar whose start can derive no finite text is refused here; a rule
or subschema that can be entered but never left is reported in the grammar's warnings.

The Lark scanner mirrors llguidance's lexer (lark/lexer.rs, 1.5.0). Where it cannot read a grammar,
it leaves the verdict to the engine, which reports syntax errors with their position.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from grammars.errors import GrammarError

# llguidance reads the grammar's JSON with serde_json, which stops at 128 levels; the request that
# wraps a schema takes 4 of them. Not a GrammarLimits field: the engine fails past it anyway.
SCHEMA_MAX_DEPTH = 124


@dataclass(frozen=True)
class GrammarLimits:
    """What one grammar may cost. Past a limit, building the grammar raises GrammarError (checking a
    text, TextError), with the field to raise in the message; nothing kills the process.

    max_source_bytes: the grammar as given (Lark text, regex, or the schema as JSON), in UTF-8
        bytes. Compiling costs more than linearly in the number of distinct literals (60,000 of
        them: about 12 s), so this also bounds the time spent compiling.
    max_depth: how deep the rules and terminals of a Lark grammar nest (the longest chain of
        references from `start`; rules that refer to each other count as deep as their group is
        large). The engine compiles them recursively with about 3 KB of stack a level, on a thread
        with a 64 MiB stack: about 20,000 levels fit.
    max_repeat: the largest minItems or maxItems of a JSON schema. The engine builds one node per
        item, about 100 bytes each (10**7 items: 0.9 GB).
    row_items: the work budget of a check: the Earley items that one position of the text may
        hold, beyond the length of the grammar as the engine reads it (a grammar's items per
        position grow with its alternatives: a schema of 600 optional properties needs 2,407).
        Measured on valid texts: JSON and CSV need 12 to 15 (1 MB documents included), the
        shipped SQL grammar at most 178 on its corpora, each far below its budget. An ambiguous
        or right-recursive grammar needs more with every byte, and its work per byte grows with
        that (cubically: 1 KB of `1+1+...` under `e: e "+" e | ...` took 6 s, 3 KB over two
        minutes; `x: "a" x | "a"` over 4,000 bytes, 23 s). Past the budget a check stops with
        TextError instead (that grammar: at character 353, in half a second).
    """

    max_source_bytes: int = 1 << 20
    max_depth: int = 5_000
    max_repeat: int = 100_000
    row_items: int = 128


def check_size(what: str, size: int, limits: GrammarLimits) -> None:
    if size > limits.max_source_bytes:
        raise GrammarError(
            f"{what} is {size:,} bytes; at most GrammarLimits.max_source_bytes "
            f"({limits.max_source_bytes:,})"
        )


# -- Lark text -------------------------------------------------------------------------------------

_LARK_TOKEN = re.compile(
    r"""
      (?P<nl>(?:\r?\n)+[ \t]*)
    | (?P<skip>(?:\#|//)[^\n]*|[ \t]+)
    | (?P<string>"(?:\\(?:["\\/bfnrt]|u[a-fA-F0-9]{4})|[^"\\\x00-\x1f\x7f])*"i?)
    | (?P<regexp>/(?:\\.|[^/\\])+/[imslux]*)
    | (?P<keyword>%(?:ignore|import|override|declare|json|regex|llguidance|lark|if))
    | (?P<special><[^<>\s]+>)
    | (?P<ref>@[a-zA-Z0-9_\-]+)
    | (?P<number>0[xX][0-9a-fA-F]+|[+-]?[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?)
    | (?P<name>!?[_?]?[a-z][_a-z0-9\-]*|_?[A-Z][_A-Z0-9\-]*)
    | (?P<punct>::|\.\.|->|[:,.=(){}\[\]~|&_+*?])
    """,
    re.VERBOSE,
)
_JSON_VALUED = ("%json", "%regex", "%llguidance")
_BLANKS = re.compile(r"[ \t\r\n]*")
# Group nesting past this is left to the engine's own parser (which refuses it sooner).
_MAX_GROUPS = 200


class _Unreadable(Exception):
    """The scanner cannot follow this grammar; the engine will judge it."""


@dataclass
class _Token:
    kind: str
    text: str
    line: int
    column: int
    value: Any = None  # the JSON after %json, %regex or %llguidance


def _lark_tokens(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    pos, line, line_start = 0, 1, 0
    decoder = json.JSONDecoder()
    while pos < len(text):
        found = _LARK_TOKEN.match(text, pos)
        if found is None or found.lastgroup is None:
            raise _Unreadable
        kind, end = found.lastgroup, found.end()
        token = _Token(kind, found.group(), line, pos - line_start + 1)
        if kind == "keyword" and token.text in _JSON_VALUED:
            start = _BLANKS.match(text, end).end()  # type: ignore[union-attr]
            try:
                token.value, end = decoder.raw_decode(text, start)
            except RecursionError:
                raise GrammarError(
                    f"the JSON after {token.text} is nested too deeply to read",
                    line=token.line,
                    column=token.column,
                    source=text,
                ) from None
            except ValueError:
                raise _Unreadable from None
        if kind != "skip":
            tokens.append(token)
        newlines = text.count("\n", pos, end)
        if newlines:
            line += newlines
            line_start = text.rindex("\n", pos, end) + 1
        pos = end
    return tokens


# A rule's body as a formula over the rules it names: True (derives a finite text), False, a name,
# or ("all" | "any", parts).
Formula: TypeAlias = "bool | str | tuple[Literal['all', 'any'], tuple[Formula, ...]]"


@dataclass
class _Definition:
    name: str
    line: int
    column: int
    refs: list[str]
    formula: Formula


def _canonical(name: str) -> str:
    return name.lstrip("!?")


class _Body:
    """A recursive-descent reader of one rule body (llguidance's lark/parser.rs, 1.5.0), turned
    into the formula that says when the rule derives a finite text."""

    def __init__(self, tokens: list[_Token]) -> None:
        self.tokens = tokens
        self.at = 0

    def peek(self, *texts: str) -> bool:
        if self.at >= len(self.tokens):
            return False
        token = self.tokens[self.at]
        return token.kind in ("punct", "keyword") and token.text in texts

    def take(self) -> _Token:
        if self.at >= len(self.tokens):
            raise _Unreadable
        self.at += 1
        return self.tokens[self.at - 1]

    def expect(self, text: str) -> None:
        if self.take().text != text:
            raise _Unreadable

    def whole(self) -> Formula:
        formula = self.alternatives(0)
        if self.at != len(self.tokens):
            raise _Unreadable
        return formula

    def alternatives(self, depth: int) -> Formula:
        if depth > _MAX_GROUPS:
            raise _Unreadable
        options = [self.sequence(depth)]
        while self.peek("|") or (
            self.at < len(self.tokens) - 1
            and self.tokens[self.at].kind == "nl"
            and self.tokens[self.at + 1].text == "|"
        ):
            self.at += 1 if self.peek("|") else 2
            options.append(self.sequence(depth))
        return ("any", tuple(options))

    def sequence(self, depth: int) -> Formula:
        parts: list[Formula] = []
        while self.at < len(self.tokens) and not self.peek("|", ")", "]"):
            if self.tokens[self.at].kind == "nl":
                break
            if self.peek("->"):  # an alias names the tree node, not a rule
                self.at += 1
                self.take()
            elif self.peek("&"):  # conjunctions (terminals only) need every part
                self.at += 1
            elif self.peek("%if"):
                raise _Unreadable
            else:
                parts.append(self.expr(depth))
        return ("all", tuple(parts))

    def expr(self, depth: int) -> Formula:
        atom = self.atom(depth)
        if self.peek("?", "*"):
            self.at += 1
            return True
        if self.peek("+"):
            self.at += 1
            return atom
        if (
            self.peek("~")
            and self.at + 1 < len(self.tokens)
            and self.tokens[self.at + 1].kind == "number"
        ):
            # atom ~ n, atom ~ n..m
            self.at += 1
            least = self.number()
            if self.peek(".."):
                self.at += 1
                self.number()
            return True if least == 0 else atom
        if self.peek("{"):  # atom{n}, atom{n,}, atom{,m}, atom{n,m}
            self.at += 1
            least = 0 if self.peek(",") else self.number()
            while not self.peek("}"):
                self.take()
            self.at += 1
            return True if least == 0 else atom
        return atom

    def number(self) -> float:
        token = self.take()
        if token.kind != "number":
            raise _Unreadable
        return float(int(token.text, 16) if token.text[:2].lower() == "0x" else token.text)

    def atom(self, depth: int) -> Formula:
        token = self.take()
        if token.text == "~":  # a negated terminal
            self.atom(depth)
            return True
        if token.text == "(":
            inner = self.alternatives(depth + 1)
            self.expect(")")
            return inner
        if token.text == "[":
            self.alternatives(depth + 1)
            self.expect("]")
            return True
        if token.kind == "string":
            if self.peek(".."):
                self.at += 1
                self.take()
            return True
        if token.kind in ("regexp", "special", "ref") or token.text in ("%json", "%regex"):
            return True
        if token.text == "%lark":  # a nested grammar, with names of its own
            self.expect("{")
            open_braces = 1
            while open_braces:
                inner = self.take().text
                open_braces += (inner == "{") - (inner == "}")
            return True
        if token.kind == "name":
            if self.peek("::") or (
                self.peek("{")
                and self.at + 1 < len(self.tokens)
                and self.tokens[self.at + 1].kind not in ("number",)
                and self.tokens[self.at + 1].text != ","
            ):
                raise _Unreadable  # parameters and templates
            return _canonical(token.text)
        raise _Unreadable


def _names(formula: Formula) -> Iterator[str]:
    """The names a formula mentions, in order, without recursion (groups nest up to 200 deep)."""
    stack = [formula]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, tuple):
            stack.extend(reversed(item[1]))


def _holds(formula: Formula, finite: set[str], defined: dict[str, _Definition]) -> bool:
    if isinstance(formula, bool):
        return formula
    if isinstance(formula, str):
        # an undefined name is the engine's error to report, not a rule without a base case
        return formula in finite or formula not in defined
    parts = (_holds(part, finite, defined) for part in formula[1])
    return all(parts) if formula[0] == "all" else any(parts)


def _statements(tokens: list[_Token]) -> Iterator[list[_Token]]:
    """The logical lines: a newline ends a statement unless the next line starts with '|'."""
    current: list[_Token] = []
    for i, token in enumerate(tokens):
        if token.kind == "nl" and not (i + 1 < len(tokens) and tokens[i + 1].text == "|"):
            if current:
                yield current
            current = []
        else:
            current.append(token)
    if current:
        yield current


def _definitions(tokens: list[_Token]) -> tuple[dict[str, _Definition], list[str], list[Any]]:
    """Rules and terminals by name, the names %ignore uses, and the JSON schemas of %json atoms."""
    defined: dict[str, _Definition] = {}
    ignored: list[str] = []
    schemas = [t.value for t in tokens if t.text == "%json"]
    for statement in _statements(tokens):
        head = statement[0]
        if head.kind == "name":
            colon = next((i for i, t in enumerate(statement) if t.text == ":"), None)
            if colon is None:
                raise _Unreadable
            formula = _Body(statement[colon + 1 :]).whole()
            name = _canonical(head.text)
            refs = list(dict.fromkeys(_names(formula)))
            defined.setdefault(name, _Definition(name, head.line, head.column, refs, formula))
        elif head.text == "%ignore":
            ignored.extend(_names(_Body(statement[1:]).whole()))
        elif head.text == "%import":
            # %import common.NAME [-> ALIAS] or %import common (A, B): terminals, always finite
            names = [t.text for t in statement[1:] if t.kind == "name"]
            imported = names[1:] if any(t.text == "(" for t in statement) else names[-1:]
            for name in imported:
                defined.setdefault(name, _Definition(name, head.line, head.column, [], True))
        elif head.text not in ("%llguidance", "%override", "%declare"):
            raise _Unreadable
    return defined, ignored, schemas


def _components(defined: dict[str, _Definition]) -> list[list[str]]:
    """Strongly connected components of the reference graph, each after every component it
    refers to (Tarjan's algorithm, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    for root in defined:
        if root in index:
            continue
        work = [(root, iter(defined[root].refs))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            step = next((r for r in edges if r in defined), None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    on_stack.add(step)
                    work.append((step, iter(defined[step].refs)))
                elif step in on_stack:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                found.append(component[::-1])
    return found


def check_lark(text: str, limits: GrammarLimits) -> tuple[str, ...]:
    """Refuse what the engine cannot take from Lark `text`; return warnings. Raises GrammarError."""
    try:
        defined, ignored, schemas = _definitions(_lark_tokens(text))
    except _Unreadable:
        return ()
    for schema in schemas:
        check_schema(schema, limits)
    components = _components(defined)
    owner = {name: k for k, component in enumerate(components) for name in component}
    # Depth: the longest chain of references, a recursive group counted as its size (the engine's
    # depth-first compile may walk all of it before it returns).
    deepest: list[int] = []
    below: list[int | None] = []
    finite: set[str] = set()
    for k, component in enumerate(components):
        nexts = {owner[r] for name in component for r in defined[name].refs if r in owner} - {k}
        best = max(nexts, key=lambda j: deepest[j], default=None)
        deepest.append(len(component) + (deepest[best] if best is not None else 0))
        below.append(best)
        changed = True
        while changed:
            changed = False
            for name in component:
                if name not in finite and _holds(defined[name].formula, finite, defined):
                    finite.add(name)
                    changed = True
    roots = [name for name in ("start", *ignored) if name in defined]
    for root in roots:
        if deepest[owner[root]] > limits.max_depth:
            last = owner[root]
            while (step := below[last]) is not None:
                last = step
            bottom = defined[components[last][0]]
            raise GrammarError(
                f"rules nest {deepest[owner[root]]} deep from {root!r} down to {bottom.name!r}; "
                f"at most GrammarLimits.max_depth ({limits.max_depth})",
                line=bottom.line,
                column=bottom.column,
                source=text,
            )
    reachable = _reachable(roots, defined)
    for root in roots:
        if root not in finite:
            culprit = _no_base_case(root, finite, defined)
            needed = f", and {root!r} needs it" if culprit.name != root else ""
            raise GrammarError(
                f"rule {culprit.name!r} can never be completed: "
                f"{_blockers(culprit, finite, defined)}{needed}",
                line=culprit.line,
                column=culprit.column,
                source=text,
            )
    return tuple(
        f"rule {name!r} can never be completed ({_blockers(defined[name], finite, defined)}): "
        "a text that enters it cannot end"
        for name in reachable
        if name not in finite
    )


def _reachable(roots: list[str], defined: dict[str, _Definition]) -> list[str]:
    seen = dict.fromkeys(roots)
    queue = list(roots)
    while queue:
        for ref in defined[queue.pop()].refs:
            if ref in defined and ref not in seen:
                seen[ref] = None
                queue.append(ref)
    return list(seen)


def _no_base_case(root: str, finite: set[str], defined: dict[str, _Definition]) -> _Definition:
    """The rule to blame: follow unfinished references from `root` until they come back; the
    rule they come back to (or one that has no alternative)."""
    path = [root]
    while True:
        stuck = [r for r in defined[path[-1]].refs if r in defined and r not in finite]
        back = next((r for r in stuck if r in path), None)
        if back is not None or not stuck:
            return defined[back or path[-1]]
        path.append(stuck[0])


def _blockers(rule: _Definition, finite: set[str], defined: dict[str, _Definition]) -> str:
    stuck = [r for r in rule.refs if r in defined and r not in finite]
    shown = ", ".join(repr(r) for r in stuck)
    return f"each of its alternatives needs {shown}" if stuck else "it has no alternative"


# -- JSON schemas ----------------------------------------------------------------------------------

# Keywords whose value is a subschema, a list of them, or a map of them (as the engine reads them).
_ONE = ("items", "additionalItems", "additionalProperties", "contains", "not", "if", "then", "else",
        "propertyNames", "unevaluatedItems", "unevaluatedProperties")  # fmt: skip
_MANY = ("anyOf", "oneOf", "allOf", "prefixItems")
_MAP = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")


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


def _subschemas(schema: Any) -> Iterator[tuple[tuple[str, ...], dict[str, Any]]]:
    """Every subschema (as a dict) with its path, the root first."""
    stack: list[tuple[tuple[str, ...], Any]] = [((), schema)]
    while stack:
        path, node = stack.pop()
        if not isinstance(node, dict):
            continue
        yield path, node
        for key in _ONE:
            if isinstance(node.get(key), list):  # "items": [...] in older drafts
                stack.extend(((*path, key, str(i)), s) for i, s in enumerate(node[key]))
            elif key in node:
                stack.append(((*path, key), node[key]))
        for key in _MANY:
            if isinstance(node.get(key), list):
                stack.extend(((*path, key, str(i)), s) for i, s in enumerate(node[key]))
        for key in _MAP:
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
        nodes = [node for _, node in sorted(self.paths.items(), key=lambda p: -len(p[0]))]
        changed = True
        while changed:  # children first, so a tree settles in one pass; cycles take more
            changed = False
            for node in nodes:
                if id(node) not in self.finite and self.blocked(node) is None:
                    self.finite.add(id(node))
                    changed = True

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


def check_schema(schema: Any, limits: GrammarLimits) -> None:
    """Refuse, with GrammarError, what the engine cannot take from a JSON schema."""
    _json_depth(schema)
    for path, node in _subschemas(schema):
        for key in ("minItems", "maxItems"):
            count = node.get(key)
            if isinstance(count, int) and count > limits.max_repeat:
                raise GrammarError(
                    f"{key} {count} at {_pointer(path)!r}: the engine builds one grammar node per "
                    f"item; at most GrammarLimits.max_repeat ({limits.max_repeat})"
                )
    if isinstance(schema, dict):
        graph = _SchemaGraph(schema)
        graph.solve()
        if id(schema) not in graph.finite:
            raise GrammarError(
                "the JSON schema can never be completed (it has no finite instance): "
                + graph.explain(schema)
            )
