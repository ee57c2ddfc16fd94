"""How often the run's last resort, the grammar's own shortest ending (backtrack.run.shortest_end),
finds an ending, on prefixes of documents nobody wrote for it.

    .venv/bin/python -m benchmarks.bench_shortest_end [--step N] [--corpus NAME ...]

Each distinct clean document of the repair corpora (main, other, and the third corpus's look and
held halves: benchmarks/corpora) is cut after every STEP-th character (1, 1 + STEP, ...); at each
such prefix, a checker fed the prefix is given to `shortest_end`, timed with
`time.perf_counter`. Counted per corpus and grammar: the prefixes tried, those with no ending
found (within the search's bounds: `MAX_CHARS` characters, `MAX_NODES` texts checked), the
endings that the grammar does not accept after the prefix (there must be none), and the time of
one search (median, p95, max). The held half's failures are counted, never printed; the others'
first few are, with the prefix's end.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import Counter
from collections.abc import Callable

from backtrack.run.shortest_end import shortest_end
from benchmarks.corpora.main import CASES, Case, load_grammar
from benchmarks.corpora.other import OTHER_CASES, load_other_grammar
from benchmarks.corpora.unseen import half_cases, load_unseen_grammar
from grammars import Grammar

STEP = 7
SHOWN = 5  # failures printed per corpus (none for the held half)
CORPORA: dict[str, tuple[Callable[[], tuple[Case, ...]], Callable[[str], Grammar]]] = {
    "main": (lambda: CASES, load_grammar),
    "other": (lambda: OTHER_CASES, load_other_grammar),
    "unseen look": (lambda: half_cases("look"), load_unseen_grammar),
    "unseen held": (lambda: half_cases("held"), load_unseen_grammar),
}


def measure(corpus: str, step: int) -> tuple[str, list[str]]:
    """One corpus's table row and the failures it may show."""
    cases, load = CORPORA[corpus]
    tried: Counter[str] = Counter()
    failed: Counter[str] = Counter()
    wrong, seconds, shown = 0, [], []
    documents = {(case.grammar, case.clean) for case in cases()}
    for grammar_name, text in sorted(documents):
        grammar = load(grammar_name)
        checker = grammar.checker()
        for end in range(1, len(text), step):
            checker.feed(text[checker.chars : end])
            started = time.perf_counter()
            ending = shortest_end(checker)
            seconds.append(time.perf_counter() - started)
            tried[grammar_name] += 1
            if ending is None:
                failed[grammar_name] += 1
                if corpus != "unseen held" and len(shown) < SHOWN:
                    shown.append(f"{grammar_name}: ...{text[max(0, end - 40) : end]!r}")
            elif not grammar.matches(text[:end] + ending):
                wrong += 1
    per_grammar = ", ".join(f"{g} {n}/{tried[g]}" for g, n in sorted(failed.items())) or "-"
    cuts = statistics.quantiles(seconds, n=20)
    row = (
        f"| {corpus} | {len(documents)} | {sum(tried.values())} | {sum(failed.values())} "
        f"| {per_grammar} | {wrong} | {statistics.median(seconds) * 1e3:.1f} "
        f"| {cuts[-1] * 1e3:.0f} | {max(seconds) * 1e3:.0f} |"
    )
    return row, shown


def run(quick: bool, step: int = STEP, corpora: tuple[str, ...] = tuple(CORPORA)) -> str:
    step = step * 3 if quick else step
    lines = [
        "## The grammar's own shortest ending, on prefixes of the corpora's documents",
        "",
        f"`python -m benchmarks.bench_shortest_end --step {step}`: every {step}th prefix of each "
        "distinct clean document; `none`: no ending found within the bounds; `wrong`: an ending "
        "the grammar refuses; times of one search in ms.",
        "",
        "| corpus | documents | prefixes | none | none by grammar | wrong | median ms | p95 ms "
        "| max ms |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    notes = []
    for corpus in corpora:
        row, shown = measure(corpus, step)
        print(row, flush=True)
        lines.append(row)
        notes += [f"- {corpus}: {failure}" for failure in shown]
    return "\n".join(lines + (["", *notes] if notes else [])) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--step", type=int, default=STEP, help="cut after every STEP-th char")
    parser.add_argument("--corpus", nargs="+", choices=tuple(CORPORA), default=tuple(CORPORA))
    parser.add_argument("--quick", action="store_true", help="every 3 STEP-th char")
    args = parser.parse_args()
    print(run(args.quick, args.step, tuple(args.corpus)))


if __name__ == "__main__":
    main()
