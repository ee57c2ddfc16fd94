"""wrap(client): the real SDKs against the local protocol servers (tests/support/servers.py)."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from anthropic.types import Message
from openai.types.chat import ChatCompletion

from backtrack import GuideResult, wrap
from tests.support.servers import text

MESSAGES = [{"role": "user", "content": "A JSON object with key a, please."}]
ANSWER = '{"a": 1}'


def test_openai_grammar_call_returns_a_chat_completion(openai_server: Any, openai_client: Any):
    openai_server.script(text(ANSWER))
    client = wrap(openai_client())
    reply = client.chat.completions.create(model="m", messages=MESSAGES, grammar="json")
    assert isinstance(reply, ChatCompletion)
    assert reply.choices[0].message.content == ANSWER
    assert reply.choices[0].finish_reason == "stop"
    assert isinstance(reply.guide_result, GuideResult)
    assert reply.guide_result.valid and reply.guide_result.api_calls == 1
    assert "grammar" not in openai_server.bodies[0]


def test_a_response_format_schema_is_guided_like_grammar(openai_server: Any, openai_client: Any):
    """Issue 25: `response_format` went upstream untouched; now its schema is the run's grammar,
    and the request upstream carries no response_format (the run enforces it)."""
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    openai_server.script(text('Sure: {"a": 1}'))
    client = wrap(openai_client())
    fmt = {"type": "json_schema", "json_schema": {"name": "a", "schema": schema}}
    reply = client.chat.completions.create(model="m", messages=MESSAGES, response_format=fmt)
    assert reply.choices[0].message.content == '{"a": 1}'
    assert reply.guide_result.valid and reply.guide_result.api_calls == 1
    assert "response_format" not in openai_server.bodies[0]
    with pytest.raises(TypeError, match="not both"):
        client.chat.completions.create(
            model="m", messages=MESSAGES, response_format=fmt, grammar="json"
        )
    openai_server.script(text("plain words"))
    plain = client.chat.completions.create(
        model="m", messages=MESSAGES, response_format={"type": "text"}
    )
    assert plain.choices[0].message.content == "plain words"
    assert openai_server.bodies[-1]["response_format"] == {"type": "text"}


def test_openai_without_grammar_passes_through(openai_server: Any, openai_client: Any):
    openai_server.script(text("plain words, no grammar"))
    client = wrap(openai_client())
    reply = client.chat.completions.create(model="m", messages=MESSAGES)
    assert reply.choices[0].message.content == "plain words, no grammar"
    assert not hasattr(reply, "guide_result")
    assert client.models is client._inner.models  # everything else is the client's own


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_mistyped_option_is_a_type_error_before_any_request(
    kind: str, openai_server: Any, openai_client: Any, anthropic_server: Any, anthropic_client: Any
):
    server = openai_server if kind == "openai" else anthropic_server
    if kind == "openai":
        create = wrap(openai_client()).chat.completions.create
    else:
        create = wrap(anthropic_client()).messages.create
    with pytest.raises(TypeError, match=r"max_correction.*did you mean 'max_corrections'"):
        create(model="m", messages=MESSAGES, max_tokens=50, grammar="json", max_correction=2)
    assert server.bodies == []


def test_several_choices_are_refused_before_any_request(openai_server: Any, openai_client: Any):
    create = wrap(openai_client()).chat.completions.create
    with pytest.raises(ValueError, match="one choice: n must be 1, not 2"):
        create(model="m", messages=MESSAGES, grammar="json", n=2)
    assert openai_server.bodies == []


def test_anthropic_grammar_call_returns_a_message(anthropic_server: Any, anthropic_client: Any):
    anthropic_server.script(text(ANSWER))
    client = wrap(anthropic_client())
    reply = client.messages.create(
        model="m", max_tokens=64, system="Answer in JSON.", messages=MESSAGES, grammar="json"
    )
    assert isinstance(reply, Message)
    assert reply.content[0].text == ANSWER
    assert reply.guide_result.valid
    body = anthropic_server.bodies[0]
    assert body["system"] == "Answer in JSON."
    assert body["max_tokens"] == 64


@pytest.mark.anyio
async def test_async_clients(
    openai_server: Any, openai_client: Any, anthropic_server: Any, anthropic_client: Any
):
    openai_server.script(text(ANSWER))
    anthropic_server.script(text(ANSWER))
    async with openai_client(asynchronous=True) as raw_openai:
        chat = await wrap(raw_openai).chat.completions.create(
            model="m", messages=MESSAGES, grammar="json"
        )
    async with anthropic_client(asynchronous=True) as raw_anthropic:
        message = await wrap(raw_anthropic).messages.create(
            model="m", max_tokens=64, messages=MESSAGES, grammar="json"
        )
    assert chat.choices[0].message.content == ANSWER
    assert message.content[0].text == ANSWER


def test_wrap_refuses_other_objects():
    with pytest.raises(TypeError, match="OpenAI or Anthropic"):
        wrap(object())


@pytest.mark.parametrize(
    "messages",
    [None, "a bare string", [1], [{"content": "no role"}], ({"role": "user"},)],
    ids=["none", "str", "int-item", "no-role", "no-content"],
)
@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_bad_messages_are_refused_before_any_request(
    kind: str,
    messages: Any,
    openai_server: Any,
    openai_client: Any,
    anthropic_server: Any,
    anthropic_client: Any,
):
    if kind == "openai":
        server, client = openai_server, wrap(openai_client())
        create = client.chat.completions.create
    else:
        server, client = anthropic_server, wrap(anthropic_client())
        create = client.messages.create
    with pytest.raises(TypeError, match="messages= must be a list of chat messages"):
        create(model="m", max_tokens=8, messages=messages, grammar="json")
    with pytest.raises(TypeError, match="create\\(\\) needs model="):
        create(max_tokens=8, messages=MESSAGES, grammar="json")
    assert server.exchanges == []


@pytest.mark.slow  # a fresh interpreter imports torch: seconds
def test_importing_backtrack_does_not_import_the_sdks() -> None:
    # wrap()'s types name the SDKs' classes for type checkers only (backtrack.wire.guided_clients).
    code = "import backtrack, sys; print('openai' in sys.modules, 'anthropic' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
