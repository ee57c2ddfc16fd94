"""wrap(client) with stream=True: the real SDKs against the local protocol servers
(tests/support/servers.py), which replay scripted text and never read the grammar.

A guided stream yields the SDK's own stream items, the text as it becomes final (a repair's slip
never goes out), the run's GuideResult on the stream once it has ended.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from anthropic.types import (
    RawContentBlockDeltaEvent,
    RawContentBlockStartEvent,
    RawContentBlockStopEvent,
    RawMessageDeltaEvent,
    RawMessageStartEvent,
    RawMessageStopEvent,
)
from openai.types.chat import ChatCompletionChunk
from openai.types.responses import ResponseCompletedEvent, ResponseTextDeltaEvent

from backtrack import GuideResult, ProviderError, wrap
from tests.support.responder import DOC, PROMPT, responder
from tests.support.responder import SLIP as SLIP_BRACE
from tests.support.scripted import ScriptedAPI
from tests.support.servers import (
    Exchange,
    MockServer,
    Reply,
    disconnect,
    error,
    responses_stream_text,
    text,
)

if TYPE_CHECKING:
    from local_target import LocalTarget

MESSAGES = [{"role": "user", "content": "A cat as JSON."}]
SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
    "additionalProperties": False,
}
# The comma before } is a slip that an edit mends: the stream must never carry it.
SLIP = '{"name": "Felix, the black cat of the house next door", "age": 3,}'
MENDED = SLIP.replace(",}", "}")


@pytest.fixture(autouse=True)
def _no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    import providers.retry

    monkeypatch.setattr(providers.retry, "backoff", lambda attempt, exc: 0.0)


def contents(chunks: list[ChatCompletionChunk]) -> list[str]:
    return [c.choices[0].delta.content or "" for c in chunks if c.choices]


def closed_early(server: MockServer, total: int) -> Exchange:
    """The one exchange, once over: its client closed it before the text's end."""
    (exchange,) = server.wait(timeout=10)
    assert exchange.client_closed, "the upstream request was closed with the stream"
    assert exchange.chunks_sent < total
    return exchange


def test_openai_stream_yields_chat_completion_chunks_as_text_becomes_final(
    openai_server: Any, openai_client: Any
):
    openai_server.script(text(SLIP))
    stream = wrap(openai_client()).chat.completions.create(
        model="m", messages=MESSAGES, grammar=SCHEMA, stream=True
    )
    first = next(stream)
    assert stream.guide_result is None  # the run is under way
    chunks = [first, *stream]
    assert all(type(c) is ChatCompletionChunk for c in chunks)
    assert first.choices[0].delta.role == "assistant"
    pieces = contents(chunks)
    assert "".join(pieces) == MENDED
    assert len([p for p in pieces if p]) > 5  # piece by piece, not the whole text at the end
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert all(c.usage is None for c in chunks)  # stream_options did not ask for it
    assert len({c.id for c in chunks}) == 1
    result = stream.guide_result
    assert isinstance(result, GuideResult) and result.valid and result.text == MENDED
    assert result.repairs == 1
    body = openai_server.bodies[0]
    assert "grammar" not in body and body["stream"] is True


