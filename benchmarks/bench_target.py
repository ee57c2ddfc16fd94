"""Costs of the local target's grammar work on SmolLM2-135M-Instruct (CPU).

    python -m benchmarks.bench_target [--threads N] [--tokens N]

(a) Masking per token against the forward pass per token, over greedy generations of about
    100 tokens in all (a few chat prompts per grammar) under the JSON and SQLite grammars, and a
    JSON schema for contrast (its keys are forced). "opportunistic" is what `correct()` does
    (check the model's own choice; the full mask only when it is refused), from
    `Correction.mask_seconds` over its `choose` calls; "full mask" replays the same tokens with a
    `choose` that computes `vocab.grammar_mask` at every step. Forward: `forward_seconds` over
    `forward_passes` of the same generation (each pass feeds one token, or one run of forced
    tokens), i.e. the unconstrained per-token cost at that context length.
(b) The share of those tokens that the grammar forced (flags == "forced", no sampling).
(c) Rolling back and resyncing: `session.move_to` from a 1,000-token sequence to one that differs
    in its last 10 tokens, against recomputing the 1,000 tokens in a fresh session.

Each number is the median of 3 runs. One torch thread by default: on a small shared CPU the
default thread pool is several times slower and noisy (`--threads 0` keeps torch's default).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from backtrack.errors import GrammarError
from backtrack.grammar import Grammar
from local_target import LocalTarget, Sampling
from local_target.sampling import choose

RUNS = 3
RESYNC_LENGTH = 1000
RESYNC_CHANGED = 10

# Used only where the shipped grammar is missing (it is named "sqlite" in grammars/).
FALLBACK_SQL = r"""
start: select ";"?
select: "SELECT" columns "FROM" table join* where? group? order? limit?
columns: column ("," column)*
column: "*" | expr ("AS" NAME)?
table: NAME ("AS"? NAME)?
join: ("LEFT" | "INNER")? "JOIN" table "ON" expr
where: "WHERE" expr
group: "GROUP" "BY" expr ("," expr)*
order: "ORDER" "BY" expr ("ASC" | "DESC")? ("," expr ("ASC" | "DESC")?)*
limit: "LIMIT" NUMBER
expr: term (OP term)*
term: NAME ("." NAME)? | NUMBER | STRING | NAME "(" [expr ("," expr)*] ")" | "(" expr ")"
OP: "=" | "<>" | "<" | ">" | "<=" | ">=" | "+" | "-" | "*" | "/" | "AND" | "OR"
NAME: /[A-Za-z_][A-Za-z0-9_]*/
NUMBER: /[0-9]+(\.[0-9]+)?/
STRING: /'[^']*'/
WS: /[ \t\n]+/
%ignore WS
"""

# Several prompts per grammar, so that a run writes about 100 tokens in all (the constrained
# greedy answers end at EOS after 10 to 60 tokens each).
PROMPTS = {
    "json": [
        "List five famous scientists as a JSON array of objects with the keys name, field, born "
        "and known_for.",
        "Write a JSON array with five books. Each book is an object with the keys title, "
        "author, year and genre.",
        "Create a JSON object describing a small company: its name, address, and a list of four "
        "employees with name, role and email.",
    ],
    "sqlite": [
        "Write an SQL query that lists the ten customers with the highest total order amount, "
        "with their name and email.",
        "Write an SQL query that counts the orders per month in 2023 from the table orders.",
        "Write an SQL query that finds products that were never ordered, using the tables "
        "products and order_items.",
    ],
    "schema": [
        "Describe a famous scientist as a JSON object.",
        "Describe a famous painter as a JSON object.",
        "Describe a famous composer as a JSON object.",
    ],
}
PERSON_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "born": {"type": "integer"},
        "country": {"type": "string"},
        "known_for": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
    },
    "required": ["name", "born", "country", "known_for"],
    "additionalProperties": False,
}


def sql_grammar() -> tuple[Grammar, str]:
    try:
        return Grammar.load("sqlite"), "shipped sqlite.lark"
    except GrammarError:
        return Grammar.from_lark(FALLBACK_SQL, name="sql-inline"), "inline SQL grammar (fallback)"


@dataclass
class Generation:
    """One run of a workload (its prompts one after the other), totals."""

    tokens: int = 0
    forced: int = 0
    steps: int = 0  # choose() calls: the non-forced tokens, plus the EOS choices
    forward_passes: int = 0
    forward_s: float = 0.0
    mask_s: float = 0.0  # opportunistic choose() time
    full_mask_s: float = 0.0  # choose() time with the mask computed at every step

    @property
    def forward_ms(self) -> float:
        return self.forward_s / max(1, self.forward_passes) * 1e3

    @property
    def mask_ms(self) -> float:
        return self.mask_s / max(1, self.steps) * 1e3

    @property
    def full_mask_ms(self) -> float:
        return self.full_mask_s / max(1, self.steps) * 1e3


def generate(
    target: LocalTarget, prompts: list[str], grammar: Grammar, max_tokens: int
) -> Generation:
    run = Generation()
    for prompt in prompts:
        c = target.correct(prompt, "", grammar, until="complete", max_tokens=max_tokens)
        steps = sum(f != "forced" for f in c.flags) + (c.stop_reason == "eos")
        run.tokens += len(c.tokens)
        run.forced += c.flags.count("forced")
        run.steps += steps
        run.forward_passes += c.forward_passes
        run.forward_s += c.forward_seconds
        run.mask_s += c.mask_seconds
        run.full_mask_s += replay_full_mask(target, grammar, c.tokens, c.flags, c.stop_reason)
    return run


def replay_full_mask(
    target: LocalTarget, grammar: Grammar, tokens: Any, flags: Any, stop: str
) -> float:
    """Seconds of `choose` with the full mask computed at every step, over the same token
    sequence (forced tokens are consumed without a choice, as in `correct`)."""
    vocab = target.vocab
    matcher = grammar.matcher(vocab.ll)
    logits = torch.randn(vocab.n_logits)
    greedy = Sampling()
    elapsed = 0.0

    def step() -> None:
        nonlocal elapsed
        start = time.perf_counter()
        choose(logits, _refuse, lambda: vocab.grammar_mask(matcher), greedy, None)
        elapsed += time.perf_counter() - start

    for token, flag in zip(tokens, flags, strict=True):
        if flag != "forced":
            step()
        if not matcher.consume_token(token):
            raise RuntimeError(f"replay: the grammar refused token {token}")
    if stop == "eos":
        step()
    return elapsed


def _refuse(_token: int) -> bool:
    return False


def resync(target: LocalTarget) -> tuple[float, float, float]:
    """(seconds to roll back and resync the last RESYNC_CHANGED of RESYNC_LENGTH tokens, seconds
    to recompute all of them in a fresh session, max |logit difference| between the two)."""
    records = [
        {"id": i, "name": f"customer {i}", "tags": ["alpha", "beta", "gamma"][: i % 3 + 1]}
        for i in range(400)
    ]
    text_ids = target.vocab.encode(json.dumps(records, indent=2))
    assert len(text_ids) >= RESYNC_LENGTH + RESYNC_CHANGED
    prompt = "Continue the JSON document."
    session = target.session(prompt)
    prompt_ids = session.ids[: session.prompt_len]
    original = prompt_ids + text_ids[:RESYNC_LENGTH]
    variant = original[:-RESYNC_CHANGED] + text_ids[-RESYNC_CHANGED:]
    session.move_to(original)

    rollbacks = []
    for run in range(RUNS):
        goal = variant if run % 2 == 0 else original
        start = time.perf_counter()
        session.move_to(goal)
        rollbacks.append(time.perf_counter() - start)
    recomputes = []
    for _ in range(RUNS):
        fresh = target.session(prompt)
        start = time.perf_counter()
        fresh.move_to(session.ids)
        recomputes.append(time.perf_counter() - start)
    difference = (session.logits - fresh.logits).abs().max().item()
    return statistics.median(rollbacks), statistics.median(recomputes), difference


def median_ms(runs: list[Generation], get: Callable[[Generation], float]) -> float:
    return statistics.median(get(g) for g in runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1, help="torch threads (0: default)")
    parser.add_argument("--tokens", type=int, default=100, help="most tokens per answer")
    args = parser.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)

    began = time.perf_counter()
    target = LocalTarget.default(device="cpu")
    print(
        f"SmolLM2-135M-Instruct, fp32, CPU, {torch.get_num_threads()} torch thread(s), "
        f"vocabulary {target.vocab.n_logits}; median of {RUNS} runs"
    )
    sql, sql_source = sql_grammar()
    grammars = {
        "json": Grammar.load("json"),
        "sqlite": sql,
        "schema": Grammar.from_json_schema(PERSON_SCHEMA),
    }
    print(f"SQL grammar: {sql_source}")
    print()
    print("(a) per-token cost of masking vs a forward pass; (b) share of forced tokens")
    print(
        f"{'grammar':<8} {'tokens':>6} {'forced':>7} {'forward/pass':>13} "
        f"{'mask, opportunistic':>22} {'mask, full every step':>23}"
    )
    for name, grammar in grammars.items():
        prompts = PROMPTS[name]
        generate(target, prompts[:1], grammar, 8)  # warm-up: matcher tables, allocator
        runs = [generate(target, prompts, grammar, args.tokens) for _ in range(RUNS)]
        forward = median_ms(runs, lambda g: g.forward_ms)
        mask = median_ms(runs, lambda g: g.mask_ms)
        full = median_ms(runs, lambda g: g.full_mask_ms)
        g = runs[0]
        print(
            f"{name:<8} {g.tokens:>6} {g.forced / max(1, g.tokens):>7.1%} {forward:>11.2f}ms "
            f"{mask:>8.3f}ms ={mask / forward:>8.2%}  {full:>8.3f}ms ={full / forward:>8.2%}",
            flush=True,
        )
    print()
    rollback, recompute, difference = resync(target)
    print(f"(c) move {RESYNC_LENGTH} tokens to a sequence differing in the last {RESYNC_CHANGED}")
    print(f"{'rollback + resync':<20} {rollback * 1e3:>9.1f} ms")
    print(f"{'recompute (fresh)':<20} {recompute * 1e3:>9.1f} ms")
    print(f"{'speed-up':<20} {recompute / rollback:>9.1f} x   (max |logit diff| {difference:.1e})")
    print(f"\ntotal {time.perf_counter() - began:.0f} s")


if __name__ == "__main__":
    main()
