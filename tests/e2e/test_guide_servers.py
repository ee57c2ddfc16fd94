"""guide() and aguide() through the real OpenAI and Anthropic SDKs, against the local scripted
servers of tests/support/servers.py, with the real SmolLM2 target.

The servers answer as a ScriptedAPI (tests/support/scripted.py) that means to write DOC: a
responder reads the committed prefix out of each request (the instruction's last assistant message
for OpenAI
chat, the prompt for the completions endpoint, the prefill message for Anthropic) and replies
what the API would: its scripted first draft, then the rest of its own text from where the
committed text stops matching it. It never reads the grammar. A test scripts what goes wrong
before it: a first reply with a slip, a 429, a stream that drops midway.

The product mends a small slip by an edit, read on from the same stream; the scenarios about the
correction path (a cut, SmolLM2's correction, a new request showing it) turn that off
(`repair_window=0`), and one shows the edit.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import grammars
from backtrack import Grammar, GuideResult, ProviderError, aguide, guide
from local_target import LocalTarget
from providers import AnthropicDrafter, OpenAIChatDrafter, OpenAICompletionsDrafter, Usage
from providers.align import CONTINUE_INSTRUCTION
from tests.support.responder import DOC, KEPT, PROMPT, SLIP, responder, sent_prefix
from tests.support.scripted import ScriptedAPI
from tests.support.servers import MockServer, Reply, disconnect, error, text

pytestmark = pytest.mark.e2e

JSON = Grammar.load("json")
SETTINGS = {"max_corrections": 2, "correction_tokens": 8, "completion_tokens": 24}
# The correction path alone: every cut is a correction by SmolLM2 and a new request, no repair.
CORRECTIONS_ONLY = {**SETTINGS, "repair_window": 0}
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


def as_sent(kind: str, prefix: str) -> str:
    """The committed text as a request of `kind` carries it: an Anthropic prefill may not end in
    blanks."""
    return prefix.rstrip() if kind == "anthropic" else prefix


def spans(result: GuideResult) -> list[tuple[int, str, str]]:
    """The trace's spans as (round, origin, text)."""
    return [(s.round, s.origin, s.text) for s in result.trace.spans]


# -- a slip, corrected by SmolLM2 ------------------------------------------------------------------


def _check_corrected(kind: str, server: MockServer, api: ScriptedAPI, result: GuideResult) -> None:
    """The cut keeps the slip's valid start, SmolLM2 closes the list as the prompt shows, and the
    second request carries the corrected text, which the API finishes with its own rest."""
    assert (result.text, result.stop_reason) == (DOC, "complete")
    assert (result.api_calls, result.corrections, result.repairs) == (2, 1, 0)
    assert len(server.exchanges) == api.calls == 2
    assert spans(result)[0] == (0, "draft", KEPT)
    assert api.prefixes == ["", '{"a": [1, 2, 3],']
    assert api.sent[1] == ' "b": null}'
    if kind == "openai-chat":
        assert server.bodies[1]["messages"][-1]["content"] == CONTINUE_INSTRUCTION
    if kind == "anthropic":
        assert server.bodies[1]["messages"][-1]["role"] == "assistant"


@pytest.mark.parametrize("kind", KINDS)
def test_slip_is_corrected(kind: str, request: pytest.FixtureRequest, target: LocalTarget) -> None:
    server = server_of(kind, request)
    # The slip, then a long tail that a stream closed at the cut never receives.
    api = ScriptedAPI(DOC, drafts=[SLIP + " " * 400])
    server.responder = responder(kind, api, delay=0.002)
    drafter = drafter_of(kind, request)
    result = guide(drafter, JSON, prompt=PROMPT, target=target, **CORRECTIONS_ONLY)
    _check_corrected(kind, server, api, result)
    cut = result.trace.rounds[0]
    assert (cut.ended, cut.closed_early, cut.cut_at) == ("cut", True, len(KEPT))
    server.wait()
    assert server.exchanges[0].client_closed
    assert server.exchanges[0].chunks_sent < 50  # of the reply's 107 chunks


@pytest.mark.anyio
@pytest.mark.parametrize("kind", KINDS)
async def test_slip_is_corrected_async(
    kind: str, request: pytest.FixtureRequest, target: LocalTarget
) -> None:
    server = server_of(kind, request)
    api = ScriptedAPI(DOC, drafts=[SLIP])
    server.responder = responder(kind, api)
    drafter = drafter_of(kind, request, asynchronous=True)
    async with drafter.client:
        result = await aguide(drafter, JSON, prompt=PROMPT, target=target, **CORRECTIONS_ONLY)
    _check_corrected(kind, server, api, result)


