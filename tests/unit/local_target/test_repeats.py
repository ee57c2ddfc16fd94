"""A small model repeats a list's item to its whole budget: seen with SmolLM2 finishing a recipe,
`"chicken",` about 90 times in an array, 492 tokens. After `DecodingPolicy.max_repeats` copies in
a row of one block (8 to 64 bytes, more than blanks and closers), the tokens that would begin one
more copy are refused while the grammar allows anything else."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest

import tests.support.tokenizer_fixtures as tf
from benchmarks.corpora.unseen import load_unseen_grammar
from grammars.grammar import Grammar
from local_target import DecodingPolicy, LocalTarget
from local_target.policy import DEFAULT_POLICY
from local_target.repeats import (
    NOVELTY_BYTES,
    bare_lines,
    digit_run,
    long_loop,
    looping,
    repeated_block,
    repeated_shape,
)
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


def test_copies_that_differ_in_blanks_and_numbers_only_are_a_loop_too() -> None:
    """SmolLM2 completing a playlist wrote `"title": "SongList"` 40 times, indented 4 to 6; and
    an invoice's lines, counting `"qty"` from 1 to 15: one more copy begins with the non-blank
    bytes before its first number."""
    title = b"".join(b",\n" + b" " * (4 + n % 3) + b'"title": "SongList"' for n in range(4))
    assert repeated_block(title, 4) is None
    assert repeated_shape(title, 4) == b',"title":"SongList"'
    line = b'{\n  "sku": "A12",\n  "qty": %d\n},\n'
    assert repeated_shape(b"[" + b"".join(line % n for n in range(8, 12)), 4) == b'{"sku":"A'
    assert repeated_shape(b"[" + b"".join(line % n for n in range(8, 11)), 4) is None
    assert repeated_shape(b"[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, ", 4) is None  # numbers
    assert repeated_shape(b"".join(b"%d,%d\n" % (n, n * n) for n in range(30)), 4) is None
    assert repeated_shape(b'"a": "x", "b": "y", "c": "z", "d": "w", ', 4) is None  # not alike


def test_the_next_copy_is_refused_whatever_blanks_its_tokens_hold() -> None:
    vocab = LocalTarget(*_tiny_parts()).vocab
    refused = vocab.ink_mask(b',"title"')
    tokens = {vocab.token_bytes[i] for i in refused.nonzero().flatten().tolist()}
    assert {b",", b" ,", b',"', b"title"} & tokens == {b",", b" ,", b',"'}  # GPT-2's
    assert not any(t.strip() == b"" for t in tokens)  # blanks alone: `padding`'s to refuse


def _tiny_parts(name: str = TARGET_IDS[0]) -> tuple[object, object]:
    tok_name, arch, extra = TARGETS[name]
    tok = real_tokenizer(tok_name)
    return tf.tiny_model(arch, tok, extra_rows=extra, seed=1), tok


def tiny(name: str) -> LocalTarget:
    """A tiny untrained model on a real tokenizer: left alone, it loops (`188188188...`)."""
    return LocalTarget(*_tiny_parts(name))


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
    unlimited = DecodingPolicy(max_repeats=10**9, max_digit_run=10**9)
    looped = made.correct(
        "Write JSON.", text, JSON, max_tokens=60, until="complete", policy=unlimited
    )
    assert loops(looped.text, DEFAULT_POLICY.max_repeats + 2), repr(looped.text)
    c = made.correct("Write JSON.", text, JSON, max_tokens=60, until="complete")
    assert JSON.check(text + c.text).valid
    assert not loops(c.text, DEFAULT_POLICY.max_repeats + 1), repr(c.text)


def test_text_that_has_stopped_being_new_is_a_loop() -> None:
    """SmolLM2 in an INI key varied round the copy guards for 512 tokens; its last 384 bytes
    compress to an eighth. A document's do not (JSON with repeated keys, CSV rows, DOT edges)."""
    names = ("python", "python3.2", "python", "python4", "python5")
    key = b"".join(b"-import-" + n.encode() for n in names * 8)
    assert looping(key, DEFAULT_POLICY.min_novelty)
    assert not looping(key[: NOVELTY_BYTES - 1], DEFAULT_POLICY.min_novelty)  # too short to tell
    rows = [{"id": n, "name": f"user{n}", "active": n % 3 == 0} for n in range(12)]
    csv = "".join(f"{n},{n * 7 % 10},{n * n}\n" for n in range(60))
    edges = "".join(f"  n{n} -> n{n * 5 % 17} [label=e{n}];\n" for n in range(20))
    for document in (json.dumps(rows, indent=2), csv, edges):
        assert len(document) >= NOVELTY_BYTES
        assert not looping(document.encode(), DEFAULT_POLICY.min_novelty), document[:40]


