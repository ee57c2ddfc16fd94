"""Each rule of a Lark grammar read as llguidance's parser reads it (lark/parser.rs, 1.5.0): the
names it refers to, and a formula that says when it derives a finite text.

The text is read with the tokenizer every reader of a grammar uses (grammars/lark/lexer.py). Where
llguidance's lexer would read a token otherwise, or a rule cannot be followed here, reading stops
with Unreadable: the verdict is the engine's, which reports syntax errors with their position.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from grammars.errors import GrammarError
from grammars.lark.lexer import JSON_VALUED, Tok, position, statements, tokens

__all__ = ["Definition", "Formula", "Unreadable", "read_rules"]

# Where llguidance's lexer (lark/lexer.rs, 1.5.0) reads a text otherwise than lark's, reading
# stops: a string takes JSON's escapes only; a name is all lower case (a rule, which `!` and `?`
# may lead) or all upper case (a terminal); a number goes on into a fraction, an exponent or hex
# digits; blanks are spaces and tabs.
_ENGINE_STRING = re.compile(r'"(?:\\(?:["\\/bfnrt]|u[a-fA-F0-9]{4})|[^"\\\x00-\x1f\x7f])*"i?')
_ENGINE_NAME = re.compile(r"_?[a-z][_a-z0-9\-]*|_?[A-Z][_A-Z0-9\-]*")
_RULE_NAME = re.compile(r"_?[a-z]")
_COMMENT = re.compile(r"(?:#|//)[^\n]*")
# Group nesting past this is left to the engine's own parser (which refuses it sooner).
_MAX_GROUPS = 200


class Unreadable(Exception):
    """This grammar cannot be followed here; the engine will judge it."""


def _engine_tokens(text: str) -> list[Tok]:
    """The tokens of `text`; Unreadable where llguidance's lexer reads them otherwise, and
    GrammarError for JSON nested too deeply to read (it would crash the engine)."""
    toks = tokens(text)
    for i, token in enumerate(toks):
        if not _read_alike(text, toks, i):
            raise Unreadable
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
            raise Unreadable
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
class Definition:
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
            raise Unreadable
        self.at += 1
        return self.tokens[self.at - 1]

    def expect(self, text: str) -> None:
        if self.take().text != text:
            raise Unreadable

    def whole(self) -> Formula:
        formula = self.alternatives(0)
        if self.at != len(self.tokens):
            raise Unreadable
        return formula

    def alternatives(self, depth: int) -> Formula:
        if depth > _MAX_GROUPS:
            raise Unreadable
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
                raise Unreadable
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
            raise Unreadable
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
                raise Unreadable  # templates
            return token.text
        raise Unreadable


def _names(formula: Formula) -> Iterator[str]:
    """The names a formula mentions, in order, without recursion (groups nest up to 200 deep)."""
    stack = [formula]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, tuple):
            stack.extend(reversed(item[1]))


def _definitions(toks: list[Tok]) -> tuple[dict[str, Definition], list[str], list[Any]]:
    """Rules and terminals by name, the names %ignore uses, and the JSON schemas of %json atoms."""
    defined: dict[str, Definition] = {}
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
                raise Unreadable
            formula = _Body(statement.toks[colon + 1 :]).whole()
            refs = list(dict.fromkeys(_names(formula)))
            defined.setdefault(head.text, Definition(head.text, statement.start, refs, formula))
        elif head.text == "%ignore":
            ignored.extend(_names(_Body(statement.toks[1:]).whole()))
        elif head.text == "%import":
            # %import common.NAME [-> ALIAS] or %import common (A, B): terminals, always finite
            names = [t.text for t in statement.toks[1:] if t.kind == "name"]
            imported = names[1:] if any(t.text == "(" for t in statement.toks) else names[-1:]
            for name in imported:
                defined.setdefault(name, Definition(name, statement.start, [], True))
        elif not (
            head.text in ("%override", "%declare")
            or (head.kind == "json" and head.text.startswith("%llguidance"))
        ):
            raise Unreadable
    return defined, ignored, schemas


def read_rules(text: str) -> tuple[dict[str, Definition], list[str], list[Any]]:
    """Rules and terminals by name, the names %ignore uses, and the JSON schemas of %json atoms.
    Raises Unreadable (see above), and GrammarError for JSON nested too deeply to read (it would
    crash the engine)."""
    return _definitions(_engine_tokens(text))
