"""A grammar compile past `--compile-timeout` stops its work (issue 24): `backtrack serve` compiles
each new grammar first in a worker process (backtrack.serve.compile_workers), killed past the
limit. Before, the 400 came at the limit while the compile ran on to its end in a thread of the
server (llguidance's limits do not bound it; a thread cannot be stopped): 8 s of CPU after the
reply in the issue's probe.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import openai
import pytest

from backtrack.serve.app import ServeConfig, ServeLimits
from backtrack.serve.compile_workers import TRIALS
from backtrack.serve.fields import GrammarSpec
from grammars import Grammar, GrammarError, GrammarLimits
from tests.support.serve_server import running
from tests.support.servers import MockServer, text

MESSAGES = [{"role": "user", "content": "Some keys."}]
LIMIT = 0.3


def costly_schema() -> dict[str, Any]:
    """Within every limit judged before compiling (eight objects of 128 patternProperties, 48 KB),
    and seconds to compile: the engine's cost grows as the cube of an object's patterns."""

    def patterned(j: int) -> dict[str, Any]:
        patterns = {f"^p{j}_{i}_[a-z0-9]{{2,8}}$": {"type": "integer"} for i in range(128)}
        return {"type": "object", "patternProperties": patterns}

    return {"type": "object", "properties": {f"o{j}": patterned(j) for j in range(8)}}


@pytest.fixture
def client(openai_server: MockServer) -> Iterator[openai.OpenAI]:
    config = ServeConfig(openai_server.url, limits=ServeLimits(compile_seconds=LIMIT))
    with (
        running(config) as url,
        openai.OpenAI(base_url=f"{url}/v1", api_key="sk-test", max_retries=0) as sdk,
    ):
        yield sdk


def compiling_threads() -> list[str]:
    """The engine's compile threads alive in this process (grammars.engine names them)."""
    return [t.name for t in threading.enumerate() if t.name == "backtrack-compile"]


def test_a_compile_past_its_limit_is_a_400_and_its_work_stops(
    client: openai.OpenAI, openai_server: MockServer
) -> None:
    schema = costly_schema()
    assert len(json.dumps(schema)) < ServeLimits().max_grammar_bytes
    with pytest.raises(openai.BadRequestError) as refused:
        client.chat.completions.create(
            model="m", messages=MESSAGES, extra_body={"guided_json": schema}
        )
    error = refused.value.body
    assert isinstance(error, dict) and error["code"] == "grammar_too_costly"
    assert error["message"] == (
        f"the grammar in `guided_json` took longer than {LIMIT:g} s to compile"
    )
    assert openai_server.exchanges == []  # refused before any upstream call
    time.sleep(LIMIT)
    assert compiling_threads() == []  # the server's process never compiles it
    # The next grammar gets a worker of its own and is guided as usual.
    openai_server.script(text('{"a": 1}'))
    reply = client.chat.completions.create(
        model="m", messages=MESSAGES, response_format={"type": "json_object"}
    )
    assert reply.choices[0].message.content == '{"a": 1}'


@dataclass(frozen=True)
class _Crashing(GrammarSpec):
    """A grammar whose compile ends the process that runs it (as an engine crash would)."""

    def compile(self, limits: GrammarLimits) -> Grammar:
        os._exit(3)


def test_a_compile_that_ends_its_worker_is_a_grammar_error_that_says_so() -> None:
    with pytest.raises(GrammarError, match=r"the engine failed on this grammar .*exit code 3\)"):
        TRIALS.trial(_Crashing("lark", "start: 'a'", "grammar"), GrammarLimits(), 30.0)
    assert TRIALS.trial(GrammarSpec("lark", "start: 'a'", "grammar"), GrammarLimits(), 30.0)
