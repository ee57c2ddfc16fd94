"""The Anthropic messages shape: `POST /v1/messages`, `messages.create`.

Read from a body (`AnthropicMessages`) or from a create() call's kwargs (`read_kwargs`); the reply
written as the SDK's Message (`message`), as its JSON, or as the events message_start ..
message_stop. Its `system` goes first in the prompt, as a system message.
"""

from __future__ import annotations

import functools
import json
import uuid
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from backtrack.trace.result import GuideResult
from backtrack.wire.shape import (
    ErrorReply,
    Event,
    EventStream,
    GuidedRequest,
    Shape,
    UpstreamKind,
    body_messages,
    format_schema,
    kwargs_messages,
    required_kwarg,
    take_nested_format,
    with_extra,
    with_guide_result,
    with_partial,
)
from backtrack.wire.sse import sse
from backtrack.wire.tools import GuidedTool, guided_tool, reply_calls
from providers import AnthropicDrafter
from providers.base import Message, Prompt
from providers.tool_calls import ToolReply

if TYPE_CHECKING:
    from anthropic.types import RawMessageStreamEvent
    from pydantic import TypeAdapter

    from backtrack.wire.guided_clients import GuidedMessage


class AnthropicMessages(Shape):
    name = "messages"
    path = "/v1/messages"
    upstream: UpstreamKind = "anthropic"

    def drafter(self, client: Any, model: str, **options: Any) -> AnthropicDrafter:
        return AnthropicDrafter(client, model, **options)

    def prompt_from_body(self, body: dict[str, Any]) -> Prompt:
        messages = body_messages(body)
        system = body.get("system")
        if system is not None:
            return [{"role": "system", "content": system}, *messages]
        return messages

    def guided_tool(self, body: dict[str, Any]) -> GuidedTool | None:
        return guided_tool(body, "anthropic")

    def reply(
        self,
        guided: GuidedRequest,
        result: GuideResult,
        extra: dict[str, Any],
        tools: ToolReply | None = None,
    ) -> dict[str, Any]:
        reply: dict[str, Any] = message(guided.model, result, tools).model_dump(
            mode="json", exclude_unset=True, exclude={"guide_result"}
        )
        return {**reply, "backtrack": extra}

    def stream(self, guided: GuidedRequest) -> EventStream:
        return MessageStream(guided.model)

    def take_format(self, fields: dict[str, Any]) -> tuple[str, str] | None:
        """`output_format` (structured outputs in beta) or `output_config.format` (its general
        release: `output_config`'s other settings, such as `effort`, stay); in a create() call
        also inside `extra_body`, where it goes with an SDK that does not take the field."""
        found = _output_format(fields)
        extra = fields.get("extra_body")
        if found is None and isinstance(extra, dict):
            extra = dict(extra)  # the caller's own is left as it is
            found = _output_format(extra)
            if found is not None:
                fields["extra_body"] = extra
        return found

    def error_body(self, error: ErrorReply) -> dict[str, Any]:
        body = {"type": "error", "error": {"type": error.kind, "message": error.message}}
        return with_partial(body, error)

    def error_event(self, error: ErrorReply) -> bytes:
        return sse(self.error_body(error), "error")


class MessageStream(EventStream):
    """A reply as Anthropic's events: message_start, content_block_start, a text_delta per
    piece, content_block_stop, message_delta (stop reason and usage), message_stop."""

    def start_events(self) -> list[Event]:
        started: dict[str, Any] = {
            "id": f"msg_backtrack_{self.id}",
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 0, "output_tokens": 0},
        }
        block = {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "text", "text": ""},
        }
        return [_event({"type": "message_start", "message": started}), _event(block)]

    def text_events(self, piece: str) -> list[Event]:
        delta = {"type": "text_delta", "text": piece}
        return [_event({"type": "content_block_delta", "index": 0, "delta": delta})]

    def end_events(self, result: GuideResult, extra: dict[str, Any] | None) -> list[Event]:
        delta = {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason(result), "stop_sequence": None},
            "usage": usage(result),
        }
        return [
            _event({"type": "content_block_stop", "index": 0}),
            _event(with_extra(delta, extra)),
            _event({"type": "message_stop"}),
        ]

    def sdk(self, event: Event) -> RawMessageStreamEvent:
        return _sdk_events().validate_python(event.data)


