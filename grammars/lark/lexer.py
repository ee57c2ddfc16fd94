"""Lark grammar text as tokens and statements: the one tokenizer every reader of a grammar uses.

The tokens follow lark's lexical syntax (lark/load_grammar.py; a regexp may span lines, as both
lark and llguidance read one), widened to step over llguidance's additions: a `%json`, `%regex` or
`%llguidance` directive and the JSON after it are one token that keeps the JSON's value, and the
tokens of a nested `%lark { ... }` grammar, whose names are its own, are opaque. Every token keeps
its offsets in the text; `statements` groups the tokens into logical lines.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["JSON_VALUED", "Stmt", "Tok", "position", "statements", "tokens"]

_TOKEN = re.compile(
    r"""
      (?P<nl>(?:\r?\n)+)
    | (?P<skip>[ \t\f]+|//[^\n]*|\#[^\n]*|\\[ \t]*\r?\n)
    | (?P<string>"(?:\\.|[^"\\\n])*"i?)
    | (?P<regexp>/(?!/)(?:\\.|[^/\\])+/[imslux]*)
    | (?P<directive>%[a-z_]+)
    | (?P<special><[^<>\s]+>)
    | (?P<ref>@[A-Za-z0-9_\-]+)
    | (?P<name>_?[A-Za-z][A-Za-z0-9_]*(?:-(?!>)[A-Za-z0-9_]+)*)
    | (?P<number>[+-]?[0-9]+)
    | (?P<punct>->|\.\.|[:,.(){}\[\]|~+*?!&=])
    | (?P<other>.)
    """,
    re.VERBOSE | re.DOTALL,
)
JSON_VALUED = ("%json", "%regex", "%llguidance")
"""Directives followed by a JSON value (llguidance's), read with it as one `json` token."""
_BLANKS = re.compile(r"[ \t\r\n]*")


@dataclass
class Tok:
    kind: str
    text: str
    start: int
    end: int
    value: Any = None  # a `json` token's JSON value


def tokens(text: str) -> list[Tok]:
    """The tokens of `text`, blanks and comments left out. A JSON-valued directive whose JSON
    cannot be read stays a `directive` token, followed by the tokens of what comes after it."""
    toks: list[Tok] = []
    pos = 0
    decoder = json.JSONDecoder()
    nested = 0  # brace depth inside `%lark { ... }`, whose names are its own
    while pos < len(text):
        found = _TOKEN.match(text, pos)
        assert found is not None and found.lastgroup is not None  # `other` takes any character
        kind, end = found.lastgroup, found.end()
        value = None
        if kind == "directive" and found.group() in JSON_VALUED:
            at = _BLANKS.match(text, end).end()  # type: ignore[union-attr]
            try:
                value, end = decoder.raw_decode(text, at)
                kind = "json"
            except (ValueError, RecursionError):
                pass
        token = Tok(kind, text[pos:end], pos, end, value)
        pos = end
        if kind == "skip":
            continue
        # Line breaks included: the nested grammar is part of one statement. A JSON token keeps
        # its kind, so that its value is checked wherever it stands.
        if nested:
            if token.text in ("{", "}"):
                nested += 1 if token.text == "{" else -1
            if kind != "json":
                token.kind = "opaque"
        elif token.text == "{" and toks and toks[-1].text == "%lark":
            nested = 1
            token.kind = "opaque"
        toks.append(token)
    return toks


@dataclass
class Stmt:
    toks: list[Tok]

    @property
    def start(self) -> int:
        return self.toks[0].start

    @property
    def end(self) -> int:
        return self.toks[-1].end

    def punct(self, i: int, *texts: str) -> bool:
        return (
            0 <= i < len(self.toks) and self.toks[i].kind == "punct" and self.toks[i].text in texts
        )

    def name(self, i: int) -> bool:
        return i < len(self.toks) and self.toks[i].kind == "name"


def statements(toks: list[Tok]) -> Iterator[Stmt]:
    """Logical lines: a line break ends a statement unless the next line starts with '|'."""
    current: list[Tok] = []
    for i, token in enumerate(toks):
        if token.kind == "nl":
            after = i + 1  # nl tokens take every line break in a row: one more at most
            while after < len(toks) and toks[after].kind == "nl":
                after += 1
            if after < len(toks) and toks[after].text == "|" and current:
                continue
            if current:
                yield Stmt(current)
            current = []
        else:
            current.append(token)
    if current:
        yield Stmt(current)


def position(text: str, offset: int) -> tuple[int, int]:
    """The line and column (1-based) of `offset` in `text`."""
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1