def test_openai_stream_ends_with_usage_when_stream_options_ask(
    openai_server: Any, openai_client: Any
):
    openai_server.script(text(SLIP, usage=(11, 17)))
    stream = wrap(openai_client()).chat.completions.create(
        model="m",
        messages=MESSAGES,
        grammar=SCHEMA,
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    last = chunks[-1]
    assert last.choices == [] and last.usage is not None
    assert (last.usage.prompt_tokens, last.usage.completion_tokens) == (11, 17)
    assert chunks[-2].choices[0].finish_reason == "stop"
    assert "".join(contents(chunks)) == MENDED


def test_closing_a_stream_stops_its_run_and_the_upstream_request(
    openai_server: Any, openai_client: Any
):
    """The first piece comes while the API is still writing; closing the stream there closes
    the request upstream: the run does not go on for nobody."""
    slow = '{"name": "' + "a long name, " * 30 + '", "age": 3}'
    openai_server.script(text(slow, delay=0.01))
    with wrap(openai_client()).chat.completions.create(
        model="m", messages=MESSAGES, grammar=SCHEMA, stream=True
    ) as stream:
        piece = ""
        while not piece:
            piece = contents([next(stream)])[0]
    assert slow.startswith(piece)
    closed_early(openai_server, len(Reply(text=slow).pieces()))
    assert stream.guide_result is None
    assert list(stream) == []


def test_a_failure_mid_stream_reaches_the_caller_after_the_text_it_made_final(
    openai_server: Any, openai_client: Any
):
    openai_server.script(disconnect(SLIP, after=6), error(500), error(500))
    stream = wrap(openai_client(), max_attempts=3).chat.completions.create(
        model="m", messages=MESSAGES, grammar=SCHEMA, stream=True
    )
    chunks: list[ChatCompletionChunk] = []
    with pytest.raises(ProviderError) as failed:
        for chunk in stream:
            chunks.append(chunk)
    streamed = "".join(contents(chunks))
    assert streamed and SLIP.startswith(streamed)  # the text before the drop went out
    partial = failed.value.partial
    assert isinstance(partial, GuideResult) and partial.text.startswith(streamed)
    assert len(openai_server.bodies) == 3


def test_anthropic_stream_yields_the_sdk_events(anthropic_server: Any, anthropic_client: Any):
    anthropic_server.script(text(SLIP, usage=(5, 9)))
    stream = wrap(anthropic_client()).messages.create(
        model="m", max_tokens=64, messages=MESSAGES, grammar=SCHEMA, stream=True
    )
    events = list(stream)
    kinds = [type(e) for e in events]
    deltas = [e for e in events if isinstance(e, RawContentBlockDeltaEvent)]
    assert kinds == [
        RawMessageStartEvent,
        RawContentBlockStartEvent,
        *[RawContentBlockDeltaEvent] * len(deltas),
        RawContentBlockStopEvent,
        RawMessageDeltaEvent,
        RawMessageStopEvent,
    ]
    assert len(deltas) > 5
    assert all(d.delta.type == "text_delta" for d in deltas)
    assert "".join(d.delta.text for d in deltas) == MENDED  # type: ignore[union-attr]
    end = events[-2]
    assert isinstance(end, RawMessageDeltaEvent) and end.delta.stop_reason == "end_turn"
    assert (end.usage.input_tokens, end.usage.output_tokens) == (5, 9)
    assert stream.guide_result is not None and stream.guide_result.text == MENDED
    assert anthropic_server.bodies[0]["max_tokens"] == 64


def test_responses_stream_yields_the_sdk_events(openai_server: Any, openai_client: Any):
    openai_server.script(text(SLIP, usage=(5, 9)))
    stream = wrap(openai_client()).responses.create(
        model="m", input="A cat as JSON.", grammar=SCHEMA, stream=True
    )
    events = list(stream)
    deltas = [e for e in events if isinstance(e, ResponseTextDeltaEvent)]
    assert len(deltas) > 5 and responses_stream_text(events) == MENDED
    end = events[-1]
    assert isinstance(end, ResponseCompletedEvent) and end.response.output_text == MENDED
    assert end.response.usage is not None and end.response.usage.output_tokens == 9
    assert stream.guide_result is not None and stream.guide_result.text == MENDED
    body = openai_server.bodies[0]
    assert "grammar" not in body and body["stream"] is True


@pytest.mark.anyio
async def test_async_streams(
    openai_server: Any, openai_client: Any, anthropic_server: Any, anthropic_client: Any
):
    openai_server.script(text(SLIP))
    anthropic_server.script(text(SLIP))
    async with openai_client(asynchronous=True) as raw_openai:
        stream = await wrap(raw_openai).chat.completions.create(
            model="m", messages=MESSAGES, grammar=SCHEMA, stream=True
        )
        chunks = [chunk async for chunk in stream]
    assert all(type(c) is ChatCompletionChunk for c in chunks)
    assert "".join(contents(chunks)) == MENDED
    assert stream.guide_result is not None and stream.guide_result.text == MENDED
    async with anthropic_client(asynchronous=True) as raw_anthropic:
        events = await wrap(raw_anthropic).messages.create(
            model="m", max_tokens=64, messages=MESSAGES, grammar=SCHEMA, stream=True
        )
        deltas = [e async for e in events if isinstance(e, RawContentBlockDeltaEvent)]
    assert "".join(d.delta.text for d in deltas) == MENDED  # type: ignore[union-attr]
    openai_server.script(text(SLIP))
    async with openai_client(asynchronous=True) as raw_openai:
        answer = await wrap(raw_openai).responses.create(
            model="m", input="A cat as JSON.", grammar=SCHEMA, stream=True
        )
        texts = [e.delta async for e in answer if isinstance(e, ResponseTextDeltaEvent)]
    assert "".join(texts) == MENDED


@pytest.mark.anyio
async def test_async_stream_failure_and_early_close(openai_server: Any, openai_client: Any):
    slow = '{"name": "' + "a long name, " * 30 + '", "age": 3}'
    openai_server.script(disconnect(SLIP, after=6), error(500))
    async with openai_client(asynchronous=True) as raw:
        client = wrap(raw, max_attempts=2)
        stream = await client.chat.completions.create(
            model="m", messages=MESSAGES, grammar=SCHEMA, stream=True
        )
        chunks: list[ChatCompletionChunk] = []
        with pytest.raises(ProviderError) as failed:
            async for chunk in stream:
                chunks.append(chunk)
        streamed = "".join(contents(chunks))
        assert streamed and failed.value.partial.text.startswith(streamed)  # type: ignore[union-attr]
        openai_server.reset()
        openai_server.script(text(slow, delay=0.01))
        async with await client.chat.completions.create(
            model="m", messages=MESSAGES, grammar=SCHEMA, stream=True
        ) as slow_stream:
            async for chunk in slow_stream:
                if contents([chunk])[0]:
                    break
    closed_early(openai_server, len(Reply(text=slow).pieces()))


def test_a_stream_goes_on_through_a_correction(
    openai_server: Any, openai_client: Any, target: LocalTarget
):
    """SmolLM2 corrects a slip that no edit mends (repairs off), the API is asked again from
    the corrected text: the stream carries the text before the cut, the correction and the
    API's rest, one text."""
    api = ScriptedAPI(DOC, drafts=[SLIP_BRACE])
    openai_server.responder = responder("openai-chat", api)
    client = wrap(openai_client(), target=target, repair_window=0, correction_tokens=8)
    stream = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": PROMPT}], grammar="json", stream=True
    )
    pieces = contents(list(stream))
    assert "".join(pieces) == DOC
    assert stream.guide_result is not None and stream.guide_result.corrections == 1
    assert api.prefixes == ["", '{"a": [1, 2, 3],']
