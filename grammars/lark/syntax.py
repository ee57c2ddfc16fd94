"""Lark grammar text read as statements: definitions, imports and ignores, each with its tokens.

`read` splits a file into logical lines of tokens (`lark.lexer`) and sorts them: `Def` (a rule,
terminal or template, or an `%override` / `%extend` of one), `Import`, `%ignore`. A statement not
understood here is kept as it is and marks the file `unsure`: the engine reports what is wrong
with it, at its own line and column. Every token keeps its offsets in the file's text.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from grammars.errors import GrammarError
from grammars.lark.lexer import Stmt, position, statements, tokens

__all__ = ["Def", "File", "Import", "is_term", "read"]


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

    def error(self, message: str, offset: int | None) -> GrammarError:
        if self.path is not None:
            message = f"{message} (in {self.path})"
        if offset is None:
            return GrammarError(message)
        line, column = position(self.text, offset)
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
    for stmt in statements(tokens(text)):
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
