"""Lark grammar text read as statements: definitions, imports and ignores, each with its tokens.

`read` splits a file into logical lines (`statements`) of tokens in lark's lexical syntax
(lark/load_grammar.py), widened to step over llguidance's additions (`%llguidance {...}`,
`%json {...}`, nested `%lark { ... }` grammars), and sorts them: `Def` (a rule, terminal or
template, or an `%override` / `%extend` of one), `Import`, `%ignore`. A statement not understood
here is kept as it is and marks the file `unsure`: the engine reports what is wrong with it, at
its own line and column. Every token keeps its offsets in the file's text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from grammars.errors import GrammarError

__all__ = ["Def", "File", "Import", "Stmt", "is_term", "read"]

# Lark's lexical syntax (lark/load_grammar.py), widened to step over llguidance's additions.
_TOKEN = re.compile(
    r"""
      (?P<nl>(?:\r?\n)+)
    | (?P<skip>[ \t\f]+|//[^\n]*|\#[^\n]*|\\[ \t]*\r?\n)
    | (?P<string>"(?:\\.|[^"\\\n])*"i?)
    | (?P<regexp>/(?!/)(?:\\.|[^/\\\n])+/[imslux]*)
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
# Directives followed by a JSON value (llguidance), read as one opaque token.
_JSON_VALUED = ("%json", "%regex", "%llguidance")
_BLANKS = re.compile(r"[ \t\r\n]*")


@dataclass
class Tok:
    kind: str
    text: str
    start: int
    end: int


def _tokens(text: str) -> list[Tok]:
    tokens: list[Tok] = []
    pos = 0
    decoder = json.JSONDecoder()
    nested = 0  # brace depth inside `%lark { ... }`, whose names are its own
    while pos < len(text):
        found = _TOKEN.match(text, pos)
        assert found is not None and found.lastgroup is not None  # `other` takes any character
        kind, end = found.lastgroup, found.end()
        if kind == "directive" and found.group() in _JSON_VALUED:
            at = _BLANKS.match(text, end).end()  # type: ignore[union-attr]
            try:
                _, end = decoder.raw_decode(text, at)
                kind = "json"
            except (ValueError, RecursionError):
                pass
        token = Tok(kind, text[pos:end], pos, end)
        pos = end
        if kind == "skip":
            continue
        if nested:  # line breaks included: the nested grammar is part of one statement
            if token.text in ("{", "}"):
                nested += 1 if token.text == "{" else -1
            token.kind = "opaque"
        elif token.text == "{" and tokens and tokens[-1].text == "%lark":
            nested = 1
            token.kind = "opaque"
        tokens.append(token)
    return tokens


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


def _statements(tokens: list[Tok]) -> Iterator[Stmt]:
    """Logical lines: a line break ends a statement unless the next line starts with '|'."""
    current: list[Tok] = []
    for i, token in enumerate(tokens):
        if token.kind == "nl":
            after = i + 1  # nl tokens take every line break in a row: one more at most
            while after < len(tokens) and tokens[after].kind == "nl":
                after += 1
            if after < len(tokens) and tokens[after].text == "|" and current:
                continue
            if current:
                yield Stmt(current)
            current = []
        else:
            current.append(token)
    if current:
        yield Stmt(current)


def is_term(name: str) -> bool:
    return name.lstrip("_")[:1].isupper()


@dataclass
class File:
    path: Path | None  # None: the text given to Grammar.from_lark
    text: str
    stmts: list[Stmt] = field(default_factory=list)
    defs: list[Def] = field(default_factory=list)
    imports: list[Import] = field(default_factory=list)
    ignores: list[Stmt] = field(default_factory=list)
    unsure: bool = False  # a statement not understood here (the engine will say what is wrong)

    def where(self, offset: int) -> tuple[int, int]:
        line = self.text.count("\n", 0, offset) + 1
        return line, offset - (self.text.rfind("\n", 0, offset) + 1) + 1

    def error(self, message: str, offset: int | None) -> GrammarError:
        if self.path is not None:
            message = f"{message} (in {self.path})"
        if offset is None:
            return GrammarError(message)
        line, column = self.where(offset)
        return GrammarError(message, line=line, column=column, source=self.text)


