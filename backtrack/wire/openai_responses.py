"""The OpenAI Responses shape: `POST /v1/responses`, `responses.create`.

Read from a body (`OpenAIResponses`) or from a create() call's kwargs (`read_kwargs`): the prompt
is `input` (a text, or a list of messages) after `instructions` (a system message), the token
budget `max_output_tokens`, and `text.format` (`json_schema`, `json_object`) a grammar. The reply
is written as the SDK's Response (`response`), as its JSON, or as the events the API streams:
response.created, response.in_progress, response.output_item.added, response.content_part.added,
response.output_text.delta..., response.output_text.done, response.content_part.done,
response.output_item.done, and response.completed (response.incomplete for a run that is not
valid) with the usage and, from the server, `backtrack`.
"""

from __future__ import annotations

import functools
import itertools
import time
import uuid
from typing import TYPE_CHECKING, Any

from backtrack.trace.result import GuideResult
from backtrack.wire.shape import (
    ErrorReply,
    Event,
    EventStream,
    GuidedRequest,
    MalformedBody,
    Shape,
    UpstreamKind,
    required_kwarg,
    take_nested_format,
    with_extra,
    with_guide_result,
    with_partial,
)
from backtrack.wire.sse import sse
from providers import OpenAIResponsesDrafter
from providers.base import Message, Prompt, check_prompt
from providers.tool_calls import ToolReply

if TYPE_CHECKING:
    from openai.types.responses import ResponseStreamEvent
    from pydantic import TypeAdapter

    from backtrack.wire.guided_clients import GuidedResponse


class OpenAIResponses(Shape):
    name = "responses"
    path = "/v1/responses"
    upstream: UpstreamKind = "openai"
    token_params = ("max_output_tokens",)
    own_fields = frozenset({"input", "instructions", "max_output_tokens"})

    def drafter(self, client: Any, model: str, **options: Any) -> OpenAIResponsesDrafter:
        return OpenAIResponsesDrafter(client, model, **options)

    def prompt_from_body(self, body: dict[str, Any]) -> Prompt:
        try:
            return input_messages(body.get("input"), body.get("instructions"))
        except TypeError as exc:
            raise MalformedBody(str(exc), param="input") from None

    def take_format(self, fields: dict[str, Any]) -> tuple[str, str] | None:
        """`text.format` (`text`'s other settings, such as `verbosity`, stay)."""
        return take_nested_format(fields, "text", ("json_schema", "json_object", "text"))

    def reply(
        self,
        guided: GuidedRequest,
        result: GuideResult,
        extra: dict[str, Any],
        tools: ToolReply | None = None,  # the Responses shape reads no tools (wire.tools)
    ) -> dict[str, Any]:
        body = response_body(guided.model, result, uuid.uuid4().hex, time.time())
        return {**body, "backtrack": extra}

    def stream(self, guided: GuidedRequest) -> EventStream:
        return ResponseStream(guided.model)

    def error_event(self, error: ErrorReply) -> bytes:
        event = {"type": "error", "code": error.code, "message": error.message}
        return sse(with_partial({**event, "param": error.param}, error), "error")


class ResponseStream(EventStream):
    """A reply as the Responses API's events (the module's docstring names them), each numbered
    in `sequence_number` and named by its type."""

    def __init__(self, model: str) -> None:
        super().__init__(model)
        self.numbers = itertools.count()
        self.sent: list[str] = []
        self.where = {"item_id": f"msg_backtrack_{self.id}", "output_index": 0, "content_index": 0}

    def _event(self, kind: str, **fields: Any) -> Event:
        return Event({"type": kind, "sequence_number": next(self.numbers), **fields}, kind)

    def start_events(self) -> list[Event]:
        started = response_body(self.model, None, self.id, self.created)
        item = {**_message(self.id, None), "status": "in_progress", "content": []}
        return [
            self._event("response.created", response=started),
            self._event("response.in_progress", response=started),
            self._event("response.output_item.added", output_index=0, item=item),
            self._event("response.content_part.added", part=_output_text(""), **self.where),
        ]

    def text_events(self, piece: str) -> list[Event]:
        self.sent.append(piece)
        return [self._event("response.output_text.delta", delta=piece, logprobs=[], **self.where)]

    def end_events(self, result: GuideResult, extra: dict[str, Any] | None) -> list[Event]:
        done = response_body(self.model, result, self.id, self.created)
        text = "".join(self.sent)
        return [
            self._event("response.output_text.done", text=text, logprobs=[], **self.where),
            self._event("response.content_part.done", part=_output_text(text), **self.where),
            self._event("response.output_item.done", output_index=0, item=done["output"][0]),
            self._event(f"response.{done['status']}", **with_extra({"response": done}, extra)),
        ]

    def sdk(self, event: Event) -> ResponseStreamEvent:
        return _sdk_events().validate_python(event.data)