@pytest.mark.model
@pytest.mark.usefixtures("one_torch_thread")
def test_a_correction_whose_text_has_stopped_being_new_stops() -> None:
    """The tiny model, its copy and digit guards off, loops to its whole budget; with the
    novelty rule it stops as if its budget were spent, its text's end a loop."""
    made = tiny(TARGET_IDS[0])
    text = '{"a": "'
    off = DecodingPolicy(max_repeats=10**9, max_digit_run=10**9, min_novelty=0)
    endless = made.correct("Write JSON.", text, JSON, max_tokens=300, until=300, policy=off)
    assert len(endless.tokens) == 300 and looping(endless.text.encode(), 0.15)
    on = replace(off, min_novelty=DEFAULT_POLICY.min_novelty)
    c = made.correct("Write JSON.", text, JSON, max_tokens=300, until=300, policy=on)
    assert c.stop_reason == "max_tokens" and len(c.tokens) < 300
    assert looping(c.text.encode(), on.min_novelty)
    assert not looping(c.text.encode()[:-8], on.min_novelty)  # it stopped once it was one


def test_a_run_of_digits_past_the_most_may_not_grow() -> None:
    assert digit_run(b'"sku": "' + b"1234567890" * 4 + b"1", 40)
    assert not digit_run(b'"sku": "' + b"1234567890" * 4, 40)
    assert not digit_run(b"12345 " + b"1" * 39, 40)
    vocab = LocalTarget(*_tiny_parts()).vocab
    tokens = {vocab.token_bytes[i] for i in vocab.digits.nonzero().flatten().tolist()}
    assert {b"1", b"2019"} <= tokens and all(t[:1].isdigit() for t in tokens)


@pytest.mark.model
@pytest.mark.usefixtures("one_torch_thread")
@pytest.mark.parametrize("name", TARGET_IDS[:2])
def test_a_model_that_counts_on_writes_no_run_of_digits_past_the_most(name: str) -> None:
    """Within a string, SmolLM2 wrote digits until its budget ended, the text incomplete (an
    invoice's `"sku"`). Copies of a block are allowed here, so only the digit rule holds it."""
    made = tiny(name)
    text = '{"sku": "1'
    copies = DecodingPolicy(max_repeats=10**9)
    most = copies.max_digit_run
    c = made.correct("Write JSON.", text, JSON, max_tokens=80, until="complete", policy=copies)
    # The last token may take a run of MOST_DIGITS a few digits past it.
    assert max(len(r) for r in re.findall(r"[0-9]+", text + c.text)) <= most + 4, c.text


@pytest.mark.model
@pytest.mark.usefixtures("one_torch_thread")
def test_a_lexeme_written_over_several_corrections_is_one_text_to_the_loop_guards() -> None:
    """A guided run writes a correction up to the next terminal, 16 tokens a round: SmolLM2 wrote
    an invoice's `"sku"` as `1234567890` ten times over, 15 digits a round, each round's digits
    counted alone. What the session's model wrote in the rounds before, up to the committed
    text's end, counts too; text that is not its own (a draft's) starts the count again."""
    made = tiny(TARGET_IDS[0])  # it loops on digits (`157157...`)
    session = made.session("Write JSON.")
    copies = DecodingPolicy(max_repeats=10**9)
    most = copies.max_digit_run
    text = '{"sku": "1'
    for _ in range(14):
        text += session.correct(text, JSON, max_tokens=6, policy=copies).text
    runs = [len(r) for r in re.findall(r"[0-9]+", text)]
    assert max(runs) <= most + 4 and sum(runs) > most, text
    drafted = '{"sku": "' + "157" * 15  # digits the draft wrote: the model's may follow
    assert session.correct(drafted, JSON, max_tokens=6, policy=copies).text.isdigit()


