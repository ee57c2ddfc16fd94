"""What the three wire shapes share: a guided request read, its drafter built, its reply, stream
and errors written. Each shape is a subclass in its own module:

    OpenAIChat          POST /v1/chat/completions   OpenAI     chat.completion / .chunk
    OpenAICompletions   POST /v1/completions        OpenAI     text_completion
    OpenAIResponses     POST /v1/responses          OpenAI     response, response.created..
                                                               response.completed
    AnthropicMessages   POST /v1/messages           Anthropic  message, message_start..message_stop

A JSON body (`backtrack serve`) is read by `Shape.read_body`; a create() call's kwargs (`wrap`) by
`read_kwargs` in openai_chat, openai_responses and anthropic_messages, which also write the SDK's
reply objects. A shape's own structured-output field (Responses' `text.format`, Anthropic's
`output_format`) is read by `Shape.take_format` for both (`asks_for_grammar` for wrap), and so
are strict tools (`Shape.guided_tool`).
Every guided reply a server writes carries a `backtrack` object (`summary`); a stream carries it
on its last event.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import time
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from backtrack.trace.result import GuideResult
from backtrack.wire.sse import sse
from grammars import BacktrackError, PartialResult
from providers import (
    AnthropicDrafter,
    OpenAIChatDrafter,
    OpenAICompletionsDrafter,
    OpenAIResponsesDrafter,
)
from providers.base import Message, Prompt, check_prompt
from providers.tool_calls import ToolReply

if TYPE_CHECKING:
    from backtrack.wire.tools import GuidedTool

UpstreamKind = Literal["openai", "anthropic"]
SdkDrafter = (
    OpenAIChatDrafter | OpenAICompletionsDrafter | OpenAIResponsesDrafter | AnthropicDrafter
)

# Fields the drafter sets itself (or that a guided request cannot honour); the rest of a body goes
# upstream with each draft request, as it came.
_SET_BY_SERVER = frozenset(
    {"model", "messages", "prompt", "system", "stream", "stream_options", "n"}
    | {"max_tokens", "max_completion_tokens"}
)


class MalformedBody(BacktrackError):
    """A request body that is not what its shape takes; `param` names the field at fault."""

    def __init__(self, message: str, *, param: str | None = None) -> None:
        self.param = param
        super().__init__(message)


class ErrorReply(Protocol):
    """What an error reply says (backtrack.serve.errors.ServeError is one): its message, the
    shape's error type (`kind`), a short code, the field at fault and the partial result."""

    message: str
    kind: str
    code: str
    param: str | None
    partial: PartialResult | None


@dataclass(frozen=True)
class GuidedRequest:
    """A guided request read from a body: the drafter's model, prompt and token budget, and the
    drafter's other keywords (`drafter_options`: among them the fields that go upstream as they
    came)."""

    model: str
    prompt: Prompt
    max_tokens: int | None
    drafter_options: dict[str, Any] = field(default_factory=dict)