def test_chat_reply_that_starts_over_in_a_fence(
    openai_server: MockServer, openai_client: Any, target: LocalTarget
) -> None:
    """A chat model asked to continue often starts over inside a code fence: the drafter aligns
    the reply, and the closing fence is dropped as trailing."""
    api = ScriptedAPI(DOC, drafts=[SLIP])

    def respond(body: dict[str, Any]) -> Reply:
        prefix = sent_prefix("openai-chat", body)
        reply = api.reply(prefix)
        if api.calls > 1:  # starts over: the committed text again, in a fence, and prose after it
            reply = f"```json\n{prefix}{reply}\n```\nDone."
        return text(reply, chunk_size=5)

    openai_server.responder = respond
    drafter = OpenAIChatDrafter(openai_client(), "gpt-test")
    result = guide(drafter, JSON, prompt=PROMPT, target=target, **CORRECTIONS_ONLY)
    assert (result.text, result.stop_reason) == (DOC, "trailing_dropped")
    assert (result.api_calls, result.corrections) == (2, 1)
    assert api.prefixes == ["", '{"a": [1, 2, 3],']
    # The repeat of the committed text is dropped; the stream is closed after the closing fence.
    assert spans(result) == [
        (0, "draft", KEPT),
        (0, "rejected", "}"),
        (1, "correction", "],"),
        (2, "dropped", '```json\n{"a": [1, 2, 3],'),
        (2, "draft", ' "b": null}'),
        (2, "dropped", "\n```\n"),
    ]
    last = result.trace.rounds[-1]
    assert (last.ended, last.closed_early) == ("trailing", True)


# -- a slip, repaired by an edit -------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_slip_is_repaired_by_an_edit_in_one_request(
    kind: str, request: pytest.FixtureRequest
) -> None:
    """The wrong brace is replaced and the reply read on from the same stream: no second request,
    no local model."""
    server = server_of(kind, request)
    api = ScriptedAPI(DOC, drafts=[SLIP])
    server.responder = responder(kind, api)
    result = guide(drafter_of(kind, request), JSON, prompt=PROMPT, target=_NoTarget(), **SETTINGS)
    assert (result.text, result.stop_reason) == (DOC, "complete")
    assert (result.api_calls, result.corrections, result.repairs) == (1, 0, 1)
    assert len(server.exchanges) == 1
    assert spans(result) == [
        (0, "draft", KEPT),
        (0, "skipped", "}"),
        (0, "edit", "]"),
        (0, "draft", ', "b": null}'),
    ]


# -- retries ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_rate_limit_is_retried_and_counted(
    kind: str, request: pytest.FixtureRequest, waits: list[Any]
) -> None:
    server = server_of(kind, request)
    server.script(error(429, "slow down", type="rate_limit_error", headers={"retry-after": "7"}))
    api = ScriptedAPI(DOC)
    server.responder = responder(kind, api)
    result = guide(drafter_of(kind, request), JSON, prompt=PROMPT, target=_NoTarget())
    assert (result.text, result.stop_reason) == (DOC, "complete")
    assert result.api_calls == 2 == len(server.exchanges)
    assert api.prefixes == [""]  # the retry asks again for the whole answer
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
    assert (partial.text, partial.stop_reason) == ('{"a": [1, 2', "error")
    assert spans(partial) == [(0, "draft", '{"a": [1, 2')]
    assert partial.api_calls == 4 == len(server.exchanges)
    assert partial.trace.rounds[-1].retries == 2
    assert {exc.retry_after for _, exc in waits} == {1.0}


def _disconnect_script(kind: str, server: MockServer) -> ScriptedAPI:
    server.script(disconnect(DOC, 3, chunk_size=4))  # drops after '{"a": [1, 2,'
    api = ScriptedAPI(DOC)
    server.responder = responder(kind, api)
    return api


def _check_resumed(server: MockServer, api: ScriptedAPI, result: GuideResult) -> None:
    assert (result.text, result.stop_reason) == (DOC, "complete")  # nothing lost or repeated
    assert result.api_calls == 2 == len(server.exchanges)
    assert result.trace.rounds[0].retries == 1
    assert api.prefixes == ['{"a": [1, 2,']
    assert spans(result) == [(0, "draft", DOC)]


