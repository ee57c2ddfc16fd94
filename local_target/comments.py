"""The grammar's comments, which a correction does not open (`DecodingPolicy.comments`): a
grammar never needs one, and a small model free to write them wrote its answer there (SmolLM2
completing a proto file: `//proto3`, `//user`, `//id`, ...). What they open with is read off the
grammar (grammars.lark.comments) on this side; vLLM's logits processor is sent them
(local_target.vllm_request) and builds the same refusal from them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from local_target.vocab import either

if TYPE_CHECKING:
    import llguidance
    import torch

    from grammars.grammar import Grammar
    from local_target.policy import DecodingPolicy
    from local_target.vocab import Vocabulary


class Comments:
    """A correction's refusal of the comments' openers, after `committed` text."""

    def __init__(self, vocab: Vocabulary, openers: tuple[bytes, ...], committed: bytes) -> None:
        self.vocab = vocab
        self.openers = openers
        self._end = committed[-_OPENER_BYTES:]  # where an opener may have begun (`-` of `--`)
        # Refused at every step outside a string: the tokens that begin with an opener.
        self._opening: torch.Tensor | None = None
        for opener in openers:
            self._opening = either(self._opening, vocab.opening_mask(opener, after_blanks=True))
        # The tokens that are an opener's start, each with the bytes that go on to an opener.
        self._starts: dict[int, set[int]] = {}
        for opener in openers:
            for token, written in vocab.opener_starts(opener):
                self._starts.setdefault(token, set()).add(opener[written])

    @classmethod
    def of(cls, vocab: Vocabulary, openers: tuple[str, ...], committed: bytes) -> Comments | None:
        """The refusal of `openers` (`refused_openers`) after `committed`; None without any."""
        return cls(vocab, tuple(o.encode() for o in openers), committed) if openers else None

    def refused(self, matcher: llguidance.LLMatcher, new: bytes | bytearray) -> torch.Tensor | None:
        """Tokens that would open a comment after the committed text and `new` (None: none),
        outside a string (its `//` is its text): those that begin with an opener, blanks aside;
        where the text ends in an opener's start, those that finish it; and an opener's start
        after which the grammar takes nothing but the opener's rest (`/` in a proto file)."""
        vocab = self.vocab
        if vocab.in_free_text(matcher):
            return None
        end = self._end + bytes(new[-_OPENER_BYTES:])
        refused = self._opening
        for opener in self.openers:
            for cut in range(1, len(opener)):
                if end.endswith(opener[:cut]):
                    refused = either(refused, vocab.opening_mask(opener[cut:], after_blanks=False))
        only = [
            token
            for token, rests in self._starts.items()
            if matcher.validate_tokens([token]) and vocab.bytes_after(matcher, token) <= rests
        ]  # after it the grammar takes nothing but an opener's rest
        return either(refused, vocab.mask_of(only)) if only else refused


def refused_openers(grammar: Grammar, policy: DecodingPolicy) -> tuple[str, ...]:
    """The openers of `grammar`'s comments a correction under `policy` refuses: none where the
    policy allows comments (or the grammar has none it knows)."""
    from grammars.lark.comments import comment_openers  # lark: not in vLLM's environment

    return () if policy.comments else comment_openers(grammar)


_OPENER_BYTES = 8  # the end of a text a comment's opener may have begun in
