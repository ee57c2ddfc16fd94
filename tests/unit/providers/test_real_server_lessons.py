"""What real servers do that the plain protocol does not, through the real SDKs against the local
protocol servers (tests/support/servers.py), which replay fixed text and never read the grammar:

- reasoning in its own field (OpenAI-compatible `reasoning_content` / `reasoning` deltas,
  Anthropic `thinking` blocks): kept apart from the answer, shown in the trace;
- no usage in the stream (llama.cpp's server ignores `stream_options`): said to be unknown;
- the token limit ignored (llama.cpp's server ignores `max_completion_tokens`): the stream ends
  at the budget anyway;
- request ids of 32 hex digits (llama.cpp's): kept, while keys are masked.
"""

from __future__ import annotations

from typing import Any

import pytest

from backtrack import ProviderError, aguide, guide
from backtrack.cli.output import as_json
from backtrack.wire.shape import summary
from backtrack.wrap import wrap
from providers import AnthropicDrafter, OpenAIChatDrafter
from providers.base import DraftRequest
from tests.support.servers import MockServer, error, text

DOC = '{"city": "Oslo", "pop": 709000}'
# Reasoning that would break the answer if it were read as one, with markup to escape.
THOUGHT = 'The user wants {"city": ... <script>alert(1)</script>} so: Oslo, "pop" 709000.\n'


class NoTarget:
    def session(self, prompt: Any) -> Any:
        raise AssertionError("the local target was asked for a correction")


def _drafter(kind: str, request: pytest.FixtureRequest, *, asynchronous: bool = False) -> Any:
    if kind == "anthropic":
        client = request.getfixturevalue("anthropic_client")(asynchronous=asynchronous)
        return AnthropicDrafter(client, "claude-test")
    client = request.getfixturevalue("openai_client")(asynchronous=asynchronous)
    return OpenAIChatDrafter(client, "gpt-test")


def _wrapped_reply(openai_client: Any) -> Any:
    """A JSON reply through wrap() on the OpenAI SDK."""
    client = wrap(openai_client(), target=NoTarget())  # type: ignore[arg-type]
    return client.chat.completions.create(
        model="gpt-test",
        messages=[{"role": "user", "content": "Oslo as JSON"}],
        response_format={"type": "json_object"},
    )


# --------------------------------------------------------------------------- reasoning fields


@pytest.mark.parametrize(
    ("kind", "field"),
    [
        ("openai", "reasoning_content"),
        ("openai", "reasoning"),
        ("anthropic", "thinking"),
    ],
)
def test_reasoning_in_its_own_field_is_kept_apart_and_shown_folded(
    kind: str, field: str, request: pytest.FixtureRequest
) -> None:
    server: MockServer = request.getfixturevalue(f"{kind}_server")
    server.script(text(DOC, reasoning=THOUGHT * 20, reasoning_field=field, chunk_size=5))
    result = guide(_drafter(kind, request), "json", prompt="Oslo as JSON", target=NoTarget())  # type: ignore[arg-type]
    assert result.text == DOC and result.valid and result.api_calls == 1
    assert [(d.reason, d.text) for d in result.drops] == [("reasoning", THOUGHT * 20)]
    assert result.kept == 1.0 and result.lost_chars == 0
    page = result.to_html()
    assert "<script>alert(1)</script>" not in page
    assert f"<details><summary><b>reasoning</b>, {len(THOUGHT) * 20} characters" in page
    assert page.count("&lt;script&gt;alert(1)&lt;/script&gt;") >= 20  # whole, escaped


@pytest.mark.anyio
async def test_reasoning_deltas_through_aguide(openai_server: MockServer, openai_client: Any):
    openai_server.script(text(DOC, reasoning=THOUGHT, chunk_size=3))
    async with openai_client(asynchronous=True) as client:
        drafter = OpenAIChatDrafter(client, "gpt-test")
        result = await aguide(drafter, "json", prompt="Oslo as JSON", target=NoTarget())  # type: ignore[arg-type]
    assert result.text == DOC and result.api_calls == 1
    assert [(d.reason, d.text) for d in result.drops] == [("reasoning", THOUGHT)]


def test_a_wrapped_reply_has_no_reasoning_in_its_content_and_no_made_up_usage(
    openai_server: MockServer, openai_client: Any
) -> None:
    """The reasoning is in the reply's trace only; a server that reported no usage gives the
    reply `usage: null` (as such a server's own replies), not 0/0."""
    openai_server.script(text(DOC, reasoning=THOUGHT, no_usage=True))
    reply = _wrapped_reply(openai_client)
    assert reply.choices[0].message.content == DOC
    assert reply.usage is None
    drops = reply.guide_result.drops  # type: ignore[attr-defined]
    assert [(d.reason, d.text) for d in drops] == [("reasoning", THOUGHT)]


