"""What a type checker sees of wrap(client): mypy checks this module (pyproject's [tool.mypy]
files); it is never run. Each `assert_type` fails the check where wrap() loses the SDK's types."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from typing_extensions import assert_type

from backtrack import GuideResult, wrap

if TYPE_CHECKING:
    from anthropic import Anthropic, AsyncAnthropic
    from anthropic.types import Message, RawMessageStreamEvent
    from openai import AsyncOpenAI, OpenAI, Stream
    from openai.types.chat import ChatCompletion, ChatCompletionChunk
    from openai.types.responses import Response, ResponseStreamEvent
    from pydantic import BaseModel

    from backtrack.wire.guided_clients import (
        GuidedAnthropic,
        GuidedAsyncAnthropic,
        GuidedAsyncOpenAI,
        GuidedChatCompletion,
        GuidedMessage,
        GuidedOpenAI,
        GuidedParsedChatCompletion,
        GuidedResponse,
    )
    from backtrack.wire.guided_stream import AsyncGuidedStream, GuidedStream

    class Person(BaseModel):
        name: str


def openai(client: OpenAI) -> None:
    wrapped = wrap(client, max_corrections=2)
    assert_type(wrapped, GuidedOpenAI)
    reply = wrapped.chat.completions.create(model="m", messages=[], grammar="json")
    assert_type(reply, GuidedChatCompletion)
    assert_type(reply.guide_result, GuideResult)
    assert_type(reply.choices[0].message.content, str | None)
    plain = wrapped.chat.completions.create(model="m", messages=[])
    assert_type(plain, ChatCompletion)
    chunks = wrapped.chat.completions.create(model="m", messages=[], stream=True)
    assert_type(chunks, Stream[ChatCompletionChunk])
    guided = wrapped.chat.completions.create(model="m", messages=[], grammar="json", stream=True)
    assert_type(guided, GuidedStream[ChatCompletionChunk])
    assert_type(guided.guide_result, GuideResult | None)
    parsed = wrapped.chat.completions.parse(model="m", messages=[], response_format=Person)
    assert_type(parsed, GuidedParsedChatCompletion[Person])
    assert_type(parsed.choices[0].message.parsed, Person | None)
    by_grammar = wrapped.chat.completions.parse(model="m", messages=[], grammar="json")
    assert_type(by_grammar, GuidedParsedChatCompletion[Any])
    assert_type(wrapped.api_key, str)  # the rest of the client is the SDK's
    answer = wrapped.responses.create(model="m", input="hi", grammar="json")
    assert_type(answer, GuidedResponse)
    assert_type(answer.output_text, str)
    assert_type(wrapped.responses.create(model="m", input="hi"), Response)
    events = wrapped.responses.create(model="m", input="hi", grammar="json", stream=True)
    assert_type(events, GuidedStream[ResponseStreamEvent])


async def async_openai(client: AsyncOpenAI) -> None:
    wrapped = wrap(client)
    assert_type(wrapped, GuidedAsyncOpenAI)
    reply = await wrapped.chat.completions.create(model="m", messages=[], grammar="json")
    assert_type(reply, GuidedChatCompletion)
    plain = await wrapped.chat.completions.create(model="m", messages=[])
    assert_type(plain, ChatCompletion)
    answer = await wrapped.responses.create(model="m", input="hi", grammar="json")
    assert_type(answer, GuidedResponse)
    chunks = await wrapped.chat.completions.create(
        model="m", messages=[], grammar="json", stream=True
    )
    assert_type(chunks, AsyncGuidedStream[ChatCompletionChunk])
    parsed = await wrapped.chat.completions.parse(model="m", messages=[], response_format=Person)
    assert_type(parsed, GuidedParsedChatCompletion[Person])


def anthropic(client: Anthropic) -> None:
    wrapped = wrap(client)
    assert_type(wrapped, GuidedAnthropic)
    reply = wrapped.messages.create(model="m", max_tokens=8, messages=[], grammar="json")
    assert_type(reply, GuidedMessage)
    assert_type(reply.guide_result, GuideResult)
    plain = wrapped.messages.create(model="m", max_tokens=8, messages=[])
    assert_type(plain, Message)
    events = wrapped.messages.create(
        model="m", max_tokens=8, messages=[], grammar="json", stream=True
    )
    assert_type(events, GuidedStream[RawMessageStreamEvent])


async def async_anthropic(client: AsyncAnthropic) -> None:
    wrapped = wrap(client)
    assert_type(wrapped, GuidedAsyncAnthropic)
    reply = await wrapped.messages.create(model="m", max_tokens=8, messages=[], grammar="json")
    assert_type(reply, GuidedMessage)
    events = await wrapped.messages.create(
        model="m", max_tokens=8, messages=[], grammar="json", stream=True
    )
    assert_type(events, AsyncGuidedStream[RawMessageStreamEvent])