@functools.cache
def _sdk_events() -> TypeAdapter[ResponseStreamEvent]:
    """Reads a stream event's JSON as the SDK's type (made at first use: no SDK at import)."""
    from openai.types.responses import ResponseStreamEvent
    from pydantic import TypeAdapter

    return TypeAdapter(ResponseStreamEvent)


def input_messages(value: Any, instructions: Any = None) -> list[Message]:
    """A Responses request's prompt: `input` (a text, one user message; or a list of messages)
    after `instructions` (a system message). TypeError for anything else, such as input items
    that are no messages (a tool call's output)."""
    if isinstance(value, str):
        messages: list[Message] = [{"role": "user", "content": value}]
    elif isinstance(value, (list, tuple)) and value:
        check_prompt(value)
        messages = [dict(m) for m in value]
    else:
        raise TypeError(
            "input must be a text or a non-empty list of messages (dicts with 'role' and "
            f"'content'), not {type(value).__name__}"
        )
    if instructions is not None:
        messages.insert(0, {"role": "system", "content": instructions})
    return messages


def read_kwargs(
    client: Any, kwargs: dict[str, Any]
) -> tuple[OpenAIResponsesDrafter, list[Message]]:
    """A wrapped `responses.create()` call read: its `model`, `input` and `instructions` taken out
    of `kwargs`, whose rest goes with each draft request."""
    model = required_kwarg(kwargs, "model")
    messages = input_messages(required_kwarg(kwargs, "input"), kwargs.pop("instructions", None))
    return OpenAIResponses().drafter(client, model, **kwargs), messages


def usage(result: GuideResult) -> dict[str, Any] | None:
    """The run's tokens as the Responses API's `usage`; None when no draft's reply reported its
    own (openai_chat.usage)."""
    tokens = result.usage
    if not tokens.known and not tokens.input_tokens:
        return None
    return {
        "input_tokens": tokens.input_tokens,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": tokens.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": tokens.input_tokens + tokens.output_tokens,
    }


def response_body(
    model: str, result: GuideResult | None, id: str, created: float
) -> dict[str, Any]:
    """A Response as JSON: in progress (no result yet: no output, no usage), completed (a valid
    result) or incomplete (one that is not: its budget ran out first)."""
    status = "in_progress" if result is None else "completed" if result.valid else "incomplete"
    incomplete = {"reason": "max_output_tokens"} if status == "incomplete" else None
    return {
        "id": f"resp_backtrack_{id}",
        "object": "response",
        "created_at": created,
        "status": status,
        "error": None,
        "incomplete_details": incomplete,
        "model": model,
        "output": [] if result is None else [_message(id, result)],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": None if result is None else usage(result),
    }


def _message(id: str, result: GuideResult | None) -> dict[str, Any]:
    """The output message item: the result's text."""
    return {
        "id": f"msg_backtrack_{id}",
        "type": "message",
        "role": "assistant",
        "status": "completed" if result is not None and result.valid else "incomplete",
        "content": [_output_text("" if result is None else result.text)],
    }


def _output_text(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": []}


def response(model: str, result: GuideResult, tools: ToolReply | None = None) -> GuidedResponse:
    """`result` as the SDK's Response (a subclass carrying `guide_result`): its `output_text` is
    the guided text (`tools` is always None: the Responses shape reads no tools)."""
    from openai.types.responses import Response

    body = response_body(model, result, uuid.uuid4().hex, time.time())
    # Built as the SDK builds a reply it reads (its own `construct`, nested types included), not
    # validated: each release of Response adds required fields (usage details) an API fills.
    reply: GuidedResponse = with_guide_result(Response).model_construct(**body, guide_result=result)
    return reply
