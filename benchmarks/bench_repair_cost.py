"""What repairing a black-box draft costs per KB, as drafts grow and as slips get denser.

    .venv/bin/python -m benchmarks.bench_repair_cost [--quick]

Drafts of about 1, 4, 16 and 64 KB (--quick: 1 and 4 KB) in four grammars are made of the clean
documents of the repair corpora (benchmarks/corpora/main.py and other.py) joined as the grammar
takes them: JSON objects in one array, TOML files one after another, HTML fragments one after
another, SQLite selects as subqueries in one FROM list. Slips come at a fixed rate: once EVERY
bytes have passed since the last slip (half of it before the first), the next document is the
corpus's corrupted version of one (its own seeded slips: trailing commas, Python literals, `key:
value` in TOML, an end tag written twice...), the kind's cases taken in turn, so that every size
holds the same slips in the same proportions; the clean documents between are drawn by a
generator seeded with SEED. A slip is one span where a corrupted document differs from its clean
one. (TOML's `;` comments are left out: after a complete line, a line with two of them in the
repair window is dropped as trailing commentary, and the draft with it.)

Each draft streams in chunks of CHUNK characters from a scripted drafter (a plain generator) into
`guide()` with no corrections (every slip must be repaired by an edit, or the run ends) and a
target that has no model: ties between edits go to the search's own order, and a correction
asked for raises. Columns, the median of RUNS runs after a warm-up:
- `run ms/KB`: CPU time (`time.process_time`) of the whole run per KB of draft;
- `search ms/KB`, `ms/search`: CPU time inside the repair searches (`search()` as a cut's
  repair calls it in backtrack.run.trailing, a path read on after a complete text included,
  timed by a wrapper set here) per KB, and per search (one a repair, plus any that found none);
- `cuts/search`, `fits/search`: the cuts a search looked at (`_best` calls: the first cut and the
  next ones of a path of edits, at most `_SEARCHES` + 1) and its candidate checks
  (`Checker.fits` calls), counted in one more run;
- `valid`, `exact`: whether the output is a sentence of the grammar, and of the corrupted
  documents, how many came out as the clean document exactly.
The ratios of the per-KB and per-search costs at the largest size to the smallest from 4 KB
(where every kind of slip has come) are about 1 where the cost is linear in the draft and bounded
per slip. A last table times one search at the same slip after 1 KB to 1 MB of committed text.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import random
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from unittest import mock

import providers
from backtrack import guide
from backtrack.repair import search as search_module
from backtrack.run import trailing as trailing_module
from backtrack.run.output import REPAIR_LIMITS
from benchmarks.corpora.main import CASES, load_grammar
from benchmarks.corpora.other import OTHER_CASES, load_other_grammar
from grammars import Checker, Grammar

SIZES = (1 << 10, 4 << 10, 16 << 10, 64 << 10)
QUICK_SIZES = (1 << 10, 4 << 10)
EVERY = (256, 1024)  # bytes of draft from one slip to the next, at least
RUNS = 3
CHUNK = 16  # characters a streamed chunk: a few tokens
SEED = 2026
COMMAND = ".venv/bin/python -m benchmarks.bench_repair_cost"


@dataclass(frozen=True)
class Kind:
    """A grammar and how its documents join into one long draft: `opening`, the documents
    (each wrapped by `wrap`, a format string) separated by `separator`, then `closing`."""

    name: str
    grammar: Callable[[], Grammar]
    cases: tuple[str, ...]  # the corpus cases whose documents (clean and corrupted) it uses
    opening: str = ""
    separator: str = "\n"
    closing: str = ""
    wrap: str = "{}"


KINDS = (
    Kind(
        "json",
        lambda: load_grammar("json"),
        ("json-trailing-commas", "json-python-literals", "json-comment-nan", "json-unbalanced"),
        opening="[\n",
        separator=",\n",
        closing="\n]",
    ),
    Kind(
        "toml",
        lambda: load_other_grammar("toml"),
        (
            "toml-python-bools",
            "toml-yaml-colon",
            "toml-inline-trailing-comma",
            "toml-unquoted-string",
            "toml-python-bools-yaml",
        ),
    ),
    Kind(
        "html",
        lambda: load_other_grammar("html"),
        ("html-xhtml-void", "html-extra-end-tag", "html-void-end-tag", "html-overlapping-tags"),
    ),
    Kind(
        "sqlite",
        lambda: load_grammar("sqlite"),
        ("sql-ilike", "sql-similar-to", "sql-fetch-first"),
        # Subqueries in one FROM list, not a UNION ALL chain: the grammar's compound select is
        # right-recursive, and checking a long chain of them costs more per KB the longer it is.
        opening="SELECT * FROM\n",
        separator=",\n",
        wrap="({})",
    ),
)


@dataclass(frozen=True)
class Document:
    clean: str
    corrupted: str
    slips: int  # spans where the two differ


def documents(kind: Kind) -> list[Document]:
    """The kind's corpus documents, wrapped, in the order of `kind.cases`."""
    by_name = {case.name: case for case in (*CASES, *OTHER_CASES)}
    found = []
    for name in kind.cases:
        case = by_name[name]
        clean, corrupted = kind.wrap.format(case.clean), kind.wrap.format(case.corrupted)
        ops = difflib.SequenceMatcher(None, clean, corrupted, autojunk=False).get_opcodes()
        found.append(Document(clean, corrupted, sum(op[0] != "equal" for op in ops)))
    return found


