"""A correction as one vLLM request: what the client sends in `vllm_xargs`, and what the logits
processor (local_target.vllm_processor) reads back from it.

The request's prompt is the chat prompt's token ids, then the committed text's canonical tokens
but the last one, which is backed off to be healed (`heal`, -1 without healing); `text_tokens`
says how many of the prompt's ids are text. Both sides start the correction's decisions
(local_target.steps) the same way, from the same arguments: `CorrectionArgs.steps`.

Where the processor fails a correction (the grammar's state goes bad, choosing a token raises), it
cannot raise: the engine runs every request of the batch, and must go on. It writes
`failure_token` instead, which the client sends as the request's stop token: vLLM ends the request
there and says so in the choice's `stop_reason`, which an EOS never sets. A grammar allows a
special token only where it names it (llguidance's `<[id]>`); one that named this token would end
there too, reported as failed, never as a short correction.

Imports only llguidance and local_target's decoding modules: it loads in vLLM's environment too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from local_target.comments import Comments
from local_target.errors import TargetError
from local_target.policy import DEFAULT_POLICY
from local_target.sampling import Sampling
from local_target.steps import Steps

if TYPE_CHECKING:
    import llguidance

    from local_target.policy import Until
    from local_target.vocab import Vocabulary

_PREFIX = "backtrack_"


@dataclass(frozen=True)
class CorrectionArgs:
    """One correction's arguments: the grammar (llguidance's serialized form) and its parser's
    row limit, the committed text's tokens in the prompt and the one healed, when to stop, and
    how to choose (the default DecodingPolicy; greedy unless `temperature` > 0). `openers`: the
    grammar's comment openers the correction refuses (a JSON list; local_target.comments), read
    on the client's side, where the grammar's Lark source is; `earlier`: what the model wrote up
    to the committed text's end in the corrections before (hex; local_target.repeats.OwnText),
    for the loop guards. `label` names the correction in the server's log where the processor
    fails it."""

    grammar: str
    grammar_items: int
    text_tokens: int
    heal: int
    until: Until
    max_tokens: int
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int = -1
    openers: str = "[]"
    earlier: str = ""
    label: str = ""

    def xargs(self) -> dict[str, str | int | float]:
        """The arguments as vLLM's `vllm_xargs` take them (flat, scalar)."""
        return {_PREFIX + name: value for name, value in vars(self).items()}

    @classmethod
    def of(cls, extra: dict[str, Any]) -> CorrectionArgs:
        """The arguments in a request's `extra_args`; ValueError naming a missing or bad one."""
        values: dict[str, Any] = {}
        for name, kind in _KINDS.items():
            value = extra.get(_PREFIX + name, _DEFAULTS.get(name))
            if value is None:
                raise ValueError(f"vllm_xargs lacks {_PREFIX + name}")
            if name == "until" and value not in ("terminal", "complete", "close"):
                kind = int
            if not isinstance(value, kind) or isinstance(value, bool):
                raise ValueError(f"vllm_xargs {_PREFIX + name} must be {kind.__name__}: {value!r}")
            values[name] = value
        args = cls(**values)
        if args.max_tokens < 1 or args.text_tokens < 0 or args.grammar_items < 1:
            raise ValueError("vllm_xargs: max_tokens and grammar_items >= 1, text_tokens >= 0")
        args.comment_openers()  # ValueError where either is malformed
        args.earlier_bytes()
        return args

    @staticmethod
    def sent_openers(openers: tuple[str, ...]) -> str:
        """`openers` as the `openers` argument carries them."""
        return json.dumps(list(openers))

    def comment_openers(self) -> tuple[str, ...]:
        """The comment openers refused; ValueError where the argument is no list of strings."""
        try:
            openers = json.loads(self.openers)
        except json.JSONDecodeError as exc:
            raise ValueError(f"vllm_xargs {_PREFIX}openers is no JSON: {exc}") from exc
        if not isinstance(openers, list) or not all(isinstance(o, str) and o for o in openers):
            raise ValueError(f"vllm_xargs {_PREFIX}openers must list strings: {self.openers!r}")
        return tuple(openers)

    def earlier_bytes(self) -> bytes:
        """The `earlier` bytes; ValueError where the argument is no hex."""
        try:
            return bytes.fromhex(self.earlier)
        except ValueError as exc:
            raise ValueError(f"vllm_xargs {_PREFIX}earlier must be hex: {exc}") from exc

    def steps(self, vocab: Vocabulary, matcher: llguidance.LLMatcher, text_ids: list[int]) -> Steps:
        """The correction's decisions after `text_ids` (the committed text's tokens but the healed
        one), `matcher` fresh at the grammar's start. TargetError where the text does not fit."""
        if not matcher.consume_tokens(text_ids):
            error = matcher.get_error().split("\n", 1)[0]
            raise TargetError(f"the committed text does not match the grammar: {error}")
        pending = b""
        if self.heal >= 0:
            if matcher.validate_tokens([self.heal]) != 1:
                raise TargetError("the committed text does not match the grammar at its last token")
            pending = vocab.token_bytes[self.heal]
        sampling = Sampling(self.temperature, self.top_p, None if self.seed < 0 else self.seed)
        committed = vocab.decode(text_ids) + pending
        return Steps(
            vocab,
            matcher,
            pending,
            max_tokens=self.max_tokens,
            until=self.until,
            sampling=sampling,
            policy=DEFAULT_POLICY,
            committed=committed,
            earlier=self.earlier_bytes(),
            comments=Comments.of(vocab, self.comment_openers(), committed),
        )


_KINDS: dict[str, type] = {
    "grammar": str,
    "grammar_items": int,
    "text_tokens": int,
    "heal": int,
    "until": str,
    "max_tokens": int,
    "temperature": float,
    "top_p": float,
    "seed": int,
    "openers": str,
    "earlier": str,
    "label": str,
}
_DEFAULTS: dict[str, Any] = {
    "temperature": 0.0,
    "top_p": 1.0,
    "seed": -1,
    "openers": "[]",
    "earlier": "",
    "label": "",
}


def failure_token(vocab: Vocabulary, n_tokens: int) -> int:
    """The token the processor writes where it fails a correction: the last of the tokenizer's
    `n_tokens` (not a padding row of the model's, which vLLM could not detokenize) that llguidance
    takes for special, EOS left out: an added special token, or a byte no UTF-8 text holds. Not a
    low id, which is more often one of a model's several EOS tokens, where vLLM ends a request
    without a `stop_reason`. TargetError for a vocabulary with none."""
    others = [token for token in vocab.special if token < n_tokens and token != vocab.eos]
    if not others:
        raise TargetError(
            "the vLLM target needs a special token besides EOS in the vocabulary: its logits"
            " processor writes it where it fails a correction"
        )
    return max(others)
