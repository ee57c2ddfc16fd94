"""The tiny random-weight targets on real tokenizers that the local target's tests share, and
what they check of a session's logits."""

from __future__ import annotations

import random
from typing import Any

import pytest
import torch

import tests.support.tokenizer_fixtures as tf
from local_target import LocalTarget

# name: (tokenizer, architecture, extra embedding rows past the tokenizer)
TARGETS = {
    "gpt2": ("gpt2", "gpt2", 0),
    "gpt2-padded": ("gpt2", "gpt2", 47),  # 50257 -> 50304, as GPT-2 checkpoints are padded
    "smollm2": ("smollm2", "llama", 0),
    "mistral-padded": ("mistral", "llama", 128),  # sentencepiece with byte fallback
}
TARGET_IDS = list(TARGETS)


_PROBLEMS: dict[str, tf.FixtureError] = {}


def real_tokenizer(name: str) -> Any:
    """The real tokenizer `name`; a test fails (not skips) when it cannot be had, unless pip
    itself is missing. A failure is remembered: later tests fail at once, without a retry."""
    problem = _PROBLEMS.get(name)
    if problem is None:
        try:
            return tf.load_tokenizer(name)
        except tf.FixtureError as exc:  # reported outside the handler: no chained traceback
            problem = _PROBLEMS[name] = exc
    if isinstance(problem, tf.PipUnavailable):
        pytest.skip(f"real tokenizer {name!r} unavailable: {problem}")
    pytest.fail(f"real tokenizer {name!r} could not be built: {problem}", pytrace=False)


def by_bytes(target: LocalTarget, piece: bytes) -> int:
    """The id of the ordinary token whose bytes are `piece`."""
    ids = [
        i
        for i, b in enumerate(target.vocab.token_bytes)
        if b == piece and i not in target.vocab.special
    ]
    assert ids, f"no token {piece!r} in this vocabulary"
    return ids[0]


def fresh_logits(target: LocalTarget, ids: list[int]) -> torch.Tensor:
    """Next-token logits after `ids` from one forward pass without a cache."""
    with torch.inference_mode():
        return target.model(input_ids=torch.tensor([ids])).logits[0, -1].float()


def assert_same_logits(session: Any) -> None:
    got = session.logits[0, -1].float()
    want = fresh_logits(session.target, session.ids)
    assert torch.allclose(got, want, atol=1e-4), (got - want).abs().max().item()


def cut_points(target: LocalTarget, doc: str, kind: str, seed: int) -> int:
    """A character offset into `doc`: anywhere ("char"), or strictly inside a token of the doc's
    canonical tokenization that spans several characters ("in-token")."""
    rng = random.Random(seed)
    if kind == "char":
        return rng.randrange(1, len(doc))
    starts = {0}  # byte offsets where characters start
    for ch in doc[:-1]:
        starts.add(max(starts) + len(ch.encode("utf-8")))
    inside: list[int] = []
    offset = 0
    for token in target.vocab.encode(doc):
        end = offset + len(target.vocab.token_bytes[token])
        inside.extend(b for b in range(offset + 1, end) if b in starts)
        offset = end
    assert inside, "no token spans two characters"
    byte_cut = rng.choice(sorted(inside))
    return len(doc.encode("utf-8")[:byte_cut].decode("utf-8"))
