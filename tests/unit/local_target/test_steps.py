"""local_target.steps: a correction decided one token at a time, as vLLM's logits processor
decides it, makes the local target's choices; and its replay of an engine's tokens gives back
the local target's flags and stop reason.

The engine here is the plainest one: a forward pass without a cache over the whole sequence for
every token, its logits handed to the decisions. Tiny random-weight models on real
tokenizers; one of them biased towards closing JSON, so that completions end.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
import torch

import tests.support.tokenizer_fixtures as tf
from grammars.grammar import Grammar
from local_target import Correction, LocalTarget, Sampling
from local_target.comments import refused_openers
from local_target.decoding import Written
from local_target.errors import TargetError
from local_target.policy import DEFAULT_POLICY, Until
from local_target.repeats import OwnText
from local_target.steps import CHOOSE, Steps
from local_target.vllm_request import CorrectionArgs, failure_token
from tests.support.local_targets import (
    TARGET_IDS,
    TARGETS,
    by_bytes,
    fresh_logits,
    real_tokenizer,
)

pytestmark = [pytest.mark.model, pytest.mark.usefixtures("one_torch_thread")]

PROMPT = "Write a JSON document:"
JSON = Grammar.load("json")
KEYS3 = Grammar.load("json_keys", n=3)
# Forces `, "age": ` after the name, which ends a lexeme: a "terminal" correction stops after it.
FORCED = Grammar.from_lark(
    r"""
start: "{\"name\": " STRING ", \"age\": " NUMBER "}"
STRING: /"[a-z]*"/
NUMBER: /[0-9]+/
"""
)
# Settings lines with `#` comments (local_target.comments: a correction opens none).
SH_COMMENTED = Grammar.from_lark(
    r"""
start: (NAME "=" NUMBER "\n")+
NAME: /[a-z]+/
NUMBER: /[0-9]+/
COMMENT: /#[^\n]*\n/
%ignore COMMENT
%ignore " "
"""
)
# (grammar, committed text, until, max_tokens): mid-token, mid-string, after a key, empty, emoji.
CASES = [
    (JSON, '{"name": "Zo', "terminal", 10),
    (JSON, '{"name": "Zoë", "n": [1, 2.', "complete", 40),
    (JSON, '{"name": "Zoë", "n": [1, 2.', "close", 40),
    (JSON, '[{"emoji": "👩', 3, 10),
    (KEYS3, "", "complete", 60),
    (KEYS3, '{"city": "東', "terminal", 10),
    (KEYS3, '{"a": "b", "c', "complete", 12),
    (FORCED, '{"name": "al"', "terminal", 10),
    (FORCED, '{"name": "al"', "complete", 10),
]
CASE_IDS = [
    "json-mid-token",
    "json-number",
    "json-number-close",
    "json-emoji-3",
    "keys-empty",
    "keys-cjk",
    "keys-tight",
    "forced-terminal",
    "forced-complete",
]


@pytest.fixture(scope="module")
def targets() -> Callable[[str, bool], LocalTarget]:
    """targets(name, closing): a tiny target on TARGETS[name]'s tokenizer; `closing` biases it
    towards EOS and JSON's closing punctuation."""
    cache: dict[tuple[str, bool], LocalTarget] = {}

    def get(name: str, closing: bool) -> LocalTarget:
        if (name, closing) not in cache:
            tok_name, arch, extra = TARGETS[name]
            tok = real_tokenizer(tok_name)
            made = LocalTarget(tf.tiny_model(arch, tok, extra_rows=extra, seed=1), tok)
            if closing:
                bias = {made.vocab.eos: 14.0, by_bytes(made, b'"'): 12.0, by_bytes(made, b"}"): 11}
                tf.add_logit_bias(made.model, bias | {by_bytes(made, b","): 9.0})
            cache[name, closing] = made
        return cache[name, closing]

    return get


def args_for(
    target: LocalTarget,
    text: str,
    grammar: Grammar,
    until: Until,
    max_tokens: int,
    seed: int,
    earlier: bytes = b"",
) -> tuple[CorrectionArgs, list[int]]:
    """The correction's arguments as the vLLM client sends them, and the text's tokens sent."""
    text_ids = target.vocab.encode(text)
    heal = text_ids.pop() if text_ids else -1
    args = CorrectionArgs(
        grammar.ll_grammar,
        grammar.limits.row_items + len(grammar.ll_grammar),
        len(text_ids),
        heal,
        until,
        max_tokens,
        temperature=0.0 if seed < 0 else 1.0,
        seed=seed,
        openers=CorrectionArgs.sent_openers(refused_openers(grammar, DEFAULT_POLICY)),
        earlier=earlier.hex(),
    )
    return args, text_ids


