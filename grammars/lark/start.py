"""The rule a sentence derives, and `%ignore`d text before its first token and after its last.

llguidance starts from `start`; lark from the rule it is told to (`start=`). When that is another
rule, or when the grammar ignores text, the translation gets a `start` rule of its own that derives
the one named (the user's own `start` renamed, `start_1`). With `%ignore`, lark skips ignored text
anywhere between, before and after the tokens; llguidance skips it only where another token may
follow (GRAMMARS.md, point 1), so the new `start` allows it at both ends.
"""

from __future__ import annotations

import difflib

from grammars.lark.imports import Entry, Item, Native, identity
from grammars.lark.mapped import MappedText
from grammars.lark.syntax import File
from grammars.lark.templates import Context, Expander, fresh

__all__ = ["start_problem", "write_start"]

# A terminal no text matches: put after `start` as optional, it keeps llguidance willing to skip
# %ignore'd text after the last token (it skips only where a token may follow).
_NEVER = r"/[^\s\S]/"
_ANY = r"/[\s\S]+/"


def start_problem(
    main: File, entries: dict[str, Entry], target: str, start: str | None
) -> str | None:
    """Why `target` cannot be the start rule (None when it can); `start`: the name the user gave
    (None: none, `target` is `start`)."""
    entry = entries.get(target)
    if isinstance(entry, Native) or (entry is not None and entry.defn.is_term):
        return f"{target!r} is a terminal; a grammar starts from a rule"
    if entry is not None and entry.defn.params:
        return f"{target!r} is a template; a grammar starts from a rule"
    if entry is not None:
        return None
    mine = [d.name for d in main.defs]
    rules = [
        name
        for name in dict.fromkeys([*mine, *entries])
        if isinstance(item := entries.get(name), Item)
        and not item.defn.is_term
        and not item.defn.params
    ]
    close = difflib.get_close_matches(target, rules, n=1) if start is not None else []
    if close:
        hint = f"; did you mean {close[0]!r}?"
    elif rules:
        shown = ", ".join(repr(r) for r in rules[:8]) + (", ..." if len(rules) > 8 else "")
        hint = f"; name the rule to start from with start= (the grammar's rules: {shown})"
    else:
        hint = " (the grammar defines no rule)"
    return ("no start rule" if start is None else f"no rule {target!r} to start from") + hint


def write_start(out: MappedText, expand: Expander, main: File, target: str) -> None:
    """A `start` rule that derives `target` (its name in the translation), with the text `main`
    ignores allowed before the first token and after the last."""
    if not main.ignores:
        out.put(f"start: {target}\n", None, 0)
        return
    # Ignored text before the first token: one piece of it, as a terminal of its own (llguidance
    # skips only after a token). Not its allow_initial_skip: that lets the skip win over a first
    # token the %ignore pattern matches too. The `& /[\s\S]+/` keeps the terminal apart from the
    # skip (the engine merges terminals of one regex). After the last token: _END matches nothing
    # but keeps a token possible, which is where llguidance skips.
    lead = fresh("_IGNORED_AT_START", expand.taken)
    end = fresh("_IGNORED_AT_END", expand.taken)
    out.put(f"start: {lead}? {target} {end}?\n{end}: {_NEVER}\n", None, 0)
    out.put(f"{lead}: (", None, 0)
    for k, stmt in enumerate(main.ignores):
        out.put(" | " if k else "", None, 0)
        expand.emit(out, main, stmt, 1, Context(identity))
    out.put(f") & {_ANY}\n", None, 0)
