"""The second repair corpus (benchmarks/corpora/other.py) and its grammars (benchmarks/grammars/).

(a) `check_other_corpus()` finds nothing: clean documents valid under llguidance and lark,
    corrupted ones invalid, names unique;
(b) llguidance (`Grammar.matches`) and the lark library (its Earley parser with the dynamic lexer,
    as `Grammar.parse` builds it) give the same verdict on every clean and corrupted document,
    and on a seeded one-character mutation of each (GRAMMARS.md, point 7; about 3,000 sampled
    and mutated sentences a grammar were compared once, when the grammars were written: the only
    disagreement found is the one graphql.lark describes);
(c) each grammar compiles without warnings, and the corpus holds 8 to 10 cases a grammar.
"""

from __future__ import annotations

import collections
import random

import pytest

from benchmarks.corpora.other import (
    GRAMMAR_DIR,
    GRAMMARS,
    OTHER_CASES,
    check_other_corpus,
    load_other_grammar,
)
from tests.support.sampler import alphabet_of, lark_accepts, lark_file_parser, mutate

MUTATIONS = 1  # seeded one-character mutations of each document, for (b)
CASES = {case.name: case for case in OTHER_CASES}


def lark_reads(name: str, text: str) -> bool:
    return lark_accepts(GRAMMAR_DIR / f"{name}.lark", text)


def test_corpus_is_sound() -> None:
    assert check_other_corpus() == []


@pytest.mark.parametrize("name", GRAMMARS)
def test_grammar_compiles_cleanly(name: str) -> None:
    grammar = load_other_grammar(name)
    assert grammar.warnings == ()
    lark_file_parser(GRAMMAR_DIR / f"{name}.lark")  # the lark library reads it too


def test_cases_per_grammar() -> None:
    counts = collections.Counter(case.grammar for case in OTHER_CASES)
    assert set(counts) == set(GRAMMARS)
    assert all(8 <= n <= 10 for n in counts.values()), counts


@pytest.mark.parametrize("case_name", list(CASES))
def test_engines_agree(case_name: str) -> None:
    case = CASES[case_name]
    grammar = load_other_grammar(case.grammar)
    assert grammar.matches(case.clean) and lark_reads(case.grammar, case.clean)
    assert not grammar.matches(case.corrupted)
    assert not lark_reads(case.grammar, case.corrupted)
    rng = random.Random(case_name)
    alphabet = alphabet_of([case.clean, case.corrupted])
    for text in (case.clean, case.corrupted):
        for _ in range(MUTATIONS):
            mutation = mutate(text, rng, alphabet)
            ll = grammar.matches(mutation.text)
            lk = lark_reads(case.grammar, mutation.text)
            assert ll == lk, f"{mutation.describe()}: llguidance {ll}, lark {lk}"
