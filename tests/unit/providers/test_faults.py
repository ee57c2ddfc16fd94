"""Faults at 30% of requests, through the real SDKs: every run ends with the API's exact document,
or raises a typed error whose `.partial` is exactly the committed text.

The API (tests/support/fault_server.py) continues known JSON documents exactly and injects, per
request, 429 with Retry-After, 500, 503, drops mid-stream, stalls past the client's timeout,
malformed events, 200 replies without text, streams that end without their protocol's end, and
surrogate pairs split across events. OpenAI chat replies sometimes repeat the committed text first,
as chat models do. Each run uses one of the real callers (a drafter with guide() or aguide(), wrap()
sync or async) and a local target that raises if asked: with exact continuations every fault must be
retried, never corrected. 200 runs per provider (20 per fault kind and 20 mixed), then 20 mixed runs
per provider with 2 attempts a round, where some runs exhaust them, then 256 runs at once: these
tables are `slow` (`make test`). The daily run takes a sample: a few mixed runs per provider
with 8 and with 2 attempts, all at once, and 32 concurrent runs.

`python -m benchmarks.reliability` runs the same at scale; a failure message names the command
that replays the failing run alone.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import providers.retry
from tests.support.fault_server import (
    FAULTS,
    MIXED,
    PROVIDERS,
    FaultServer,
    Outcome,
    failures,
    run_all,
    runs_for,
    zero_wait,
)

RUNS = 20  # per provider and fault kind: 10 kinds, 200 runs per provider
EXHAUST = 20  # mixed runs per provider with 2 attempts a round
SAMPLE = 4  # mixed runs per provider and attempt budget, in the daily sample
SEED = 10
WORKERS = 8


@pytest.fixture
def server() -> Iterator[FaultServer]:
    # One per test: the daily sample and the full tables draw some of the same runs (the same
    # names), and a server registers each run once.
    with FaultServer() as server:
        yield server


@pytest.fixture(autouse=True)
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(providers.retry, "backoff", zero_wait)


def check(outcomes: list[Outcome]) -> None:
    """Every run exact, or a typed error with its exact partial; else each failure, replayable."""
    bad = [o for o in outcomes if o.status not in ("exact", "typed")]
    assert not bad, f"{len(bad)} of {len(outcomes)} runs failed:\n{failures(bad)}"


def test_a_sample_of_mixed_fault_runs_never_alters_loses_or_duplicates_text(
    server: FaultServer,
) -> None:
    """The daily sample of the tables below, run at once (stalls overlap): each provider's first
    SAMPLE mixed runs with 8 attempts a round and with 2."""
    runs = [
        run
        for provider in PROVIDERS
        for attempts in (8, 2)
        for run in runs_for(provider, MIXED, SAMPLE, seed=SEED, max_attempts=attempts)
    ]
    outcomes = run_all(runs, server, workers=WORKERS)
    check(outcomes)
    for provider in PROVIDERS:
        injected = sum(sum(o.faults.values()) for o in outcomes if o.run.provider == provider)
        assert injected >= 3, f"{provider}: only {injected} faults injected"
    assert sum(o.repeats for o in outcomes if o.run.provider == "openai-chat") >= 3


@pytest.mark.slow
@pytest.mark.parametrize("fault", [*FAULTS, MIXED])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_faults_never_alter_lose_or_duplicate_text(
    provider: str, fault: str, server: FaultServer
) -> None:
    outcomes = run_all(runs_for(provider, fault, RUNS, seed=SEED), server, workers=WORKERS)
    check(outcomes)
    injected = sum(sum(o.faults.values()) for o in outcomes)
    assert injected >= 3, f"only {injected} faults injected in {RUNS} runs"
    if fault == MIXED and provider == "openai-chat":
        assert sum(o.repeats for o in outcomes) >= 3  # the aligner met repeats to strip


@pytest.mark.slow
@pytest.mark.parametrize("provider", PROVIDERS)
def test_exhausted_attempts_raise_with_the_exact_partial(
    provider: str, server: FaultServer
) -> None:
    runs = runs_for(provider, MIXED, EXHAUST, seed=SEED, max_attempts=2)
    outcomes = run_all(runs, server, workers=WORKERS)
    check(outcomes)
    assert any(o.status == "typed" for o in outcomes)  # the typed-error path was taken


def concurrent_runs(count: int, server: FaultServer) -> None:
    """`count` async runs at once (drafters and wrap(), every provider, mixed faults) on one event
    loop and one server: each ends with its own exact document, no text of one in another, and
    all but 6 within their attempts. The clients wait 30 s (at 0.5 s, requests queued behind 255
    others time out before the server accepts them, so it cannot count them); a stall then ends
    as a dropped connection."""
    per_provider = -(-count // len(PROVIDERS))
    runs = [
        run
        for provider in PROVIDERS
        for run in [
            r for r in runs_for(provider, MIXED, 4 * per_provider, seed=SEED + 1) if r.asynchronous
        ][:per_provider]
    ]
    assert len(runs) >= count
    outcomes = run_all(runs, server, workers=len(runs), timeout=30.0)
    check(outcomes)
    assert sum(o.status == "exact" for o in outcomes) >= count - 6


@pytest.mark.slow
def test_256_concurrent_aguide_runs_each_get_their_own_document(server: FaultServer) -> None:
    concurrent_runs(256, server)


def test_32_concurrent_aguide_runs_each_get_their_own_document(server: FaultServer) -> None:
    concurrent_runs(32, server)
