"""A grammar with free whitespace (JSON) lets a small model pad on to its whole budget: seen with
SmolLM2 finishing a recipe object, 512 tokens of line ends and spaces, the text never complete.
After `DecodingPolicy.max_blank_run` blank bytes, tokens of blanks only are refused while the
grammar allows anything else."""

from __future__ import annotations

import re

import pytest

import tests.support.tokenizer_fixtures as tf
from grammars.grammar import Grammar
from local_target import DecodingPolicy, LocalTarget
from local_target.decoding import DEFAULT_POLICY
from tests.support.local_targets import TARGET_IDS, TARGETS, real_tokenizer

pytestmark = [pytest.mark.model, pytest.mark.usefixtures("one_torch_thread")]

JSON = Grammar.load("json")


def blank_loving(name: str) -> LocalTarget:
    """A tiny model on a real tokenizer whose logits favour every token of blanks only far above
    anything else, EOS and the closing tokens included."""
    tok_name, arch, extra = TARGETS[name]
    tok = real_tokenizer(tok_name)
    model = tf.tiny_model(arch, tok, extra_rows=extra, seed=1)
    made = LocalTarget(model, tok)
    blanks = made.vocab.blanks.nonzero().flatten().tolist()
    tf.add_logit_bias(model, dict.fromkeys(blanks, 40.0))
    return made


def longest_blank_run(text: str) -> int:
    return max((len(run) for run in re.findall(r"\s+", text)), default=0)


@pytest.mark.parametrize("name", TARGET_IDS[:2])
def test_a_model_that_loves_blanks_pads_no_longer_than_the_limit(name: str) -> None:
    """Without the limit (as before) the budget goes on blanks; with it, no run of blanks is
    longer than the limit and one token: the model writes something else in between."""
    made = blank_loving(name)
    text = '{"a": [1, 2'
    unlimited = DecodingPolicy(max_blank_run=10**9)
    padded = made.correct(
        "Write JSON.", text, JSON, max_tokens=60, until="complete", policy=unlimited
    )
    assert longest_blank_run(padded.text) >= DEFAULT_POLICY.max_blank_run + 16, repr(padded.text)
    c = made.correct("Write JSON.", text, JSON, max_tokens=60, until="complete")
    assert JSON.check(text + c.text).valid
    assert longest_blank_run(c.text) < DEFAULT_POLICY.max_blank_run + 16, repr(c.text)
