"""The long drafts of benchmarks/bench_repair_cost.py, and one small run of it end to end.

(a) Each kind's documents, joined, are a sentence of its grammar; with the slips, they are not;
    the draft reaches its size, holds the slip rate it was asked for, and is the same every time;
(b) a 1 KB JSON and HTML draft run through `guide()` with the benchmark's meter: every slip is
    looked at by a search that checks candidates, and the output is valid;
(c) `exact` counts a corrupted document repaired to its clean one, and no other;
(d) one search at the same slip checks as many candidates after 64 KB of text as after 1 KB.
"""

from __future__ import annotations

import itertools

import pytest

from benchmarks.bench_repair_cost import KINDS, Draft, Kind, build, exact, rows, search_after

BY_NAME = {kind.name: kind for kind in KINDS}


def gaps(draft: Draft) -> list[int]:
    """The bytes from each corrupted document's start to the next one's."""
    starts, at = [], 0
    for doc, slipped in draft.parts:
        if slipped:
            starts.append(at)
        at += len((doc.corrupted if slipped else doc.clean).encode()) + len(draft.kind.separator)
    return [b - a for a, b in itertools.pairwise(starts)]


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.name)
def test_a_draft_is_the_grammars_before_its_slips_and_not_after(kind: Kind) -> None:
    grammar = kind.grammar()
    draft = build(kind, 4 << 10, 256)
    assert grammar.matches(draft.clean)
    assert not grammar.matches(draft.text)
    assert len(draft.text.encode()) >= 4 << 10
    # From one corrupted document to the next: 256 bytes, and less than a document more.
    longest = max(len(doc.corrupted) + len(kind.separator) for doc, _ in draft.parts)
    assert draft.corrupted > 1
    assert all(256 <= gap < 256 + longest for gap in gaps(draft))
    assert build(kind, 4 << 10, 256) == draft
    assert build(kind, 4 << 10, None).corrupted == 0


def test_a_small_run_repairs_every_slip_and_counts_its_searches() -> None:
    found = rows((BY_NAME["json"], BY_NAME["html"]), (1 << 10,), runs=1)
    assert [(row.kind, row.every) for row in found] == [
        ("json", 256),
        ("json", 1024),
        ("html", 256),
        ("html", 1024),
    ]
    for row in found:
        assert row.valid
        assert row.repairs >= row.corrupted > 0
        assert row.searches >= row.repairs
        assert row.cuts >= row.searches
        assert row.fits > row.searches
        assert row.search_ms > 0
        assert row.run_ms > row.search_ms


def test_exact_counts_the_corrupted_documents_repaired_to_their_clean_ones() -> None:
    draft = build(BY_NAME["json"], 1 << 10, 256)
    assert exact(draft.clean, draft) == draft.corrupted
    first = next(i for i, (_, slipped) in enumerate(draft.parts) if slipped)
    texts = [doc.clean for doc, _ in draft.parts]
    texts[first] = draft.parts[first][0].corrupted
    assert exact(draft.join(texts), draft) == draft.corrupted - 1
    assert exact(draft.text, draft) == 0


@pytest.mark.parametrize("kind", [BY_NAME["json"], BY_NAME["html"]], ids=lambda kind: kind.name)
def test_one_search_checks_as_many_candidates_after_64_kb_as_after_1_kb(kind: Kind) -> None:
    small = search_after(kind, 1 << 10, runs=1)
    large = search_after(kind, 64 << 10, runs=1)
    assert large[0] > 64 << 10 > small[0]
    assert large[2] == small[2] > 0
