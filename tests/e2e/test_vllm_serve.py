"""`backtrack serve --target vllm:URL`, the command line in its own process, with corrections on a
vLLM server running backtrack's logits processor: a scripted upstream drafts a reply the schema
refuses, vLLM corrects it, and the reply is the one `backtrack serve` gives with SmolLM2 in
process; requests sent at once each get their own. Skips, saying why, where vLLM's environment is
missing (tests/conftest.py, `vllm_url`)."""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import openai
import pytest

from backtrack.serve.app import ServeConfig
from grammars import Grammar
from local_target import LocalTarget
from tests.support.serve_process import serve_process
from tests.support.serve_server import running
from tests.support.servers import MockServer

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
    "additionalProperties": False,
}
NAMES = ("Felix", "Tom", "Luna", "Oscar", "Milo", "Nala", "Simba", "Cleo")


@pytest.fixture
def upstream(openai_server: MockServer) -> MockServer:
    def respond(body: Any) -> str:
        if "Continue" in json.dumps(body["messages"][-1]):
            return "}"  # the API finishes what the target began
        name = re.search(r"a cat named (\w+)", json.dumps(body["messages"]))
        return f'{{"name": "{name[1] if name else "?"}", "age": "three"}}'  # age: not an integer

    openai_server.responder = respond
    return openai_server


def guided(url: str, name: str) -> tuple[str, dict[str, Any]]:
    """The reply's text and its `backtrack` summary, for a cat named `name`."""
    with openai.OpenAI(base_url=f"{url}/v1", api_key="sk-test", max_retries=0) as client:
        reply = client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": f"Describe a cat named {name} as JSON."}],
            extra_body={"guided_json": SCHEMA, "backtrack": {"repair_window": 0}},
        )
    summary: dict[str, Any] = (reply.model_extra or {})["backtrack"]
    return reply.choices[0].message.content or "", summary


def test_a_draft_is_corrected_on_vllm_as_by_the_target_in_process(
    upstream: MockServer, vllm_url: str, smollm2: LocalTarget
) -> None:
    with running(ServeConfig(upstream.url), smollm2) as url:
        want = {name: guided(url, name)[0] for name in NAMES}
    with serve_process(upstream.url, "--target", f"vllm:{vllm_url}") as url:
        text, summary = guided(url, "Felix")
        assert summary["valid"] and summary["corrections"] >= 1 and summary["local_tokens"] >= 1
        assert text.startswith('{"name": "Felix", "age": ') and text == want["Felix"]
        assert Grammar.from_json_schema(SCHEMA).matches(text)
        with ThreadPoolExecutor(len(NAMES)) as pool:  # vLLM batches their corrections
            got = dict(zip(NAMES, pool.map(lambda name: guided(url, name)[0], NAMES), strict=True))
    assert got == want
