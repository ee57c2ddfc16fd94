"""Tokens per second on grammar-guide's JSON benchmark, backtrack against its peers.

    .venv/bin/python -m benchmarks.bench_speed [--quick]

The task (grammar-guide's own benchmark): its prompt "Here is a JSON object, with N keys, using
only string values:" followed by an open ```json fence, as raw text (no chat template), N = 10,
20, 30, 40; the output must be a JSON object of exactly N string-valued pairs. SmolLM2-135M-Instruct
fp32 on this CPU, greedy, one torch thread in every process, at most 16 N + 16 new tokens.

Methods: transformers `generate` without constraints (it stops at EOS or the token budget; SmolLM2
repeats keys until the budget), backtrack's `guide()` with SmolLM2 as drafter and target,
backtrack's target alone (`LocalTarget.correct(until="complete")`: plain constrained decoding),
grammar-guide 0.0.11, guidance 0.3.1 (llguidance), transformers-CFG 0.2.7 and Outlines 1.3.3
(a regex: Outlines' JSON-schema route cannot say "N keys of any name"). Peers run in their own
venvs (benchmarks/peers/setup.sh) as long-lived runner processes; the trials are interleaved
(trial, N, method), so a change in the machine's load hits every method alike.

Measured the same way for all: the final text's tokens under the SmolLM2 tokenizer, divided by the
wall time of the generation call. The timed region excludes model loading, building guidance's
model object, and per-grammar setup (parser, constraint, index: reported as "setup s"); it
includes the prompt's prefill. Every output is validated (json.loads, an object of exactly N
string values); a context-free grammar cannot forbid duplicate keys, so distinct keys are counted
apart.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from string import Template
from textwrap import dedent
from typing import Any

import torch

import grammars
from benchmarks.peers import ROOT, PeerProcess, smollm2_tf4
from benchmarks.peers.protocol import Clock

RESULTS = ROOT / ".bench" / "results"
COMMAND = ".venv/bin/python -m benchmarks.bench_speed"

# grammar-guide's benchmark grammars (examples/benchmarks/json.lark and json.ebnf in its repo)
GG_LARK = Template(
    '?start: object\n\nobject : "{" [pair ("," pair)~$NUM_REPEATS] "}"\n'
    'pair   : string ":" string\n\ninner: /([^"]|\\\\\\")+/ |\nstring : "\\"" inner "\\""\n\n'
    "%import common.WS\n%ignore WS"
)
CFG_EBNF = Template(
    'root   ::= object\n\nobject ::= "{" ws string ":" ws string $REPEATED_STRING_VALUES "}"\n\n'
    'string ::= "\\"" [ \\t!#-\\[\\]-~]+ "\\"" ws\n\nws ::= ([ \\t\\n] ws)?\n'
)
WARMUP_N = 3
OUTLINES_STRING = r'"([^"\\\x00-\x1f]|\\["\\/bfnrt])*"'
OUTLINES_WS = r"[ \t\n]*"


def prompt(n: int) -> str:
    """grammar-guide's benchmark prompt, built the same way (dedent of an indented f-string)."""
    return dedent(
        f"""
        This is an introduction to a prompt. It is intended to mimick the lengthy few-shot prompts we tend to use.
        Anyways, now I will get to my real point.
        Here is a JSON object, with {n} keys, using only string values:\n\n```json\n
        """  # noqa: E501
    )


def max_tokens(n: int) -> int:
    """The new-token budget: 16 a key (SmolLM2 writes 10 to 13 a key, and a blank line and a
    comma between pairs where the grammar forbids its own choice) plus 16."""
    return 16 * n + 16


def outlines_regex(n: int) -> str:
    s, w = OUTLINES_STRING, OUTLINES_WS
    pair = f"{s}{w}:{w}{s}{w}"
    return rf"{w}\{{{w}{pair}(,{w}{pair}){{{n - 1}}}\}}"


def grammar_for(method: str, n: int) -> str:
    if method == "grammar-guide":
        return GG_LARK.safe_substitute(NUM_REPEATS=str(n - 1))
    if method == "transformers-cfg":
        rep = ' "," ws string ":" ws string ' * (n - 1)
        return CFG_EBNF.safe_substitute(REPEATED_STRING_VALUES=rep)
    if method == "outlines":
        return outlines_regex(n)
    return grammars.source("json_keys", n=n)  # backtrack and guidance: llguidance's Lark