# --------------------------------------------------------------------------- usage


def test_a_stream_without_usage_makes_the_usage_unknown(
    openai_server: MockServer, openai_client: Any
) -> None:
    """llama.cpp's server sends no usage whatever `stream_options` says: before, 0/0 read as
    counted; now the usage says it is not known, and the outputs say so."""
    openai_server.script(text(DOC, no_usage=True))
    drafter = OpenAIChatDrafter(openai_client(), "gpt-test")
    result = guide(drafter, "json", prompt="Oslo as JSON", target=NoTarget())  # type: ignore[arg-type]
    assert result.text == DOC
    assert not result.usage.known
    assert as_json(result)["usage"] == {"input_tokens": 0, "output_tokens": 0, "known": False}
    assert summary(result)["usage_known"] is False
    assert "not reported" in result.to_html()


def test_a_stream_with_usage_is_known(openai_server: MockServer, openai_client: Any):
    openai_server.script(text(DOC, usage=(11, 5)))
    result = guide(OpenAIChatDrafter(openai_client(), "m"), "json", target=NoTarget())  # type: ignore[arg-type]
    assert result.usage.known and (result.usage.input_tokens, result.usage.output_tokens) == (11, 5)
    assert as_json(result)["usage"] == {"input_tokens": 11, "output_tokens": 5, "known": True}


# --------------------------------------------------------------------------- the token budget


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_server_that_ignores_the_token_limit_is_cut_at_the_budget(
    kind: str, request: pytest.FixtureRequest
) -> None:
    """The scripted server, like llama.cpp's for `max_completion_tokens`, sends its whole reply
    whatever the limit: 200 events. The stream ends after 10 (the budget), as "length", and the
    request is closed: the server sends no more."""
    server: MockServer = request.getfixturevalue(f"{kind}_server")
    server.script(text("1, " * 200, chunk_size=3, delay=0.002))
    stream = _drafter(kind, request).draft(DraftRequest(prompt="numbers", max_tokens=10))
    assert "".join(stream) == "1, " * 10
    assert stream.finish_reason == "length"
    (exchange,) = server.wait()
    assert exchange.client_closed and exchange.chunks_sent < 200
    # A reply within the budget is read whole, its own finish reason kept.
    server.script(text("1, " * 10, chunk_size=3))
    stream = _drafter(kind, request).draft(DraftRequest(prompt="numbers", max_tokens=10))
    assert "".join(stream) == "1, " * 10 and stream.finish_reason == "stop"


def test_reasoning_events_count_toward_the_budget(
    openai_server: MockServer, openai_client: Any
) -> None:
    openai_server.script(text(DOC, reasoning="hm " * 200, chunk_size=3, delay=0.002))
    stream = OpenAIChatDrafter(openai_client(), "m").draft(DraftRequest("q", max_tokens=10))
    assert list(stream) == []
    assert stream.reasoning == "hm " * 10 and stream.finish_reason == "length"


# --------------------------------------------------------------------------- request ids

HEX_ID = "0f3c2a9b8d7e6f5a4b3c2d1e0f9a8b7c"  # llama.cpp's x-request-id: uuid4().hex
KEY = "sk-live-0123456789abcdefABCDEF"


def test_a_hex_request_id_survives_while_the_key_is_masked(
    openai_server: MockServer, openai_client: Any
) -> None:
    openai_server.script(
        error(
            401,
            f"Incorrect API key provided: {KEY}; also 9f8e7d6c5b4a39281706f5e4d3c2b1a0 "
            f"(completion chatcmpl-{HEX_ID})",
            headers={"x-request-id": HEX_ID},
        )
    )
    drafter = OpenAIChatDrafter(openai_client(), "gpt-test")
    with pytest.raises(ProviderError) as caught:
        guide(drafter, "json", prompt="Oslo as JSON", target=NoTarget())  # type: ignore[arg-type]
    exc = caught.value
    assert exc.request_id == HEX_ID
    assert f"request id {HEX_ID}" in str(exc)
    assert f"chatcmpl-{HEX_ID}" in str(exc)
    assert KEY not in str(exc) and "9f8e7d6c5b4a39281706f5e4d3c2b1a0" not in str(exc)
    assert exc.partial is not None
    (last,) = exc.partial.trace.rounds
    assert last.error is not None and HEX_ID in last.error and KEY not in last.error
