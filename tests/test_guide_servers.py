"""guide() and aguide() through the real OpenAI and Anthropic SDKs, against the local scripted
servers of tests/servers.py, with the real SmolLM2 target.

The servers answer like an API that means to write one document: a responder reads the committed
prefix out of each request (the instruction's last assistant message for OpenAI chat, the prompt
for the completions endpoint, the prefill message for Anthropic) and continues the document from
there. A test scripts what goes wrong before it: a first reply with a slip, a 429, a stream that
drops midway.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from servers import MockServer, Reply, disconnect, error, text
from test_guide import JSON, check_result, continuation, good_prefix

import grammars
from backtrack import Grammar, GuideResult, ProviderError, aguide, guide
from backtrack.trace import OUTPUT_ORIGINS
from local_target import LocalTarget
from providers import AnthropicDrafter, OpenAIChatDrafter, OpenAICompletionsDrafter, Usage
from providers.align import CONTINUE_INSTRUCTION

pytestmark = pytest.mark.e2e

DOC = '{"a": [1, 2, 3], "b": null}'
SLIP = '{"a": [1, 2, 3}, "b": null}'  # the first reply: a bracket closed with the wrong brace
PROMPT = f"Reply with this JSON value only:\n{DOC}"
SETTINGS = {"max_corrections": 2, "correction_tokens": 8, "completion_tokens": 24}
KINDS = ["openai-chat", "openai-completions", "anthropic"]


@pytest.fixture(autouse=True)
def _fresh_prefill_memory() -> Iterator[None]:
    AnthropicDrafter.forget_prefill_refusals()
    yield
    AnthropicDrafter.forget_prefill_refusals()


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, BaseException | None]]:
    """The retry policy's backoff, patched to zero; records what it was asked."""
    import providers.retry

    asked: list[tuple[int, BaseException | None]] = []

    def backoff(attempt: int, exc: BaseException | None) -> float:
        asked.append((attempt, exc))
        return 0.0

    monkeypatch.setattr(providers.retry, "backoff", backoff)
    return asked


def server_of(kind: str, request: pytest.FixtureRequest) -> MockServer:
    name = "anthropic_server" if kind == "anthropic" else "openai_server"
    server: MockServer = request.getfixturevalue(name)
    return server


def drafter_of(kind: str, request: pytest.FixtureRequest, *, asynchronous: bool = False) -> Any:
    if kind == "anthropic":
        client = request.getfixturevalue("anthropic_client")(asynchronous=asynchronous)
        return AnthropicDrafter(client, "claude-test")
    client = request.getfixturevalue("openai_client")(asynchronous=asynchronous)
    if kind == "openai-chat":
        return OpenAIChatDrafter(client, "gpt-test")
    return OpenAICompletionsDrafter(client, "gpt-test")


def sent_prefix(kind: str, body: dict[str, Any]) -> str:
    """The committed text as the request shows it (Anthropic: without trailing blanks)."""
    if kind == "openai-completions":
        prompt = body["prompt"]
        assert prompt.startswith(PROMPT)
        return str(prompt[len(PROMPT) :])
    messages = body["messages"]
    if kind == "openai-chat":
        if messages[-1] == {"role": "user", "content": CONTINUE_INSTRUCTION}:
            assert messages[-2]["role"] == "assistant"
            return str(messages[-2]["content"])
        assert messages == [{"role": "user", "content": PROMPT}]
        return ""
    if messages[-1]["role"] == "assistant":
        return str(messages[-1]["content"])
    assert messages == [{"role": "user", "content": PROMPT}]
    return ""


Respond = Callable[[dict[str, Any]], Reply]


def responder(
    kind: str, *, first: str | Reply | None = None, usage: tuple[int, int] = (7, 3)
) -> Respond:
    """Replies as an API meaning to write DOC; `first`, when given, is the first reply."""
    calls = 0

    def respond(body: dict[str, Any]) -> Reply:
        nonlocal calls
        calls += 1
        if isinstance(first, Reply) and calls == 1:
            return first
        if first is not None and calls == 1:
            return text(first, chunk_size=4, usage=usage)
        return text(continuation(DOC, sent_prefix(kind, body), JSON), chunk_size=4, usage=usage)

    return respond


