"""How a Lark grammar's comments open: the text its ignored terminals (`%ignore`) and the
terminals it names comments (`COMMENT`, `_LINE_COMMENT`, lark's `CPP_COMMENT`) begin with, blanks
aside. A grammar never needs a comment: a local model that opens one writes nothing the grammar
reads (`//proto3`, `//user`, ... where a proto file goes), so it is refused the openers.
"""

from __future__ import annotations

import re
import threading
import weakref
from typing import TYPE_CHECKING, Any

from grammars.lark.tree import without_llguidance_only

try:  # Python >= 3.11 (importing sre_parse there warns); lark reads regexes with it too
    from re import _parser as sre  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - Python 3.10
    import sre_parse as sre

if TYPE_CHECKING:
    from grammars.grammar import Grammar

__all__ = ["comment_openers"]

_found: weakref.WeakKeyDictionary[Grammar, tuple[str, ...]] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def comment_openers(grammar: Grammar) -> tuple[str, ...]:
    """The texts `grammar`'s comments open with (`//`, `/*`, `#`, `;`, `--`), shortest first;
    none for a grammar of another kind than Lark, or one the lark library cannot read (it stays
    usable). Read once per grammar."""
    with _lock:
        if grammar not in _found:
            _found[grammar] = _read(grammar) if grammar.kind == "lark" else ()
        return _found[grammar]


def _read(grammar: Grammar) -> tuple[str, ...]:
    from lark.exceptions import LarkError
    from lark.load_grammar import load_grammar

    path = str(grammar.path) if grammar.path else "<string>"
    try:
        loaded, _ = load_grammar(  # type: ignore[no-untyped-call]
            without_llguidance_only(grammar.source), path, (), False
        )
        terminals, _, ignored = loaded.compile([grammar.start], set())
    except (LarkError, ValueError, RecursionError):
        return ()
    found = set()
    for terminal in terminals:
        if terminal.name in ignored or "COMMENT" in terminal.name.upper():
            found.update(_openers(terminal.pattern))
    return tuple(sorted(found, key=lambda opener: (len(opener), opener)))


def _openers(pattern: Any) -> set[str]:
    """The non-blank texts a terminal's matches begin with, where its pattern says (a literal, a
    regex's leading characters or a small set of them); none where it does not."""
    if pattern.type == "str":
        return {pattern.value} if pattern.value.strip() else set()
    try:
        parsed = sre.parse(pattern.to_regexp())
    except (re.error, ValueError, OverflowError):
        return set()
    return {opener for opener in _leading(list(parsed)) if opener.strip()}


def _leading(items: list[tuple[Any, Any]]) -> list[str]:
    """The literal starts of a parsed regex: each of its first characters while they are fixed
    (one alternative a group or a small set of characters, at the first place only)."""
    starts = [""]
    for op, arg in items:
        if op is sre.LITERAL:
            starts = [start + chr(arg) for start in starts]
        elif starts == [""] and op is sre.IN and _small_set(arg):
            starts = [chr(code) for _, code in arg]
        elif starts == [""] and op is sre.BRANCH:
            return [start for branch in arg[1] for start in _leading(list(branch))]
        elif op is sre.SUBPATTERN:
            return [start + more for start in starts for more in _leading(list(arg[3]))]
        else:
            break
    return starts


def _small_set(members: list[tuple[Any, Any]]) -> bool:
    return len(members) <= _MOST_IN_SET and all(op is sre.LITERAL for op, _ in members)


_MOST_IN_SET = 4  # characters a set may hold and still be openers (`[#;]`), not a class of text