class Shape:
    """What the shapes share; each subclass is one of them."""

    name: str
    path: str
    upstream: UpstreamKind
    # The body's token limit: the first of these it gives (the last when none).
    token_params: tuple[str, ...] = ("max_completion_tokens", "max_tokens")
    # Fields of a body the shape reads itself (beyond the ones every shape sets): not sent on.
    own_fields: frozenset[str] = frozenset()

    def drafter(self, client: Any, model: str, **options: Any) -> SdkDrafter:
        """The drafter that drafts in this shape through the SDK `client` (`options`: the
        drafter's keywords, such as the SDK create() call's own)."""
        raise NotImplementedError

    # -- reading a body

    def read_body(self, body: dict[str, Any]) -> GuidedRequest:
        """`body` read (MalformedBody when a field is not what it must be)."""
        model = body.get("model")
        if not isinstance(model, str) or not model:
            raise MalformedBody("`model` is required", param="model")
        if body.get("n", 1) != 1:
            raise MalformedBody("a guided request writes one choice: n must be 1", param="n")
        param = next((p for p in self.token_params if p in body), self.token_params[-1])
        limit = body.get(param)
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)):
            raise MalformedBody(f"`{param}` must be an integer", param=param)
        extra = {k: v for k, v in body.items() if k not in _SET_BY_SERVER | self.own_fields}
        prompt = self.prompt_from_body(body)
        return GuidedRequest(model, prompt, limit, self.drafter_options(param, extra))

    def prompt_from_body(self, body: dict[str, Any]) -> Prompt:
        return body_messages(body)

    def guided_tool(self, body: dict[str, Any]) -> GuidedTool | None:
        """The function whose arguments `body` guides by its tools (backtrack.wire.tools)."""
        return None

    def drafter_options(self, max_tokens_param: str, extra: dict[str, Any]) -> dict[str, Any]:
        """The drafter's keywords for a body: its other fields go upstream as they came."""
        return {"extra_body": extra}

    def take_format(self, fields: dict[str, Any]) -> tuple[str, str] | None:
        """The shape's own structured-output field, when `fields` (a body, a create() call's
        kwargs) has one that asks for a JSON schema: (the schema as JSON text, the field's
        name), the field taken out of `fields`. None, `fields` untouched, when it asks for none;
        MalformedBody when it is not what the shape takes."""
        return None

    def take_model(self, fields: dict[str, Any]) -> tuple[Any, str] | None:
        """A pydantic model class that a create() or parse() call gives as the shape's
        structured-output field (chat's `response_format=Model`): (the class, the field's name),
        the field taken out of `fields`. The grammar is then the class itself, so that the
        result's `parsed` is an instance of it. None, `fields` untouched, where it gives none."""
        return None

    # -- writing replies

    def reply(
        self,
        guided: GuidedRequest,
        result: GuideResult,
        extra: dict[str, Any],
        tools: ToolReply | None = None,
    ) -> dict[str, Any]:
        """The whole reply, with `extra` as its `backtrack` object (and `tools`, what the reply
        to a request with tools carried besides the guided text)."""
        raise NotImplementedError

    def stream(self, guided: GuidedRequest) -> EventStream:
        raise NotImplementedError

    def error_body(self, error: ErrorReply) -> dict[str, Any]:
        body: dict[str, Any] = {
            "error": {
                "message": error.message,
                "type": error.kind,
                "param": error.param,
                "code": error.code,
            }
        }
        return with_partial(body, error)

    def error_event(self, error: ErrorReply) -> bytes:
        return sse(self.error_body(error))


@dataclass(frozen=True)
class Event:
    """One event of a streamed reply: its JSON `data`, under the SSE event `name` where the
    shape names its events (Anthropic's)."""

    data: dict[str, Any]
    name: str | None = None


class EventStream:
    """One reply as events, all with one id: `start_events()`, `text_events(piece)` as pieces
    become final, then `end_events(result, extra)`, `extra` the `backtrack` object of the last
    event (None: none). The server sends them as server-sent events (`start()`, `text()`,
    `end()`); wrap's streams hand them out as the SDK's own types (`sdk`)."""

    # What follows the last event on the wire (OpenAI's `data: [DONE]`).
    done: bytes = b""

    def __init__(self, model: str) -> None:
        self.model = model
        self.id = uuid.uuid4().hex
        self.created = int(time.time())

    def start_events(self) -> list[Event]:
        raise NotImplementedError

    def text_events(self, piece: str) -> list[Event]:
        raise NotImplementedError

    def end_events(self, result: GuideResult, extra: dict[str, Any] | None) -> list[Event]:
        raise NotImplementedError

    def sdk(self, event: Event) -> Any:
        """`event` as the SDK's object (its stream's item type)."""
        raise NotImplementedError(f"{type(self).__name__} has no SDK stream type")

    def start(self) -> bytes:
        return _sse(self.start_events())

    def text(self, piece: str) -> bytes:
        return _sse(self.text_events(piece))

    def end(self, result: GuideResult, extra: dict[str, Any]) -> bytes:
        return _sse(self.end_events(result, extra)) + self.done