def committed_before(result: GuideResult, round_index: int) -> str:
    return "".join(
        s.text for s in result.trace.spans if s.origin in OUTPUT_ORIGINS and s.round < round_index
    )


def check_requests(kind: str, server: MockServer, result: GuideResult) -> None:
    """Each draft request carried exactly the text committed before its round."""
    prefixes = [sent_prefix(kind, body) for body in server.bodies]
    assert len(prefixes) == result.api_calls
    drafts = [r for r in result.trace.rounds if r.kind == "draft"]
    expected = [committed_before(result, r.index) for r in drafts for _ in range(1 + r.retries)]
    if kind == "anthropic":
        expected = [e.rstrip() for e in expected]  # a prefill may not end in blanks
    assert prefixes == expected


# -- a slip, repaired ------------------------------------------------------------------------------


def _check_repair(kind: str, server: MockServer, result: GuideResult) -> None:
    check_result(result, JSON)
    assert result.valid and JSON.matches(result.text)
    assert result.text.startswith(good_prefix(SLIP, JSON))
    assert result.corrections >= 1
    assert result.api_calls == len(server.exchanges) <= SETTINGS["max_corrections"] + 2
    check_requests(kind, server, result)
    # The request after the first correction showed the corrected text.
    second = sent_prefix(kind, server.bodies[1])
    corrected = committed_before(result, 2)
    assert corrected != good_prefix(SLIP, JSON)
    assert second == (corrected.rstrip() if kind == "anthropic" else corrected)
    if kind == "openai-chat":
        assert server.bodies[1]["messages"][-1]["content"] == CONTINUE_INSTRUCTION
    if kind == "anthropic":
        assert server.bodies[1]["messages"][-1]["role"] == "assistant"


@pytest.mark.parametrize("kind", KINDS)
def test_slip_is_repaired(kind: str, request: pytest.FixtureRequest, target: LocalTarget) -> None:
    server = server_of(kind, request)
    # The slip, then a long tail that a stream closed at the cut never receives.
    first = text(SLIP + " " * 400, chunk_size=4, delay=0.002)
    server.responder = responder(kind, first=first)
    drafter = drafter_of(kind, request)
    result = guide(drafter, JSON, prompt=PROMPT, target=target, **SETTINGS)
    _check_repair(kind, server, result)
    cut = result.trace.rounds[0]
    assert cut.ended == "cut" and cut.closed_early
    assert cut.cut_at == len(good_prefix(SLIP, JSON))
    server.wait()
    assert server.exchanges[0].client_closed
    assert server.exchanges[0].chunks_sent < len(first.pieces()) // 2


@pytest.mark.anyio
@pytest.mark.parametrize("kind", KINDS)
async def test_slip_is_repaired_async(
    kind: str, request: pytest.FixtureRequest, target: LocalTarget
) -> None:
    server = server_of(kind, request)
    server.responder = responder(kind, first=SLIP)
    drafter = drafter_of(kind, request, asynchronous=True)
    async with drafter.client:
        result = await aguide(drafter, JSON, prompt=PROMPT, target=target, **SETTINGS)
    _check_repair(kind, server, result)


def test_chat_reply_that_starts_over_in_a_fence(
    openai_server: MockServer, openai_client: Any, target: LocalTarget
) -> None:
    """A chat model asked to continue often starts over inside a code fence: the drafter aligns
    the reply, and the closing fence is dropped as trailing."""
    calls = 0

    def respond(body: dict[str, Any]) -> Reply:
        nonlocal calls
        calls += 1
        if calls == 1:
            return text(SLIP, chunk_size=5)
        prefix = sent_prefix("openai-chat", body)
        rest = continuation(DOC, prefix, JSON)
        return text(f"```json\n{prefix}{rest}\n```\nDone.", chunk_size=5)

    openai_server.responder = respond
    drafter = OpenAIChatDrafter(openai_client(), "gpt-test")
    result = guide(drafter, JSON, prompt=PROMPT, target=target, **SETTINGS)
    check_result(result, JSON)
    assert result.valid and result.stop_reason == "trailing_dropped"
    assert result.text.startswith(good_prefix(SLIP, JSON))
    assert "```" not in result.text and result.text.count('"b"') <= 1
    check_requests("openai-chat", openai_server, result)