@dataclass(frozen=True)
class Draft:
    """A long draft: `text` is what the drafter writes, `clean` what it means to write."""

    kind: Kind
    parts: tuple[tuple[Document, bool], ...]  # each document, and whether it is corrupted

    def join(self, texts: list[str]) -> str:
        return self.kind.opening + self.kind.separator.join(texts) + self.kind.closing

    @property
    def text(self) -> str:
        return self.join([d.corrupted if slipped else d.clean for d, slipped in self.parts])

    @property
    def clean(self) -> str:
        return self.join([d.clean for d, _ in self.parts])

    @property
    def slips(self) -> int:
        return sum(d.slips for d, slipped in self.parts if slipped)

    @property
    def corrupted(self) -> int:
        return sum(slipped for _, slipped in self.parts)


def build(kind: Kind, size: int, every: int | None, seed: int = SEED) -> Draft:
    """A draft of at least `size` bytes of the kind's documents, a corrupted one once `every`
    bytes have passed since the last (None: none; see the module's docstring); the clean ones
    are drawn by a generator seeded with `seed` and the kind."""
    rng = random.Random(f"{seed}-{kind.name}")
    pool = documents(kind)
    parts: list[tuple[Document, bool]] = []
    length = len(kind.opening) + len(kind.closing)
    since = length + (every or 0) // 2  # the first slip half way through its stretch
    made = 0  # corrupted documents so far
    while length < size:
        slipped = every is not None and since >= every
        doc = pool[made % len(pool)] if slipped else rng.choice(pool)
        parts.append((doc, slipped))
        made += slipped
        added = len((doc.corrupted if slipped else doc.clean).encode()) + len(kind.separator)
        since = added if slipped else since + added
        length += added
    return Draft(kind, tuple(parts))


def exact(output: str, draft: Draft) -> int:
    """Of the draft's corrupted documents, how many the output holds as the clean document, in
    its place: the output is read document by document; one that differs is passed over up to
    where the next document starts."""
    kind, pos, count = draft.kind, len(draft.kind.opening), 0
    for index, (doc, slipped) in enumerate(draft.parts):
        last = index == len(draft.parts) - 1
        after = kind.closing if last else kind.separator
        if output.startswith(doc.clean + after, pos):
            count += slipped
            pos += len(doc.clean + after)
        elif not last:
            found = output.find(kind.separator + draft.parts[index + 1][0].clean, pos)
            pos = len(output) if found < 0 else found + len(kind.separator)
    return count


class NoModel:
    """A target with no model: ties between edits go to the search's own order, and a
    correction asked for is an error (every slip here must be repaired by an edit)."""

    def session(self, prompt: Any) -> NoModel:
        return self

    def likeliest(self, texts: list[str]) -> int:
        return 0

    def correct(self, text: str, grammar: Grammar, **options: Any) -> Any:
        raise RuntimeError(f"a correction was asked for after {text[-40:]!r}")


def drafter(text: str) -> Callable[[Any, str], Iterator[str]]:
    """Streams `text` in chunks of CHUNK characters; asked again, after a committed prefix of
    it, the rest, and after any other text, nothing."""

    def stream(prompt: Any, prefix: str) -> Iterator[str]:
        rest = text[len(prefix) :] if text.startswith(prefix) else ""
        for i in range(0, len(rest), CHUNK):
            yield rest[i : i + CHUNK]

    return stream


@dataclass
class Meter:
    """Counts and times what a run spends in the repair search (set by `metered`)."""

    searches: int = 0
    search_s: float = 0.0
    cuts: int = 0
    fits: int = 0  # within searches
    inside: bool = False


