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
    Event,
    EventStream,
    GuidedRequest,
    Shape,
    UpstreamKind,
    format_schema,
    kwargs_messages,
    one_choice,
    required_kwarg,
    with_extra,
    with_guide_result,
)
from backtrack.wire.sse import sse
from backtrack.wire.tools import GuidedTool, guided_tool, reply_calls
from grammars.json_schema.checks import is_pydantic_model
from providers import OpenAIChatDrafter
from providers.base import Message
from providers.tool_calls import ToolReply

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionChunk, ChatCompletionMessage

    from backtrack.wire.guided_clients import GuidedChatCompletion, GuidedParsedChatCompletion


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
        return ChatStream(guided.model)

    def take_format(self, fields: dict[str, Any]) -> tuple[str, str] | None:
        schema = response_format_schema(fields.get("response_format", {"type": "text"}))
        if schema is None:
            return None
        del fields["response_format"]
        return schema, "response_format"

    def take_model(self, fields: dict[str, Any]) -> tuple[Any, str] | None:
        """parse()'s `response_format=Model` (a pydantic model class)."""
        model = fields.get("response_format")
        if not is_pydantic_model(model):
            return None
        del fields["response_format"]
        return model, "response_format"


class ChatStream(EventStream):
    """A reply as `chat.completion.chunk` events: the role, a content delta per piece, the
    finish reason, then (`usage_chunk`) a chunk with no choices and the run's usage, as OpenAI
    sends it for `stream_options={"include_usage": true}`."""

    done = sse("[DONE]")

    def __init__(self, model: str, *, usage_chunk: bool = True) -> None:
        super().__init__(model)
        self.usage_chunk = usage_chunk

    def _chunk(self, delta: dict[str, Any], finish: str | None = None) -> Event:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return Event(self._chunk_with(choices=[choice]))

    def _chunk_with(self, **fields: Any) -> dict[str, Any]:
        return {
            "id": f"chatcmpl-backtrack-{self.id}",
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            **fields,
        }

    def start_events(self) -> list[Event]:
        return [self._chunk({"role": "assistant", "content": ""})]

    def text_events(self, piece: str) -> list[Event]:
        return [self._chunk({"content": piece})]

    def end_events(self, result: GuideResult, extra: dict[str, Any] | None) -> list[Event]:
        events = [self._chunk({}, finish_reason(result))]
        if self.usage_chunk:
            last = self._chunk_with(choices=[], usage=usage(result))
            events.append(Event(with_extra(last, extra)))
        return events

    def sdk(self, event: Event) -> ChatCompletionChunk:
        from openai.types.chat import ChatCompletionChunk

        return ChatCompletionChunk.model_validate(event.data)


def chat_stream(model: str, stream_options: dict[str, Any]) -> ChatStream:
    """The stream of a create(stream=True) call: with the usage chunk where its `stream_options`
    ask for it (`include_usage`), as OpenAI's."""
    return ChatStream(model, usage_chunk=bool(stream_options.get("include_usage")))


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


def usage(result: GuideResult) -> OpenAIUsage | None:
    """The run's tokens as OpenAI's `usage`; None (as a server that reports none sends) when no
    draft's reply reported its own (a reply that does counts input tokens): 0/0 would be made up."""
    tokens = result.usage
    if not tokens.known and not tokens.input_tokens:
        return None
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
        usage=None if (tokens := usage(result)) is None else CompletionUsage(**tokens),
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


def parsed_chat_completion(
    model: str, result: GuideResult, tools: ToolReply | None = None
) -> GuidedParsedChatCompletion[Any]:
    """`result` as parse() answers: the SDK's ParsedChatCompletion (a subclass carrying
    `guide_result`), its message's `parsed` the result's (an instance of the pydantic model that
    was the grammar; else None), with `tools` as `chat_completion` reads them. A reply cut short
    (finish reason "length": a run that is not valid) raises the SDK's LengthFinishReasonError,
    as parse() does."""
    from openai import LengthFinishReasonError
    from openai.types.chat import ParsedChatCompletion

    plain = chat_completion(model, result, tools)
    if plain.choices[0].finish_reason == "length":
        raise LengthFinishReasonError(completion=plain)
    fields = plain.model_dump(exclude={"guide_result"}, exclude_unset=True)
    fields["choices"][0]["message"]["parsed"] = result.parsed
    reply: GuidedParsedChatCompletion[Any] = with_guide_result(ParsedChatCompletion).model_validate(
        {**fields, "guide_result": result}
    )
    return reply