@pytest.mark.parametrize("kind", KINDS)
def test_disconnect_resumes_from_committed_text(
    kind: str, request: pytest.FixtureRequest, waits: list[Any]
) -> None:
    server = server_of(kind, request)
    api = _disconnect_script(kind, server)
    result = guide(drafter_of(kind, request), JSON, prompt=PROMPT, target=_NoTarget())
    _check_resumed(server, api, result)


@pytest.mark.anyio
@pytest.mark.parametrize("kind", KINDS)
async def test_disconnect_resumes_from_committed_text_async(
    kind: str, request: pytest.FixtureRequest, waits: list[Any]
) -> None:
    server = server_of(kind, request)
    api = _disconnect_script(kind, server)
    drafter = drafter_of(kind, request, asynchronous=True)
    async with drafter.client:
        result = await aguide(drafter, JSON, prompt=PROMPT, target=_NoTarget())
    _check_resumed(server, api, result)


@pytest.mark.anyio
@pytest.mark.parametrize("kind", KINDS)
async def test_rate_limit_is_retried_async(
    kind: str, request: pytest.FixtureRequest, waits: list[Any]
) -> None:
    server = server_of(kind, request)
    server.script(error(429, headers={"retry-after": "3"}), error(503, "overloaded"))
    api = ScriptedAPI(DOC)
    server.responder = responder(kind, api)
    drafter = drafter_of(kind, request, asynchronous=True)
    async with drafter.client:
        result = await aguide(drafter, JSON, prompt=PROMPT, target=_NoTarget())
    assert (result.text, result.api_calls, result.trace.rounds[0].retries) == (DOC, 3, 2)
    assert api.prefixes == [""]
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
    server.responder = responder(kind, ScriptedAPI(DOC), usage=(17, 2))
    result = guide(drafter_of(kind, request), JSON, prompt=PROMPT, target=_NoTarget())
    assert (result.text, result.api_calls, result.corrections) == (DOC, 3, 0)
    assert [(r.input_tokens, r.output_tokens) for r in result.trace.rounds] == [
        (11, 5),
        (13, 4),
        (17, 2),
    ]
    assert result.usage == Usage(41, 11)
    # Each request carried the text committed before it.
    committed = ["", '{"a": [1, ', '{"a": [1, 2, 3], ']
    assert [sent_prefix(kind, body) for body in server.bodies] == [
        as_sent(kind, c) for c in committed
    ]


@pytest.mark.anyio
@pytest.mark.parametrize("kind", KINDS)
async def test_usage_is_summed_over_rounds_async(kind: str, request: pytest.FixtureRequest) -> None:
    server = server_of(kind, request)
    server.script(text('{"a": [1, ', chunk_size=4, finish_reason="length", usage=(11, 5)))
    server.responder = responder(kind, ScriptedAPI(DOC), usage=(17, 2))
    drafter = drafter_of(kind, request, asynchronous=True)
    async with drafter.client:
        result = await aguide(drafter, JSON, prompt=PROMPT, target=_NoTarget())
    assert (result.text, result.usage) == (DOC, Usage(28, 7))


def test_usage_of_a_corrected_run(
    anthropic_server: MockServer, anthropic_client: Any, target: LocalTarget
) -> None:
    """A stream closed at a cut reports what the provider had said by then: Anthropic sends the
    input tokens first (message_start, with 1 output token so far), so they count even for a
    cut round; the final output count comes at the end (message_delta), which a cut round never
    reads."""
    api = ScriptedAPI(DOC, drafts=[SLIP])
    anthropic_server.responder = responder("anthropic", api, usage=(19, 6))
    drafter = AnthropicDrafter(anthropic_client(), "claude-test")
    result = guide(drafter, JSON, prompt=PROMPT, target=target, **CORRECTIONS_ONLY)
    assert (result.text, result.api_calls, result.corrections) == (DOC, 2, 1)
    rounds = [(r.kind, r.ended, r.input_tokens, r.output_tokens) for r in result.trace.rounds]
    assert rounds == [
        ("draft", "cut", 19, 1),
        ("correction", "target_stopped", 0, 0),
        ("draft", "drafter_ended", 19, 6),
    ]
    assert result.usage == Usage(38, 7)


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
    assert (result.text, result.api_calls) == (query, 2)


class _NoTarget:
    """For runs that must not need a correction: any use of the target fails the test."""

    def session(self, prompt: Any) -> Any:
        raise AssertionError("this run should not have needed the local target")