@contextlib.contextmanager
def metered(count: bool) -> Iterator[Meter]:
    """Within it, the draft reader's repair searches are timed (CPU); with `count`, the cuts
    they look at and the candidates they check are counted too (the counting costs time: a
    timed run does not count)."""
    meter = Meter()
    search = search_module.search  # as the draft reader imported it

    def timed_search(*args: Any, **kwargs: Any) -> Any:
        start = time.process_time()
        meter.inside = True
        try:
            return search(*args, **kwargs)
        finally:
            meter.inside = False
            meter.search_s += time.process_time() - start
            meter.searches += 1

    with contextlib.ExitStack() as stack:
        stack.enter_context(mock.patch.object(trailing_module, "search", timed_search))
        if count:
            stack.enter_context(counting(meter))
        yield meter


@contextlib.contextmanager
def counting(meter: Meter) -> Iterator[None]:
    """Within it, the cuts searches look at and the candidates checked while `meter.inside`
    are counted in `meter`."""
    best, fits = search_module._best, Checker.fits

    def counted_best(*args: Any, **kwargs: Any) -> Any:
        meter.cuts += 1
        return best(*args, **kwargs)

    def counted_fits(self: Checker, chunk: str) -> int:
        meter.fits += meter.inside
        return fits(self, chunk)

    with (
        mock.patch.object(search_module, "_best", counted_best),
        mock.patch.object(Checker, "fits", counted_fits),
    ):
        yield


@dataclass(frozen=True)
class Row:
    """One draft's figures: CPU times are medians, counts are from one counted run."""

    kind: str
    every: int
    size: int  # bytes of the draft
    slips: int
    repairs: int
    searches: int
    run_ms: float
    search_ms: float
    cuts: int
    fits: int
    valid: bool
    exact: int
    corrupted: int

    @property
    def kb(self) -> float:
        return self.size / 1024

    @property
    def per_search_ms(self) -> float:
        return self.search_ms / max(self.searches, 1)

    @property
    def fits_per_search(self) -> float:
        return self.fits / max(self.searches, 1)


def run_once(draft: Draft, grammar: Grammar, *, count: bool = False) -> tuple[Any, Meter, float]:
    """One guided run over the draft: its result, what the searches cost, CPU seconds."""
    text = draft.text
    with metered(count) as meter:
        start = time.process_time()
        result = guide(
            providers.FunctionDrafter(drafter(text), streaming=True),
            grammar,
            prompt="p",
            target=NoModel(),
            max_corrections=0,
            complete_on_budget=False,
            max_repairs=len(text),
            max_draft_tokens=len(text),
        )
        seconds = time.process_time() - start
    return result, meter, seconds


def measure(draft: Draft, grammar: Grammar, every: int, runs: int = RUNS) -> Row:
    """Median CPU times of `runs` runs after a warm-up, and the counts of one more."""
    run_once(draft, grammar)
    timed = [run_once(draft, grammar) for _ in range(runs)]
    result, counts, _ = run_once(draft, grammar, count=True)
    return Row(
        kind=draft.kind.name,
        every=every,
        size=len(draft.text.encode()),
        slips=draft.slips,
        repairs=result.repairs,
        searches=counts.searches,
        run_ms=1e3 * statistics.median(seconds for _, _, seconds in timed),
        search_ms=1e3 * statistics.median(meter.search_s for _, meter, _ in timed),
        cuts=counts.cuts,
        fits=counts.fits,
        valid=result.valid,
        exact=exact(result.text, draft),
        corrupted=draft.corrupted,
    )


def rows(kinds: tuple[Kind, ...], sizes: tuple[int, ...], runs: int = RUNS) -> list[Row]:
    """Every kind x slip rate x size, each row printed as it comes."""
    found = []
    for kind in kinds:
        grammar = kind.grammar()
        for every in EVERY:
            for size in sizes:
                draft = build(kind, size, every)
                if not grammar.matches(draft.clean):
                    raise ValueError(f"the clean {kind.name} draft of {size} bytes is invalid")
                row = measure(draft, grammar, every, runs)
                print(_line(row), flush=True)
                found.append(row)
    return found


HEADER = (
    "| grammar | slip every | KB | slips | repairs | run ms/KB | search ms/KB | ms/search "
    "| cuts/search | fits/search | valid | exact |\n|" + "---|" * 12
)