@dataclass
class Method:
    name: str
    env: str  # "main" or a peer venv
    runner_method: str  # what the runner (or the in-process code) runs
    transformers: str = ""
    baseline: str = ""  # the unconstrained method with the same transformers version
    error: str = ""
    versions: dict[str, str] = field(default_factory=dict)


METHODS = [
    Method("generate (unconstrained)", "main", "generate"),
    Method("generate (prompt look-up, 10 tokens)", "main", "generate-lookup"),
    Method("backtrack guide (local drafter)", "main", "guide"),
    Method("backtrack target alone", "main", "target"),
    Method("backtrack target alone, no speculation", "main", "target-plain"),
    Method("generate (unconstrained, tf 4.45)", "grammar-guide", "generate"),
    Method("grammar-guide 0.0.11", "grammar-guide", "grammar-guide"),
    Method("guidance 0.3.1", "guidance", "guidance"),
    Method("transformers-CFG 0.2.7", "transformers-cfg", "transformers-cfg"),
    Method("Outlines 1.3.3 (regex)", "outlines", "outlines"),
]


@dataclass
class Trial:
    method: str
    n: int
    trial: int
    load: float
    text: str = ""
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    setup_seconds: float = 0.0
    tokens: int = 0
    valid: bool = False
    pairs: int = 0
    distinct_keys: int = 0
    why_invalid: str = ""
    error: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def tps(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else 0.0

    @property
    def cpu_tps(self) -> float:
        return self.tokens / self.cpu_seconds if self.cpu_seconds > 0 else 0.0


def validate(text: str, n: int) -> tuple[bool, int, int, str]:
    """(valid, pairs, distinct keys, why not): a JSON object of exactly n string values. Text
    after a closing code fence is ignored (the unconstrained model writes one)."""
    body = text.split("```", 1)[0].strip()
    if not body.startswith("{"):
        return False, 0, 0, "no object"
    try:
        pairs = json.loads(body, object_pairs_hook=lambda p: p)
    except json.JSONDecodeError as exc:
        return False, 0, 0, f"json: {exc.msg}"
    keys = {k for k, _ in pairs}
    if not all(isinstance(v, str) for _, v in pairs):
        return False, len(pairs), len(keys), "non-string value"
    if len(pairs) != n:
        return False, len(pairs), len(keys), f"{len(pairs)} pairs"
    return True, len(pairs), len(keys), ""


class InProcess:
    """backtrack's methods and unconstrained `generate`, in this process (transformers 5.x)."""

    def __init__(self) -> None:
        from local_target import LocalTarget
        from local_target.loading import converted_smollm2, load_pretrained

        model, tokenizer = load_pretrained(converted_smollm2(), device="cpu")
        tokenizer.chat_template = None  # grammar-guide's prompt is raw text, as for the peers
        self.model, self.tokenizer = model, tokenizer
        self.target = LocalTarget(model, tokenizer)
        self.grammars: dict[int, Any] = {}

    def grammar(self, n: int) -> tuple[Any, float]:
        from grammars.grammar import Grammar

        start = time.perf_counter()
        if n not in self.grammars:
            self.grammars[n] = Grammar.load("json_keys", n=n)
        return self.grammars[n], time.perf_counter() - start

    def run(self, method: str, job: dict[str, Any]) -> dict[str, Any]:
        if method.startswith("generate"):
            inputs = self.tokenizer(job["prompt"], return_tensors="pt", add_special_tokens=False)
            with Clock() as clock, torch.inference_mode():
                out = self.model.generate(
                    **inputs,
                    max_new_tokens=job["max_tokens"],
                    do_sample=False,
                    pad_token_id=self.tokenizer.eos_token_id,
                    **({"prompt_lookup_num_tokens": 10} if method == "generate-lookup" else {}),
                )
            new = out[0, inputs["input_ids"].shape[1] :]
            text = self.tokenizer.decode(new, skip_special_tokens=True)
            return {"text": text, "setup_seconds": 0.0} | clock.times()
        grammar, setup = self.grammar(job["n"])
        if method.startswith("target"):
            from local_target import DecodingPolicy

            policy = DecodingPolicy(speculate=0) if method == "target-plain" else DecodingPolicy()
            with Clock() as clock:
                c = self.target.correct(
                    job["prompt"],
                    "",
                    grammar,
                    until="complete",
                    max_tokens=job["max_tokens"],
                    policy=policy,
                )
            # stop "max_tokens" with a complete text: blanks after the object until the budget
            extra = {"forced": c.flags.count("forced"), "stop": c.stop_reason}
            extra["generated_tokens"] = len(c.tokens)
            extra["forward_passes"] = c.forward_passes
            return {"text": c.text, "setup_seconds": setup, "extra": extra} | clock.times()
        from backtrack import guide
        from backtrack.local_drafter import LocalDrafter

        with Clock() as clock:
            result = guide(
                LocalDrafter(self.target),
                grammar,
                prompt=job["prompt"],
                target=self.target,
                max_draft_tokens=job["max_tokens"],
                completion_tokens=job["max_tokens"],
            )
        extra = {
            "api_calls": result.api_calls,
            "corrections": result.corrections,
            "accepted_chars": result.accepted_chars,
            "rejected_chars": result.rejected_chars,
            "stop": result.stop_reason,
        }
        return {"text": result.text, "setup_seconds": setup, "extra": extra} | clock.times()

    def versions(self) -> dict[str, str]:
        import importlib.metadata as md

        names = ["torch", "transformers", "tokenizers", "llguidance"]
        return {name: md.version(name) for name in names}


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def summarize(methods: list[Method], trials: list[Trial], ns: list[int]) -> list[dict[str, Any]]:
    rows = []
    by = {m.name: m for m in methods}
    for m in methods:
        for n in ns:
            ts = [t for t in trials if t.method == m.name and t.n == n and not t.error]
            errs = [t for t in trials if t.method == m.name and t.n == n and t.error]
            row: dict[str, Any] = {"method": m.name, "n": n, "trials": len(ts) + len(errs)}
            if not ts:
                row["error"] = (errs[0].error if errs else m.error) or "not run"
                rows.append(row)
                continue
            row.update(
                tps=median([t.tps for t in ts]),
                tps_min=min(t.tps for t in ts),
                tps_max=max(t.tps for t in ts),
                cpu_tps=median([t.cpu_tps for t in ts]),
                tokens=median([float(t.tokens) for t in ts]),
                seconds=median([t.seconds for t in ts]),
                setup=median([t.setup_seconds for t in ts]),
                valid=sum(t.valid for t in ts),
                distinct=median([float(t.distinct_keys) for t in ts]),
                load=median([t.load for t in ts]),
                why=sorted({t.why_invalid for t in ts if t.why_invalid}),
                errors=len(errs),
            )
            base = by.get(m.baseline.removesuffix(" *"))
            if base is not None:
                bt = [t.tps for t in trials if t.method == base.name and t.n == n and not t.error]
                if bt:
                    row["vs_base"] = row["tps"] / median(bt)
                    bc = [t.cpu_tps for t in trials if t.method == base.name and t.n == n]
                    row["cpu_vs_base"] = row["cpu_tps"] / median(bc)
                    row["other_tf"] = m.baseline.endswith(" *")
            rows.append(row)
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    head = (
        "| method | N | tok/s (median, min-max) | vs unconstrained | CPU tok/s (vs) | valid | "
        "tokens | gen s | setup s | distinct keys | load |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|\n"
    )
    lines = []
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['method']} | {r['n']} | failed: {r['error'][:160]} ||||||||||")
            continue
        why = f" ({', '.join(r['why'])})" if r["why"] and not r["valid"] else ""
        vs = f"{r['vs_base']:.2f}x" if "vs_base" in r else "-"
        vs += "*" if r.get("other_tf") else ""
        cpu = f"{r['cpu_tps']:.1f}" + (f" ({r['cpu_vs_base']:.2f}x)" if "cpu_vs_base" in r else "")
        lines.append(
            f"| {r['method']} | {r['n']} | {r['tps']:.1f} ({r['tps_min']:.1f}-{r['tps_max']:.1f})"
            f" | {vs} | {cpu} | {r['valid']}/{r['trials']}{why} | {r['tokens']:.0f}"
            f" | {r['seconds']:.1f} | {r['setup']:.2f} | {r['distinct']:.0f} | {r['load']:.2f} |"
        )
    return head + "\n".join(lines)


