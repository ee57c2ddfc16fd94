"""What a request body asks of `backtrack serve`: its grammar, its options, and the body that goes
upstream without them.

A grammar arrives in one of these fields (two at once are an error):

    response_format   {"type": "json_schema", "json_schema": {"schema": {...}}}   OpenAI
                      {"type": "json_object"}                                      any JSON object
    grammar           a shipped grammar's name or Lark text; a dict is a JSON schema
                      (SDKs send it through `extra_body`)
    guided_json       a JSON schema (dict or JSON text)                            vLLM
    guided_regex      a regular expression                                         vLLM
    guided_grammar    Lark text                                                    vLLM
    guided_choice     a list of strings, one of which is the whole output          vLLM
    structured_outputs  {"json" | "regex" | "grammar" | "choice": ...}             vLLM >= 0.10

or in the route's own structured-output field (`Shape.take_format`):

    text.format       {"type": "json_schema", "schema": {...}} or json_object       /v1/responses
    output_format     {"type": "json_schema", "schema": {...}}                        /v1/messages
    output_config.format   the same (its other settings, such as `effort`, stay)       /v1/messages

and `backtrack: {"trace": "html", "max_corrections": 2, ...}` asks for the HTML trace in the reply
and changes GuideOptions by name. All of these are taken out of the body sent upstream.

Without a grammar field, strict tools guide a call's arguments (backtrack.wire.tools): the
function's schema is the grammar (`field` "tools"), and the tools go upstream as they came.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from backtrack.serve.errors import RequestError
from backtrack.wire.openai_chat import response_format_schema
from backtrack.wire.shape import MalformedBody, Shape
from grammars import Grammar, GrammarLimits

Kind = Literal["schema", "lark", "regex"]

# Fields whose value is a grammar, in the order they are looked for.
_VLLM = {"guided_json": "json", "guided_regex": "regex", "guided_grammar": "grammar"}
_STRUCTURED = {"json": "schema", "regex": "regex", "grammar": "lark", "choice": "choice"}
GRAMMAR_FIELDS = ("response_format", "grammar", *_VLLM, "guided_choice", "structured_outputs")


@dataclass(frozen=True)
class GrammarSpec:
    """A grammar as a request gave it: `kind` and its text (a JSON schema as JSON), hashable so
    that compiled grammars can be cached by it. `field` names where it came from."""

    kind: Kind
    text: str
    field: str

    def compile(self, limits: GrammarLimits) -> Grammar:
        """The Grammar (GrammarError when it is not one, or passes `limits`)."""
        if self.kind == "schema":
            return Grammar.from_json_schema(self.text, limits=limits)
        if self.kind == "regex":
            return Grammar.from_regex(self.text, limits=limits)
        return Grammar.coerce(self.text, limits=limits)


@dataclass(frozen=True)
class Asked:
    """A request body taken apart: its grammar (None: pass the request through), whether the
    reply carries the HTML trace, GuideOptions changes, the body without these fields, and the
    function whose arguments are guided (None: the text is)."""

    grammar: GrammarSpec | None
    trace_html: bool
    options: dict[str, Any]
    body: dict[str, Any]
    tool: str | None = None


def take_fields(body: dict[str, Any], shape: Shape) -> Asked:
    """`body`, sent to `shape`'s route, taken apart (RequestError, a 400, when a field is
    malformed)."""
    rest = dict(body)
    specs: list[GrammarSpec] = []
    for name in GRAMMAR_FIELDS:
        spec = _spec(name, rest[name]) if name in rest else None
        if spec is not None:  # `response_format: {"type": "text"}` stays
            specs.append(spec)
            del rest[name]
    try:
        native = shape.take_format(rest)
    except MalformedBody as exc:
        raise RequestError(str(exc), param=exc.param) from None
    if native is not None:
        specs.append(GrammarSpec("schema", *native))
    if len(specs) > 1:
        names = ", ".join(s.field for s in specs)
        raise RequestError(f"give one grammar, not several ({names})", param=specs[1].field)
    extra = rest.pop("backtrack", None) or {}
    if not isinstance(extra, dict):
        raise RequestError("`backtrack` must be an object", param="backtrack")
    options = dict(extra)
    trace = options.pop("trace", None)
    if trace not in (None, "html"):
        raise RequestError('`backtrack.trace.record` takes "html"', param="backtrack.trace.record")
    tool = None if specs else shape.guided_tool(rest)
    if tool is not None:
        specs.append(GrammarSpec("schema", tool.schema, "tools"))
    tool_name = None if tool is None else tool.name
    return Asked(specs[0] if specs else None, trace == "html", options, rest, tool_name)


def _spec(name: str, value: Any) -> GrammarSpec | None:
    if name == "response_format":
        return _response_format(value)
    if name == "grammar":
        if isinstance(value, dict):
            return GrammarSpec("schema", _schema_text(value, name), name)
        return GrammarSpec("lark", _text(value, name), name)
    if name in _VLLM:
        return _structured(_VLLM[name], value, name)
    if name == "guided_choice":
        return _structured("choice", value, name)
    if not isinstance(value, dict) or len(value.keys() & _STRUCTURED.keys()) != 1:
        raise RequestError(
            f"`{name}` must be an object with one of {', '.join(_STRUCTURED)}", param=name
        )
    (key,) = value.keys() & _STRUCTURED.keys()
    return _structured(key, value[key], f"{name}.{key}")


def _structured(key: str, value: Any, field: str) -> GrammarSpec:
    kind = _STRUCTURED[key]
    if kind == "schema":
        return GrammarSpec("schema", _schema_text(value, field), field)
    if kind == "choice":
        return GrammarSpec("lark", _choice(value, field), field)
    return GrammarSpec("lark" if kind == "lark" else "regex", _text(value, field), field)


def _response_format(value: Any) -> GrammarSpec | None:
    try:
        schema = response_format_schema(value)
    except MalformedBody as exc:
        raise RequestError(str(exc), param=exc.param) from None
    return None if schema is None else GrammarSpec("schema", schema, "response_format")


def _schema_text(value: Any, field: str) -> str:
    """A JSON schema as JSON text (its key order kept: the engine writes properties in it)."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return json.dumps(value)
    raise RequestError(f"`{field}` must be a JSON schema (an object)", param=field)


def _text(value: Any, field: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise RequestError(f"`{field}` must be a non-empty string", param=field)
    return value


def _choice(value: Any, field: str) -> str:
    """The grammar whose sentences are exactly the strings of `value`: guidance's `select`,
    serialized (llguidance's Lark dialect, which `Grammar.coerce` reads as Lark text)."""
    if not (isinstance(value, list) and value and all(isinstance(v, str) and v for v in value)):
        raise RequestError(f"`{field}` must be a list of non-empty strings", param=field)
    from guidance import select  # 2 s to import: only when a request asks for a choice

    text: str = select(value).ll_grammar()
    return text
