"""The Anthropic messages shape: `POST /v1/messages`, `messages.create`.

Read from a body (`AnthropicMessages`) or from a create() call's kwargs (`read_kwargs`); the reply
written as the SDK's Message (`message`), as its JSON, or as the events message_start ..
message_stop. Its `system` goes first in the prompt, as a system message.
"""

from __future__ import annotations

import functools
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
    kwargs_messages,
    required_kwarg,
    with_extra,
    with_guide_result,
    with_partial,
)
from backtrack.wire.sse import sse
from providers import AnthropicDrafter
from providers.base import Message, Prompt

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

    def reply(
        self, guided: GuidedRequest, result: GuideResult, extra: dict[str, Any]
    ) -> dict[str, Any]:
        reply: dict[str, Any] = message(guided.model, result).model_dump(
            mode="json", exclude_unset=True, exclude={"guide_result"}
        )
        return {**reply, "backtrack": extra}

    def stream(self, guided: GuidedRequest) -> EventStream:
        return MessageStream(guided.model)

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
    """The run's tokens as Anthropic's `usage`."""
    return {"input_tokens": result.usage.input_tokens, "output_tokens": result.usage.output_tokens}


def message(model: str, result: GuideResult) -> GuidedMessage:
    """`result` as the SDK's Message (a subclass carrying `guide_result`)."""
    from anthropic.types import Message as SdkMessage
    from anthropic.types import TextBlock, Usage

    reply: GuidedMessage = with_guide_result(SdkMessage)(
        id=f"msg_backtrack_{uuid.uuid4().hex}",
        type="message",
        role="assistant",
        model=model,
        content=[TextBlock(type="text", text=result.text)],
        stop_reason=stop_reason(result),
        stop_sequence=None,
        usage=Usage(**usage(result)),
        guide_result=result,
    )
    return reply
