"""Time of checking a JSON draft, 100 B to 1 MB: backtrack's `check` against grammar-guide's parser
and the lark library's parsers.

    .venv/bin/python -m benchmarks.bench_check [--quick]

backtrack: `check` is `Grammar.check` (llguidance over a byte vocabulary: the cut at the first byte
the grammar cannot continue; `.complete` would cost a second pass); `feed 1K` and `feed 80` feed
the draft through `checker()` in pieces of 1024 and 80 characters (about 1 KB and about 20 tokens).
Peers: grammar-guide 0.0.11's Earley parser (`load_parser(...).parse`, what its
`validate_program` runs on each draft; in its own venv, see benchmarks/peers/) and lark 1.3.1's
Earley and LALR parsers, all on the same grammar (grammars/json.lark) and the same drafts (valid
pretty-printed JSON with accents, CJK, emoji). Each cell is CPU time, the median of 5 runs after a
warm-up (runs under 2 ms are batched), in microseconds per KB of draft: a flat column means linear
growth. A parser is dropped for larger sizes once a run takes over 10 s, or when its time scaled
linearly to the next size would pass 30 s. Timed region: the check alone (grammars and parsers are
built before it).
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata as md
import json
import math
import os
import random
import re
import statistics
import time
from collections.abc import Callable
from typing import Any

import lark

import grammars
from grammars.grammar import Grammar

SIZES = [100, 1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20]
QUICK_SIZES = [100, 1 << 10, 16 << 10]
TOO_SLOW_S = 10.0  # a parser whose run took longer is dropped for larger sizes
PREDICTED_LIMIT_S = 30.0  # ... and one whose time scaled linearly to the next size passes this
RUNS = 5
BATCH_S = 2e-3  # runs faster than this are timed in batches
COLUMNS = ["check", "feed 1K", "feed 80", "grammar-guide", "lark earley", "lark lalr"]
COMMAND = ".venv/bin/python -m benchmarks.bench_check"

# words for keys and strings: accents, CJK, Hangul, emoji (one with a skin tone), a combining mark
WORDS = ["alpha", "beta", "données", "größe", "日本語", "中文", "한국어", "😀", "👍🏽", "e\u0301"]


def value(rng: random.Random, depth: int) -> object:
    """A random JSON value, nested up to `depth` levels."""
    kind = rng.choice(["str", "num", "lit", "obj", "arr"] if depth else ["str", "num", "lit"])
    if kind == "str":
        return " ".join(rng.choices(WORDS, k=rng.randint(1, 6)))
    if kind == "num":
        return rng.choice([rng.randint(-1000, 10**6), round(rng.uniform(-1e3, 1e3), 4)])
    if kind == "lit":
        return rng.choice([True, False, None])
    if kind == "obj":
        return {f"{rng.choice(WORDS)}_{i}": value(rng, depth - 1) for i in range(rng.randint(1, 5))}
    return [value(rng, depth - 1) for _ in range(rng.randint(1, 5))]


def draft(size: int, seed: int = 0) -> str:
    """A pretty-printed JSON array of records, `size` UTF-8 bytes or a little over."""
    rng = random.Random(seed)
    records: list[str] = []
    total = 2
    depth = 3 if size >= 1024 else 0  # flat records for drafts under 1 KB
    while total < size:
        record = json.dumps(
            {"id": len(records), "data": value(rng, depth)}, ensure_ascii=False, indent=2
        )
        records.append(record)
        total += len(record.encode("utf-8")) + 2
    return "[" + ",\n".join(records) + "]"


def median_time(run: Callable[[], object], runs: int = RUNS) -> float:
    """CPU seconds (steadier than wall time on a shared machine): the median of `runs` runs after
    one warm-up, or the warm-up alone where it is too slow; fast runs are timed in batches."""
    start = time.process_time()
    run()
    first = time.process_time() - start
    if first > TOO_SLOW_S:
        return first
    batch = max(1, math.ceil(BATCH_S / max(first, 1e-7))) if first < BATCH_S else 1
    times = []
    for _ in range(runs):
        start = time.process_time()
        for _ in range(batch):
            run()
        times.append((time.process_time() - start) / batch)
    return statistics.median(times)


def feed(grammar: Grammar, text: str, chunk: int) -> None:
    checker = grammar.checker()
    for i in range(0, len(text), chunk):
        checker.feed(text[i : i + chunk])
    assert checker.complete


class GrammarGuideParser:
    """grammar-guide's parser, in its venv (benchmarks/peers/check_runner.py)."""

    def __init__(self, source: str) -> None:
        from benchmarks.peers import PeerProcess

        self.proc = PeerProcess("grammar-guide", "check_runner.py")
        hello = self.proc.request({"parser": "grammar-guide", "grammar": source})
        if "fatal" in hello:
            self.proc.close()
            raise RuntimeError(hello["fatal"])
        self.versions: dict[str, str] = hello["versions"]

    def seconds(self, text: str, runs: int) -> float:
        reply = self.proc.request({"text": text, "runs": runs, "too_slow": TOO_SLOW_S})
        if "error" in reply:
            raise RuntimeError(reply["error"])
        if not reply["ok"]:
            raise RuntimeError("grammar-guide's parser rejected a valid draft")
        return float(reply["seconds"])

    def close(self) -> None:
        self.proc.close()