@dataclass
class Def:
    file: File
    stmt: Stmt
    kind: Literal["def", "override", "extend"]
    name: str
    name_at: int  # index of the name token
    params: tuple[str, ...]
    head_end: int  # index of the first token after the name and its parameters
    body: int  # index of the first token after ':'

    @property
    def is_term(self) -> bool:
        return is_term(self.name)

    def names(self, bare: bool = False) -> Iterator[str]:
        """The names its body refers to (template parameters and `-> alias`es left out); `bare`:
        only those not followed by template arguments."""
        toks = self.stmt.toks
        for i in range(self.body, len(toks)):
            token = toks[i]
            alias = self.stmt.punct(i - 1, "->")
            with_arguments = bare and self.stmt.punct(i + 1, "{")
            if token.kind == "name" and token.text not in self.params and not alias:
                yield from () if with_arguments else (token.text,)


@dataclass
class Import:
    stmt: Stmt
    relative: bool
    dotted: tuple[str, ...]
    aliases: dict[str, str]  # name in the imported file -> name here
    at: int  # offset of the path, for errors


def read(text: str, path: Path | None) -> File:
    file = File(path, text)
    for stmt in _statements(_tokens(text)):
        file.stmts.append(stmt)
        head = stmt.toks[0]
        if head.text == "%import":
            imported = _read_import(file, stmt)
            if imported is not None:
                file.imports.append(imported)
            file.unsure |= imported is None
        elif head.text == "%ignore":
            file.ignores.append(stmt)
        elif head.text == "%declare" or head.text.startswith("%llguidance"):
            pass
        else:
            definition = _read_def(file, stmt)
            if definition is not None:
                file.defs.append(definition)
            file.unsure |= definition is None
    return file


def _read_def(file: File, stmt: Stmt) -> Def | None:
    """`[%override|%extend] [!?]name[{params}][.priority]: body`, else None."""
    kind: Literal["def", "override", "extend"] = "def"
    i = 0
    if stmt.toks[0].text in ("%override", "%extend"):
        kind = "override" if stmt.toks[0].text == "%override" else "extend"
        i = 1
    while stmt.punct(i, "!", "?"):
        i += 1
    if not stmt.name(i):
        return None
    name_at, i = i, i + 1
    params: list[str] = []
    if stmt.punct(i, "{"):
        params, i = _names(stmt, i + 1)
        if not stmt.punct(i, "}"):
            return None
        i += 1
    head_end = i
    if stmt.punct(i, "."):
        i += 2  # a priority: kept, for the engine to refuse where it stands
    if not stmt.punct(i, ":"):
        return None
    name = stmt.toks[name_at].text
    return Def(file, stmt, kind, name, name_at, tuple(params), head_end, i + 1)


def _names(stmt: Stmt, i: int) -> tuple[list[str], int]:
    """The comma-separated names from token `i` on, and the index after them."""
    names: list[str] = []
    while stmt.name(i):
        names.append(stmt.toks[i].text)
        i += 1
        if stmt.punct(i, ","):
            i += 1
    return names, i


def _read_import(file: File, stmt: Stmt) -> Import | None:
    """`%import [.]a.b.NAME [-> ALIAS]` or `%import [.]a.b (N1, N2)`; None when it is neither
    (the engine reports it)."""
    i = 1
    relative = stmt.punct(i, ".")
    i += relative
    if not stmt.name(i):
        return None
    at = stmt.toks[i].start
    path = [stmt.toks[i].text]
    i += 1
    while stmt.punct(i, ".") and stmt.name(i + 1):
        path.append(stmt.toks[i + 1].text)
        i += 2
    if stmt.punct(i, "("):
        names, i = _names(stmt, i + 1)
        if not stmt.punct(i, ")") or i + 1 != len(stmt.toks) or not names:
            return None
        return Import(stmt, relative, tuple(path), {n: n for n in names}, at)
    alias = path[-1]
    if stmt.punct(i, "->") and stmt.name(i + 1):
        alias = stmt.toks[i + 1].text
        i += 2
    if i != len(stmt.toks):
        return None
    if len(path) < 2:
        raise file.error(f"nothing is imported from grammar {path[0]!r}", at)
    return Import(stmt, relative, tuple(path[:-1]), {path[-1]: alias}, at)
