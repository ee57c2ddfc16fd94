"""Shared fixtures: scripted local servers for the provider SDKs, and clients pointed at them.

    openai_server / anthropic_server     a MockServer (tests/support/servers.py), one per
                                         session, reset for each test
    openai_client / anthropic_client     factories of real SDK clients (sync; `asynchronous=True`
                                         for the async twin) on those servers, with max_retries=0
                                         and a dummy key; closed after the test
    smollm2 (alias: target)              the real SmolLM2-135M-Instruct LocalTarget, one per
                                         session, on one torch thread
    vllm_url                             a vLLM server with backtrack's logits processor on
                                         SmolLM2, one per session (skips where vLLM is missing)

Nothing here leaves 127.0.0.1.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

from tests.support.servers import MockServer

if TYPE_CHECKING:
    from local_target import LocalTarget

DUMMY_KEY = "sk-test-not-a-real-key"


@pytest.fixture(scope="session")
def _openai_mock() -> Iterator[MockServer]:
    server = MockServer().start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def _anthropic_mock() -> Iterator[MockServer]:
    server = MockServer().start()
    yield server
    server.stop()


def _fresh(server: MockServer) -> Iterator[MockServer]:
    server.reset()
    yield server
    server.wait()  # no handler may still write into the next test
    server.reset()


@pytest.fixture
def openai_server(_openai_mock: MockServer) -> Iterator[MockServer]:
    """The OpenAI-protocol server, its script and records empty."""
    yield from _fresh(_openai_mock)


@pytest.fixture
def anthropic_server(_anthropic_mock: MockServer) -> Iterator[MockServer]:
    """The Anthropic-protocol server, its script and records empty."""
    yield from _fresh(_anthropic_mock)


@pytest.fixture(scope="session")
def smollm2() -> Iterator[LocalTarget]:
    """The real SmolLM2-135M-Instruct target, loaded once per test session."""
    # Imported here, not at the top: local_target imports torch (seconds), which a run of test
    # modules that need no model (`pytest tests/unit/grammars/test_grammar.py`) would otherwise pay
    # for.
    import torch

    from local_target import LocalTarget
    from local_target.errors import TargetError

    # One thread: on a small, busy CPU torch's default thread pool is several times slower.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        target = LocalTarget.default()
    except TargetError as exc:
        pytest.fail(f"the default target model is unavailable: {exc}", pytrace=False)
    yield target
    torch.set_num_threads(threads)


@pytest.fixture
def target(smollm2: LocalTarget) -> LocalTarget:
    return smollm2


@pytest.fixture(scope="session")
def vllm_url() -> Iterator[str]:
    """The base URL (…/v1) of a vLLM server with backtrack's logits processor, serving SmolLM2:
    $BACKTRACK_VLLM_URL where set (one already running, started with scripts/vllm_serve.py and
    tests/support/vllm_server.py's CHUNKED arguments), else one started here (about a minute on
    2 cores) and stopped after the session. Skips, saying why, where vLLM's environment is
    missing."""
    from tests.support.vllm_server import Unavailable, vllm_python, vllm_server

    running = os.environ.get("BACKTRACK_VLLM_URL")
    if running:
        yield running
        return
    try:
        python = vllm_python()
    except Unavailable as exc:
        pytest.skip(str(exc))
    with vllm_server(python) as url:
        yield url


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class _Clients:
    """Makes clients and closes them at teardown (async ones through the test's event loop)."""

    def __init__(self, make: Callable[[bool, dict[str, Any]], Any]) -> None:
        self._make = make
        self.sync: list[Any] = []
        self.asynchronous: list[Any] = []

    def __call__(self, *, asynchronous: bool = False, **options: Any) -> Any:
        client = self._make(asynchronous, options)
        (self.asynchronous if asynchronous else self.sync).append(client)
        return client


def _close_all(clients: _Clients) -> None:
    for client in clients.sync:
        client.close()
    for client in clients.asynchronous:
        if not client.is_closed():
            raise AssertionError("close async clients in the test: `async with client:`")


@pytest.fixture
def openai_client(openai_server: MockServer) -> Iterator[_Clients]:
    """`openai_client(asynchronous=False, **options)`: an OpenAI / AsyncOpenAI on openai_server."""
    import openai

    def make(asynchronous: bool, options: dict[str, Any]) -> Any:
        cls = openai.AsyncOpenAI if asynchronous else openai.OpenAI
        settings = {"base_url": f"{openai_server.url}/v1", "api_key": DUMMY_KEY, "max_retries": 0}
        return cls(**{**settings, **options})

    clients = _Clients(make)
    yield clients
    _close_all(clients)


@pytest.fixture
def anthropic_client(anthropic_server: MockServer) -> Iterator[_Clients]:
    """`anthropic_client(asynchronous=False, **options)`: an Anthropic / AsyncAnthropic."""
    import anthropic

    def make(asynchronous: bool, options: dict[str, Any]) -> Any:
        cls = anthropic.AsyncAnthropic if asynchronous else anthropic.Anthropic
        settings = {"base_url": anthropic_server.url, "api_key": DUMMY_KEY, "max_retries": 0}
        return cls(**{**settings, **options})

    clients = _Clients(make)
    yield clients
    _close_all(clients)


# Tests that run a model (forward passes) carry the `model` marker, those on SmolLM2 also `e2e`:
# the daily selection (`pytest`) leaves both out; `make test` runs everything.
_MODEL_FIXTURES = frozenset({"smollm2", "target"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if _MODEL_FIXTURES & fixtures or item.get_closest_marker("e2e"):
            item.add_marker(pytest.mark.model)


@pytest.fixture(scope="module")
def one_torch_thread() -> Iterator[None]:
    """Tiny models run faster on one thread, and much faster on a busy machine."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
