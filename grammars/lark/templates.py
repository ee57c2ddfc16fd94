"""Templates expanded: each distinct use of a template with its arguments becomes a rule of its own.

lark reads `sep{item, delim}: item (delim item)*` and `sep{NUMBER, ","}`; llguidance has no
templates. A use is written as the name of its instance (`sep_1`), and the instance as the
template's body with the arguments in place of the parameters; arguments are written first (a
template used in an argument is an instance of its own). A template used without arguments is left
as it is, for the engine to refuse where it stands.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from grammars.lark.imports import Entry, Item, identity
from grammars.lark.lexer import Stmt
from grammars.lark.mapped import MappedText
from grammars.lark.syntax import File

__all__ = ["Context", "Expander", "fresh"]

# A grammar whose templates keep making new instances (`a{x}: a{b{x}}`) is refused past this many.
_MAX_INSTANCES = 10_000


def fresh(base: str, taken: set[str]) -> str:
    """`base_N` with the first N that makes a name not in `taken` (now taken)."""
    n = 1
    while f"{base}_{n}" in taken:
        n += 1
    taken.add(f"{base}_{n}")
    return f"{base}_{n}"


@dataclass
class Context:
    """How the names of one definition read in the translation."""

    rename: Callable[[str], str]
    subst: dict[str, str] = field(default_factory=dict)  # template parameters -> arguments

    def name(self, name: str, final: Callable[[str], str]) -> str:
        return self.subst[name] if name in self.subst else final(self.rename(name))


class Expander:
    """Writes the tokens of definitions with each name as the translation reads it, and each use
    of a template with arguments (`sep{NUMBER, ","}`) as the name of its instance: one rule per
    distinct template and arguments, waiting in `pending` until it is written. `taken` holds every
    name of the translation, so that the instances' names are new."""

    def __init__(
        self,
        main: File,
        entries: dict[str, Entry],
        final: Callable[[str], str],
        taken: set[str],
    ) -> None:
        self.entries = entries
        self.final = final
        self.taken = taken
        self.instances: dict[tuple[str, tuple[str, ...]], str] = {}
        self.pending: list[tuple[str, Item, dict[str, str]]] = []
        # templates used without arguments: left as they are, for the engine to refuse
        templates = any(isinstance(e, Item) and e.defn.params for e in entries.values())
        self.bare = {
            name
            for item in [*entries.values(), *(Item(d, identity) for d in main.defs)]
            if templates and isinstance(item, Item)
            for name in map(item.rename, item.defn.names(bare=True))
            if self.template(name) is not None
        }

    def template(self, name: str) -> Item | None:
        entry = self.entries.get(name)
        return entry if isinstance(entry, Item) and entry.defn.params else None

    def emit(self, out: MappedText, file: File, stmt: Stmt, first: int, ctx: Context) -> None:
        """Tokens `first`.. of `stmt` with the text between them, names renamed, templates used
        replaced by their instances."""
        toks = stmt.toks
        if first >= len(toks):
            return
        pos = toks[first].start
        k = first
        while k < len(toks):
            token = toks[k]
            if token.kind != "name" or stmt.punct(k - 1, "->"):
                k += 1
                continue
            new = ctx.name(token.text, self.final)
            template = self.template(new) if stmt.punct(k + 1, "{") else None
            if template is not None:
                end, args = self.arguments(file, stmt, k + 1, ctx)
                out.copy(file, pos, token.start)
                out.put(self.instance(new, template, args, file, token.start), file, token.start)
                pos, k = toks[end - 1].end, end
                continue
            if new != token.text:
                out.copy(file, pos, token.start)
                out.put(new, file, token.start)
                pos = token.end
            k += 1
        out.copy(file, pos, toks[-1].end)

    def arguments(
        self, file: File, stmt: Stmt, brace: int, ctx: Context
    ) -> tuple[int, tuple[str, ...]]:
        """The arguments of a template use whose '{' is token `brace`, written as the translation
        reads them, and the index after its '}'."""
        toks = stmt.toks
        depth, k, begin = 0, brace, brace + 1
        spans: list[tuple[int, int]] = []
        while k < len(toks):
            if stmt.punct(k, "{"):
                depth += 1
            elif stmt.punct(k, "}"):
                depth -= 1
                if depth == 0:
                    spans.append((begin, k))
                    break
            elif stmt.punct(k, ",") and depth == 1:
                spans.append((begin, k))
                begin = k + 1
            k += 1
        else:
            raise file.error("unclosed template arguments", toks[brace].start)
        args = []
        for a, b in spans:
            if a == b:
                raise file.error("empty template argument", toks[min(a, k)].start)
            scratch = MappedText()
            self.emit(scratch, file, Stmt(toks[a:b]), 0, ctx)
            args.append(scratch.text().strip())
        return k + 1, tuple(args)

    def instance(
        self, name: str, template: Item, args: tuple[str, ...], file: File, at: int
    ) -> str:
        params = template.defn.params
        if len(args) != len(params):
            raise file.error(
                f"template {name!r} takes {len(params)} argument{'s' * (len(params) != 1)}, "
                f"got {len(args)}",
                at,
            )
        key = (name, args)
        if key not in self.instances:
            if len(self.instances) >= _MAX_INSTANCES:
                raise file.error(
                    f"templates make more than {_MAX_INSTANCES:,} rules (one that uses itself "
                    "with a new argument each time never stops)",
                    at,
                )
            self.instances[key] = fresh(name, self.taken)
            self.pending.append(
                (self.instances[key], template, dict(zip(params, args, strict=True)))
            )
        return self.instances[key]