# -- retries ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_rate_limit_is_retried_and_counted(
    kind: str, request: pytest.FixtureRequest, waits: list[Any]
) -> None:
    server = server_of(kind, request)
    server.script(error(429, "slow down", type="rate_limit_error", headers={"retry-after": "7"}))
    server.responder = responder(kind)
    result = guide(drafter_of(kind, request), JSON, prompt=PROMPT, target=_NoTarget())
    check_result(result, JSON)
    assert (result.text, result.stop_reason) == (DOC, "complete")
    assert result.api_calls == 2 == len(server.exchanges)
    assert result.trace.rounds[0].retries == 1
    ((attempt, exc),) = waits
    assert attempt == 1
    assert isinstance(exc, ProviderError)
    assert (exc.status, exc.retry_after, exc.retryable) == (429, 7.0, True)


@pytest.mark.parametrize("kind", KINDS)
def test_rate_limits_past_the_attempts_raise_with_the_partial_result(
    kind: str, request: pytest.FixtureRequest, waits: list[Any]
) -> None:
    server = server_of(kind, request)
    server.script(text('{"a": [1, 2', chunk_size=4, finish_reason="length"))
    server.script(*[error(429, headers={"retry-after": "1"}) for _ in range(3)])
    with pytest.raises(ProviderError) as caught:
        guide(drafter_of(kind, request), JSON, prompt=PROMPT, target=_NoTarget(), max_attempts=3)
    assert caught.value.status == 429
    partial = caught.value.partial
    check_result(partial, JSON)
    assert (partial.text, partial.stop_reason) == ('{"a": [1, 2', "error")
    assert partial.api_calls == 4 == len(server.exchanges)
    assert partial.trace.rounds[-1].retries == 2
    assert {exc.retry_after for _, exc in waits} == {1.0}


def _disconnect_script(kind: str, server: MockServer) -> None:
    server.script(disconnect(DOC, 3, chunk_size=4))  # drops after '{"a": [1, 2,'
    server.responder = responder(kind)


def _check_resumed(kind: str, server: MockServer, result: GuideResult) -> None:
    check_result(result, JSON)
    assert (result.text, result.stop_reason) == (DOC, "complete")  # nothing lost or repeated
    assert result.api_calls == 2 == len(server.exchanges)
    assert result.trace.rounds[0].retries == 1
    assert sent_prefix(kind, server.bodies[1]) == DOC[:12].rstrip()
    assert {s.origin for s in result.trace.spans} == {"draft"}


@pytest.mark.parametrize("kind", KINDS)
def test_disconnect_resumes_from_committed_text(
    kind: str, request: pytest.FixtureRequest, waits: list[Any]
) -> None:
    server = server_of(kind, request)
    _disconnect_script(kind, server)
    result = guide(drafter_of(kind, request), JSON, prompt=PROMPT, target=_NoTarget())
    _check_resumed(kind, server, result)


@pytest.mark.anyio
@pytest.mark.parametrize("kind", KINDS)
async def test_disconnect_resumes_from_committed_text_async(
    kind: str, request: pytest.FixtureRequest, waits: list[Any]
) -> None:
    server = server_of(kind, request)
    _disconnect_script(kind, server)
    drafter = drafter_of(kind, request, asynchronous=True)
    async with drafter.client:
        result = await aguide(drafter, JSON, prompt=PROMPT, target=_NoTarget())
    _check_resumed(kind, server, result)


