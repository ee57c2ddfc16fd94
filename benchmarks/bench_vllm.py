"""Corrections per second: the local target against a vLLM server with backtrack's logits
processor (local_target.vllm_target), same model (SmolLM2-135M-Instruct, float32), same machine.

    python -m benchmarks.bench_vllm [--quick] [--clients 1 8]

The corrections: JSON documents cut at several places, each continued to its next terminal (at
most 12 tokens), greedy, each from its own prompt (a fresh session). The local target runs them
one after another (its forward passes are serialized anyway); the vLLM target with 1 client and
with each count in `--clients` at once (threads), where vLLM batches them. Every vLLM run must
write the local target's tokens: the benchmark fails otherwise. The server is started and stopped
here (tests/support/vllm_server.py: vLLM's environment from $BACKTRACK_VLLM_PYTHON, else
../vllm-env); its start is not timed. Not in `python -m benchmarks`' list: it needs that
environment.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import torch

from grammars.grammar import Grammar
from local_target import LocalTarget
from local_target.loading import converted_smollm2
from local_target.vllm_target import VllmTarget
from tests.support.vllm_server import vllm_python, vllm_server

DOCUMENTS = [
    '{"name": "Alice", "age": 30, "tags": ["admin", "ops"], "active": true}',
    '{"city": "Paris", "population": 2148000, "areas": [{"name": "Marais"}]}',
    '[{"id": 1, "title": "Buy milk", "done": false}, {"id": 2, "title": "Call Bob"}]',
    '{"model": "SmolLM2", "params": 135000000, "license": "Apache-2.0"}',
]
PROMPT = "Reply with a JSON document."


def corrections(quick: bool) -> list[str]:
    """The committed texts: each document cut at 4 places (2 with --quick)."""
    per_doc = 2 if quick else 4
    return [doc[: len(doc) * (k + 1) // (per_doc + 1)] for doc in DOCUMENTS for k in range(per_doc)]


def timed(work: Callable[[], list[tuple[int, ...]]]) -> tuple[float, list[tuple[int, ...]]]:
    """Seconds `work` took, and what it gave."""
    start = time.perf_counter()
    tokens = work()
    return time.perf_counter() - start, tokens


def run(quick: bool, clients: list[int]) -> str:
    torch.set_num_threads(1)
    grammar = Grammar.load("json")
    texts = corrections(quick)
    local = LocalTarget.default()

    def on_local() -> list[tuple[int, ...]]:
        return [local.session(PROMPT).correct(t, grammar, max_tokens=12).tokens for t in texts]

    local_s, want = timed(on_local)
    rows = [("local (in process)", 1, local_s)]
    with vllm_server(vllm_python()) as url, VllmTarget(url, converted_smollm2()) as remote:

        def one(text: str) -> tuple[int, ...]:
            return remote.session(PROMPT).correct(text, grammar, max_tokens=12).tokens

        one(texts[0])  # the first request pays for the processor's first grammar compile
        for n in sorted({1, *clients}):
            with ThreadPoolExecutor(n) as pool:
                seconds, got = timed(lambda pool=pool: list(pool.map(one, texts)))
            if got != want:
                raise SystemExit(f"vLLM at {n} clients wrote other tokens than the local target")
            rows.append(("vLLM + processor", n, seconds))
    lines = [
        f"{len(texts)} greedy JSON corrections (to the next terminal, at most 12 tokens), tokens"
        " identical to the local target's in every vLLM run.",
        "",
        "| target | clients | seconds | corrections/s |",
        "|---|---|---|---|",
    ]
    lines += [f"| {name} | {n} | {s:.2f} | {len(texts) / s:.2f} |" for name, n, s in rows]
    table = "\n".join(lines)
    print(table)
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--clients", type=int, nargs="+", default=[8])
    args = parser.parse_args()
    run(args.quick, args.clients)


if __name__ == "__main__":
    main()