def engine_writes(target: LocalTarget, steps: Steps, sequence: list[int]) -> Written:
    """What the plainest engine writes under `steps` after `sequence`: a forward pass without a
    cache for every token."""
    while (token := steps.next_token(fresh_logits(target, sequence))) is not None:
        sequence.append(token)
    return steps.written()


def local(
    target: LocalTarget, text: str, grammar: Grammar, until: Until, n: int, seed: int
) -> Correction:
    sampling = Sampling(0.0) if seed < 0 else Sampling(1.0, seed=seed)
    return target.session(PROMPT).correct(
        text, grammar, max_tokens=n, until=until, sampling=sampling
    )


def started(
    target: LocalTarget, case: tuple[Grammar, str, Until, int], seed: int
) -> tuple[Correction, Steps, list[int]]:
    """The local target's correction for `case`; the same correction's decisions as the vLLM
    client starts them; and the sequence an engine starts from (the prompt, the text sent)."""
    grammar, text, until, n = case
    want = local(target, text, grammar, until, n, seed)
    args, text_ids = args_for(target, text, grammar, until, n, seed)
    steps = args.steps(target.vocab, grammar.matcher(target.vocab.ll), text_ids)
    return want, steps, [*target.prompt_ids(PROMPT), *text_ids]


@pytest.mark.parametrize("seed", [-1, 3], ids=["greedy", "sampled"])
@pytest.mark.parametrize("closing", [False, True], ids=["plain", "closing"])
@pytest.mark.parametrize("name", ["smollm2", "gpt2"])
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_steps_choose_the_local_targets_tokens(
    targets: Any, name: str, closing: bool, seed: int, case: tuple[Grammar, str, Until, int]
) -> None:
    # The plainest engine: a forward pass without a cache for every token.
    target = targets(name, closing)
    want, steps, sequence = started(target, case, seed)
    got = engine_writes(target, steps, sequence)
    assert (got.tokens, got.flags, got.stop_reason) == (want.tokens, want.flags, want.stop_reason)
    assert got.text == want.text and got.runs == want.runs


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_a_choice_changes_nothing_until_it_is_taken(
    targets: Any, case: tuple[Grammar, str, Until, int]
) -> None:
    # As vLLM's processor sees it: a step whose token is discarded (a prompt prefilled in chunks)
    # brings other logits first; the choice is made again from the next step's.
    target = targets("smollm2", True)
    want, steps, sequence = started(target, case, -1)
    noise = torch.Generator().manual_seed(0)
    while (planned := steps.plan()) is not None:
        if planned == CHOOSE:
            steps.choice(torch.randn(target.vocab.n_logits, generator=noise) * 10)
            assert steps.plan() == CHOOSE
            token, masked = steps.choice(fresh_logits(target, sequence))
            if token is None:
                steps.stopped = "eos"
                break
            steps.take(token, masked)
            planned = token
        sequence.append(planned)
    got = steps.written()
    assert (got.tokens, got.flags, got.stop_reason) == (want.tokens, want.flags, want.stop_reason)


@pytest.mark.parametrize("closing", [False, True], ids=["plain", "closing"])
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_replay_gives_back_flags_and_stop_reason(
    targets: Any, closing: bool, case: tuple[Grammar, str, Until, int]
) -> None:
    target = targets("smollm2", closing)
    want, steps, _ = started(target, case, -1)
    steps.replay(list(want.tokens))
    got = steps.written()
    # Whether the model's first choice was refused is known only beside the logits.
    flags = tuple("sampled" if f == "masked" else f for f in want.flags)
    assert (got.tokens, got.flags, got.stop_reason) == (want.tokens, flags, want.stop_reason)
    assert got.text == want.text
    assert bool(steps.matcher.is_accepting()) == want.complete


def loving(name: str, piece: bytes) -> LocalTarget:
    """A tiny target on TARGETS[name]'s tokenizer that writes `piece` wherever it may."""
    tok_name, arch, extra = TARGETS[name]
    tok = real_tokenizer(tok_name)
    made = LocalTarget(tf.tiny_model(arch, tok, extra_rows=extra, seed=1), tok)
    tf.add_logit_bias(made.model, {by_bytes(made, piece): 40.0})
    return made


def test_steps_refuse_the_grammars_comments_as_the_local_target_does() -> None:
    # The client reads the openers off the grammar's Lark source and sends them; the processor,
    # which has only llguidance's form, refuses the same tokens.
    target = loving("smollm2", b"#")
    want = local(target, "a = 1\n", SH_COMMENTED, "complete", 12, -1)
    args, text_ids = args_for(target, "a = 1\n", SH_COMMENTED, "complete", 12, -1)
    sequence = [*target.prompt_ids(PROMPT), *text_ids]
    got = engine_writes(
        target,
        args.steps(target.vocab, SH_COMMENTED.matcher(target.vocab.ll), text_ids),
        list(sequence),
    )
    assert got.tokens == want.tokens and "#" not in got.text
    allowed = replace(args, openers="[]")  # as before the client sent them
    steps = allowed.steps(target.vocab, SH_COMMENTED.matcher(target.vocab.ll), text_ids)
    assert "#" in engine_writes(target, steps, sequence).text


