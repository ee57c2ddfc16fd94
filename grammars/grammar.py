"""Grammar: one llguidance grammar, used for every check and every mask.

Built from Lark text, a file, a shipped name, a JSON schema, a regex, or a guidance grammar object.
It is measured against its GrammarLimits, then compiled, when built: a grammar the engine cannot
take, or one that no text completes, raises GrammarError (with line and column where there is one),
never a crash or a silent fallback. The `lark` library is used only for parse trees.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, TypeAlias

import llguidance

from grammars import shipped
from grammars.checker import Checker, PrefixCheck, as_text, check
from grammars.ecma import ascii_classes, ascii_schema_patterns
from grammars.engine import Matchers, byte_tokenizer
from grammars.errors import GrammarError, TextError
from grammars.json_schema.build import Validator, loosen
from grammars.json_schema.checks import is_pydantic_model, read_schema
from grammars.json_schema.keywords import check_schema_words
from grammars.json_schema.relax import Relaxation, one_of_places, relax
from grammars.lark.checks import check_lark
from grammars.lark.source import translate
from grammars.lark.tree import lark_parser, parse_tree
from grammars.limits import GrammarLimits, check_size

__all__ = ["Grammar", "GrammarLike", "GuidanceGrammar", "SchemaParts"]

Kind = Literal["lark", "json_schema", "regex", "guidance"]

logger = logging.getLogger(__name__)

# A string given where a grammar is expected that reads as a name, not as Lark text.
_NAME_LIKE = re.compile(r"\s*[A-Za-z_][\w.-]*\s*")


class GuidanceGrammar(Protocol):
    """A guidance grammar object (`guidance.json(...)`, `select([...])`, `gen(regex=...)`)."""

    def ll_grammar(self) -> str: ...


GrammarLike: TypeAlias = "Grammar | str | dict[str, Any] | type[Any] | GuidanceGrammar"
"""What `guide()`, `wrap()` and `Grammar.coerce` take as a grammar: a Grammar, a shipped name, Lark
text, a JSON schema (a dict, or a pydantic model class) or a guidance grammar object."""


@dataclass(frozen=True)
class SchemaParts:
    """What a JSON schema's grammar carries besides its own check (`Grammar.schema`)."""

    # The schema's keywords the grammar does not enforce (grammars/json_schema/relax.py).
    relaxed: tuple[Relaxation, ...] = ()
    # Decides a whole document where the grammar is not the whole test: a relaxed keyword it
    # checks, or keys read in any order (None: the grammar's check is the whole test).
    validator: Validator | None = None
    # Where drafts are read in any key order (json_schema/build.py): the schema's own grammar
    # (None where this one is), and the relaxed schema it came from (json_schema/order.py).
    strict: Grammar | None = None
    strict_schema: dict[str, Any] | None = field(default=None, compare=False)


def _schema_parts(schema: dict[str, Any], notes: tuple[Relaxation, ...]) -> SchemaParts:
    """The parts of a grammar in the schema's own order that leaves out what `notes` say: a
    superset grammar (a keyword it does not enforce) needs the validator's final word."""
    return SchemaParts(notes, Validator(schema) if any(n.checked for n in notes) else None)


