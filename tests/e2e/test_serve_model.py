"""`backtrack serve` with the real SmolLM2 target: a draft the grammar refuses is corrected by the
local model, and the streamed reply is the same text as the whole one."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from backtrack.serve.app import ServeConfig
from grammars import Grammar
from local_target import LocalTarget
from tests.support.serve_server import running
from tests.support.servers import MockServer

SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
    "additionalProperties": False,
}
FIRST = '{"name": "Felix", "age": "three"}'  # a string where the schema takes an integer


@pytest.fixture
def client(openai_server: MockServer, smollm2: LocalTarget) -> Iterator[openai.OpenAI]:
    def respond(body: Any) -> str:
        asked = json.dumps(body["messages"][-1])
        return "}" if "Continue" in asked else FIRST  # the API finishes what the target began

    openai_server.responder = respond
    with running(ServeConfig(openai_server.url), smollm2) as url:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="sk-test", max_retries=0)
        with client:
            yield client


def test_a_correction_by_the_target_streams_as_it_is_returned_whole(client: openai.OpenAI):
    ask: dict[str, Any] = {
        "model": "m",
        "messages": [{"role": "user", "content": "A cat as JSON."}],
        "extra_body": {"guided_json": SCHEMA, "backtrack": {"repair_window": 0}},
    }
    whole = client.chat.completions.create(**ask)
    summary = whole.model_extra["backtrack"]  # type: ignore[index]
    assert summary["valid"] and summary["corrections"] >= 1 and summary["local_tokens"] >= 1
    text = whole.choices[0].message.content or ""
    assert text.startswith('{"name": "Felix", "age": ') and Grammar.from_json_schema(
        SCHEMA
    ).matches(text)
    chunks = list(client.chat.completions.create(**ask, stream=True))
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == text
    streamed = dict(chunks[-1].model_extra["backtrack"])  # type: ignore[index]
    assert streamed.pop("seconds") > 0
    assert streamed == {k: v for k, v in summary.items() if k != "seconds"}
