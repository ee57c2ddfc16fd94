"""`backtrack serve` (under uvicorn on 127.0.0.1, a MockServer upstream) on deeply nested requests:
a body nested past MAX_BODY_DEPTH, or a schema past the library's depth (by nesting or by a `$ref`
chain), is a 400 that says how deep and where; never a 500 from a RecursionError."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx2
import openai
import pytest

from backtrack.serve.app import MAX_BODY_DEPTH, ServeConfig
from tests.support.serve_server import running
from tests.support.servers import MockServer, text

MESSAGES = [{"role": "user", "content": "A list."}]
CHAT = "/v1/chat/completions"


@pytest.fixture
def url(openai_server: MockServer) -> Iterator[str]:
    with running(ServeConfig(openai_server.url)) as base:
        yield base


def post(base: str, body: bytes) -> httpx2.Response:
    with httpx2.Client() as client:
        return client.post(
            base + CHAT, content=body, headers={"content-type": "application/json"}, timeout=30
        )


def nested_items(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "integer"}
    for _ in range(depth):
        schema = {"type": "array", "items": schema}
    return schema


def guided(schema: Any) -> bytes:
    """A chat request whose response_format is `schema` (as JSON text: json.dumps recurses)."""
    head = '{"model": "m", "messages": %s, "response_format": {"type": "json_schema", '
    head += '"json_schema": {"name": "deep", "schema": '
    inner = schema if isinstance(schema, str) else json.dumps(schema)
    return (head % json.dumps(MESSAGES) + inner + "}}}").encode()


PREFIX = b'{"model": "m", "messages": [], "extra": '


@pytest.mark.parametrize("depth", [5_000, 100_000])
def test_a_body_nested_deep_is_a_400_that_names_the_limit(url: str, depth: int):
    reply = post(url, PREFIX + b"[" * depth + b"]" * depth + b"}")
    assert reply.status_code == 400
    error = reply.json()["error"]
    assert error["code"] == "invalid_request"
    # the body's own object is the first level; the bracket past the limit is at byte 295
    past = len(PREFIX) + MAX_BODY_DEPTH - 1
    assert error["message"] == (
        f"the body nests arrays and objects more than {MAX_BODY_DEPTH} levels deep "
        f"(at byte {past}); this server takes at most {MAX_BODY_DEPTH}"
    )


def test_a_body_within_the_limit_passes_through(url: str, openai_server: MockServer):
    openai_server.script(text("fine"))
    depth = MAX_BODY_DEPTH - 1
    reply = post(url, PREFIX + b"[" * depth + b"]" * depth + b"}")
    assert reply.status_code == 200
    assert reply.json()["choices"][0]["message"]["content"] == "fine"


def test_brackets_in_strings_do_not_count(url: str, openai_server: MockServer):
    """Through the real SDK, as a client writes them."""
    openai_server.script(text("fine"))
    with openai.OpenAI(base_url=f"{url}/v1", api_key="sk-test", max_retries=0) as client:
        content = '[{"' * 5_000 + '\\"'
        reply = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": content}]
        )
    assert reply.choices[0].message.content == "fine"
    assert openai_server.bodies[0]["messages"][0]["content"] == content


def test_a_schema_nested_2000_deep_is_a_400(url: str):
    """The body parser refuses it before anything reads the schema."""
    reply = post(url, guided('{"type": "array", "items": ' * 2_000 + "{}" + "}" * 2_000))
    assert reply.status_code == 400
    assert f"more than {MAX_BODY_DEPTH} levels deep (at byte " in reply.json()["error"]["message"]


def test_a_schema_past_the_engine_depth_is_a_400_that_says_where(url: str):
    reply = post(url, guided(nested_items(200)))
    assert reply.status_code == 400
    assert reply.json()["error"]["code"] == "invalid_grammar"
    message = reply.json()["error"]["message"]
    assert "the JSON schema is nested more than 124 levels deep at byte 3,348" in message


def test_a_ref_chain_of_500_is_a_400_that_says_where(url: str):
    defs = {f"d{i}": {"$ref": f"#/$defs/d{i + 1}"} for i in range(499)}
    defs["d499"] = {"type": "string"}
    body = guided({"$ref": "#/$defs/d0", "$defs": defs})
    assert len(body) > 16_000
    reply = post(url, body)
    assert reply.status_code == 400
    message = reply.json()["error"]["message"]
    assert (
        "each `$ref` counted as a level: it passes 124 at '#/$defs/d124', after 125 `$ref`s"
        in message
    )


def test_a_schema_of_600_optional_properties_is_a_400_that_says_why(url: str):
    # 25 KB of schema; checking a draft that named 300 of its keys held the server's GIL for
    # seconds and stalled /health
    properties = {f"property_{i:04d}": {"type": "string"} for i in range(600)}
    body = guided({"type": "object", "properties": properties})
    assert len(body) > 20_000
    reply = post(url, body)
    assert reply.status_code == 400
    error = reply.json()["error"]
    assert error["code"] == "invalid_grammar"
    assert "the object at '#' has 600 optional properties" in error["message"]


def test_a_schema_of_300_pattern_properties_is_a_400_that_says_why(url: str):
    # it took 30 s to compile, and went on after its 400 for passing the compile time limit
    patterns = {f"^prefix_{i}_[a-z0-9]{{2,8}}$": {"type": "string"} for i in range(300)}
    reply = post(url, guided({"type": "object", "patternProperties": patterns}))
    assert reply.status_code == 400
    error = reply.json()["error"]
    assert error["code"] == "invalid_grammar"
    assert "the object at '#' has 300 patternProperties" in error["message"]