class Grammar:
    """A compiled grammar. Cheap to share: matchers are copied from one pristine matcher per
    tokenizer (the one over bytes is built with the grammar, others on first use).

    `limits` bound what the grammar may cost (GrammarLimits); checks run under a work budget of
    `limits.row_items` Earley items per text position beyond the grammar's own size. `schema`
    holds a JSON schema's parts besides the grammar (None for every other kind), `model` the
    pydantic model class a JSON schema's grammar was made from (None: none)."""

    # Lark grammars: the file relative %imports are read from, and the rule a sentence derives.
    path: Path | None = None
    start: str = "start"
    model: type[Any] | None = None

    def __init__(
        self,
        ll_grammar: str,
        *,
        kind: Kind,
        source: str,
        name: str | None = None,
        limits: GrammarLimits | None = None,
        warnings: tuple[str, ...] = (),
        schema: SchemaParts | None = None,
    ):
        self.kind: Kind = kind
        self.source = source
        self.name = name
        self.ll_grammar = ll_grammar
        self.limits = limits or GrammarLimits()
        self._matchers = Matchers(
            ll_grammar,
            llguidance.LLParserLimits(max_items_in_row=self.limits.row_items + len(ll_grammar)),
            source if kind == "lark" else None,
        )
        self._lark_lock = threading.Lock()
        self._lark: Any = None
        self.schema = schema
        # Compiled now, so that a grammar the engine refuses fails here, not at its first check.
        pristine = self._matchers.pristine(byte_tokenizer())
        self.warnings: tuple[str, ...] = (*pristine.get_grammar_warnings(), *warnings)

    def __repr__(self) -> str:
        label = self.name or self.source[:40]
        return f"Grammar({self.kind}: {label!r})"

    # -- constructors ---------------------------------------------------------------------------

    @classmethod
    def from_lark(
        cls,
        text: str,
        *,
        name: str | None = None,
        limits: GrammarLimits | None = None,
        start: str | None = None,
    ) -> Grammar:
        """A grammar in Lark syntax (llguidance's dialect; see the README for how it differs from
        lark's). `start` names the rule a sentence derives (default: `start`). Templates and
        `%import common.X` / `unicode.X` are taken as lark takes them; a relative `%import` needs
        the grammar's file (`from_file`)."""
        return cls._from_lark_source(text, path=None, name=name, limits=limits, start=start)

    @classmethod
    def from_file(
        cls, path: str | Path, *, limits: GrammarLimits | None = None, start: str | None = None
    ) -> Grammar:
        """A Lark grammar read from a file; its relative `%import` lines (`%import .other.rule`)
        are read from the file's folder, as lark reads them. Errors name the file, line and
        column."""
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise GrammarError(f"cannot read grammar file {str(path)!r}: {exc.strerror}") from exc
        except UnicodeDecodeError as exc:
            raise GrammarError(f"grammar file {str(path)!r} is not UTF-8: {exc.reason}") from exc
        return cls._from_lark_source(text, path=path, name=path.stem, limits=limits, start=start)

    @classmethod
    def _from_lark_source(
        cls,
        text: str,
        *,
        path: Path | None,
        name: str | None,
        limits: GrammarLimits | None,
        start: str | None,
    ) -> Grammar:
        if not isinstance(text, str):
            raise TypeError(f"Lark grammar text must be str, not {type(text).__name__}")
        if start is not None and not isinstance(start, str):
            raise TypeError(f"start must be a rule name (str), not {type(start).__name__}")
        if not text.strip():
            raise GrammarError("empty grammar")
        limits = limits or GrammarLimits()
        check_size("the grammar", len(text.encode("utf-8", "surrogatepass")), limits)
        source = translate(text, path=path, start=start)
        size = len(source.text.encode("utf-8", "surrogatepass"))
        check_size("the grammar with what it imports", size, limits)
        try:
            warnings = tuple(map(source.readable, check_lark(source.text, limits)))
            grammar = cls(
                llguidance.LLMatcher.grammar_from_lark(source.text),
                kind="lark",
                source=text,
                name=name,
                limits=limits,
                warnings=warnings,
            )
        except GrammarError as exc:  # about the translation: moved to where the user wrote it
            raise source.error(exc) from None
        grammar.path, grammar.start = path, source.start
        return grammar

    @classmethod
    def load(
        cls,
        name: str,
        *,
        limits: GrammarLimits | None = None,
        start: str | None = None,
        **params: int,
    ) -> Grammar:
        """A shipped grammar by name (`backtrack grammars` lists them); some take parameters.
        `start` names another rule to start from (`Grammar.load("json", start="value")`)."""
        try:
            text = shipped.source(name, **params)
        except KeyError:
            raise shipped.not_shipped(name) from None
        except (TypeError, ValueError) as exc:
            raise GrammarError(f"grammar {name!r}: {exc}") from exc
        return cls.from_lark(text, name=name, limits=limits, start=start)

    @classmethod
    def from_json_schema(
        cls, schema: dict[str, Any] | bool | str | type, *, limits: GrammarLimits | None = None
    ) -> Grammar:
        """A JSON schema, as a dict (or a boolean schema), a JSON string, or a pydantic model
        class, kept as `model` (a GuideResult's `parsed` is its validation of the text)."""
        limits = limits or GrammarLimits()
        grammar = cls._from_schema(read_schema(schema, limits), limits)
        grammar.model = schema if is_pydantic_model(schema) else None
        return grammar

    @classmethod
    def _from_schema(cls, schema: dict[str, Any], limits: GrammarLimits) -> Grammar:
        # Key order is kept: the engine takes an object's properties in the order they are listed.
        text = json.dumps(schema)
        check_size("the JSON schema", len(text.encode("utf-8", "surrogatepass")), limits)
        relaxed, notes = relax(schema)
        relaxed = ascii_schema_patterns(relaxed)  # `pattern` is ECMA-262's: `\d` is [0-9]
        strict, relaxed, notes = cls._schema_grammar(schema, relaxed, notes, text, limits)
        if notes:
            logger.info("JSON schema: the grammar does not enforce %s", "; ".join(map(str, notes)))
        loose = loosen(relaxed)
        if loose == relaxed:
            return strict
        validator = strict.schema.validator if strict.schema else None
        parts = SchemaParts(notes, validator or Validator(schema), strict, relaxed)
        try:
            return cls(
                llguidance.LLMatcher.grammar_from_json_schema(json.dumps(loose)),
                kind="json_schema",
                source=text,
                limits=limits,
                schema=parts,
            )
        except (ValueError, GrammarError) as exc:  # the engine cannot take the loose form
            logger.debug("JSON schema checked in its own order only: %s", exc)
            return strict

    @classmethod
    def _schema_grammar(
        cls,
        original: dict[str, Any],
        schema: dict[str, Any],
        notes: tuple[Relaxation, ...],
        source: str,
        limits: GrammarLimits,
    ) -> tuple[Grammar, dict[str, Any], tuple[Relaxation, ...]]:
        """The grammar of a (relaxed) schema in its own order, with the schema it was built from
        and the notes: a `oneOf` the engine refuses is taken as `anyOf` (a superset), noted.
        `original` is the schema as written, for the validator."""
        parts = _schema_parts(original, notes)
        try:
            ll = llguidance.LLMatcher.grammar_from_json_schema(json.dumps(schema))
            grammar = cls(ll, kind="json_schema", source=source, limits=limits, schema=parts)
            return grammar, schema, notes
        except ValueError as exc:
            raise GrammarError(f"invalid JSON schema: {exc}") from exc
        except GrammarError as exc:
            if "oneOf" not in exc.message:
                raise
        options = schema.get("x-guidance")
        schema = {
            **schema,
            "x-guidance": {**(options if isinstance(options, dict) else {}), "coerce_one_of": True},
        }
        notes = (*notes, *(Relaxation("oneOf", at) for at in one_of_places(schema)))
        try:
            ll = llguidance.LLMatcher.grammar_from_json_schema(json.dumps(schema))
        except ValueError as exc:
            raise GrammarError(f"invalid JSON schema: {exc}") from exc
        parts = _schema_parts(original, notes)
        grammar = cls(ll, kind="json_schema", source=source, limits=limits, schema=parts)
        return grammar, schema, notes

    @classmethod
    def from_regex(cls, pattern: str, *, limits: GrammarLimits | None = None) -> Grammar:
        """A regular expression (Rust `regex` syntax: no lookaround, no backreferences), with
        `\\d` and `\\w` ASCII as in JSON Schema (grammars.ecma)."""
        if not isinstance(pattern, str):
            raise TypeError(f"a regex must be str, not {type(pattern).__name__}")
        limits = limits or GrammarLimits()
        check_size("the regex", len(pattern.encode("utf-8", "surrogatepass")), limits)
        return cls(
            llguidance.LLMatcher.grammar_from_regex(ascii_classes(pattern)),
            kind="regex",
            source=pattern,
            limits=limits,
        )

    @classmethod
    def from_guidance(
        cls, node: GuidanceGrammar, *, limits: GrammarLimits | None = None
    ) -> Grammar:
        """A guidance grammar object: `guidance.json(...)`, `select([...])`, `gen(regex=...)`..."""
        to_ll = getattr(node, "ll_grammar", None)
        if to_ll is None:
            raise GrammarError(f"not a guidance grammar object: {type(node).__name__}")
        ll_grammar = to_ll()
        limits = limits or GrammarLimits()
        check_size("the guidance grammar", len(ll_grammar.encode("utf-8")), limits)
        return cls(ll_grammar, kind="guidance", source=ll_grammar, limits=limits)

    @classmethod
    def coerce(cls, spec: GrammarLike, *, limits: GrammarLimits | None = None) -> Grammar:
        """What `guide()` accepts: a Grammar, a shipped name, Lark text, a JSON schema (dict or
        pydantic class), `{"regex": ...}` or `{"lark": ...}`, or a guidance grammar object. A
        single word that is not a shipped name is taken for a mistyped one (no Lark grammar is
        one word), and a dict none of whose keys is a JSON Schema keyword for a mistake (such a
        schema would take any document)."""
        if isinstance(spec, Grammar):
            return spec
        if isinstance(spec, str):
            if spec in shipped.names():
                return cls.load(spec, limits=limits)
            if _NAME_LIKE.fullmatch(spec):
                raise shipped.not_shipped(spec.strip())
            return cls.from_lark(spec, limits=limits)
        if isinstance(spec, dict) and len(spec) == 1 and next(iter(spec)) in ("regex", "lark"):
            ((kind, text),) = spec.items()
            if not isinstance(text, str):
                raise GrammarError(f"{{{kind!r}: ...}} takes a string, not {type(text).__name__}")
            build = cls.from_regex if kind == "regex" else cls.from_lark
            return build(text, limits=limits)
        if isinstance(spec, dict) or is_pydantic_model(spec):
            if isinstance(spec, dict):
                check_schema_words(spec)
            return cls.from_json_schema(spec, limits=limits)
        if not isinstance(spec, type) and hasattr(spec, "ll_grammar"):
            return cls.from_guidance(spec, limits=limits)
        raise GrammarError(f"cannot make a grammar from {type(spec).__name__}")

    # -- matchers -------------------------------------------------------------------------------

    def matcher(self, tokenizer: llguidance.LLTokenizer | None = None) -> llguidance.LLMatcher:
        """A fresh matcher at the start of the grammar, over `tokenizer` (default: bytes)."""
        pristine = self._matchers.pristine(tokenizer or byte_tokenizer())
        copy: llguidance.LLMatcher = pristine.deep_copy()
        return copy

    # -- checks ---------------------------------------------------------------------------------

    def check(self, text: str | bytes) -> PrefixCheck:
        """The longest prefix of `text` that the grammar can continue (bytes must be UTF-8).
        Raises TextError where checking further would pass the work budget (see `Checker`)."""
        tokenizer = byte_tokenizer()
        renew = self._matchers.renewer(tokenizer)
        return check(self._matchers.pristine(tokenizer), text, renew=renew)

    def checker(self) -> Checker:
        """An incremental check for text that arrives in pieces."""
        tokenizer = byte_tokenizer()
        return Checker(self._matchers.pristine(tokenizer), renew=self._matchers.renewer(tokenizer))

    def matches(self, text: str | bytes) -> bool:
        """`text` is a whole sentence of the grammar (False for bytes that are not UTF-8). Under a
        JSON schema: a JSON document valid under the schema, its keys in any order."""
        try:
            text = as_text(text)
        except TextError:
            return False
        result = self.check(text)
        if not (result.valid and result.complete):
            return False
        validator = self.schema.validator if self.schema else None
        return validator is None or validator(text)

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
        return parse_tree(self._lark_parser(), text)

    def _lark_parser(self) -> Any:
        with self._lark_lock:
            if self._lark is None:  # lark reads the grammar as written
                self._lark = lark_parser(self.source, start=self.start, path=self.path)
            return self._lark
