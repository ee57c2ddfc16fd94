"""The third repair corpus (benchmarks/corpora/unseen.py) and its grammars (its unseen/ folder).

(a) every grammar compiles without warnings (llguidance through `Grammar`, and the lark library);
(b) every intended document is valid under llguidance and lark; every draft differs from its
    document and is invalid under both; the two engines agree on a seeded one-character mutation
    of each (GRAMMARS.md, point 7);
(c) cases are unique, twelve a grammar, each slip kind written down with an example;
(d) the split into "look" and "held" is deterministic, disjoint, covers every case, and gives
    each grammar six cases a half; bench_repair's `--corpus unseen` runs the look half and
    `--corpus unseen-held` the held one.
"""

from __future__ import annotations

import collections
import random

import pytest

from benchmarks import bench_repair
from benchmarks.corpora import unseen
from benchmarks.corpora.unseen import (
    DOCUMENTS,
    GRAMMAR_DIR,
    GRAMMARS,
    HALVES,
    LANGUAGES,
    PLAN,
    SLIPS,
    check_unseen_corpus,
    half_cases,
    load_unseen_grammar,
    unseen_cases,
)
from tests.support.sampler import alphabet_of, lark_accepts, lark_file_parser, mutate

CASES = {case.name: case for case in unseen_cases()}


def lark_reads(name: str, text: str) -> bool:
    return lark_accepts(GRAMMAR_DIR / f"{name}.lark", text)


def test_corpus_is_sound() -> None:
    assert check_unseen_corpus() == []


@pytest.mark.parametrize("name", GRAMMARS)
def test_grammar_compiles_cleanly(name: str) -> None:
    assert load_unseen_grammar(name).warnings == ()
    lark_file_parser(GRAMMAR_DIR / f"{name}.lark")  # the lark library reads it too


def test_grammar_files_are_the_languages() -> None:
    assert sorted(p.stem for p in GRAMMAR_DIR.glob("*.lark")) == sorted(LANGUAGES)


@pytest.mark.parametrize("doc", DOCUMENTS, ids=lambda d: f"{d.grammar}-{d.key}")
def test_document_is_valid(doc: unseen.Document) -> None:
    assert load_unseen_grammar(doc.grammar).matches(doc.text)
    assert lark_reads(doc.grammar, doc.text)
    assert doc.source and doc.prompt


@pytest.mark.parametrize("case_name", list(CASES))
def test_draft_is_invalid_and_engines_agree(case_name: str) -> None:
    case = CASES[case_name]
    grammar = load_unseen_grammar(case.grammar)
    assert case.corrupted != case.clean
    assert grammar.matches(case.clean) and lark_reads(case.grammar, case.clean)
    assert not grammar.matches(case.corrupted)
    assert not lark_reads(case.grammar, case.corrupted)
    rng = random.Random(case_name)
    alphabet = alphabet_of([case.clean, case.corrupted])
    for text in (case.clean, case.corrupted):
        mutation = mutate(text, rng, alphabet)
        ll = grammar.matches(mutation.text)
        lk = lark_reads(case.grammar, mutation.text)
        assert ll == lk, f"{mutation.describe()}: llguidance {ll}, lark {lk}"


def test_cases_unique_and_twelve_a_grammar() -> None:
    names = [case.name for case in unseen_cases()]
    assert len(names) == len(set(names)) == len(GRAMMARS) * len(PLAN)
    drafts = [(case.grammar, case.corrupted) for case in unseen_cases()]
    assert len(drafts) == len(set(drafts))
    assert collections.Counter(case.grammar for case in unseen_cases()) == dict.fromkeys(
        GRAMMARS, len(PLAN)
    )


@pytest.mark.parametrize("kind", list(SLIPS))
def test_slip_kind_written_down(kind: str) -> None:
    slip, words = SLIPS[kind]
    assert words and slip.__doc__ and "`" in slip.__doc__  # a one-line example
    assert any(kind in step.split("+") for step in PLAN)


def test_cases_are_deterministic() -> None:
    again = tuple(case for lang in LANGUAGES.values() for case in unseen._cases_of(lang))
    assert again == unseen_cases()


def test_split_is_deterministic_disjoint_and_complete() -> None:
    look, held = (set(c.name for c in half_cases(h)) for h in HALVES)
    assert not look & held
    assert look | held == set(CASES)
    assert {c.name for c in half_cases.__wrapped__("look")} == look
    for grammar in GRAMMARS:
        assert sum(CASES[n].grammar == grammar for n in look) == len(PLAN) // 2
    with pytest.raises(ValueError, match="no half"):
        half_cases("all")


def test_bench_repair_runs_each_half() -> None:
    for corpus, which in (("unseen", "look"), ("unseen-held", "held")):
        assert bench_repair.pick(False, corpus) == list(half_cases(which))
    for case in unseen_cases():
        assert bench_repair.grammar_of(case) is load_unseen_grammar(case.grammar)
        assert bench_repair.target_prompt(case).endswith(f"{LANGUAGES[case.grammar].kind} only.")


def test_the_sweep_is_a_look_set_apart_from_the_held_half() -> None:
    """Every document under every slip kind (benchmarks/corpora/sweep.py): no draft of the held
    half, no name twice, and every draft one the grammar refuses."""
    from benchmarks.corpora.sweep import sweep_cases

    cases = sweep_cases()
    held = {case.corrupted for case in unseen.half_cases("held")}
    assert len(cases) > 250 and len({case.name for case in cases}) == len(cases)
    assert not [case.name for case in cases if case.corrupted in held]
    grammars = {name: unseen.load_unseen_grammar(name) for name in unseen.LANGUAGES}
    assert not [case.name for case in cases if grammars[case.grammar].matches(case.corrupted)]