def _sse(events: list[Event]) -> bytes:
    return b"".join(sse(event.data, event.name) for event in events)


def with_extra(data: dict[str, Any], extra: dict[str, Any] | None) -> dict[str, Any]:
    """`data` with `extra` as its `backtrack` object, where there is one."""
    return data if extra is None else {**data, "backtrack": extra}


def summary(result: GuideResult, *, html: bool = False) -> dict[str, Any]:
    """The `backtrack` object of a reply: how the text came to be (and the HTML trace, asked)."""
    out: dict[str, Any] = {
        "valid": result.valid,
        "stop_reason": result.stop_reason,
        "api_calls": result.api_calls,
        "corrections": result.corrections,
        "edits": result.repairs,
        "accepted_chars": result.accepted_chars,
        "rejected_chars": result.rejected_chars,
        "kept": round(result.kept, 4),
        "lost_chars": result.lost_chars,
        "drops": [dataclasses.asdict(d) for d in result.drops],  # as the CLI's --json has them
        "local_tokens": result.local_tokens,
        # False: a reply did not report its usage (llama.cpp's server sends none; an OpenAI
        # stream closed at a cut): the reply's `usage` is a lower bound, or null where no reply
        # reported any (Anthropic's shape must have numbers: 0).
        "usage_known": result.usage.known,
        "seconds": round(result.seconds, 4),
    }
    if html:
        out["trace_html"] = result.to_html()  # every model and user text in it is escaped
    return out


@functools.cache
def with_guide_result(sdk_type: type[Any]) -> Any:
    """`sdk_type` (an SDK's reply, a pydantic model) subclassed with a `guide_result` field that
    takes any object: `ChatCompletion` -> `GuidedChatCompletion`. Made at the first reply, so
    that importing backtrack imports no SDK."""
    namespace = {"__annotations__": {"guide_result": Any}, "guide_result": None}
    return type(f"Guided{sdk_type.__name__}", (sdk_type,), {**namespace, "__module__": __name__})


def format_schema(
    value: Any,
    param: str,
    *,
    inner: str | None = None,
    kinds: tuple[str, ...] = ("json_schema", "json_object", "text"),
) -> str | None:
    """The JSON schema, as JSON text, that a structured-output format asks for: the schema of
    `{"type": "json_schema", ...}` (at `value[inner]["schema"]` where the format nests it, as
    chat's `response_format` does, else at `value["schema"]`), any object for `json_object`,
    None for `text`. MalformedBody, naming `param`, for a type not in `kinds` or no schema."""
    kind = value.get("type") if isinstance(value, dict) else None
    if kind not in kinds:
        names = f"{', '.join(kinds[:-1])} or {kinds[-1]}" if len(kinds) > 1 else kinds[0]
        raise MalformedBody(f"{param}.type must be {names}", param=param)
    if kind == "json_object":
        return '{"type": "object"}'
    if kind == "text":
        return None
    holder = value.get(inner) if inner else value
    schema = holder.get("schema") if isinstance(holder, dict) else None
    if isinstance(schema, str):
        return schema
    if not isinstance(schema, dict):
        where = f"{param}.{inner}" if inner else param
        message = f"{where} must be an object with a `schema` (a JSON schema)"
        raise MalformedBody(message, param=param)
    return json.dumps(schema)  # its key order kept: the engine writes properties in it


