"""Grammar: one llguidance grammar, used for every check and every mask.

Built from Lark text, a file, a shipped name, a JSON schema, a regex, or a guidance grammar object.
It is compiled and validated when built: a grammar the engine cannot take raises GrammarError with
line and column, never a silent fallback. The `lark` library is used only for parse trees.
"""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Any, Literal

import llguidance

import grammars as shipped
from backtrack.errors import GrammarError, TextError
from backtrack.prefix import Checker, PrefixCheck, as_text, byte_tokenizer, check

Kind = Literal["lark", "json_schema", "regex", "guidance"]

# llguidance reports positions as "at 3(14): ..." or "3(14): ..." (line, column; 1-based).
_POSITION = re.compile(r"^(?:at )?(\d+)\((\d+)\):\s*(.*)$")
# Directives only llguidance reads; they are removed before the text goes to the lark library.
_LLGUIDANCE_ONLY = re.compile(r"^\s*%llguidance\b.*$", re.MULTILINE)


def _grammar_error(message: str, source: str | None) -> GrammarError:
    """GrammarError from an llguidance message. Positions are kept only when `source` is the text
    they refer to (Lark text the user wrote); the reason on an `error: ` line is appended."""
    first, _, rest = message.strip().partition("\n")
    reason = next((ln.strip() for ln in rest.splitlines() if ln.strip().startswith("error: ")), "")
    found = _POSITION.match(first)
    what = found[3] if found else first or "invalid grammar"
    if reason:
        what = f"{what.rstrip(': ')}: {reason.removeprefix('error: ')}"
    if found and source is not None:
        return GrammarError(what, line=int(found[1]), column=int(found[2]), source=source)
    return GrammarError(what)


