"""Imports resolved as lark resolves them (load_grammar.GrammarBuilder), and `%override` /
`%extend` applied to what they bring in.

`Combiner.load` gives every name a grammar file defines or imports, as it reads in the combined
grammar, with its `Entry`: an `Item` (a definition, where it is written and how its names are
renamed there, with the `%extend`s that add to it) or a `Native` (a `common.NAME` llguidance knows
itself, left to it). `%import .other.rule` and `%import .other (a, B)` are read relative to the
importing file, `%import lib.NAME` from lark's own grammar folder (`common`, `unicode`, ...); the
imported names keep the names they are imported as, what they depend on is renamed with the
import's prefix (`other__dep`, `OTHER__DEP` for terminals), and only what they need is kept (lark's
`_remove_unused`). An imported file's `%ignore`s are not imported.
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import llguidance

from grammars.lark.syntax import Def, File, Import, is_term, read

__all__ = ["Combiner", "Entry", "Item", "Native", "identity"]

# An import chain deeper than this is taken for a loop.
_MAX_IMPORT_DEPTH = 50


def identity(name: str) -> str:
    return name


def _mangle(
    prefix: str, aliases: dict[str, str], base: Callable[[str], str]
) -> Callable[[str], str]:
    """Lark's renaming of an imported file's names (load_grammar._get_mangle), spelled so that the
    result reads as the same kind of name (a terminal's prefix in capitals)."""

    def mangle(name: str) -> str:
        if name in aliases:
            name = aliases[name]
        else:
            spelled = prefix.upper() if is_term(name) else prefix.lower()
            name = f"_{spelled}__{name[1:]}" if name.startswith("_") else f"{spelled}__{name}"
        return base(name)

    return mangle


@dataclass
class Item:
    """A definition of the combined grammar: where it is written, and how the names in it read in
    the combined grammar."""

    defn: Def
    rename: Callable[[str], str]
    extends: list[tuple[Def, Callable[[str], str]]] = field(default_factory=list)

    def names(self) -> Iterator[str]:
        for name in self.defn.names():
            yield self.rename(name)
        for extension, rename in self.extends:
            yield from (rename(n) for n in extension.names())


@dataclass
class Native:
    """A terminal llguidance knows itself (`%import common.NAME`)."""

    common: str  # its name in common.lark
    imported: Import
    file: File


Entry = Item | Native


@functools.cache
def _llguidance_knows(name: str) -> bool:
    """llguidance has `common.NAME` built in (it knows most of lark's common.lark)."""
    return not llguidance.LLMatcher.validate_grammar(f"start: X\n%import common.{name} -> X")


@functools.cache
def _lark_grammars() -> Path:
    import lark

    return Path(lark.__file__).parent / "grammars"


class Combiner:
    def __init__(self) -> None:
        self.files: dict[Path, File] = {}

    def common(self) -> set[str]:
        """The names lark's common.lark defines."""
        return {d.name for d in self.read_file(_lark_grammars() / "common.lark").defs}

    def read_file(self, path: Path) -> File:
        key = path.resolve()
        if key not in self.files:
            self.files[key] = read(path.read_text(encoding="utf-8"), path)
        return self.files[key]

    def load(
        self, file: File, rename: Callable[[str], str], chain: tuple[Path, ...], top: bool = False
    ) -> dict[str, Entry]:
        """Everything `file` defines and imports, by its name in the combined grammar (as lark's
        GrammarBuilder.load_grammar: imports first, then the file's own definitions)."""
        entries: dict[str, Entry] = {}
        groups: dict[tuple[bool, tuple[str, ...]], tuple[Import, dict[str, str]]] = {}
        for imported in file.imports:
            key = (imported.relative, imported.dotted)
            groups.setdefault(key, (imported, {}))[1].update(imported.aliases)
        for (relative, dotted), (first, aliases) in groups.items():
            found = self.do_import(file, first, relative, dotted, aliases, rename, chain)
            for name, entry in found.items():
                if name in entries:
                    raise file.error(f"cannot import {name!r}: it is already defined", first.at)
                entries[name] = entry
        for definition in file.defs:
            _define(entries, definition, rename, top)
        return entries

    def do_import(
        self,
        file: File,
        first: Import,
        relative: bool,
        dotted: tuple[str, ...],
        aliases: dict[str, str],
        base: Callable[[str], str],
        chain: tuple[Path, ...],
    ) -> dict[str, Entry]:
        mangle = _mangle("__".join(dotted), aliases, base)
        entries: dict[str, Entry] = {}
        wanted = dict(aliases)
        if not relative and dotted == ("common",):
            for name in list(wanted):
                # what neither knows is the engine's to refuse ("Unknown common regex")
                if _llguidance_knows(name) or name not in self.common():
                    entries[mangle(name)] = Native(name, first, file)
                    del wanted[name]
        if not wanted:
            return entries
        path = _locate(file, first, relative, dotted, chain)
        try:
            imported = self.read_file(path)
        except (OSError, UnicodeDecodeError) as exc:
            raise file.error(f"cannot read {path}: {exc}", first.at) from exc
        found = self.load(imported, mangle, (*chain, path.resolve()))
        roots = []
        for name in wanted:
            if mangle(name) not in found:
                known = [d.name for d in imported.defs] + [
                    n for i in imported.imports for n in i.aliases.values()
                ]
                close = difflib.get_close_matches(name, known, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise file.error(f"{path} defines no {name!r}{hint}", first.at)
            roots.append(mangle(name))
        entries.update((name, found[name]) for name in _needed(found, roots))
        return entries


def _locate(
    file: File, first: Import, relative: bool, dotted: tuple[str, ...], chain: tuple[Path, ...]
) -> Path:
    """The file an `%import` of `dotted` reads, where lark looks for it: beside the grammar's file
    when the import is relative, then among lark's own grammars."""
    where = "/".join(dotted) + ".lark"
    places: list[Path] = []
    if relative:
        if file.path is None:
            raise file.error(
                f"a relative %import ('.{'.'.join(dotted)}') needs the grammar's file: "
                "read it with Grammar.from_file",
                first.at,
            )
        places.append(file.path.parent / where)
    places.append(_lark_grammars() / where)  # lark looks there last, for both kinds
    path = next((p for p in places if p.is_file()), None)
    if path is None:
        looked = ", ".join(str(p) for p in places)
        raise file.error(f"cannot import from {where}: no such file ({looked})", first.at)
    if path.resolve() in chain or len(chain) > _MAX_IMPORT_DEPTH:
        raise file.error(f"{where} is imported in a loop (it imports itself)", first.at)
    return path


def _needed(found: dict[str, Entry], names: list[str]) -> list[str]:
    """`names` and what they refer to in `found`, transitively (lark's _remove_unused)."""
    kept = dict.fromkeys(names)
    queue = list(names)
    while queue:
        entry = found[queue.pop()]
        for ref in entry.names() if isinstance(entry, Item) else ():
            if ref in found and ref not in kept:
                kept[ref] = None
                queue.append(ref)
    return list(kept)


def _define(
    entries: dict[str, Entry], definition: Def, rename: Callable[[str], str], top: bool
) -> None:
    """`definition` added to `entries`: a new name, or an `%override` (it replaces what was
    imported) or `%extend` (its alternatives are added to what was imported). Where lark would
    refuse the grammar, the file's error; `top` (the grammar itself): the engine's, where it
    stands."""
    file = definition.file
    name = rename(definition.name)
    at = definition.stmt.toks[definition.name_at].start
    current = entries.get(name)
    if definition.kind == "def":
        if current is None:
            entries[name] = Item(definition, rename)
        elif isinstance(current, Native) or current.defn.file is not file:
            raise file.error(f"{name!r} is defined here and imported too", at)
        elif not top:
            raise file.error(f"{name!r} is defined twice", at)
        # else: twice in the grammar itself, which the engine reports where it stands
    elif top and (current is None or _origin(current) is file):
        pass  # not of an imported one: the engine refuses it, where it stands
    elif current is None:
        raise file.error(f"cannot {definition.kind} {name!r}: it is not defined", at)
    elif definition.kind == "override":
        entries[name] = Item(definition, rename)
    elif isinstance(current, Native):
        raise file.error(f"cannot extend {name!r}: llguidance defines it", at)
    else:
        current.extends.append((definition, rename))


def _origin(entry: Entry) -> File:
    return entry.defn.file if isinstance(entry, Item) else entry.file