def take_nested_format(
    fields: dict[str, Any], outer: str, kinds: tuple[str, ...]
) -> tuple[str, str] | None:
    """`fields[outer]["format"]` (Responses' `text.format`, Anthropic's `output_config.format`)
    read by `format_schema` and, when it asks for a schema, taken out: (the schema, the field's
    name). The outer object's other settings stay; one left empty goes."""
    holder = fields.get(outer)
    if not isinstance(holder, dict) or holder.get("format") is None:
        return None
    schema = format_schema(holder["format"], f"{outer}.format", kinds=kinds)
    if schema is None:
        return None
    rest = {k: v for k, v in holder.items() if k != "format"}
    if rest:
        fields[outer] = rest
    else:
        del fields[outer]
    return schema, f"{outer}.format"


def asks_for_grammar(kwargs: dict[str, Any], shape: Shape) -> bool:
    """Whether a create() call is guided: it gives `grammar=`, or the shape's structured-output
    field asks for a JSON schema (`Shape.take_format`) or gives a pydantic model
    (`Shape.take_model`), which becomes its grammar and is taken out of what goes upstream (the
    run enforces it), or, with neither, strict tools guide a call's arguments
    (`Shape.guided_tool`): the function's schema is the grammar and `guided_tool=` names it in
    `kwargs`. A grammar and a format at once is a TypeError. A field the shape cannot read goes
    to the SDK as it is."""
    found = _format_grammar(kwargs, shape)
    if found is None:
        tool = None if "grammar" in kwargs else shape.guided_tool(kwargs)
        if tool is not None:
            kwargs.update(grammar=json.loads(tool.schema), guided_tool=tool.name)
        return "grammar" in kwargs
    grammar, field_name = found
    if "grammar" in kwargs:
        raise TypeError(f"give grammar= or a {field_name} schema, not both")
    kwargs["grammar"] = grammar
    return True


def _format_grammar(kwargs: dict[str, Any], shape: Shape) -> tuple[Any, str] | None:
    """The grammar that the shape's structured-output field in `kwargs` gives, taken out, and
    the field's name; None where it gives none or cannot be read."""
    model = shape.take_model(kwargs)
    if model is not None:
        return model
    try:
        found = shape.take_format(kwargs)
    except MalformedBody:
        return None
    return None if found is None else (json.loads(found[0]), found[1])


def with_partial(body: dict[str, Any], error: ErrorReply) -> dict[str, Any]:
    """`body` with the partial result of a run that failed after some work."""
    if isinstance(error.partial, GuideResult):
        body["backtrack"] = {**summary(error.partial), "text": error.partial.text}
    return body


def body_messages(body: dict[str, Any]) -> list[Message]:
    """The body's `messages`: a non-empty list of chat messages."""
    messages = body.get("messages")
    try:
        if not isinstance(messages, list) or not messages:
            raise TypeError("a non-empty list of messages is required")
        check_prompt(messages)
    except TypeError as exc:
        raise MalformedBody(f"`messages`: {exc}", param="messages") from None
    return messages


def one_choice(kwargs: dict[str, Any]) -> None:
    """A create() call's `n=`, taken out: a guided call writes one choice (ValueError for more,
    where the SDK would have sent back several and the run read only the first)."""
    n = kwargs.pop("n", 1)
    if n not in (1, None):
        raise ValueError(f"grammar= writes one choice: n must be 1, not {n!r}")


def required_kwarg(kwargs: dict[str, Any], name: str) -> Any:
    """`kwargs[name]`, taken out (a TypeError when a create() call left it out)."""
    if name not in kwargs:
        raise TypeError(f"create() needs {name}= (with grammar= as without)")
    return kwargs.pop(name)


def kwargs_messages(kwargs: dict[str, Any]) -> list[Message]:
    """A create() call's `messages=`, taken out and checked before any request: a list of chat
    messages."""
    messages = required_kwarg(kwargs, "messages")
    problem = "" if isinstance(messages, (list, tuple)) else f"not {type(messages).__name__}"
    if not problem:
        try:
            check_prompt(messages)
        except TypeError as exc:
            problem = str(exc)
    if problem:
        raise TypeError(
            "messages= must be a list of chat messages (dicts with 'role' and 'content'): "
            + problem
        )
    return list(messages)
