"""OpenAIResponsesDrafter and the chat drafter's `stream_options`, through the real OpenAI SDK
against the local protocol server (tests/support/servers.py), which streams the Responses API's
events as the API does: response.created ... response.output_text.delta ... response.completed.
"""

from __future__ import annotations

from typing import Any

import pytest

from providers import DraftRequest, OpenAIChatDrafter, OpenAIResponsesDrafter, ProviderError
from providers.align import CONTINUE_INSTRUCTION
from tests.support.servers import MockServer, text


def test_responses_streams_text_usage_and_finish(openai_server: MockServer, openai_client: Any):
    openai_server.script(text('{"name": "Ada"}', chunk_size=3, usage=(11, 5)))
    drafter = OpenAIResponsesDrafter(openai_client(), "gpt-test", temperature=0.5)
    assert not drafter.capabilities.prefill
    stream = drafter.draft(DraftRequest(prompt="A person as JSON", max_tokens=64))
    assert "".join(stream) == '{"name": "Ada"}'
    assert (stream.usage.input_tokens, stream.usage.output_tokens) == (11, 5)
    assert stream.finish_reason == "stop"
    assert stream.request_id is not None and stream.request_id.startswith("req_")
    assert openai_server.bodies[0] == {
        "model": "gpt-test",
        "input": [{"role": "user", "content": "A person as JSON"}],
        "max_output_tokens": 64,
        "stream": True,
        "temperature": 0.5,
    }


def test_responses_asks_to_continue_and_aligns(openai_server: MockServer, openai_client: Any):
    prefix = '{"name": "Ada", "born": '
    openai_server.script(
        text('```json\n{"name": "Ada", "born": 1815}\n```', finish_reason="length")
    )
    stream = OpenAIResponsesDrafter(openai_client(), "m").draft(
        DraftRequest(prompt=[{"role": "system", "content": "JSON only."}], prefix=prefix)
    )
    assert "".join(stream) == "1815}\n```"
    assert stream.finish_reason == "length"  # response.incomplete: max_output_tokens
    sent = openai_server.bodies[0]["input"]
    assert sent[:2] == [
        {"role": "system", "content": "JSON only."},
        {"role": "assistant", "content": prefix},
    ]
    assert sent[2]["content"].startswith(CONTINUE_INSTRUCTION)


@pytest.mark.parametrize(("code", "retryable"), [("server_error", True), ("invalid_prompt", False)])
def test_an_error_event_is_a_provider_error(
    code: str, retryable: bool, openai_server: MockServer, openai_client: Any
):
    """The SDK yields the Responses API's `error` event as an event, not an exception."""
    openai_server.script(text("abcdefgh", stream_error=code, disconnect_after=1))
    stream = OpenAIResponsesDrafter(openai_client(), "m").draft(DraftRequest(prompt="p"))
    with pytest.raises(ProviderError, match=f"{code} in the stream") as failed:
        list(stream)
    assert failed.value.retryable is retryable
    assert failed.value.request_id == stream.request_id


def test_a_failed_response_is_a_retryable_provider_error(
    openai_server: MockServer, openai_client: Any
):
    openai_server.script(text("abc", finish_reason="failed"))
    stream = OpenAIResponsesDrafter(openai_client(), "m").draft(DraftRequest(prompt="p"))
    with pytest.raises(
        ProviderError, match="server_error in the stream: scripted failure"
    ) as failed:
        list(stream)
    assert failed.value.retryable


@pytest.mark.anyio
async def test_responses_async(openai_server: MockServer, openai_client: Any):
    openai_server.script(text("[1, 2]", usage=(3, 2)))
    async with openai_client(asynchronous=True) as client:
        stream = await OpenAIResponsesDrafter(client, "m").adraft(DraftRequest(prompt="p"))
        assert "".join([piece async for piece in stream]) == "[1, 2]"
    assert (stream.usage.input_tokens, stream.usage.output_tokens) == (3, 2)


def test_chat_keeps_the_callers_stream_options_and_asks_for_usage(
    openai_server: MockServer, openai_client: Any
):
    """Issue 25: a caller's `stream_options` replaced the drafter's, or the drafter's replaced
    the caller's; now both go, usage asked for unless the caller says otherwise."""
    openai_server.script(text("ab", usage=(4, 1)), text("ab", usage=(4, 1)))
    client = openai_client()
    kept = OpenAIChatDrafter(client, "m", stream_options={"include_obfuscation": False})
    stream = kept.draft(DraftRequest(prompt="p"))
    assert "".join(stream) == "ab"
    assert (stream.usage.input_tokens, stream.usage.output_tokens) == (4, 1)
    declined = OpenAIChatDrafter(client, "m", stream_options={"include_usage": False})
    assert "".join(declined.draft(DraftRequest(prompt="p"))) == "ab"
    assert [body["stream_options"] for body in openai_server.bodies] == [
        {"include_usage": True, "include_obfuscation": False},
        {"include_usage": False},
    ]