def _line(row: Row) -> str:
    return (
        f"| {row.kind} | {row.every} B | {row.kb:.0f} | {row.slips} | {row.repairs} "
        f"| {row.run_ms / row.kb:.2f} | {row.search_ms / row.kb:.2f} | {row.per_search_ms:.2f} "
        f"| {row.cuts / max(row.searches, 1):.1f} | {row.fits_per_search:.0f} "
        f"| {'yes' if row.valid else 'NO'} | {row.exact}/{row.corrupted} |"
    )


def ratios(found: list[Row]) -> str:
    """Per-KB and per-search costs at the largest size over the smallest from 4 KB (or the
    smallest), per kind and rate."""
    lines = [
        "| grammar | slip every | KB | run ms/KB | search ms/KB | ms/search | fits/search |",
        "|" + "---|" * 7,
    ]
    groups: dict[tuple[str, int], list[Row]] = {}
    for row in found:
        groups.setdefault((row.kind, row.every), []).append(row)
    measures: tuple[Callable[[Row], float], ...] = (
        lambda r: r.run_ms / r.kb,
        lambda r: r.search_ms / r.kb,
        lambda r: r.per_search_ms,
        lambda r: r.fits_per_search,
    )
    for (kind, every), group in groups.items():
        # At 256 B, 1 KB holds fewer slips than there are kinds of them: from 4 KB, all come.
        large = group[-1]
        small = next((r for r in group[:-1] if r.size >= 4 << 10), group[0])
        cells = [f"{of(large) / of(small):.2f}" if of(small) else "-" for of in measures]
        lines.append(
            f"| {kind} | {every} B | {large.kb:.0f} / {small.kb:.0f} | {' | '.join(cells)} |"
        )
    return "\n".join(lines)


# -- one search after more and more text ----------------------------------------------------------

AFTER = (1 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20)
QUICK_AFTER = (1 << 10, 64 << 10)


def cut_after(kind: Kind, size: int) -> tuple[Checker, str]:
    """A checker at the cut of the kind's first corrupted document, after about `size` bytes of
    clean documents, and the draft's rest from the cut (a repair's window of it)."""
    draft = build(kind, size, None)
    texts = [d.clean for d, _ in draft.parts] + [documents(kind)[0].corrupted]
    text = draft.join(texts)
    checker = kind.grammar().checker()
    taken = checker.feed(text)
    if taken == len(text):
        raise ValueError(f"the corrupted {kind.name} document fits")
    return checker, text[taken:][:WINDOW]


WINDOW = 64  # GuideOptions.repair_window's default


def search_after(kind: Kind, size: int, runs: int = 10) -> tuple[int, float, int]:
    """The committed characters, the CPU ms (median of `runs` after a warm-up) and the candidate
    checks of one search at the same slip after about `size` bytes of clean text."""
    checker, rest = cut_after(kind, size)
    floor = checker.chars - REPAIR_LIMITS.max_back

    def once() -> float:
        start = time.process_time()
        search_module.search(checker, rest, final=False, floor=floor, limits=REPAIR_LIMITS)
        return time.process_time() - start

    once()
    seconds = statistics.median(once() for _ in range(runs))
    meter = Meter(inside=True)
    with counting(meter):
        once()
    return checker.chars, 1e3 * seconds, meter.fits


def after_table(kinds: tuple[Kind, ...], sizes: tuple[int, ...]) -> str:
    lines = ["| grammar | committed KB | ms/search | fits/search |", "|---|---|---|---|"]
    print("\n".join(lines), flush=True)
    for kind in kinds:
        for size in sizes:
            chars, ms, checks = search_after(kind, size)
            lines.append(f"| {kind.name} | {chars / 1024:.0f} | {ms:.2f} | {checks} |")
            print(lines[-1], flush=True)
    return "\n".join(lines)


def run(quick: bool) -> str:
    """Measure, print, and return the Markdown section."""
    print(HEADER, flush=True)
    found = rows(KINDS, QUICK_SIZES if quick else SIZES)
    print()
    print(ratios(found))
    print()
    after = after_table(KINDS, QUICK_AFTER if quick else AFTER)
    return (
        f"Command: `{COMMAND}{' --quick' if quick else ''}`. CPU time, median of {RUNS} runs "
        f"after a warm-up; counts from one more run.\n\n"
        + "\n".join([HEADER, *map(_line, found)])
        + "\n\nLargest size over the smallest from 4 KB (1.00: linear in the draft, bounded per "
        "slip):\n\n"
        + ratios(found)
        + "\n\nOne search at the same slip after more and more committed text (median of 10):\n\n"
        + after
        + "\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 and 4 KB drafts only")
    run(parser.parse_args().quick)


if __name__ == "__main__":
    main()
