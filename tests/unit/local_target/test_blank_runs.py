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
from local_target.correction import Correction
from local_target.policy import DEFAULT_POLICY
from local_target.repeats import deepest_indent
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
    it is refused too. The limit is past the deepest line the text has written something on
    (the model writes a few, among its blanks)."""
    made = blank_loving("smollm2")
    widest = max(len(made.vocab.token_bytes[i]) for i in made.vocab.blanks.nonzero().flatten())
    assert widest > 32
    c = made.correct("Write JSON.", '{"a": [1, 2', JSON, max_tokens=40, until="complete")
    assert JSON.check('{"a": [1, 2' + c.text).valid
    limit = deepest_indent(c.text.encode()) + DEFAULT_POLICY.blank_depth
    assert deepest_line(c.text) <= limit < widest, repr(c.text)


_SCHEMA = Grammar.from_json_schema(
    {
        "type": "object",
        "properties": {"email": {"type": "boolean"}, "sms": {"type": "boolean"}},
        "required": ["email", "sms"],
        "additionalProperties": False,
    }
)
FLAGS = _SCHEMA.schema.strict if _SCHEMA.schema else None  # the schema's order, each key once


def blanks_in_a_row(made: LocalTarget, c: Correction) -> int:
    """The most tokens of blanks only that `c` chose one after another (not healing)."""
    most = run = 0
    for token, flag in zip(c.tokens, c.flags, strict=True):
        run = run + 1 if made.vocab.blanks[token] and flag != "healed" else 0
        most = max(most, run)
    return most


@pytest.mark.parametrize("name", TARGET_IDS[:2])
def test_a_refused_choice_after_a_blank_is_not_answered_with_more_blanks(name: str) -> None:
    """A model that wants a string where the schema takes a boolean, and next to that blanks:
    refused its quote, it took the blanks the mask left and asked for the quote again after
    them, a blank token at a time until the blank guards stopped it (seen: SmolLM2 after
    `"email" : ` wrote `\\n             \\n         \\n        false`). Where the text ends in a
    blank already, the refusal is answered with what the grammar takes but blanks."""
    assert FLAGS is not None
    made = blank_loving(name)
    quotes = [i for i, piece in enumerate(made.vocab.token_bytes) if piece.lstrip() == b'"']
    tf.add_logit_bias(made.model, dict.fromkeys(quotes, 60.0))
    committed = '{"email": '
    on = DecodingPolicy(refusal_blanks=True)
    padded = made.correct(
        "Write JSON.", committed, FLAGS, max_tokens=30, until="complete", policy=on
    )
    assert blanks_in_a_row(made, padded) >= 3, repr(padded.text)
    c = made.correct("Write JSON.", committed, FLAGS, max_tokens=30, until="complete")
    assert FLAGS.check(committed + c.text).valid, repr(c.text)
    assert blanks_in_a_row(made, c) <= 1, repr(c.text)


def test_smollm2_refused_a_string_writes_the_boolean_at_once(smollm2: LocalTarget) -> None:
    """SmolLM2 after `"email": ` wants a string; the schema takes a boolean. It answered the
    refusal with a line end before `true`; now with the boolean itself. (The healed token
    writes the committed text's last blank again, and nothing more: no refusal answered.)"""
    assert FLAGS is not None
    committed = '{"email": '
    on = DecodingPolicy(refusal_blanks=True)
    prompt = "Give a JSON object describing a user's notification settings."
    before = smollm2.correct(prompt, committed, FLAGS, max_tokens=24, until="complete", policy=on)
    assert before.text.startswith("\n"), repr(before.text)
    c = smollm2.correct(prompt, committed, FLAGS, max_tokens=24, until="complete")
    assert FLAGS.check(committed + c.text).valid
    assert c.text.lstrip(" ")[:1] in ("t", "f"), repr(c.text)
