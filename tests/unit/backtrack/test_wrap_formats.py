"""wrap(client) reads what the SDKs express (issue 25): OpenAI's Responses API
(`responses.create(text={"format": ...})` or `grammar=`) and Anthropic's structured outputs
(`output_format`, `output_config={"format": ...}`), guided and not sent upstream; a guided run's
usage is the sum of its drafts'. The real SDKs against the local protocol servers
(tests/support/servers.py), which replay scripted text and never read a grammar.
"""

from __future__ import annotations

from typing import Any

import pytest
from openai.types.responses import Response

from backtrack import GuideResult, wrap
from tests.support.servers import text

SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
FORMAT = {"type": "json_schema", "name": "a", "schema": SCHEMA, "strict": True}
MESSAGES = [{"role": "user", "content": "A JSON object with key a, please."}]


def test_responses_text_format_is_guided(openai_server: Any, openai_client: Any):
    openai_server.script(text('Sure! {"a": 1} is the object.'))
    client = wrap(openai_client())
    reply = client.responses.create(
        model="m",
        input="A JSON object with key a.",
        instructions="Answer in JSON.",
        text={"format": FORMAT, "verbosity": "low"},
        max_output_tokens=40,
        temperature=0.2,
    )
    assert isinstance(reply, Response)
    assert reply.output_text == '{"a": 1}'
    assert reply.status == "completed"
    assert isinstance(reply.guide_result, GuideResult)
    assert reply.guide_result.valid and reply.guide_result.api_calls == 1
    assert openai_server.bodies[0] == {
        "model": "m",
        "input": [
            {"role": "system", "content": "Answer in JSON."},
            {"role": "user", "content": "A JSON object with key a."},
        ],
        "max_output_tokens": 40,
        "stream": True,
        "temperature": 0.2,
        "text": {"verbosity": "low"},  # the format is the run's to enforce; the rest goes on
    }


def test_responses_usage_sums_the_drafts(openai_server: Any, openai_client: Any):
    """Two drafts (the first stops before the object closes), their usage added up."""
    openai_server.script(text('{"a": [1, 2', usage=(5, 3)), text(", 3]}", usage=(9, 2)))
    client = wrap(openai_client())
    reply = client.responses.create(model="m", input="hi", text={"format": {"type": "json_object"}})
    assert reply.output_text == '{"a": [1, 2, 3]}'
    assert reply.guide_result.api_calls == 2
    assert reply.usage is not None
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (14, 5)
    assert reply.usage.total_tokens == 19


def test_responses_grammar_and_pass_through(openai_server: Any, openai_client: Any):
    client = wrap(openai_client())
    openai_server.script(text("[1,2,3,]"))
    lark = 'start: "[" NUMBER ("," NUMBER)* "]"\n%import common.NUMBER'
    reply = client.responses.create(model="m", input="hi", grammar=lark)
    assert reply.output_text == "[1,2,3]"
    with pytest.raises(TypeError, match="not both"):
        client.responses.create(model="m", input="hi", text={"format": FORMAT}, grammar="json")
    openai_server.script(text("plain words"))
    plain = client.responses.create(model="m", input="hi", text={"format": {"type": "text"}})
    assert plain.output_text == "plain words"
    assert not hasattr(plain, "guide_result")
    assert openai_server.bodies[-1] == {
        "model": "m",
        "input": "hi",
        "text": {"format": {"type": "text"}},
    }


@pytest.mark.anyio
async def test_async_responses(openai_server: Any, openai_client: Any):
    openai_server.script(text('{"a": 1}', usage=(4, 2)))
    async with openai_client(asynchronous=True) as raw:
        reply = await wrap(raw).responses.create(model="m", input="hi", text={"format": FORMAT})
    assert reply.output_text == '{"a": 1}'
    assert reply.guide_result.valid
    assert reply.usage is not None and reply.usage.input_tokens == 4


ANTHROPIC_FORMAT = {"type": "json_schema", "schema": SCHEMA}


@pytest.mark.parametrize(
    ("asked", "left"),
    [
        ({"output_format": ANTHROPIC_FORMAT}, {}),
        (
            {"output_config": {"format": ANTHROPIC_FORMAT, "effort": "low"}},
            {"output_config": {"effort": "low"}},
        ),
        ({"extra_body": {"output_format": ANTHROPIC_FORMAT}}, {}),
    ],
    ids=["output_format", "output_config", "extra_body"],
)
def test_anthropic_structured_outputs_are_guided(
    asked: dict[str, Any], left: dict[str, Any], anthropic_server: Any, anthropic_client: Any
):
    anthropic_server.script(text('Here it is: {"a": 1}', usage=(6, 4)))
    reply = wrap(anthropic_client()).messages.create(
        model="m", max_tokens=64, messages=MESSAGES, **asked
    )
    assert reply.content[0].text == '{"a": 1}'
    assert reply.guide_result.valid
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (6, 4)
    body = anthropic_server.bodies[0]
    assert {
        k: v for k, v in body.items() if k not in ("model", "messages", "max_tokens", "stream")
    } == left


def test_chat_usage_is_asked_for_beside_the_callers_stream_options(
    openai_server: Any, openai_client: Any
):
    openai_server.script(text('{"a": [1', usage=(5, 3)), text("]}", usage=(8, 1)))
    reply = wrap(openai_client()).chat.completions.create(
        model="m",
        messages=MESSAGES,
        grammar="json",
        stream_options={"include_obfuscation": False},
    )
    assert reply.choices[0].message.content == '{"a": [1]}'
    assert reply.usage is not None
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (13, 4)
    kept = {"include_usage": True, "include_obfuscation": False}  # the caller's, usage asked
    assert [b["stream_options"] for b in openai_server.bodies] == [kept, kept]


TOOL = {"type": "function", "name": "forecast", "parameters": SCHEMA, "strict": True}


def test_what_wrap_does_not_guide_goes_to_the_sdk_as_it_is(
    openai_server: Any, openai_client: Any, anthropic_server: Any, anthropic_client: Any
):
    """The README's rows passed through: the Responses API with tools (their calls are not read),
    Anthropic's beta messages, and the SDK's own stream helpers reach the server unchanged and
    come back as the SDK's replies, with no GuideResult."""
    client = wrap(openai_client())
    openai_server.script(text("no tool needed"))
    reply = client.responses.create(model="m", input="hi", tools=[TOOL])
    assert reply.output_text == "no tool needed" and not hasattr(reply, "guide_result")
    assert openai_server.bodies[-1] == {"model": "m", "input": "hi", "tools": [TOOL]}
    openai_server.script(text("streamed as it is"))
    with client.chat.completions.stream(model="m", messages=MESSAGES) as stream:
        assert stream.get_final_completion().choices[0].message.content == "streamed as it is"
    assert openai_server.bodies[-1]["stream"] is True
    anthropic = wrap(anthropic_client())
    anthropic_server.script(text("beta words"))
    beta = anthropic.beta.messages.create(model="m", max_tokens=16, messages=MESSAGES)
    assert beta.content[0].text == "beta words" and not hasattr(beta, "guide_result")
    anthropic_server.script(text("stream helper words"))
    with anthropic.messages.stream(model="m", max_tokens=16, messages=MESSAGES) as events:
        assert events.get_final_message().content[0].text == "stream helper words"
