"""A client's budgets are capped by the server's (issue 24): `max_tokens` of 10**9 (OpenAI chat,
completions, Responses' `max_output_tokens`, Anthropic's `max_tokens`) or `backtrack` budgets of
10**9, against an upstream that never stops, through the real SDKs to `backtrack serve` on
127.0.0.1. Before, each such request read the endless stream until the server's time limit (a 504)
and held about 100 bytes of parser state per byte read; now each draft asks for and reads at most
the server's own budget, and the reply comes back with a bounded text.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import anthropic
import openai
import pytest

from backtrack.run.options import GuideOptions
from backtrack.serve.app import ServeConfig, ServeLimits
from backtrack.wire.shape import UpstreamKind
from tests.support.serve_server import running
from tests.support.servers import MockServer, text

KEY = "sk-client-key-0123456789abcdef"
HUGE = 10**9
# The server's budgets: two drafts of 8 tokens (the loop reads at most 32 characters a token).
SERVER = GuideOptions(max_draft_tokens=8, max_rounds=2, complete_on_budget=False)
MOST_CHARS = SERVER.max_rounds * SERVER.max_draft_tokens * 32
SCHEMA = {"type": "string"}
# A JSON string that never closes, continued as such: every draft fits, and none ends.
FIRST, GO_ON = text('"', endless="a"), text("", endless="a")


@pytest.fixture
def server(openai_server: MockServer) -> Iterator[Callable[[UpstreamKind], str]]:
    """`server(kind)`: the URL of a server with SERVER's budgets forwarding to openai_server,
    which answers the first request with FIRST and the others with GO_ON; the run's limit (30 s)
    is far past a capped run."""
    replies = iter([FIRST])
    openai_server.responder = lambda body: next(replies, GO_ON)
    contexts: list[Any] = []

    def start(kind: UpstreamKind) -> str:
        config = ServeConfig(openai_server.url, kind, None, ServeLimits(timeout=30.0), SERVER)
        contexts.append(running(config))
        url: str = contexts[-1].__enter__()
        return url

    yield start
    for context in reversed(contexts):
        context.__exit__(None, None, None)


def _chat(url: str) -> str:
    client = openai.OpenAI(base_url=f"{url}/v1", api_key=KEY, max_retries=0)
    with client:
        reply = client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "Numbers."}],
            max_tokens=HUGE,
            extra_body={"guided_json": SCHEMA},
        )
    return reply.choices[0].message.content or ""


def _completions(url: str) -> str:
    client = openai.OpenAI(base_url=f"{url}/v1", api_key=KEY, max_retries=0)
    with client:
        reply = client.completions.create(
            model="m", prompt="Numbers: ", max_tokens=HUGE, extra_body={"guided_json": SCHEMA}
        )
    return reply.choices[0].text


def _responses(url: str) -> str:
    client = openai.OpenAI(base_url=f"{url}/v1", api_key=KEY, max_retries=0)
    with client:
        reply = client.responses.create(
            model="m",
            input="Numbers.",
            max_output_tokens=HUGE,
            extra_body={"guided_json": SCHEMA},
        )
    return reply.output_text


def _anthropic(url: str) -> str:
    client = anthropic.Anthropic(base_url=url, api_key=KEY, max_retries=0)
    # Streamed: the SDK refuses a whole reply of 10**9 tokens (it might take past 10 minutes).
    with (
        client,
        client.messages.stream(
            model="m",
            max_tokens=HUGE,
            messages=[{"role": "user", "content": "Numbers."}],
            extra_body={"guided_json": SCHEMA},
        ) as stream,
    ):
        return stream.get_final_text()


def _budgets_by_name(url: str) -> str:
    """Every budget of GuideOptions asked for by name, each far past the server's."""
    client = openai.OpenAI(base_url=f"{url}/v1", api_key=KEY, max_retries=0)
    huge = {"max_draft_tokens": HUGE, "max_rounds": HUGE, "max_corrections": HUGE}
    with client:
        reply = client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "Numbers."}],
            extra_body={"guided_json": SCHEMA, "backtrack": huge},
        )
    return reply.choices[0].message.content or ""


ASKED: dict[str, tuple[UpstreamKind, Callable[[str], str], str]] = {
    "chat max_tokens": ("openai", _chat, "max_tokens"),
    "completions max_tokens": ("openai", _completions, "max_tokens"),
    "responses max_output_tokens": ("openai", _responses, "max_output_tokens"),
    "anthropic max_tokens": ("anthropic", _anthropic, "max_tokens"),
    "backtrack budgets": ("openai", _budgets_by_name, "max_tokens"),
}


@pytest.mark.parametrize("case", list(ASKED))
def test_a_clients_huge_budget_is_capped_by_the_servers(
    server: Callable[[UpstreamKind], str], openai_server: MockServer, case: str
) -> None:
    kind, ask, param = ASKED[case]
    got = ask(server(kind))
    assert got.startswith('"aaaa') and len(got) <= MOST_CHARS
    asked = [e.body[param] for e in openai_server.exchanges]
    assert asked == [SERVER.max_draft_tokens] * SERVER.max_rounds  # no draft asks for more
    assert all(e.client_closed for e in openai_server.wait())  # each endless stream closed
