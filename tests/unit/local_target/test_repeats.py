"""A small model repeats a list's item to its whole budget: seen with SmolLM2 finishing a recipe,
`"chicken",` about 90 times in an array, 492 tokens. After `DecodingPolicy.max_repeats` copies in
a row of one block (8 to 64 bytes, more than blanks and closers), the tokens that would begin one
more copy are refused while the grammar allows anything else."""

from __future__ import annotations

import pytest

import tests.support.tokenizer_fixtures as tf
from grammars.grammar import Grammar
from local_target import DecodingPolicy, LocalTarget
from local_target.policy import DEFAULT_POLICY
from local_target.repeats import repeated_block
from tests.support.local_targets import TARGET_IDS, TARGETS, real_tokenizer

JSON = Grammar.load("json")
ITEM = b'"chicken", '


def test_the_block_one_more_copy_would_begin_with() -> None:
    assert repeated_block(b'["a", ' + ITEM * 4, 4) == ITEM
    assert repeated_block(b'["a", ' + ITEM * 3, 4) is None  # three copies are no loop
    assert repeated_block(b"}" * 40, 4) is None  # deep nesting closes so, and must
    assert repeated_block(b"  ]\n  }\n" * 9, 4) is None  # closers and blanks alone
    assert repeated_block(b"  " * 40, 4) is None  # blanks: `max_blank_run`'s
    assert repeated_block(b"x, " + b"ab" * 40, 4) == b"abababab"  # a shorter block, as 8 bytes


def tiny(name: str) -> LocalTarget:
    """A tiny untrained model on a real tokenizer: left alone, it loops (`188188188...`)."""
    tok_name, arch, extra = TARGETS[name]
    tok = real_tokenizer(tok_name)
    return LocalTarget(tf.tiny_model(arch, tok, extra_rows=extra, seed=1), tok)


def loops(text: str, copies: int) -> bool:
    """Whether some start of `text` ends in `copies` copies of a block (`repeated_block`)."""
    data = text.encode()
    return any(repeated_block(data[:end], copies) for end in range(len(data) + 1))


@pytest.mark.model
@pytest.mark.usefixtures("one_torch_thread")
@pytest.mark.parametrize("name", TARGET_IDS[:2])
def test_a_model_that_loops_repeats_no_block_more_than_the_limit(name: str) -> None:
    """Without the limit (as before) the budget goes on one block again and again; with it, no
    more than `max_repeats` copies in a row: the model writes something else in between."""
    made = tiny(name)
    text = '{"a": ["x", '
    unlimited = DecodingPolicy(max_repeats=10**9)
    looped = made.correct(
        "Write JSON.", text, JSON, max_tokens=60, until="complete", policy=unlimited
    )
    assert loops(looped.text, DEFAULT_POLICY.max_repeats + 2), repr(looped.text)
    c = made.correct("Write JSON.", text, JSON, max_tokens=60, until="complete")
    assert JSON.check(text + c.text).valid
    assert not loops(c.text, DEFAULT_POLICY.max_repeats + 1), repr(c.text)
