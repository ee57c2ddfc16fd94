"""Reliability under API faults: guided runs through the real SDKs against a fault-injecting API.

    python -m benchmarks.reliability [--runs N] [--rate R] [--seed S] [--max-attempts A]
                                     [--exhaust N] [--provider P ...] [--fault F ...]
                                     [--workers W] [--output PATH]
    python -m benchmarks.reliability --provider P --fault F --seed S --index I --verbose

The server and the judging of runs are tests/support/fault_server.py, the same as
tests/unit/providers/test_faults.py
uses at CI size. The API continues a known JSON document exactly (OpenAI chat replies sometimes
repeat the committed text first, as chat models do) and injects faults at rate R per request:
429 with Retry-After 0, 500, 503, drops mid-stream, stalls past the client's timeout, malformed
events, 200 replies without text, streams that end without their protocol's end, surrogate pairs
split across events. The local target must never be needed (it raises when asked).

Each provider (OpenAI chat, OpenAI completions, Anthropic) gets N runs (500 by default), spread
evenly over the fault kinds and "mixed" (any kind, per request), each with up to A attempts per
draft round (8 by default); its callers alternate: drafter with guide(), drafter with aguide(),
wrap(client) sync and async (wrap exists for chat and Anthropic). Then `--exhaust` more runs per
provider (60 by default) with mixed faults and only 2 attempts, so that some runs exhaust them:
these must raise ProviderError with the exact committed text as `.partial`.

A run is judged against the server's record: "exact" (the document, no correction, the trace
counts every request the server saw), "typed" (ProviderError after the attempts ran out, `.partial`
a prefix of the document holding all the text any request showed as committed), "altered/lost"
(anything else about the text), "other failures" (a correction asked for, requests miscounted, a
non-retryable or untyped error). Every run that is neither exact nor typed is listed with the
command that replays it alone (`--index I --verbose`). The exit status is 1 when there is one.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from tests.support.fault_server import (
    FAULTS,
    MIXED,
    NONE,
    PROVIDERS,
    STALL,
    TIMEOUT,
    FaultServer,
    Outcome,
    Run,
    failures,
    run_all,
    table,
    zero_backoff,
)

DEFAULT_RUNS = 500
DEFAULT_EXHAUST = 60
QUICK_RUNS = 60
QUICK_EXHAUST = 12


def plan(
    providers: Sequence[str],
    faults: Sequence[str],
    runs: int,
    *,
    seed: int,
    rate: float,
    max_attempts: int,
    exhaust: int,
) -> list[Run]:
    """`runs` per provider spread over `faults`, then `exhaust` mixed runs with 2 attempts."""
    planned: list[Run] = []
    for provider in providers:
        for position, fault in enumerate(faults):
            # An even split; the first kinds take the remainder.
            count = runs // len(faults) + (position < runs % len(faults))
            planned += [Run(provider, fault, seed, i, rate, max_attempts) for i in range(count)]
        planned += [Run(provider, MIXED, seed, i, rate, 2) for i in range(exhaust)]
    return planned


def report(outcomes: Sequence[Outcome], seconds: float, settings: str) -> str:
    bad = [o for o in outcomes if o.status not in ("exact", "typed")]
    parts = [
        "## Reliability under API faults",
        "",
        settings,
        f"{len(outcomes)} runs in {seconds:.1f} s; client timeout {TIMEOUT} s, stalls {STALL} s.",
        "",
        table(outcomes),
    ]
    if bad:
        parts += [f"**{len(bad)} runs neither exact nor a typed error:**", "", failures(bad, 40)]
    else:
        parts.append(
            "Every run ended with the exact document or a typed error with its exact "
            "partial text: nothing altered, lost or duplicated."
        )
    return "\n".join(parts) + "\n"


def run(quick: bool) -> str:
    """The benchmarks harness entry: the default scale, or a quick one."""
    runs, exhaust = (QUICK_RUNS, QUICK_EXHAUST) if quick else (DEFAULT_RUNS, DEFAULT_EXHAUST)
    text = _measure(
        PROVIDERS,
        [*FAULTS, MIXED],
        runs,
        seed=0,
        rate=0.3,
        max_attempts=8,
        exhaust=exhaust,
        workers=4,
    )
    print(text)
    return text


def _measure(
    providers: Sequence[str],
    faults: Sequence[str],
    runs: int,
    *,
    seed: int,
    rate: float,
    max_attempts: int,
    exhaust: int,
    workers: int,
) -> str:
    planned = plan(
        providers, faults, runs, seed=seed, rate=rate, max_attempts=max_attempts, exhaust=exhaust
    )
    settings = (
        f"Fault rate {rate:.0%} per request, seed {seed}, {runs} runs per provider over "
        f"{', '.join(faults)} with {max_attempts} attempts per round, then {exhaust} mixed runs "
        "per provider with 2 attempts."
    )
    started = time.perf_counter()
    with FaultServer() as server, zero_backoff():
        outcomes = run_all(planned, server, workers=workers)
    return report(outcomes, time.perf_counter() - started, settings)


def _replay(args: argparse.Namespace) -> int:
    """One run alone, with everything the server saw and did."""
    (provider,) = args.provider
    (fault,) = args.fault
    one = Run(provider, fault, args.seed, args.index, args.rate, args.max_attempts)
    document = one.document
    print(f"run {one.key}: {one.caller}, max_draft_tokens {one.max_draft_tokens}")
    grammar = "json" if document.grammar == "json" else f"schema {document.grammar}"
    print(f"grammar: {grammar}\ndocument ({len(document.text)} chars): {document.text!r}")
    with FaultServer() as server, zero_backoff():
        (outcome,) = run_all([one], server, workers=1)
        record = server.record(one.key)
    for request in record.requests:
        shown = "?" if request.committed is None else f"{len(request.committed)} chars"
        print(
            f"  request {request.number}: committed {shown}, fault {request.fault}, "
            f"repeated {request.repeated}, plan {request.plan}"
            + (f", refused: {request.refused}" if request.refused else "")
        )
    for reason in outcome.reasons:
        print(f"  retried after: {reason}")
    print(f"outcome: {outcome.status} {outcome.detail}")
    return 0 if outcome.status in ("exact", "typed") else 1


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.reliability", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS, help="runs per provider")
    parser.add_argument("--rate", type=float, default=0.3, help="faults per request")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-attempts", type=int, default=8)
    parser.add_argument(
        "--exhaust", type=int, default=DEFAULT_EXHAUST, help="extra mixed runs with 2 attempts"
    )
    parser.add_argument("--provider", action="append", choices=PROVIDERS)
    parser.add_argument("--fault", action="append", choices=[*FAULTS, MIXED, NONE])
    parser.add_argument("--workers", type=int, default=4, help="runs at a time")
    parser.add_argument("--index", type=int, help="replay this one run (with --verbose)")
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--output", type=Path, help="also write the report here")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_RUNS} runs per provider")
    args = parser.parse_args(argv)
    if args.index is not None:
        if len(args.provider or ()) != 1 or len(args.fault or ()) != 1:
            parser.error("--index replays one run: give one --provider and one --fault")
        return _replay(args)
    runs, exhaust = (QUICK_RUNS, QUICK_EXHAUST) if args.quick else (args.runs, args.exhaust)
    text = _measure(
        args.provider or PROVIDERS,
        args.fault or [*FAULTS, MIXED],
        runs,
        seed=args.seed,
        rate=args.rate,
        max_attempts=args.max_attempts,
        exhaust=exhaust,
        workers=args.workers,
    )
    print(text)
    if args.output:
        args.output.write_text(text, encoding="utf-8")
    return 0 if "neither exact nor a typed error" not in text else 1


if __name__ == "__main__":
    sys.exit(main())
