"""Speculation (local_target.speculation): prompt look-up proposals, and SmolLM2 writing the same
tokens in fewer forward passes. Random-weight models on other tokenizers, seeded sampling and the
KV invariant are in test_local_target.py."""

from __future__ import annotations

from typing import Any

import pytest

from grammars.grammar import Grammar
from local_target import DecodingPolicy, LocalTarget
from local_target.speculation import propose


@pytest.mark.parametrize(
    ("ids", "limit", "want"),
    [
        ([1, 2, 3, 9, 1, 2, 3], 3, [9, 1, 2]),  # the 3-gram 1 2 3 occurred: what followed it
        ([1, 2, 3, 9, 1, 2, 3], 1, [9]),
        ([5, 2, 3, 7, 4, 2, 3], 4, [7, 4, 2, 3]),  # only the 2-gram 2 3
        ([1, 2, 8, 1, 2, 9, 1, 2], 2, [9, 1]),  # the last occurrence wins
        ([1, 2, 3, 4], 4, []),  # nothing repeats
        ([3, 3], 4, []),  # a 1-gram is too weak a hint
        ([3, 3, 3], 4, [3]),
        ([1, 2, 1, 2], 0, []),
        ([], 4, []),
    ],
)
def test_prompt_lookup_proposes_what_followed_the_last_ngram(
    ids: list[int], limit: int, want: list[int]
) -> None:
    assert propose(ids, limit) == want


def test_a_hint_is_looked_in_first() -> None:
    ids = [1, 2, 3, 9, 1, 2, 3]
    assert propose(ids, 2, [7, 2, 3, 4, 5, 6]) == [4, 5]  # the 2-gram 2 3 in the hint
    assert propose(ids, 2, [2, 3, 1, 2, 3, 8]) == [8]  # the 3-gram, at its last place
    assert propose(ids, 2, [5, 6]) == [9, 1]  # not in the hint: the text's own


PROMPT = "Here is a JSON object with 6 keys, using only string values:\n"


def test_smollm2_writes_the_same_json_in_fewer_passes(smollm2: LocalTarget) -> None:
    """On a grammar that makes the model repeat itself (keys and string values), speculation
    keeps the text token for token and saves forward passes; so does drafting."""
    grammar = Grammar.load("json_keys", n=6)
    runs = []
    for speculate in (0, 8):
        session = smollm2.session(PROMPT)
        policy = DecodingPolicy(speculate=speculate)
        c = session.correct("", grammar, max_tokens=112, until="complete", policy=policy)
        passes = c.forward_passes
        drafted = "".join(session.generate(c.text, max_tokens=48, speculate=speculate))
        runs.append((c.tokens, drafted, passes, session.forward_passes - passes))
    (tokens, drafted, passes, draft_passes), (sp_tokens, sp_drafted, sp_passes, sp_draft) = runs
    assert (sp_tokens, sp_drafted) == (tokens, drafted)
    assert grammar.check(smollm2.vocab.decode(list(tokens)).decode()).valid
    assert sp_passes < 0.8 * passes, (sp_passes, passes)
    assert sp_draft < draft_passes, (sp_draft, draft_passes)


def test_a_draft_rest_as_hint_saves_passes_not_tokens(smollm2: LocalTarget) -> None:
    """During a correction the API's rejected rest is a proposal: where SmolLM2 writes what the
    API meant (here: the API meant what SmolLM2 writes), fewer passes; the same tokens."""
    grammar = Grammar.load("json")
    text = '{"name": "Ann", "city": "Oslo", "country": '

    def correct(hint: str) -> Any:
        session = smollm2.session("Write a JSON object about Ann from Oslo.")
        return session.correct(text, grammar, max_tokens=40, until="complete", hint=hint)

    alone = correct("")
    hinted = correct(alone.text)
    assert hinted.tokens == alone.tokens
    assert hinted.forward_passes < alone.forward_passes, (hinted.forward_passes, alone)