def timings(
    text: str, grammar: Grammar, parsers: dict[str, Callable[[str], object]], runs: int
) -> dict[str, float]:
    """Seconds per run of each way to check `text` (the peers only where given)."""
    out = {
        "check": median_time(lambda: grammar.check(text), runs),
        "feed 1K": median_time(lambda: feed(grammar, text, 1024), runs),
        "feed 80": median_time(lambda: feed(grammar, text, 80), runs),
    }
    for name, parse in parsers.items():
        if name == "grammar-guide":
            out[name] = float(parse(text))  # type: ignore[arg-type]
        else:
            out[name] = median_time(lambda parse=parse: parse(text), runs)
    return out


def growth(sizes: list[float], seconds: list[float]) -> float:
    """The exponent k in time ~ size**k, from the first and last point."""
    if len(sizes) < 2 or seconds[0] <= 0:
        return float("nan")
    return math.log(seconds[-1] / seconds[0]) / math.log(sizes[-1] / sizes[0])


def run(quick: bool = False) -> str:
    sizes = QUICK_SIZES if quick else SIZES
    runs = 3 if quick else RUNS
    started = datetime.datetime.now().astimezone()
    grammar = Grammar.load("json")
    lark_source = re.sub(r"(?m)^\s*%llguidance\b.*$", "", grammars.source("json"))
    earley = lark.Lark(lark_source, parser="earley")
    lalr = lark.Lark(lark_source, parser="lalr")
    parsers: dict[str, Callable[[str], object]] = {
        "lark earley": earley.parse,
        "lark lalr": lalr.parse,
    }
    versions = {"llguidance": md.version("llguidance"), "lark": md.version("lark")}
    dropped: dict[str, str] = {}
    gg: GrammarGuideParser | None = None
    try:
        gg = GrammarGuideParser(lark_source)
        versions.update(gg.versions)
        parsers["grammar-guide"] = lambda text: gg.seconds(text, runs)  # type: ignore[union-attr]
    except Exception as exc:
        dropped["grammar-guide"] = f"could not run: {type(exc).__name__}: {exc}"[:300]
        print(f"grammar-guide: {dropped['grammar-guide']}", flush=True)
    print(
        f"CPU µs per KB, median of {runs} runs ('check ms': the whole check, in milliseconds); "
        f"load {os.getloadavg()[0]:.2f}",
        flush=True,
    )
    print(f"{'size':>9} {'check ms':>9} " + " ".join(f"{c:>13}" for c in COLUMNS), flush=True)
    rows: list[dict[str, Any]] = []
    try:
        for i, size in enumerate(sizes):
            text = draft(size)
            nbytes = len(text.encode("utf-8"))
            assert grammar.check(text).complete
            load = os.getloadavg()[0]
            try:
                seconds = timings(text, grammar, parsers, runs)
            except RuntimeError as exc:  # the peer failed: drop it, time the rest
                dropped["grammar-guide"] = f"failed at {nbytes} B: {exc}"[:300]
                parsers.pop("grammar-guide", None)
                seconds = timings(text, grammar, parsers, runs)
            rows.append({"size": size, "bytes": nbytes, "seconds": seconds, "load": load})
            nxt = sizes[i + 1] if i + 1 < len(sizes) else None
            for name in list(parsers):
                if seconds[name] > TOO_SLOW_S:
                    dropped[name] = f"{seconds[name]:.1f} s at {nbytes} B"
                elif nxt and seconds[name] * nxt / size > PREDICTED_LIMIT_S:
                    dropped[name] = (
                        f"{seconds[name]:.1f} s at {nbytes} B (about "
                        f"{seconds[name] * nxt / size:.0f} s or more predicted next)"
                    )
                if name in dropped:
                    parsers.pop(name)
            kb = nbytes / 1024
            cells = [
                f"{seconds[c] * 1e6 / kb:13.1f}" if c in seconds else f"{'-':>13}" for c in COLUMNS
            ]
            print(
                f"{label(nbytes):>9} {seconds['check'] * 1e3:9.3f} " + " ".join(cells), flush=True
            )
    finally:
        if gg is not None:
            gg.close()
    finished = datetime.datetime.now().astimezone()
    record = {
        "benchmark": "bench_check",
        "quick": quick,
        "command": COMMAND + (" --quick" if quick else ""),
        "started": started.isoformat(timespec="seconds"),
        "finished": finished.isoformat(timespec="seconds"),
        "versions": versions,
        "runs": runs,
        "rows": rows,
        "dropped": dropped,
    }
    from benchmarks.peers import ROOT

    results = ROOT / ".bench" / "results"
    results.mkdir(parents=True, exist_ok=True)
    out = results / ("check-quick.json" if quick else "check.json")
    out.write_text(json.dumps(record, indent=1))
    print(f"results: {out}", flush=True)
    return markdown(record)