def findings(rows: list[dict[str, Any]], ns: list[int]) -> list[str]:
    """2-5 lines drawn from the figures."""
    names = list(dict.fromkeys(r["method"] for r in rows))

    def of(method: str) -> list[dict[str, Any]]:
        return [r for r in rows if r["method"] == method and "tps" in r]

    ratios = []
    for name in names:
        rs = [r for r in of(name) if "vs_base" in r]
        if rs:
            wall = median([r["vs_base"] for r in rs])
            cpu = median([r["cpu_vs_base"] for r in rs])
            ratios.append(f"{name} {wall:.2f}x ({cpu:.2f}x)")
    out = []
    if ratios:
        out.append(
            "- Tokens per second over unconstrained `generate`, median over N (CPU-time ratio in "
            "brackets; >1 is faster): " + "; ".join(ratios) + "."
        )
    valid = []
    for name in names:
        rs = of(name)
        if rs:
            valid.append(f"{name} {sum(r['valid'] for r in rs)}/{sum(r['trials'] for r in rs)}")
        else:
            err = next((r.get("error", "") for r in rows if r["method"] == name), "")
            valid.append(f"{name} failed ({err[:80]})")
    out.append("- Valid outputs: " + ", ".join(valid) + ".")
    setups = [
        f"{name} up to {max(r['setup'] for r in of(name)):.1f} s"
        for name in names
        if of(name) and max(r["setup"] for r in of(name)) >= 0.05
    ]
    if setups:
        out.append("- Per-grammar setup, outside the timed region: " + ", ".join(setups) + ".")
    out.append(
        "- No grammar here forbids repeated keys (a context-free grammar cannot): `distinct keys` "
        "shows how often the model repeats itself. Why outputs were invalid is in the `valid` "
        'column ("Unterminated string": the token budget ran out mid-string).'
    )
    return out