class Grammar:
    """A compiled grammar. Cheap to share: matchers are copied from one pristine matcher per
    tokenizer, built on first use."""

    def __init__(self, ll_grammar: str, *, kind: Kind, source: str, name: str | None = None):
        self.kind: Kind = kind
        self.source = source
        self.name = name
        self.ll_grammar = ll_grammar
        failed, messages = llguidance.LLMatcher.validate_grammar_with_warnings(
            ll_grammar, byte_tokenizer()
        )
        if failed:
            raise _grammar_error(messages[0], source if kind == "lark" else None)
        self.warnings: tuple[str, ...] = tuple(messages)
        self._lock = threading.Lock()
        # keyed by id(tokenizer); the tokenizer is kept alive beside its matcher (few exist)
        self._pristine: dict[int, tuple[llguidance.LLTokenizer, llguidance.LLMatcher]] = {}
        self._lark: Any = None

    def __repr__(self) -> str:
        label = self.name or self.source[:40]
        return f"Grammar({self.kind}: {label!r})"

    # -- constructors ---------------------------------------------------------------------------

    @classmethod
    def from_lark(cls, text: str, *, name: str | None = None) -> Grammar:
        """A grammar in llguidance's Lark dialect (see the README for how it differs from lark)."""
        if not isinstance(text, str):
            raise TypeError(f"Lark grammar text must be str, not {type(text).__name__}")
        if not text.strip():
            raise GrammarError("empty grammar")
        return cls(
            llguidance.LLMatcher.grammar_from_lark(text), kind="lark", source=text, name=name
        )

    @classmethod
    def from_file(cls, path: str | Path) -> Grammar:
        """A Lark grammar read from a file."""
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise GrammarError(f"cannot read grammar file {str(path)!r}: {exc.strerror}") from exc
        return cls.from_lark(text, name=path.stem)

    @classmethod
    def load(cls, name: str, **params: int) -> Grammar:
        """A shipped grammar by name (`backtrack grammars` lists them); some take parameters."""
        try:
            text = shipped.source(name, **params)
        except KeyError:
            known = ", ".join(shipped.names())
            raise GrammarError(f"no shipped grammar named {name!r} (known: {known})") from None
        except (TypeError, ValueError) as exc:
            raise GrammarError(f"grammar {name!r}: {exc}") from exc
        return cls.from_lark(text, name=name)

    @classmethod
    def from_json_schema(cls, schema: dict[str, Any] | str | type) -> Grammar:
        """A JSON schema, as a dict, a JSON string, or a pydantic model class."""
        if isinstance(schema, type) and hasattr(schema, "model_json_schema"):
            schema = schema.model_json_schema()
        if isinstance(schema, str):
            try:
                schema = json.loads(schema)
            except json.JSONDecodeError as exc:
                raise GrammarError(
                    f"JSON schema is not valid JSON: {exc.msg}", line=exc.lineno, column=exc.colno
                ) from exc
        if not isinstance(schema, dict):
            raise GrammarError(f"a JSON schema must be an object, not {type(schema).__name__}")
        text = json.dumps(schema, sort_keys=True)
        try:
            ll = llguidance.LLMatcher.grammar_from_json_schema(schema)
        except ValueError as exc:
            raise GrammarError(f"invalid JSON schema: {exc}") from exc
        return cls(ll, kind="json_schema", source=text)

    @classmethod
    def from_regex(cls, pattern: str) -> Grammar:
        """A regular expression (Rust `regex` syntax: no lookaround, no backreferences)."""
        if not isinstance(pattern, str):
            raise TypeError(f"a regex must be str, not {type(pattern).__name__}")
        return cls(llguidance.LLMatcher.grammar_from_regex(pattern), kind="regex", source=pattern)

    @classmethod
    def from_guidance(cls, node: Any) -> Grammar:
        """A guidance grammar object: `guidance.json(...)`, `select([...])`, `gen(regex=...)`..."""
        to_ll = getattr(node, "ll_grammar", None)
        if to_ll is None:
            raise GrammarError(f"not a guidance grammar object: {type(node).__name__}")
        ll_grammar = to_ll()
        return cls(ll_grammar, kind="guidance", source=ll_grammar)

    @classmethod
    def coerce(cls, spec: Any) -> Grammar:
        """What `guide()` accepts: a Grammar, a shipped name, Lark text, a JSON schema (dict or
        pydantic class), or a guidance grammar object."""
        if isinstance(spec, Grammar):
            return spec
        if isinstance(spec, str):
            return cls.load(spec) if spec in shipped.names() else cls.from_lark(spec)
        if isinstance(spec, dict) or (
            isinstance(spec, type) and hasattr(spec, "model_json_schema")
        ):
            return cls.from_json_schema(spec)
        if hasattr(spec, "ll_grammar"):
            return cls.from_guidance(spec)
        raise GrammarError(f"cannot make a grammar from {type(spec).__name__}")

    # -- matchers -------------------------------------------------------------------------------

    def matcher(self, tokenizer: llguidance.LLTokenizer | None = None) -> llguidance.LLMatcher:
        """A fresh matcher at the start of the grammar, over `tokenizer` (default: bytes)."""
        tokenizer = tokenizer or byte_tokenizer()
        with self._lock:
            entry = self._pristine.get(id(tokenizer))
            if entry is None:
                pristine = llguidance.LLMatcher(tokenizer, self.ll_grammar, log_level=0)
                if pristine.is_error():
                    raise _grammar_error(pristine.get_error(), self.source)
                entry = self._pristine[id(tokenizer)] = (tokenizer, pristine)
            pristine = entry[1]
        copy: llguidance.LLMatcher = pristine.deep_copy()
        return copy

    # -- checks ---------------------------------------------------------------------------------

    def check(self, text: str | bytes) -> PrefixCheck:
        """The longest prefix of `text` that the grammar can continue (bytes must be UTF-8)."""
        return check(self.matcher(), text)

    def checker(self) -> Checker:
        """An incremental check for text that arrives in pieces."""
        return Checker(self.matcher())

    def matches(self, text: str | bytes) -> bool:
        """`text` is a whole sentence of the grammar."""
        result = self.check(text)
        return result.valid and result.complete

    def parse(self, text: str | bytes) -> Any:
        """A lark parse tree of `text` (Lark grammars only). Raises TextError where the text stops
        matching, GrammarError where the lark library cannot read the grammar."""
        if self.kind != "lark":
            raise GrammarError(f"parse trees need a Lark grammar; this one is a {self.kind}")
        text = as_text(text)
        result = self.check(text)
        if not (result.valid and result.complete):
            if result.valid:
                raise TextError(
                    "text ends before the grammar is complete",
                    text=text,
                    char_offset=result.chars,
                    byte_offset=result.bytes,
                    expected=result.expected,
                )
            raise result.error()
        import lark

        try:
            return self._lark_parser().parse(text)
        except lark.exceptions.UnexpectedInput as exc:
            at = getattr(exc, "pos_in_stream", None) or 0
            raise TextError(
                "llguidance accepts this text but the lark library does not (the grammar means "
                "different things to the two engines)",
                text=text,
                char_offset=at,
                byte_offset=len(text[:at].encode("utf-8")),
            ) from exc

    def _lark_parser(self) -> Any:
        with self._lock:
            return self._build_lark_parser()

    def _build_lark_parser(self) -> Any:
        if self._lark is None:
            import lark

            try:
                self._lark = lark.Lark(
                    _LLGUIDANCE_ONLY.sub("", self.source), parser="earley", lexer="dynamic"
                )
            except lark.exceptions.LarkError as exc:
                raise GrammarError(f"the lark library cannot read this grammar: {exc}") from exc
        return self._lark