@pytest.mark.anyio
@pytest.mark.parametrize("kind", KINDS)
async def test_rate_limit_is_retried_async(
    kind: str, request: pytest.FixtureRequest, waits: list[Any]
) -> None:
    server = server_of(kind, request)
    server.script(error(429, headers={"retry-after": "3"}), error(503, "overloaded"))
    server.responder = responder(kind)
    drafter = drafter_of(kind, request, asynchronous=True)
    async with drafter.client:
        result = await aguide(drafter, JSON, prompt=PROMPT, target=_NoTarget())
    check_result(result, JSON)
    assert (result.text, result.api_calls, result.trace.rounds[0].retries) == (DOC, 3, 2)
    assert [getattr(exc, "status", None) for _, exc in waits] == [429, 503]


# -- usage -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_usage_is_summed_over_rounds(kind: str, request: pytest.FixtureRequest) -> None:
    server = server_of(kind, request)
    # A reply cut short by its token budget: the loop asks for more, no correction needed.
    server.script(
        text('{"a": [1, ', chunk_size=4, finish_reason="length", usage=(11, 5)),
        text("2, 3], ", chunk_size=4, finish_reason="length", usage=(13, 4)),
    )
    server.responder = responder(kind, usage=(17, 2))
    result = guide(drafter_of(kind, request), JSON, prompt=PROMPT, target=_NoTarget())
    check_result(result, JSON)
    assert (result.text, result.api_calls, result.corrections) == (DOC, 3, 0)
    assert [(r.input_tokens, r.output_tokens) for r in result.trace.rounds] == [
        (11, 5),
        (13, 4),
        (17, 2),
    ]
    assert result.usage == Usage(41, 11)
    check_requests(kind, server, result)


@pytest.mark.anyio
@pytest.mark.parametrize("kind", KINDS)
async def test_usage_is_summed_over_rounds_async(kind: str, request: pytest.FixtureRequest) -> None:
    server = server_of(kind, request)
    server.script(text('{"a": [1, ', chunk_size=4, finish_reason="length", usage=(11, 5)))
    server.responder = responder(kind, usage=(17, 2))
    drafter = drafter_of(kind, request, asynchronous=True)
    async with drafter.client:
        result = await aguide(drafter, JSON, prompt=PROMPT, target=_NoTarget())
    assert (result.text, result.usage) == (DOC, Usage(28, 7))


def test_usage_of_a_repaired_run(
    anthropic_server: MockServer, anthropic_client: Any, target: LocalTarget
) -> None:
    """A stream closed at a cut reports what the provider had said by then: Anthropic sends the
    input tokens first (message_start), so they count even for a cut round."""
    anthropic_server.responder = responder("anthropic", first=SLIP, usage=(19, 6))
    drafter = AnthropicDrafter(anthropic_client(), "claude-test")
    result = guide(drafter, JSON, prompt=PROMPT, target=target, **SETTINGS)
    check_result(result, JSON)
    drafts = [r for r in result.trace.rounds if r.kind == "draft"]
    assert drafts[0].ended == "cut" and drafts[0].input_tokens == 19
    assert drafts[-1].ended == "drafter_ended"
    assert (drafts[-1].input_tokens, drafts[-1].output_tokens) == (19, 6)
    assert result.usage == Usage(
        sum(r.input_tokens for r in drafts), sum(r.output_tokens for r in drafts)
    )


@pytest.mark.skipif("sqlite" not in grammars.names(), reason="no grammars/sqlite.lark")
def test_reply_cut_by_its_token_budget_goes_on_even_when_complete(
    openai_server: MockServer, openai_client: Any
) -> None:
    """`SELECT name FROM users` is a whole query, but the API stopped for its token budget
    (finish_reason "length"), not because it had finished: the loop must ask for the rest."""
    sql = Grammar.load("sqlite")
    query = "SELECT name FROM users WHERE name LIKE 'a%'"
    openai_server.script(text("SELECT name FROM users", finish_reason="length"))
    openai_server.script(text(" WHERE name LIKE 'a%'"))
    drafter = OpenAICompletionsDrafter(openai_client(), "gpt-test")
    result = guide(drafter, sql, prompt=PROMPT, target=_NoTarget())
    check_result(result, sql)
    assert (result.text, result.api_calls) == (query, 2)


class _NoTarget:
    """For runs that must not need a correction: any use of the target fails the test."""

    def session(self, prompt: Any) -> Any:
        raise AssertionError("this run should not have needed the local target")