def merge(base: dict[str, Any], rerun: dict[str, Any]) -> dict[str, Any]:
    """`base` with the methods that `rerun` ran (methods, rows, runs) taken from `rerun`, and a
    note saying so. Ratios stay those measured side by side within each run."""
    names = {m["name"] for m in rerun["methods"]}
    out = dict(base)
    out["methods"] = [*rerun["methods"]] + [m for m in base["methods"] if m["name"] not in names]
    order = [m["name"] for m in base["methods"]]
    out["methods"].sort(key=lambda m: order.index(m["name"]) if m["name"] in order else 99)
    out["rows"] = [r for r in base["rows"] if r["method"] not in names] + rerun["rows"]
    out["rows"].sort(key=lambda r: (order.index(r["method"]), r["n"]))
    out["runs"] = [t for t in base["runs"] if t["method"] not in names] + rerun["runs"]
    loads = [t["load"] for t in out["runs"]]
    out["load_min_median_max"] = [min(loads), median(loads), max(loads)]
    out["finished"] = rerun["finished"]
    out["notes"] = [
        *base.get("notes", []),
        f"Rows of {', '.join(sorted(names))} come from a re-run ({rerun['started']} to "
        f"{rerun['finished']}, same settings) after a change to backtrack; the other rows and "
        "their ratios (* ones against the earlier unconstrained run) from the first run.",
    ]
    return out


def budget_notes(record: dict[str, Any]) -> list[str]:
    """A line for backtrack's target when it wrote past the end of a complete text (blanks, which
    the grammar allows after the object, until the token budget): tokens it generated per
    second against tokens of the final text."""
    runs = [
        t
        for t in record["runs"]
        if t["method"] == "backtrack target alone" and "generated_tokens" in t["extra"]
    ]
    at_budget = [t for t in runs if t["extra"]["generated_tokens"] >= max_tokens(t["n"])]
    if not at_budget:
        return []
    base = [t for t in record["runs"] if t["method"] == "generate (unconstrained)"]
    gen = median([t["extra"]["generated_tokens"] / t["seconds"] for t in runs])
    ratio = gen / median([t["tps"] for t in base]) if base else float("nan")
    return [
        f"- backtrack target alone used the whole token budget in {len(at_budget)}/{len(runs)} "
        "runs: after the closing brace the grammar allows only blanks, and the model wrote "
        f"newlines instead of EOS. Counting the tokens it generated, {gen:.1f} tok/s "
        f"({ratio:.2f}x unconstrained): the masking itself costs little, the blank tail does."
    ]


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}"


