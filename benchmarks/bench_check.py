"""Time of `Grammar.check` and `Checker.feed` over JSON drafts from 1 KB to 1 MB.

    python -m benchmarks.bench_check

`feed 1K` and `feed 80` feed the draft through `checker()` in pieces of 1024 and 80 characters
(about 1 KB and about 20 tokens). Each cell is the median of 5 runs after a warm-up, in
microseconds per KB of draft: a flat column means linear growth. `check` is the cut alone
(`.complete` would cost a second pass). For comparison: the lark library's Earley and LALR parsers
on the same drafts (Earley up to 64 KB; a parser is dropped for larger sizes after a run over 10 s).
"""

from __future__ import annotations

import json
import random
import re
import statistics
import time
from collections.abc import Callable

import lark

import grammars
from backtrack.grammar import Grammar

SIZES = [1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20]
LARK_LIMIT = 64 << 10  # the largest draft Earley is timed on
TOO_SLOW_S = 10.0
RUNS = 5

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
    while total < size:
        record = json.dumps(
            {"id": len(records), "data": value(rng, 3)}, ensure_ascii=False, indent=2
        )
        records.append(record)
        total += len(record.encode("utf-8")) + 2
    return "[" + ",\n".join(records) + "]"


def median_time(run: Callable[[], object]) -> float:
    """CPU seconds (steadier than wall time on a shared machine): the median of RUNS runs after
    one warm-up, or the warm-up alone where it is too slow."""
    start = time.process_time()
    run()
    first = time.process_time() - start
    if first > TOO_SLOW_S:
        return first
    times = []
    for _ in range(RUNS):
        start = time.process_time()
        run()
        times.append(time.process_time() - start)
    return statistics.median(times)


def feed(grammar: Grammar, text: str, chunk: int) -> None:
    checker = grammar.checker()
    for i in range(0, len(text), chunk):
        checker.feed(text[i : i + chunk])
    assert checker.complete


def timings(text: str, grammar: Grammar, parsers: dict[str, lark.Lark]) -> dict[str, float]:
    """Seconds per run of each way to check `text` (lark parsers only where given)."""
    runs: dict[str, Callable[[], object]] = {
        "check": lambda: grammar.check(text),
        "feed 1K": lambda: feed(grammar, text, 1024),
        "feed 80": lambda: feed(grammar, text, 80),
    }
    for name, parser in parsers.items():
        runs[name] = lambda parser=parser: parser.parse(text)
    return {name: median_time(run) for name, run in runs.items()}


def main() -> None:
    grammar = Grammar.load("json")
    lark_source = re.sub(r"(?m)^\s*%llguidance\b.*$", "", grammars.source("json"))
    parsers = {
        "earley": lark.Lark(lark_source, parser="earley"),
        "lalr": lark.Lark(lark_source, parser="lalr"),
    }
    columns = ["check", "feed 1K", "feed 80", "earley", "lalr"]
    print("CPU µs per KB, median of 5 runs ('check ms': the whole check, in milliseconds)")
    print(f"{'size':>8} {'check ms':>9} " + " ".join(f"{c:>9}" for c in columns))
    for size in SIZES:
        text = draft(size)
        assert grammar.check(text).complete
        if size > LARK_LIMIT:
            parsers.pop("earley", None)
        seconds = timings(text, grammar, parsers)
        parsers = {n: p for n, p in parsers.items() if seconds[n] <= TOO_SLOW_S}
        kb = len(text.encode("utf-8")) / 1024
        cells = [f"{seconds[c] * 1e6 / kb:9.1f}" if c in seconds else f"{'-':>9}" for c in columns]
        print(f"{size >> 10:>6}KB {seconds['check'] * 1e3:9.2f} " + " ".join(cells), flush=True)


if __name__ == "__main__":
    main()