def label(nbytes: int) -> str:
    if nbytes < 1024:
        return f"{nbytes} B"
    if nbytes < 1 << 20:
        return f"{nbytes / 1024:.0f} KB"
    return f"{nbytes / (1 << 20):.1f} MB"


def markdown(record: dict[str, Any]) -> str:
    """The Markdown section for a saved record (`.bench/results/check.json`)."""
    rows = record["rows"]
    head = "| draft | check ms | " + " | ".join(COLUMNS) + " | load |\n"
    head += "|---" * (len(COLUMNS) + 3) + "|\n"
    lines = []
    for r in rows:
        kb = r["bytes"] / 1024
        cells = [f"{r['seconds'][c] * 1e6 / kb:.1f}" if c in r["seconds"] else "-" for c in COLUMNS]
        lines.append(
            f"| {label(r['bytes'])} | {r['seconds']['check'] * 1e3:.3f} | "
            + " | ".join(cells)
            + f" | {r['load']:.2f} |"
        )
    notes = []
    for c in COLUMNS:
        pts = [
            (r["bytes"], r["seconds"][c]) for r in rows if c in r["seconds"] and r["bytes"] >= 1024
        ]
        if len(pts) >= 2:
            k = growth([p[0] for p in pts], [p[1] for p in pts])
            notes.append(f"{c} ~ size^{k:.2f} ({label(pts[0][0])} to {label(pts[-1][0])})")
    mid = [r for r in rows if all(c in r["seconds"] for c in ("grammar-guide", "lark earley"))]
    findings = [f"- Growth (CPU time against draft size): {'; '.join(notes)}."]
    if mid:
        m = mid[-1]["seconds"]
        findings.append(
            f"- At {label(mid[-1]['bytes'])}: check {m['check'] * 1e3:.1f} ms, grammar-guide "
            f"{m['grammar-guide']:.2f} s ({m['grammar-guide'] / m['check']:.0f}x), "
            f"lark Earley {m['lark earley']:.2f} s, lark LALR {m['lark lalr']:.3f} s."
        )
    rechecks = [
        r for r in rows if "grammar-guide" in r["seconds"] and 16 << 10 <= r["bytes"] <= 80 << 10
    ]
    if rechecks:
        # grammar-guide re-parses the whole draft after every 20 tokens (about 80 bytes): over an
        # output of B bytes that is sum_k t(80 k) ~ rate * 80 * n (n + 1) / 2, n = B / 80.
        r = rechecks[-1]
        n = r["bytes"] / 80
        rate = r["seconds"]["grammar-guide"] / r["bytes"]
        whole = rate * 80 * n * (n + 1) / 2
        findings.append(
            f"- Re-checking after every 20 tokens (about 80 B), as grammar-guide does, costs "
            f"about {whole / 60:.0f} min over a {label(r['bytes'])} output (estimated from the "
            f"rate above); backtrack's incremental `feed 80` does it in "
            f"{r['seconds']['feed 80'] * 1e3:.0f} ms."
        )
    if record["dropped"]:
        findings.append(
            "- Dropped for larger drafts: "
            + "; ".join(f"{k}: {v}" for k, v in record["dropped"].items())
            + "."
        )
    loads = [r["load"] for r in rows]
    versions = ", ".join(f"{k} {v}" for k, v in record["versions"].items())
    return (
        "## Draft checking: backtrack's check against grammar-guide's parser and lark\n\n"
        f"Command: `{record['command']}`. {record['started']} to {record['finished']}; "
        f"load average (1 min) {min(loads):.2f} to {max(loads):.2f}. Versions: {versions}.\n\n"
        f"CPU µs per KB of draft (median of {record['runs']} runs after a warm-up; flat = linear "
        "growth); `check ms` is backtrack's whole check in milliseconds. Grammars and parsers are "
        "built outside the timed region; grammar-guide runs in its own venv and is timed there "
        "the same way.\n\n" + head + "\n".join(lines) + "\n\n" + "\n".join(findings) + "\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="drafts of 100 B to 16 KB only")
    parser.add_argument("--from-json", default=None, help="print the section of saved results")
    args = parser.parse_args()
    if args.from_json:
        with open(args.from_json, encoding="utf-8") as f:
            print(markdown(json.load(f)))
        return
    section = run(args.quick)
    print()
    print(section)


if __name__ == "__main__":
    main()
