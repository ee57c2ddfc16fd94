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
from local_target.policy import DEFAULT_POLICY
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
    unlimited = DecodingPolicy(max_blank_run=10**9, blank_depth=None)
    padded = made.correct(
        "Write JSON.", text, JSON, max_tokens=60, until="complete", policy=unlimited
    )
    assert longest_blank_run(padded.text) >= DEFAULT_POLICY.max_blank_run + 16, repr(padded.text)
    c = made.correct("Write JSON.", text, JSON, max_tokens=60, until="complete")
    assert JSON.check(text + c.text).valid
    assert longest_blank_run(c.text) < DEFAULT_POLICY.max_blank_run + 16, repr(c.text)


def deepest_line(text: str) -> int:
    """The most blanks a line of `text` starts with, or a gap without a line end holds."""
    runs = re.findall(r"\s+", text)
    return max((len(run) - run.rfind("\n") - 1 for run in runs), default=0)


def line_ends(text: str) -> int:
    """The most line ends in one run of blanks of `text`."""
    return max((run.count("\n") for run in re.findall(r"\s+", text)), default=0)


@pytest.mark.parametrize("name", TARGET_IDS[:2])
@pytest.mark.parametrize("committed", ['{"a": [1, 2', '{\n  "a": [\n    1,\n    2'])
def test_a_model_that_loves_blanks_indents_no_deeper_than_the_text_and_a_level(
    name: str, committed: str
) -> None:
    """Within `max_blank_run`, a blank run may still be padding: `blank_depth` blanks past the
    text's deepest indentation (here 0, or 4), or a third line end. Once a run is there it
    grows by no token of blanks more (a token of several may take it one past). Off, the model
    pads each run as far as `max_blank_run` lets it, with spaces or line ends."""
    made = blank_loving(name)
    limit = deepest_line(committed) + DEFAULT_POLICY.blank_depth
    off = DecodingPolicy(blank_depth=None)
    padded = made.correct(
        "Write JSON.", committed, JSON, max_tokens=40, until="complete", policy=off
    )
    assert deepest_line(padded.text) > limit + 1 or line_ends(padded.text) > 4, repr(padded.text)
    c = made.correct("Write JSON.", committed, JSON, max_tokens=40, until="complete")
    assert JSON.check(committed + c.text).valid
    assert deepest_line(c.text) <= limit + 1 and line_ends(c.text) <= 4, repr(c.text)


@pytest.mark.parametrize("name", ["smollm2", "gpt2"])
@pytest.mark.parametrize(
    "committed",
    ['{"a":\n        \n            ', '{"a": [1, 2,\n    ', '{\n  "a": [\n    1,\n        '],
)
def test_healing_a_drafts_last_blanks_widens_them_no_further_than_the_limit(
    name: str, committed: str
) -> None:
    """Token healing re-chooses the committed text's last token; where that is blanks, every
    token it may take starts with them, and each was refused as if written after them (their
    width counted twice), so the refusal was dropped and the model took its widest (seen:
    SmolLM2 after a JSON draft's `"pages": \n        \n            ` healed a token of 67
    spaces). Now the healed token is measured from the text before those blanks."""
    c = blank_loving(name).correct("Write JSON.", committed, JSON, max_tokens=12, until="complete")
    assert c.flags[0] == "healed"
    limit = deepest_line(committed) + DEFAULT_POLICY.blank_depth
    assert deepest_line(c.text) <= limit + 1, repr(c.text)


def test_no_token_of_blanks_pads_past_the_limit_at_once() -> None:
    """SmolLM2 has tokens of up to 64 spaces, and wrote one of 59 after `"severity":`: the run
    was past the limit before the rule could see it. A token that would take a line's gap past
    it is refused too."""
    made = blank_loving("smollm2")
    widest = max(len(made.vocab.token_bytes[i]) for i in made.vocab.blanks.nonzero().flatten())
    assert widest > 32
    c = made.correct("Write JSON.", '{"a": [1, 2', JSON, max_tokens=40, until="complete")
    assert JSON.check('{"a": [1, 2' + c.text).valid
    assert deepest_line(c.text) <= DEFAULT_POLICY.blank_depth, repr(c.text)