def test_steps_count_what_the_model_wrote_in_the_corrections_before() -> None:
    # A run of digits written over several corrections, 6 tokens each: the client sends what
    # the model wrote before (OwnText), and the loop guards count it as the local session does.
    target = loving("smollm2", b"1")
    session, own, text = target.session(PROMPT), OwnText(), '{"n": 1'
    for _ in range(12):
        want = session.correct(text, JSON, max_tokens=6)
        args, text_ids = args_for(target, text, JSON, "terminal", 6, -1, own.before(text))
        steps = args.steps(target.vocab, JSON.matcher(target.vocab.ll), text_ids)
        got = engine_writes(target, steps, [*target.prompt_ids(PROMPT), *text_ids])
        assert (got.tokens, got.text) == (want.tokens, want.text)
        own.wrote(text, got.text, steps.own)
        text += got.text
    runs = [len(run) for run in re.findall(r"[0-9]+", text)]
    assert max(runs) <= DEFAULT_POLICY.max_digit_run + 4 and sum(runs) > 50, text


def test_replay_refuses_a_token_the_grammar_refuses(targets: Any) -> None:
    target = targets("smollm2", False)
    args, text_ids = args_for(target, '{"a": 1', JSON, "terminal", 8, -1)
    steps = args.steps(target.vocab, JSON.matcher(target.vocab.ll), text_ids)
    with pytest.raises(TargetError, match="refuses"):
        steps.replay([by_bytes(target, b"1"), by_bytes(target, b"]")])


def test_steps_refuse_committed_text_the_grammar_refuses(targets: Any) -> None:
    target = targets("smollm2", False)
    args, text_ids = args_for(target, '{"a": ]', JSON, "terminal", 8, -1)
    with pytest.raises(TargetError, match="does not match the grammar"):
        args.steps(target.vocab, JSON.matcher(target.vocab.ll), text_ids)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"backtrack_grammar": "g"}, "lacks backtrack_grammar_items"),
        (
            {**CorrectionArgs("g", 5, 0, -1, "terminal", 8).xargs(), "backtrack_until": "soon"},
            "must be int",
        ),
        (
            {**CorrectionArgs("g", 5, 0, -1, "terminal", 8).xargs(), "backtrack_max_tokens": 0},
            ">= 1",
        ),
        (
            {**CorrectionArgs("g", 5, 0, -1, "terminal", 8).xargs(), "backtrack_openers": "[#"},
            "openers is no JSON",
        ),
        (
            {**CorrectionArgs("g", 5, 0, -1, "terminal", 8).xargs(), "backtrack_openers": "[1]"},
            "openers must list strings",
        ),
        (
            {**CorrectionArgs("g", 5, 0, -1, "terminal", 8).xargs(), "backtrack_earlier": "zz"},
            "earlier must be hex",
        ),
    ],
    ids=["missing", "until", "max_tokens", "openers-json", "openers-list", "earlier"],
)
def test_request_arguments_are_checked(extra: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        CorrectionArgs.of(extra)


def test_request_arguments_round_trip() -> None:
    args = CorrectionArgs("g", 5, 3, 17, 4, 8, temperature=0.5, top_p=0.9, seed=2, label="bt-1")
    assert CorrectionArgs.of(args.xargs()) == args
    sent = replace(args, openers=CorrectionArgs.sent_openers(("--", "/*")), earlier=b"12\xff".hex())
    back = CorrectionArgs.of(sent.xargs())
    assert back.comment_openers() == ("--", "/*") and back.earlier_bytes() == b"12\xff"


@pytest.mark.parametrize("name", TARGET_IDS)
def test_the_failure_token_is_one_no_correction_writes(targets: Any, name: str) -> None:
    # The processor writes it where it fails; the client takes it for that and nothing else.
    target = targets(name, False)
    vocab = target.vocab
    token = failure_token(vocab, len(target.tokenizer))
    assert token != vocab.eos and token < len(target.tokenizer)  # not a padding row
    steps = Steps(
        vocab,
        JSON.matcher(vocab.ll),
        b"",
        max_tokens=8,
        until="complete",
        sampling=Sampling(),
        policy=DEFAULT_POLICY,
    )
    logits = torch.zeros(vocab.n_logits)
    logits[token] = 1e4  # the model wants it above all
    assert steps.next_token(logits) != token
    assert not vocab.grammar_mask(steps.matcher)[token]
