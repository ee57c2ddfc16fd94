"""Checks made on a Lark grammar before the engine compiles it: how deep its rules nest, and
whether it can end.

The engine compiles rules recursively (a chain of 3,000 rules overflowed the stack: SIGSEGV), so
the depth of the rules is measured here first, against GrammarLimits.max_depth, and the JSON
schemas of `%json` atoms are checked as any schema is (grammars/json_schema/checks.py). The engine
also accepts grammars that no text completes (`start: a`, `a: "x" a`): every prefix of "xxx..."
looks valid and none ends. A grammar whose start can derive no finite text is refused here; a rule
that can be entered but never left is reported in the grammar's warnings.

The text is read with the tokenizer every reader of a grammar uses (grammars/lark/lexer.py), as
llguidance's parser reads it (lark/parser.rs, 1.5.0). Where llguidance's lexer would read a token
otherwise, or the grammar cannot be followed here, the verdict is left to the engine, which reports
syntax errors with their position.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from grammars.errors import GrammarError
from grammars.json_schema.checks import check_schema
from grammars.lark.lexer import JSON_VALUED, Tok, position, statements, tokens
from grammars.limits import GrammarLimits

__all__ = ["check_lark"]

# Where llguidance's lexer (lark/lexer.rs, 1.5.0) reads a text otherwise than lark's, the check
# leaves it to the engine: a string takes JSON's escapes only; a name is all lower case (a rule,
# which `!` and `?` may lead) or all upper case (a terminal); a number goes on into a fraction, an
# exponent or hex digits; blanks are spaces and tabs.
_ENGINE_STRING = re.compile(r'"(?:\\(?:["\\/bfnrt]|u[a-fA-F0-9]{4})|[^"\\\x00-\x1f\x7f])*"i?')
_ENGINE_NAME = re.compile(r"_?[a-z][_a-z0-9\-]*|_?[A-Z][_A-Z0-9\-]*")
_RULE_NAME = re.compile(r"_?[a-z]")
_COMMENT = re.compile(r"(?:#|//)[^\n]*")
# Group nesting past this is left to the engine's own parser (which refuses it sooner).
_MAX_GROUPS = 200


class _Unreadable(Exception):
    """This grammar cannot be followed here; the engine will judge it."""


def _engine_tokens(text: str) -> list[Tok]:
    """The tokens of `text`; _Unreadable where llguidance's lexer reads them otherwise, and
    GrammarError for JSON nested too deeply to read (it would crash the engine)."""
    toks = tokens(text)
    for i, token in enumerate(toks):
        if not _read_alike(text, toks, i):
            raise _Unreadable
        if token.kind == "directive" and token.text in JSON_VALUED:
            try:  # the JSON after it could not be read: find out why
                json.JSONDecoder().raw_decode(text[token.end :].lstrip(" \t\r\n"))
            except RecursionError:
                line, column = position(text, token.start)
                raise GrammarError(
                    f"the JSON after {token.text} is nested too deeply to read",
                    line=line,
                    column=column,
                    source=text,
                ) from None
            except ValueError:
                pass
            raise _Unreadable
    return toks


def _read_alike(text: str, toks: list[Tok], i: int) -> bool:
    """Whether llguidance's lexer reads token `i`, and the blanks before it, as lark's does."""
    token = toks[i]
    blanks = _COMMENT.sub("", text[toks[i - 1].end if i else 0 : token.start])
    if "\f" in blanks or "\\" in blanks:
        return False
    # the token right after this one, with nothing between them
    after = toks[i + 1] if i + 1 < len(toks) and toks[i + 1].start == token.end else None
    leads_rule = after is not None and after.kind == "name" and _RULE_NAME.match(after.text)
    if token.kind == "string":
        return bool(_ENGINE_STRING.fullmatch(token.text))
    if token.kind == "name":
        return bool(_ENGINE_NAME.fullmatch(token.text))
    if token.kind == "number":
        return after is None or not (after.kind == "name" or after.text in (".", ".."))
    if token.text == "!":
        return bool(leads_rule) or (after is not None and after.text == "?")
    if token.text == "?" and leads_rule:  # read as one name, which only a rule's head may be
        return i == 0 or toks[i - 1].kind == "nl" or toks[i - 1].text == "!"
    return token.kind != "other"


# A rule's body as a formula over the rules it names: True (derives a finite text), False, a name,
# or ("all" | "any", parts).
Formula: TypeAlias = "bool | str | tuple[Literal['all', 'any'], tuple[Formula, ...]]"


@dataclass
class _Definition:
    name: str
    at: int  # offset of its statement in the text
    refs: list[str]
    formula: Formula


class _Body:
    """A recursive-descent reader of one rule body (llguidance's lark/parser.rs, 1.5.0), turned
    into the formula that says when the rule derives a finite text."""

    def __init__(self, toks: list[Tok]) -> None:
        self.tokens = toks
        self.at = 0

    def peek(self, *texts: str) -> bool:
        if self.at >= len(self.tokens):
            return False
        token = self.tokens[self.at]
        return token.kind in ("punct", "directive") and token.text in texts

    def take(self) -> Tok:
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
        while self.peek("|"):
            self.at += 1
            options.append(self.sequence(depth))
        return ("any", tuple(options))

    def sequence(self, depth: int) -> Formula:
        parts: list[Formula] = []
        while self.at < len(self.tokens) and not self.peek("|", ")", "]"):
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

    def number(self) -> int:
        token = self.take()
        if token.kind != "number":
            raise _Unreadable
        return int(token.text)

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
        if token.kind in ("regexp", "special", "ref") or (
            token.kind == "json" and not token.text.startswith("%llguidance")
        ):
            return True
        if token.text == "%lark":  # a nested grammar, with names of its own
            self.expect("{")
            open_braces = 1
            while open_braces:
                inner = self.take().text
                open_braces += (inner == "{") - (inner == "}")
            return True
        if token.kind == "name":
            if (
                self.peek("{")
                and self.at + 1 < len(self.tokens)
                and self.tokens[self.at + 1].kind not in ("number",)
                and self.tokens[self.at + 1].text != ","
            ):
                raise _Unreadable  # templates
            return token.text
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


def _definitions(toks: list[Tok]) -> tuple[dict[str, _Definition], list[str], list[Any]]:
    """Rules and terminals by name, the names %ignore uses, and the JSON schemas of %json atoms."""
    defined: dict[str, _Definition] = {}
    ignored: list[str] = []
    schemas = [t.value for t in toks if t.kind == "json" and t.text.startswith("%json")]
    for statement in statements(toks):
        first = 0  # after a rule's `!` (kept in the tree) or `?` (inlined)
        while first + 1 < len(statement.toks) and statement.punct(first, "!", "?"):
            first += 1
        head = statement.toks[first]
        if head.kind == "name":
            colon = next((i for i, t in enumerate(statement.toks) if t.text == ":"), None)
            if colon is None:
                raise _Unreadable
            formula = _Body(statement.toks[colon + 1 :]).whole()
            refs = list(dict.fromkeys(_names(formula)))
            defined.setdefault(head.text, _Definition(head.text, statement.start, refs, formula))
        elif head.text == "%ignore":
            ignored.extend(_names(_Body(statement.toks[1:]).whole()))
        elif head.text == "%import":
            # %import common.NAME [-> ALIAS] or %import common (A, B): terminals, always finite
            names = [t.text for t in statement.toks[1:] if t.kind == "name"]
            imported = names[1:] if any(t.text == "(" for t in statement.toks) else names[-1:]
            for name in imported:
                defined.setdefault(name, _Definition(name, statement.start, [], True))
        elif not (
            head.text in ("%override", "%declare")
            or (head.kind == "json" and head.text.startswith("%llguidance"))
        ):
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


class _Rules:
    """The rules' groups of mutual recursion (strongly connected components), each after the
    groups it refers to; how deep each nests; and which rules derive a finite text."""

    def __init__(self, defined: dict[str, _Definition]) -> None:
        self.defined = defined
        self.components = _components(defined)
        self.owner = {name: k for k, component in enumerate(self.components) for name in component}
        # Depth: the longest chain of references, a recursive group counted as its size (the
        # engine's depth-first compile may walk all of it before it returns).
        self.deepest: list[int] = []
        self.below: list[int | None] = []  # the group the deepest chain goes on to
        self.finite: set[str] = set()
        for k, component in enumerate(self.components):
            refs = {r for name in component for r in defined[name].refs}
            nexts = {self.owner[r] for r in refs if r in self.owner} - {k}
            best = max(nexts, key=lambda j: self.deepest[j], default=None)
            self.deepest.append(len(component) + (self.deepest[best] if best is not None else 0))
            self.below.append(best)
            changed = True
            while changed:
                changed = False
                for name in component:
                    if name not in self.finite and self.holds(defined[name].formula):
                        self.finite.add(name)
                        changed = True

    def holds(self, formula: Formula) -> bool:
        """Whether `formula` derives a finite text, given the rules known so far to derive one."""
        if isinstance(formula, bool):
            return formula
        if isinstance(formula, str):
            # an undefined name is the engine's error to report, not a rule without a base case
            return formula in self.finite or formula not in self.defined
        parts = (self.holds(part) for part in formula[1])
        return all(parts) if formula[0] == "all" else any(parts)

    def too_deep(self, root: str, limits: GrammarLimits, text: str) -> GrammarError | None:
        depth = self.deepest[self.owner[root]]
        if depth <= limits.max_depth:
            return None
        last = self.owner[root]
        while (step := self.below[last]) is not None:
            last = step
        bottom = self.defined[self.components[last][0]]
        line, column = position(text, bottom.at)
        return GrammarError(
            f"rules nest {depth} deep from {root!r} down to {bottom.name!r}; "
            f"at most GrammarLimits.max_depth ({limits.max_depth})",
            line=line,
            column=column,
            source=text,
        )

    def never_ends(self, root: str, text: str) -> GrammarError | None:
        if root in self.finite:
            return None
        culprit = self.no_base_case(root)
        needed = f", and {root!r} needs it" if culprit.name != root else ""
        line, column = position(text, culprit.at)
        return GrammarError(
            f"rule {culprit.name!r} can never be completed: {self.blockers(culprit)}{needed}",
            line=line,
            column=column,
            source=text,
        )

    def reachable(self, roots: list[str]) -> list[str]:
        seen = dict.fromkeys(roots)
        queue = list(roots)
        while queue:
            for ref in self.defined[queue.pop()].refs:
                if ref in self.defined and ref not in seen:
                    seen[ref] = None
                    queue.append(ref)
        return list(seen)

    def no_base_case(self, root: str) -> _Definition:
        """The rule to blame: follow unfinished references from `root` until they come back; the
        rule they come back to (or one that has no alternative)."""
        path = [root]
        while True:
            stuck = self.stuck(self.defined[path[-1]])
            back = next((r for r in stuck if r in path), None)
            if back is not None or not stuck:
                return self.defined[back or path[-1]]
            path.append(stuck[0])

    def stuck(self, rule: _Definition) -> list[str]:
        return [r for r in rule.refs if r in self.defined and r not in self.finite]

    def blockers(self, rule: _Definition) -> str:
        shown = ", ".join(repr(r) for r in self.stuck(rule))
        return f"each of its alternatives needs {shown}" if shown else "it has no alternative"


def check_lark(text: str, limits: GrammarLimits) -> tuple[str, ...]:
    """Refuse what the engine cannot take from Lark `text`; return warnings. Raises GrammarError."""
    try:
        defined, ignored, schemas = _definitions(_engine_tokens(text))
    except _Unreadable:
        return ()
    for schema in schemas:
        check_schema(schema, limits)
    rules = _Rules(defined)
    roots = [name for name in ("start", *ignored) if name in defined]
    for root in roots:
        error = rules.too_deep(root, limits, text)
        if error is not None:
            raise error
    reachable = rules.reachable(roots)
    for root in roots:
        error = rules.never_ends(root, text)
        if error is not None:
            raise error
    return tuple(
        f"rule {name!r} can never be completed ({rules.blockers(defined[name])}): "
        "a text that enters it cannot end"
        for name in reachable
        if name not in rules.finite
    )