def _event(data: dict[str, Any]) -> Event:
    """An event named by its type, as Anthropic's are."""
    return Event(data, data["type"])


@functools.cache
def _sdk_events() -> TypeAdapter[RawMessageStreamEvent]:
    """Reads a stream event's JSON as the SDK's type (made at first use: no SDK at import)."""
    from anthropic.types import RawMessageStreamEvent
    from pydantic import TypeAdapter

    return TypeAdapter(RawMessageStreamEvent)


def _output_format(fields: dict[str, Any]) -> tuple[str, str] | None:
    """The schema `output_format` or `output_config.format` asks for, taken out of `fields`."""
    if fields.get("output_format") is None:
        return take_nested_format(fields, "output_config", _FORMATS)
    schema = format_schema(fields["output_format"], "output_format", kinds=_FORMATS)
    del fields["output_format"]
    return None if schema is None else (schema, "output_format")


_FORMATS = ("json_schema",)  # what Anthropic's structured outputs take


def read_kwargs(client: Any, kwargs: dict[str, Any]) -> tuple[AnthropicDrafter, list[Message]]:
    """A wrapped create() call read: its `model`, `messages` and `system` taken out of `kwargs`,
    whose rest goes with each draft request."""
    model, messages = required_kwarg(kwargs, "model"), kwargs_messages(kwargs)
    if "system" in kwargs:
        messages.insert(0, {"role": "system", "content": kwargs.pop("system")})
    return AnthropicMessages().drafter(client, model, **kwargs), messages


def stop_reason(result: GuideResult) -> Literal["end_turn", "max_tokens"]:
    return "end_turn" if result.valid else "max_tokens"


class AnthropicUsage(TypedDict):
    input_tokens: int
    output_tokens: int


def usage(result: GuideResult) -> AnthropicUsage:
    """The run's tokens as Anthropic's `usage`. Its numbers are required: where a draft's reply
    did not report its own (`result.usage.known` False) they leave that reply out."""
    return {"input_tokens": result.usage.input_tokens, "output_tokens": result.usage.output_tokens}


def message(model: str, result: GuideResult, tools: ToolReply | None = None) -> GuidedMessage:
    """`result` as the SDK's Message (a subclass carrying `guide_result`); with `tools`, its
    content is the reply's text and tool_use blocks: the guided block's input the run's text
    parsed ({} where it is not valid: stop_reason max_tokens, the text in `guide_result`), or,
    where no tool is guided, the text block the run's text."""
    from anthropic.types import Message as SdkMessage
    from anthropic.types import TextBlock, ToolUseBlock, Usage

    content: list[TextBlock | ToolUseBlock] = [TextBlock(type="text", text=result.text)]
    stop: Literal["end_turn", "max_tokens", "tool_use"] = stop_reason(result)
    if tools is not None:
        text = result.text if tools.tool is None else tools.content
        content = [TextBlock(type="text", text=text)] if text else []
        calls = reply_calls(tools, result.text)
        content += [
            ToolUseBlock(type="tool_use", id=c.id, name=c.name, input=_input(c.arguments))
            for c in calls
        ]
        valid = result.valid or tools.unguided
        stop = ("tool_use" if calls else "end_turn") if valid else "max_tokens"

    reply: GuidedMessage = with_guide_result(SdkMessage)(
        id=f"msg_backtrack_{uuid.uuid4().hex}",
        type="message",
        role="assistant",
        model=model,
        content=content,
        stop_reason=stop,
        stop_sequence=None,
        usage=Usage(**usage(result)),
        guide_result=result,
    )
    return reply


def _input(arguments: str) -> dict[str, object]:
    """A tool_use block's input: the arguments' object ({} where they are none)."""
    try:
        value = json.loads(arguments)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