def run(
    quick: bool = False,
    trials: int | None = None,
    ns: list[int] | None = None,
    only: str | None = None,
) -> str:
    """Run the benchmark (print as it goes, save JSON under .bench/results/); the Markdown
    section. `ns` and `only` (a comma-separated list of method-name substrings) are for
    development runs."""
    torch.set_num_threads(1)
    ns = ns or ([10] if quick else [10, 20, 30, 40])
    n_trials = trials or (1 if quick else 3)
    started = datetime.datetime.now().astimezone()
    print(f"bench_speed: N={ns}, {n_trials} trial(s), load {os.getloadavg()}", flush=True)
    folder_tf4 = str(smollm2_tf4())
    methods = [Method(**asdict(m)) for m in METHODS]
    if only:
        keep = [w.strip().lower() for w in only.split(",")]
        methods = [m for m in methods if any(w in m.name.lower() for w in keep)]
    local = InProcess()
    tokenizer = local.tokenizer
    main_versions = local.versions()
    procs: dict[str, PeerProcess] = {}
    runners: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {}
    for m in methods:
        if m.env == "main":
            m.versions = main_versions
            m.transformers = main_versions["transformers"]
            runners[m.name] = lambda job, m=m: local.run(m.runner_method, job)
            continue
        try:
            proc = PeerProcess(m.env, "speed_runner.py")
            procs[m.name] = proc
            hello = proc.request({"method": m.runner_method, "model": folder_tf4, "threads": 1})
        except Exception as exc:
            m.error = f"{type(exc).__name__}: {exc}"
            print(f"  {m.name}: could not start: {m.error}", flush=True)
            continue
        if "fatal" in hello:
            m.error = hello["fatal"]
            print(f"  {m.name}: could not start: {m.error}", flush=True)
            continue
        m.versions = hello["versions"]
        m.transformers = m.versions.get("transformers", "")
        runners[m.name] = lambda job, proc=proc: proc.request(job)
    for m in methods:  # unconstrained generate with the same transformers, else the main one
        if m.runner_method != "generate":
            same = [b for b in methods if b.runner_method == "generate" and b.name in runners]
            m.baseline = next((b.name for b in same if b.transformers == m.transformers), "")
            if not m.baseline and same:
                m.baseline = same[0].name + " *"

    def job(m: Method, n: int, trial: int, warmup: bool) -> dict[str, Any]:
        return {
            "n": n,
            "trial": trial,
            "warmup": warmup,
            "prompt": prompt(n),
            "max_tokens": max_tokens(n),
            "grammar": grammar_for(m.runner_method, n),
        }

    def one(m: Method, n: int, trial: int, warmup: bool = False) -> Trial | None:
        load = os.getloadavg()[0]
        try:
            reply = runners[m.name](job(m, n, trial, warmup))
        except Exception as exc:
            reply = {"error": f"{type(exc).__name__}: {exc}"[:500]}
        t = Trial(m.name, n, trial, load)
        if "error" in reply:
            t.error = str(reply["error"])
            print(f"  {m.name:34} N={n:<3} error: {t.error[:200]}", flush=True)
            if m.name in procs and procs[m.name].proc.poll() is not None:
                m.error = t.error
                runners.pop(m.name, None)
            return None if warmup else t
        t.text = str(reply["text"])
        t.seconds = float(reply["seconds"])
        t.cpu_seconds = float(reply.get("cpu_seconds", 0.0))
        t.setup_seconds = float(reply.get("setup_seconds", 0.0))
        t.extra = dict(reply.get("extra") or {})
        t.tokens = len(tokenizer(t.text, add_special_tokens=False)["input_ids"])
        t.valid, t.pairs, t.distinct_keys, t.why_invalid = validate(t.text, n)
        tag = "warm-up" if warmup else f"trial {trial}"
        print(
            f"  {m.name:34} N={n:<3} {tag:8} {t.tokens:4d} tok {t.seconds:7.2f} s "
            f"{t.tps:6.2f} tok/s (CPU {t.cpu_tps:6.2f}) valid={t.valid!s:5} "
            f"keys={t.distinct_keys:<3} load={load:.2f} {t.why_invalid}",
            flush=True,
        )
        return None if warmup else t

    results: list[Trial] = []
    try:
        print(f"warm-up (N={WARMUP_N}, not counted)", flush=True)
        for m in methods:
            if m.name in runners:
                one(m, WARMUP_N, -1, warmup=True)
        for trial in range(n_trials):
            for n in ns:
                for m in methods:
                    if m.name in runners:
                        t = one(m, n, trial)
                        if t is not None:
                            results.append(t)
    finally:
        for proc in procs.values():
            proc.close()
    finished = datetime.datetime.now().astimezone()
    rows = summarize(methods, results, ns)
    text_table = table(rows)
    print(text_table, flush=True)
    loads = [t.load for t in results]
    record = {
        "benchmark": "bench_speed",
        "quick": quick,
        "command": COMMAND + (" --quick" if quick else ""),
        "machine": machine(),
        "started": started.isoformat(timespec="seconds"),
        "finished": finished.isoformat(timespec="seconds"),
        "load_min_median_max": [min(loads), median(loads), max(loads)] if loads else [],
        "ns": ns,
        "trials": n_trials,
        "methods": [asdict(m) for m in methods],
        "rows": rows,
        "runs": [asdict(t) | {"tps": t.tps, "cpu_tps": t.cpu_tps} for t in results],
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    dev = bool(only) or ns != ([10] if quick else [10, 20, 30, 40])
    out = RESULTS / ("speed-dev.json" if dev else "speed-quick.json" if quick else "speed.json")
    out.write_text(json.dumps(record, indent=1, ensure_ascii=False))
    print(f"results: {out}", flush=True)
    return markdown(record)


def markdown(record: dict[str, Any]) -> str:
    """The Markdown section for a saved record (`.bench/results/speed.json`)."""
    text_table = table(record["rows"])
    notes = findings(record["rows"], record["ns"])
    notes[1:1] = budget_notes(record)
    envs: dict[str, dict[str, str]] = {}
    for m in record["methods"]:
        envs.setdefault(m["env"], {}).update(m["versions"])
    env_text = "; ".join(
        f"{env}: " + ", ".join(f"{k} {v}" for k, v in versions.items())
        for env, versions in envs.items()
        if versions
    )
    load = record["load_min_median_max"]
    load_text = f"{load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}" if load else "-"
    lines = [
        "## Speed: JSON with N string keys (grammar-guide's benchmark), SmolLM2-135M-Instruct",
        "",
        f"Command: `{record['command']}` (peers: `bash benchmarks/peers/setup.sh` first; "
        "`peer_python` runs it when a venv is missing). "
        f"{record['machine']}; {record['started']} to {record['finished']}; "
        f"1 torch thread per process; load average (1 min) min / median / max {load_text}.",
        "",
        f"Versions by venv: {env_text}.",
        "",
        *[f"{note}\n" for note in record.get("notes", [])],
        f"Greedy, at most 16 N + 16 new tokens, {record['trials']} trial(s) per (method, N) after "
        "one warm-up (N=3), interleaved (trial, N, method). Each peer uses its own grammar "
        "language: grammar-guide and transformers-CFG the grammars of grammar-guide's benchmark, "
        "guidance the same llguidance Lark grammar as backtrack (`json_keys`), Outlines a regex. "
        "Valid: `json.loads` gives an object of exactly N string values (text after a closing "
        "fence ignored). "
        "Tokens: the final text under the SmolLM2 tokenizer. The timed region is the generation "
        "call: model loading and guidance's model object are built before it, per-grammar setup "
        "(parser / constraint / index) is the `setup s` column, prompt prefill is inside. "
        "`vs unconstrained`: tok/s over unconstrained `generate` with the same transformers "
        "version in the same run (*: none was run with that version; against transformers "
        f"{record['methods'][0]['transformers']}).",
        "",
        text_table,
        "",
        *notes,
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="N=10 only, one trial")
    parser.add_argument("--trials", type=int, default=None, help="trials per (method, N)")
    parser.add_argument("--ns", default=None, help="development: N values, e.g. 10,40")
    parser.add_argument("--only", default=None, help="development: method-name substrings")
    parser.add_argument("--from-json", default=None, help="print the section of saved results")
    parser.add_argument(
        "--merge",
        default=None,
        help="take the methods of this re-run into .bench/results/speed.json",
    )
    args = parser.parse_args()
    ns = [int(x) for x in args.ns.split(",")] if args.ns else None
    if args.from_json:
        print(markdown(json.loads(Path(args.from_json).read_text(encoding="utf-8"))))
        return
    if args.merge:
        base_path = RESULTS / "speed.json"
        base = json.loads(base_path.read_text(encoding="utf-8"))
        merged = merge(base, json.loads(Path(args.merge).read_text(encoding="utf-8")))
        base_path.write_text(json.dumps(merged, indent=1, ensure_ascii=False), encoding="utf-8")
        print(markdown(merged))
        return
    section = run(args.quick, args.trials, ns, args.only)
    print()
    print(section)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
