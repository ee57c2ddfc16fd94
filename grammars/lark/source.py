"""Lark grammars as people write them, made into the one self-contained text llguidance reads.

The lark library reads a grammar together with the files it imports, expands templates, and starts
from any rule it is told to. llguidance reads one text, knows `%import common.NAME` for some names
only, has no templates, and starts from `start`. `translate` bridges the two:

- imports are resolved as lark resolves them, and `%override` / `%extend` applied
  (`lark.imports`; a file read into statements by `lark.syntax`);
- templates are expanded, one rule per distinct use (`lark.templates`);
- the result is written as one text, the grammar's own lines where they were (`lark.writer`),
  each piece marked with the file and offset it came from (`lark.mapped`);
- `start=` names the rule a sentence derives, and `%ignore`d text may lead and trail the sentence
  as lark allows (`lark.start`).

The lark library is given the grammar as written (with its path and start rule) and reads it its own
way. Every piece of the translated text knows the file and offset it came from, so an error the
engine reports at a line and column of the translation is reported where the user can find it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from grammars.errors import GrammarError
from grammars.lark.imports import Combiner, identity
from grammars.lark.mapped import MappedText
from grammars.lark.start import start_problem, write_start
from grammars.lark.syntax import File, read
from grammars.lark.templates import Expander, fresh
from grammars.lark.writer import write

__all__ = ["LarkSource", "translate"]

# A grammar with no directive and no brace (so no import, %ignore or template) and with a `start`
# rule is its own translation: reading it would give the same text, in seconds at tens of
# thousands of rules.
_MAY_NEED_READING = re.compile(r"[%{]")
_START_RULE = re.compile(r"^[ \t]*[?!]?start[ \t]*(?:\.[ \t]*[+-]?[0-9]+[ \t]*)?:", re.MULTILINE)


@dataclass(frozen=True)
class LarkSource:
    """A Lark grammar translated for llguidance. `text` is what the engine reads; `start` the rule
    lark starts from; `error` moves an error about `text` to the file, line and column it is
    about."""

    text: str
    start: str
    main: File
    out: MappedText
    renamed_start: str | None

    def error(self, err: GrammarError) -> GrammarError:
        message = self.readable(err.message)
        if err.line is None or err.column is None:
            return self.main.error(message, None)
        lines = self.text.split("\n")
        if not 1 <= err.line <= len(lines):
            return self.main.error(message, None)
        offset = sum(len(line) + 1 for line in lines[: err.line - 1])
        offset += min(err.column - 1, len(lines[err.line - 1]))
        file, at = self.out.locate(offset)
        return (file or self.main).error(message, at if file is not None else None)

    def readable(self, message: str) -> str:
        """`message` with the name given to the user's own `start` rule put back."""
        if message.startswith("params not supported"):
            message += " (a template is expanded where it is used with arguments, name{...})"
        if self.renamed_start is None:
            return message
        return re.sub(rf"\b{re.escape(self.renamed_start)}\b", "start", message)


def translate(text: str, *, path: Path | None = None, start: str | None = None) -> LarkSource:
    """`text` (read from `path`, when it was) as one text llguidance reads alike, starting from
    `start` (default: the rule named `start`). Raises GrammarError with the file, line and column
    of what is wrong (a missing import, an unknown start rule, a wrong template use)."""
    if start is None and not _MAY_NEED_READING.search(text) and _START_RULE.search(text):
        main, out = File(path, text), MappedText()
        out.copy(main, 0, len(text))
        out.put("\n", None, 0)
        return LarkSource(out.text(), "start", main, out, None)
    main = read(text, path)
    chain = (path.resolve(),) if path is not None else ()
    entries = Combiner().load(main, identity, chain, top=True)
    target = start or "start"
    problem = start_problem(main, entries, target, start)
    if problem is not None and not main.unsure:
        raise main.error(problem, None)
    wrap = (target != "start" or bool(main.ignores)) and problem is None
    taken = set(entries) | {d.name for d in main.defs}
    renamed = fresh("start", taken) if wrap and "start" in entries else None

    def final(name: str) -> str:
        return renamed if renamed is not None and name == "start" else name

    expand = Expander(main, entries, final, taken)
    out = write(main, entries, expand)
    if wrap:
        write_start(out, expand, main, final(target))
    return LarkSource(out.text(), target, main, out, renamed)
