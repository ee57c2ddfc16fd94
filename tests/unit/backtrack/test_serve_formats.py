"""`backtrack serve` reads what the SDKs express (issue 25): `POST /v1/responses` guided by
`text.format` (or `grammar`), whole and streamed as the Responses API streams, passed through
without one; Anthropic's `output_format` and `output_config.format` guided on `/v1/messages`.
The real SDKs against the server under uvicorn, a MockServer (tests/support/servers.py) upstream
that replays scripted text and never reads the grammar.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from backtrack.serve.app import ServeConfig
from backtrack.wire.shape import UpstreamKind
from tests.support.serve_server import running
from tests.support.servers import MockServer, responses_stream_text, text

KEY = "sk-client-key-0123456789abcdef"
SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
    "additionalProperties": False,
}
FORMAT = {"type": "json_schema", "name": "cat", "schema": SCHEMA, "strict": True}
SLIP = '{"name": "Felix", "age": 3,}'  # the comma before } is what an edit mends
MENDED = '{"name": "Felix", "age": 3}'
MESSAGES = [{"role": "user", "content": "A cat as JSON."}]


@pytest.fixture
def serve(openai_server: MockServer) -> Iterator[Callable[[UpstreamKind], str]]:
    started: list[Any] = []

    def start(kind: UpstreamKind) -> str:
        started.append(running(ServeConfig(openai_server.url, kind)))
        url: str = started[-1].__enter__()
        return url

    yield start
    for context in reversed(started):
        context.__exit__(None, None, None)


@pytest.fixture
def oai(serve: Callable[[UpstreamKind], str]) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=f"{serve('openai')}/v1", api_key=KEY, max_retries=0) as client:
        yield client


def test_responses_text_format_is_guided(oai: openai.OpenAI, openai_server: MockServer):
    openai_server.script(text(SLIP, usage=(7, 5)))
    reply = oai.responses.create(
        model="m",
        input="A cat as JSON.",
        text={"format": FORMAT},
        max_output_tokens=64,
    )
    assert reply.output_text == MENDED
    assert reply.status == "completed"
    assert reply.usage is not None
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (7, 5)
    summary = (reply.model_extra or {})["backtrack"]
    assert summary["valid"] and summary["edits"] == 1 and summary["api_calls"] == 1
    upstream = openai_server.exchanges[0]
    assert upstream.path == "/v1/responses"
    assert upstream.body["max_output_tokens"] == 64 and upstream.body["stream"] is True
    assert "text" not in upstream.body
    assert upstream.headers["authorization"] == f"Bearer {KEY}"


def test_responses_stream_as_the_api_does(oai: openai.OpenAI, openai_server: MockServer):
    openai_server.script(text(SLIP))
    events = list(
        oai.responses.create(
            model="m", input="A cat.", stream=True, text={"format": {"type": "json_object"}}
        )
    )
    assert responses_stream_text(events) == MENDED
    done = events[-1]
    assert done.type == "response.completed"
    assert done.response.output_text == MENDED
    assert (done.model_extra or {})["backtrack"]["valid"]
    # The SDK's own stream helper reads the same events into its final Response.
    openai_server.script(text(SLIP))
    with oai.responses.stream(model="m", input="A cat.", text={"format": FORMAT}) as stream:
        final = stream.get_final_response()
    assert final.output_text == MENDED


def test_responses_without_a_format_pass_through(oai: openai.OpenAI, openai_server: MockServer):
    openai_server.script(text("plain words"))
    sent = {"model": "m", "input": "hi", "temperature": 0.3}
    reply = oai.responses.create(**sent)
    assert reply.output_text == "plain words"
    assert reply.id == "resp_1"  # the upstream's own
    assert openai_server.bodies[0] == sent


def test_responses_format_is_checked(oai: openai.OpenAI, openai_server: MockServer):
    with pytest.raises(openai.BadRequestError, match=r"text\.format\.type must be") as refused:
        oai.responses.create(model="m", input="hi", text={"format": {"type": "xml"}})
    assert refused.value.param == "text.format"
    assert openai_server.bodies == []


ANTHROPIC_FORMAT = {"type": "json_schema", "schema": SCHEMA}


@pytest.mark.parametrize(
    "asked",
    [
        {"output_config": {"format": ANTHROPIC_FORMAT}},
        {"extra_body": {"output_format": ANTHROPIC_FORMAT}},
    ],
    ids=["output_config", "output_format"],
)
def test_anthropic_structured_outputs_are_guided(
    asked: dict[str, Any], serve: Callable[[UpstreamKind], str], openai_server: MockServer
):
    openai_server.script(text(SLIP, usage=(9, 6)))
    with anthropic.Anthropic(base_url=serve("anthropic"), api_key=KEY, max_retries=0) as client:
        reply = client.messages.create(model="m", max_tokens=64, messages=MESSAGES, **asked)
    assert reply.content[0].text == MENDED
    assert (reply.model_extra or {})["backtrack"]["valid"]
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (9, 6)
    body = openai_server.bodies[0]
    assert "output_format" not in body and "output_config" not in body


def test_a_grammar_field_on_the_responses_route(
    serve: Callable[[UpstreamKind], str], openai_server: MockServer
):
    openai_server.script(text("[1,2,3,]"))
    lark = 'start: "[" NUMBER ("," NUMBER)* "]"\n%import common.NUMBER'
    body = {"model": "m", "input": "Three numbers.", "grammar": lark}
    with httpx2.Client() as http:
        reply = http.post(f"{serve('openai')}/v1/responses", json=body).json()
    assert reply["output"][0]["content"][0]["text"] == "[1,2,3]"
    assert reply["backtrack"]["edits"] == 1