def test_lines_of_marks_alone_are_a_loop_at_the_next_line_start() -> None:
    assert bare_lines(b"[a]\n#\n#\n\n#\n;\n", 4) == b"#;"  # blank lines aside
    assert bare_lines(b"x\n//\n\n//\n\n//\n\n//\n\n", 4) == b"/"
    assert bare_lines(b"#\n#\n#\n", 4) is None  # three
    assert bare_lines(b"#\n#\n#\n#\n#", 4) is None  # not at a line's start
    assert bare_lines(b"# a\n#\n#\n#\n", 4) is None  # a comment with words in it
    assert bare_lines(b"}\n]\n)\n}\n", 4) is None  # closers, as deep nesting writes them
    assert bare_lines(b'"\n"\n"\n"\n', 4) is None


def test_smollm2_writes_no_run_of_empty_comments_to_its_budget(smollm2: LocalTarget) -> None:
    """Real drafts (bench_real_drafts' ini-app): SmolLM2, asked for an INI file after two
    comment lines, wrote `#` lines until its budget ended, the text incomplete (516 local tokens,
    27 s, then the grammar's own ending). After `max_repeats` lines of marks alone, the next is
    refused: it writes a section and ends. Comments are allowed here, as where a grammar's are
    not known (by default the model opens none: test_comments.py)."""
    ini = load_unseen_grammar("ini")
    text = "# -*- coding: utf-8 -*-\n\n# -*-# -*-\n"
    prompt = "Write an INI file for a web app with a [server] and a [database] section."
    unlimited = DecodingPolicy(max_repeats=10**9, comments=True)
    looped = smollm2.correct(prompt, text, ini, max_tokens=64, until="complete", policy=unlimited)
    assert len(looped.tokens) == 64 and not ini.matches(text + looped.text)
    allowed = DecodingPolicy(comments=True)
    c = smollm2.correct(prompt, text, ini, max_tokens=64, until="complete", policy=allowed)
    assert ini.matches(text + c.text) and len(c.tokens) < 64
    assert not any(bare_lines(c.text.encode()[:end], 5) for end in range(len(c.text) + 1))


SQL_LINE = (
    b"# Create a table with a custom column named 'customers' and add an auto-incrementing key\n"
)


def test_whole_lines_written_again_are_a_long_loop() -> None:
    """Blocks longer than `repeated_block` steers round (65 to 512 bytes): SmolLM2 completing a
    comment wrote one line again and again to its budget. Copies of the loop's line in another
    phase count; fewer copies, blanks and closers alone and a document's repeated rows (their
    values differ) do not."""
    assert long_loop(SQL_LINE * 4, 4)
    assert long_loop(b"SELECT 1;\n" + SQL_LINE * 4 + SQL_LINE[:30], 4)  # another phase
    assert not long_loop(SQL_LINE * 3, 4)
    assert not long_loop(b" " * 2048, 4)
    assert not long_loop(b"}\n]" * 400, 4)  # closers of deep nesting repeat, and must
    rows = "".join(
        f'  {{"id": {n}, "name": "customer {n}", "city": "Oslo", "active": true}},\n'
        for n in range(40)
    )
    assert not long_loop(rows.encode(), 4)


def test_smollm2_stops_a_sentence_it_writes_again_and_again(smollm2: LocalTarget) -> None:
    """In a JSON string after two copies of a sentence (95 bytes), SmolLM2 writes it on to its
    budget: a period too long for `looping` to see in 384 bytes. With `long_loop` (at
    `max_repeats` copies of its own) the correction stops as if its budget were spent."""
    line = "Create a table with a custom column named customers and add an auto-incrementing key. "
    text = '{"note": "' + line * 2
    unlimited = DecodingPolicy(max_repeats=10**9)
    looped = smollm2.correct("Write JSON.", text, JSON, max_tokens=200, until=200, policy=unlimited)
    assert len(looped.tokens) == 200 and not looping(looped.text.encode(), 0.15)
    c = smollm2.correct("Write JSON.", text, JSON, max_tokens=200, until=200)
    assert c.stop_reason == "max_tokens" and len(c.tokens) < 120
    assert long_loop(c.text.encode(), DEFAULT_POLICY.max_repeats)
