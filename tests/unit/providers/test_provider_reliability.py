"""What the loop counts is what the server saw, and no key ever leaves in an error.

The real openai and anthropic SDKs talk HTTP to the local protocol servers
(tests/support/servers.py),
which replay fixed text and never read the grammar.
"""

from __future__ import annotations

import traceback
from typing import Any

import pytest

import providers.retry
from backtrack import ProviderError, guide
from providers import (
    AnthropicDrafter,
    FunctionDrafter,
    OpenAIChatDrafter,
    OpenAICompletionsDrafter,
)
from tests.support.servers import MockServer, error, text

DOC = '{"city": "Oslo", "pop": 709000}'


class NoTarget:
    def session(self, prompt: Any) -> Any:
        raise AssertionError("the local target was asked for a correction")


@pytest.fixture(autouse=True)
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(providers.retry, "backoff", lambda attempt, exc: 0.0)


def _drafter(kind: str, request: pytest.FixtureRequest, **client_options: Any) -> Any:
    if kind == "anthropic":
        client = request.getfixturevalue("anthropic_client")(**client_options)
        return AnthropicDrafter(client, "m"), request.getfixturevalue("anthropic_server")
    client = request.getfixturevalue("openai_client")(**client_options)
    cls = OpenAIChatDrafter if kind == "openai-chat" else OpenAICompletionsDrafter
    return cls(client, "m"), request.getfixturevalue("openai_server")


KINDS = ["openai-chat", "openai-completions", "anthropic"]


# -- item 4: retries are counted ------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_transient_failures_are_counted_as_sent(kind: str, request: pytest.FixtureRequest) -> None:
    # The SDK's own default, max_retries=2, as a user builds a client: the drafter turns it off,
    # so each request the server sees is an attempt the trace counts.
    drafter, server = _drafter(kind, request, max_retries=2)
    server.script(error(500, "oops"), error(503, "busy"), text(DOC))
    result = guide(drafter, "json", prompt="p", target=NoTarget())
    assert result.text == DOC
    (round_,) = result.trace.rounds
    assert round_.retries == 2
    assert result.api_calls == len(server.exchanges) == 3  # 9 when the SDK retried on its own


@pytest.mark.parametrize("kind", KINDS)
def test_persistent_failures_send_exactly_the_attempts(
    kind: str, request: pytest.FixtureRequest
) -> None:
    drafter, server = _drafter(kind, request, max_retries=2)
    server.script(*[error(500, "oops") for _ in range(20)])
    with pytest.raises(ProviderError) as caught:
        guide(drafter, "json", prompt="p", target=NoTarget(), max_attempts=4)
    (round_,) = caught.value.partial.trace.rounds
    assert round_.retries == 3
    assert len(server.exchanges) == 4  # 12 when the SDK retried each attempt twice more


def test_a_refused_prefill_is_a_request_the_trace_counts(
    anthropic_server: MockServer, anthropic_client: Any
) -> None:
    AnthropicDrafter.forget_prefill_refusals()
    refusal = "This model does not support assistant message prefill."
    anthropic_server.script(text(DOC[:10], unfinished=True), error(400, refusal), text(DOC[10:]))
    drafter = AnthropicDrafter(anthropic_client(), "m")
    try:
        result = guide(drafter, "json", prompt="p", target=NoTarget())
    finally:
        AnthropicDrafter.forget_prefill_refusals()
    assert result.text == DOC
    assert result.api_calls == len(anthropic_server.exchanges) == 3  # 2 counted when refused


def test_the_users_client_keeps_its_own_retries(openai_client: Any) -> None:
    client = openai_client(max_retries=2)
    OpenAIChatDrafter(client, "m")
    assert client.max_retries == 2


# -- item 13: keys never shown -------------------------------------------------------------------

KEYS = {
    "hex": "0123456789abcdef0123456789abcdef",
    "groq": "gsk_Zx81LmQ0pa9WvT2RbN7cKd4EyH6s",
    "plain": "my-gateway-token-55k2j1",
}


@pytest.mark.parametrize("status", [400, 401, 403])
@pytest.mark.parametrize("shape", list(KEYS))
@pytest.mark.parametrize("kind", ["openai-chat", "anthropic"])
def test_a_key_echoed_in_an_error_body_is_masked_everywhere(
    kind: str, shape: str, status: int, request: pytest.FixtureRequest
) -> None:
    key = KEYS[shape]
    drafter, server = _drafter(kind, request, api_key=key)
    server.script(error(status, f"Incorrect API key provided: {key}. Find yours in the console."))
    with pytest.raises(ProviderError) as caught:
        guide(drafter, "json", prompt="p", target=NoTarget())
    assert not [text for text in shown(caught.value) if key in text]
    assert "***" in str(caught.value)


def shown(error: ProviderError) -> list[str]:
    """Every text of a failed run a user or a log may see: the error, the rounds, the HTML, and
    the exceptions chained to it (a traceback prints them; a debugger or an error tracker reads
    them, suppressed or not)."""
    partial = error.partial
    texts = [str(error), repr(error), partial.to_html()]
    texts += ["".join(traceback.format_exception(error))]
    chained: list[BaseException] = [error]
    while chained:
        link = chained.pop()
        texts += [str(link), repr(link)]
        chained += [e for e in (link.__cause__, link.__context__) if e is not None]
    return texts + [r.error or "" for r in partial.trace.rounds]


def test_an_anthropic_bearer_token_is_masked(
    anthropic_server: MockServer, anthropic_client: Any
) -> None:
    token = "bearer-value-77a1c2"  # no known shape: masked because the client holds it
    client = anthropic_client(api_key=None, auth_token=token)
    anthropic_server.script(error(401, f"token {token} expired"))
    with pytest.raises(ProviderError) as caught:
        guide(AnthropicDrafter(client, "m"), "json", prompt="p", target=NoTarget())
    assert not [text for text in shown(caught.value) if token in text]


@pytest.mark.parametrize("status", [400, 401, 403])
@pytest.mark.parametrize("kind", ["openai-chat", "anthropic"])
def test_a_key_from_the_environment_is_masked_everywhere(
    kind: str, status: int, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    key = "env-held-secret-0a9b8c7d"  # no known shape: found by value
    monkeypatch.setenv("SOME_PROVIDER_API_KEY", key)
    drafter, server = _drafter(kind, request)
    server.script(error(status, f"Incorrect API key provided: {key}, from the environment"))
    with pytest.raises(ProviderError) as caught:
        guide(drafter, "json", prompt="p", target=NoTarget())
    assert not [text for text in shown(caught.value) if key in text]


@pytest.mark.parametrize("labelled", [True, False], ids=["api_key=...", "from the environment"])
@pytest.mark.parametrize("raised", [RuntimeError, ProviderError])
def test_a_function_drafters_exception_is_masked_everywhere(
    raised: type[Exception], labelled: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No client, so no api_key to learn: a key is masked by its label, or by the environment's.
    key = "fn-only-secret-91x7"
    if not labelled:
        monkeypatch.setenv("GATEWAY_TOKEN", key)

    def draft(prompt: str, prefix: str) -> str:
        raise raised(f"the gateway refused {'api_key=' if labelled else 'the token '}{key}")

    with pytest.raises(ProviderError) as caught:
        guide(FunctionDrafter(draft), "json", prompt="p", target=NoTarget())
    assert not [text for text in shown(caught.value) if key in text]
