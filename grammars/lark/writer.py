"""The combined grammar written as one text: the grammar itself in place, then what it imports, then
the templates' instances.

The grammar's own text keeps its lines and columns: a resolved `%import`, a template (written as
its instances) and an `%extend` (written with what it extends) are blanked to their line breaks, an
`%override` directive to spaces. Imported definitions follow with their names as the combined
grammar reads them; an `%import common.NAME` llguidance knows itself is left to it.
"""

from __future__ import annotations

from grammars.lark.imports import Entry, Item, Native, identity
from grammars.lark.lexer import Stmt
from grammars.lark.mapped import MappedText
from grammars.lark.syntax import Def, File
from grammars.lark.templates import Context, Expander

__all__ = ["write"]


def write(main: File, entries: dict[str, Entry], expand: Expander) -> MappedText:
    """The main text in place (imports that were resolved, templates and %extends blanked),
    then what it imports, then the templates' instances."""
    out = MappedText()
    pos = 0
    defs = {id(d.stmt): d for d in main.defs}
    resolved = {
        id(i.stmt)
        for i in main.imports
        if i.relative
        or i.dotted != ("common",)
        or not all(isinstance(entries.get(a), Native) for a in i.aliases.values())
    }
    for stmt in main.stmts:
        out.copy(main, pos, stmt.start)
        pos = stmt.end
        if id(stmt) in resolved or not _in_place(out, expand, main, stmt, defs, entries):
            out.put("\n" * main.text.count("\n", stmt.start, stmt.end), main, stmt.start)
    out.copy(main, pos, len(main.text))
    out.put("\n", None, 0)
    for name, entry in entries.items():
        if isinstance(entry, Native):
            if entry.file is not main or id(entry.imported.stmt) in resolved:
                line = f"%import common.{entry.common} -> {expand.final(name)}\n"
                out.put(line, entry.file, entry.imported.at)
        elif entry.defn.file is not main and (not entry.defn.params or name in expand.bare):
            _definition(out, expand, entry)
            out.put("\n", None, 0)
    while expand.pending:
        name, template, subst = expand.pending.pop(0)
        _definition(out, expand, template, head=name, subst=subst)
        out.put("\n", None, 0)
    return out


def _in_place(
    out: MappedText,
    expand: Expander,
    main: File,
    stmt: Stmt,
    defs: dict[int, Def],
    entries: dict[str, Entry],
) -> bool:
    """Write statement `stmt` of the main text where it stands; False when it is to be blanked
    instead (a template written as its instances, an %extend written with what it extends, an
    overridden definition)."""
    definition = defs.get(id(stmt))
    entry = entries.get(definition.name) if definition is not None else None
    applied = isinstance(entry, Item) and (
        entry.defn is definition or any(d is definition for d, _ in entry.extends)
    )
    if definition is None:
        if stmt.toks[0].text == "%ignore":
            expand.emit(out, main, stmt, 0, Context(identity))
        else:
            out.copy(main, stmt.start, stmt.end)
        return True
    if definition.params:  # written as its instances, unless used without arguments
        if definition.name not in expand.bare:
            return False
        out.copy(main, stmt.start, stmt.end)
        return True
    if applied and definition.kind == "extend":
        return False  # written with what it extends
    if applied and isinstance(entry, Item):
        _definition(out, expand, entry)
        return True
    if isinstance(entry, Item) and entry.defn.kind == "override":
        return False  # overridden
    # defined twice, or an %override or %extend the engine refuses where it stands
    expand.emit(out, main, stmt, 0, Context(identity))
    return True


def _definition(
    out: MappedText,
    expand: Expander,
    item: Item,
    head: str | None = None,
    subst: dict[str, str] | None = None,
) -> None:
    """`item` with what extends it; `head`: an instance of the template `item` by that name, its
    parameters replaced by `subst`."""
    defn = item.defn
    file, toks = defn.file, defn.stmt.toks
    ctx = Context(item.rename, subst or {})
    if head is not None:  # a template's instance: its own name, no parameters
        out.put(head, file, toks[defn.name_at].start)
        expand.emit(out, file, defn.stmt, defn.head_end, ctx)
    elif defn.params:  # a template used without arguments: as written, for the engine
        name = toks[defn.name_at]
        out.copy(file, toks[0].start, name.start)
        out.put(expand.final(item.rename(name.text)), file, name.start)
        out.copy(file, name.end, toks[-1].end)
    elif defn.kind == "def":
        expand.emit(out, file, defn.stmt, 0, ctx)
    else:  # %override: the directive blanked (same length, so columns stay)
        out.put(" " * len(toks[0].text), file, toks[0].start)
        out.copy(file, toks[0].end, toks[1].start)
        expand.emit(out, file, defn.stmt, 1, ctx)
    for extension, rename in item.extends:
        if extension.body < len(extension.stmt.toks):
            at = extension.stmt.toks[extension.body].start
            out.put("\n    | ", extension.file, at)
            expand.emit(
                out, extension.file, extension.stmt, extension.body, Context(rename, ctx.subst)
            )
