"""Parse trees from the lark library, which reads a grammar as written: its own imports, templates
and start rule. llguidance decides what is valid; lark only builds the tree of a valid text.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from grammars.errors import GrammarError, TextError

__all__ = ["lark_parser", "parse_tree", "without_llguidance_only"]

# Directives only llguidance reads; they are removed before the text goes to the lark library.
_LLGUIDANCE_ONLY = re.compile(r"^\s*%llguidance\b.*$", re.MULTILINE)


def without_llguidance_only(source: str) -> str:
    """`source` for the lark library: without the directives only llguidance reads."""
    return _LLGUIDANCE_ONLY.sub("", source)


def lark_parser(source: str, *, start: str, path: Path | None) -> Any:
    """An Earley parser of the lark library for the Lark grammar `source` (read from `path`, when
    it was). Raises GrammarError where the lark library cannot read the grammar."""
    import lark

    try:
        return lark.Lark(
            without_llguidance_only(source),
            parser="earley",
            lexer="dynamic",
            start=start,
            source_path=None if path is None else str(path),
        )
    except lark.exceptions.LarkError as exc:
        raise GrammarError(f"the lark library cannot read this grammar: {exc}") from exc


def parse_tree(parser: Any, text: str) -> Any:
    """The tree `parser` builds of `text`, a whole sentence under llguidance. Raises TextError
    where the lark library disagrees."""
    import lark

    try:
        return parser.parse(text)
    except lark.exceptions.UnexpectedInput as exc:
        at = getattr(exc, "pos_in_stream", None) or 0
        raise TextError(
            "llguidance accepts this text but the lark library does not (the grammar means "
            "different things to the two engines)",
            text=text,
            char_offset=at,
            byte_offset=len(text[:at].encode("utf-8")),
        ) from exc
