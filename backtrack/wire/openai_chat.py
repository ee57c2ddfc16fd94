"""The OpenAI chat completions shape: `POST /v1/chat/completions`, `chat.completions.create`.

Read from a body (`OpenAIChat`) or from a create() call's kwargs (`read_kwargs`); the reply
written as the SDK's ChatCompletion (`chat_completion`), as its JSON, or as `chat.completion.chunk`
events. `finish_reason` and `usage` serve the completions shape too.
"""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from backtrack.trace.result import GuideResult
from backtrack.wire.shape import (
    EventStream,
    GuidedRequest,
    Shape,
    UpstreamKind,
    format_schema,
    kwargs_messages,
    one_choice,
    required_kwarg,
    with_guide_result,
)
from backtrack.wire.sse import sse
from backtrack.wire.tools import GuidedTool, guided_tool, reply_calls
from providers import OpenAIChatDrafter
from providers.base import Message
from providers.tool_calls import ToolReply

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionMessage

    from backtrack.wire.guided_clients import GuidedChatCompletion


class OpenAIChat(Shape):
    name = "chat.completions"
    path = "/v1/chat/completions"
    upstream: UpstreamKind = "openai"

    def drafter(self, client: Any, model: str, **options: Any) -> OpenAIChatDrafter:
        return OpenAIChatDrafter(client, model, **options)

    def drafter_options(self, max_tokens_param: str, extra: dict[str, Any]) -> dict[str, Any]:
        return {"max_tokens_param": max_tokens_param, "extra_body": extra}

    def guided_tool(self, body: dict[str, Any]) -> GuidedTool | None:
        return guided_tool(body, "openai")

    def reply(
        self,
        guided: GuidedRequest,
        result: GuideResult,
        extra: dict[str, Any],
        tools: ToolReply | None = None,
    ) -> dict[str, Any]:
        reply: dict[str, Any] = chat_completion(guided.model, result, tools).model_dump(
            mode="json", exclude_unset=True, exclude={"guide_result"}
        )
        return {**reply, "backtrack": extra}

    def stream(self, guided: GuidedRequest) -> EventStream:
        return _ChatStream(guided)

    def take_format(self, fields: dict[str, Any]) -> tuple[str, str] | None:
        schema = response_format_schema(fields.get("response_format", {"type": "text"}))
        if schema is None:
            return None
        del fields["response_format"]
        return schema, "response_format"


class _ChatStream(EventStream):
    def _chunk(self, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": f"chatcmpl-backtrack-{self.id}",
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.guided.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    def start(self) -> bytes:
        return sse(self._chunk({"role": "assistant", "content": ""}))

    def text(self, piece: str) -> bytes:
        return sse(self._chunk({"content": piece}))

    def end(self, result: GuideResult, extra: dict[str, Any]) -> bytes:
        last = {**self._chunk({}), "choices": [], "usage": usage(result), "backtrack": extra}
        return sse(self._chunk({}, finish_reason(result))) + sse(last) + sse("[DONE]")


def response_format_schema(value: Any) -> str | None:
    """The JSON schema, as JSON text, that an OpenAI `response_format` asks for: the schema of
    `json_schema`, any object for `json_object`; None for `text` (MalformedBody otherwise). The
    server (`response_format` in a body) and `wrap` (in a create() call) read it here alike."""
    return format_schema(value, "response_format", inner="json_schema")


def read_kwargs(client: Any, kwargs: dict[str, Any]) -> tuple[OpenAIChatDrafter, list[Message]]:
    """A wrapped create() call read: its `model` and `messages` taken out of `kwargs`, whose rest
    goes with each draft request."""
    model, messages = required_kwarg(kwargs, "model"), kwargs_messages(kwargs)
    one_choice(kwargs)
    return OpenAIChat().drafter(client, model, **kwargs), messages


def finish_reason(result: GuideResult) -> Literal["stop", "length"]:
    return "stop" if result.valid else "length"


class OpenAIUsage(TypedDict):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


def usage(result: GuideResult) -> OpenAIUsage:
    """The run's tokens as OpenAI's `usage`."""
    tokens = result.usage
    return {
        "prompt_tokens": tokens.input_tokens,
        "completion_tokens": tokens.output_tokens,
        "total_tokens": tokens.input_tokens + tokens.output_tokens,
    }


def chat_completion(
    model: str, result: GuideResult, tools: ToolReply | None = None
) -> GuidedChatCompletion:
    """`result` as the SDK's ChatCompletion (a subclass carrying `guide_result`); with `tools`,
    its message carries the reply's content and tool calls, the guided call's arguments the
    run's text."""
    from openai.types.chat import ChatCompletion, ChatCompletionMessage
    from openai.types.chat.chat_completion import Choice
    from openai.types.completion_usage import CompletionUsage

    message = ChatCompletionMessage(role="assistant", content=result.text)
    finish: Literal["stop", "length", "tool_calls"] = finish_reason(result)
    if tools is not None:
        message, finish = _tool_message(result, tools)

    reply: GuidedChatCompletion = with_guide_result(ChatCompletion)(
        id=f"backtrack-{uuid.uuid4().hex}",
        object="chat.completion",
        created=int(time.time()),
        model=model,
        choices=[
            Choice(
                index=0,
                finish_reason=finish,
                message=message,
            )
        ],
        usage=CompletionUsage(**usage(result)),
        guide_result=result,
    )
    return reply


def _tool_message(
    result: GuideResult, tools: ToolReply
) -> tuple[ChatCompletionMessage, Literal["stop", "length", "tool_calls"]]:
    """The message of a reply to a request with tools, and its finish reason: "tool_calls" (or
    "length", where the guided text is not valid); the guided text is the guided call's
    arguments, or the content where no function is guided; a reply passed on unguided is the
    upstream's content and calls as they came."""
    from openai.types.chat import (
        ChatCompletionMessage,
        ChatCompletionMessageFunctionToolCall,
        ChatCompletionMessageToolCallUnion,
    )
    from openai.types.chat.chat_completion_message_function_tool_call import Function

    calls: list[ChatCompletionMessageToolCallUnion] = [
        ChatCompletionMessageFunctionToolCall(
            id=call.id, type="function", function=Function(name=call.name, arguments=call.arguments)
        )
        for call in reply_calls(tools, result.text)
    ]
    content = result.text if tools.tool is None else tools.content
    message = ChatCompletionMessage(
        role="assistant", content=content or None, tool_calls=calls or None
    )
    valid = result.valid or tools.unguided
    return message, ("tool_calls" if calls else "stop") if valid else "length"
