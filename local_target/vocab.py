"""The model's vocabulary as llguidance and token healing see it.

Built once per tokenizer (about half a second for 50k tokens). The model's embedding may have more
rows than the tokenizer has tokens: masks are sized to the model (`n_logits`); rows past the
tokenizer are never allowed.
"""

from __future__ import annotations

import bisect
from typing import Any

import llguidance
import llguidance.hf
import numpy as np
import torch

from local_target.errors import TargetError

_CLOSERS = b"\"')]};"


class Vocabulary:
    """Token bytes, EOS ids, and masks over `n_logits` entries for one tokenizer."""

    def __init__(self, tokenizer: Any, n_logits: int) -> None:
        if not getattr(tokenizer, "is_fast", False):
            raise TargetError("LocalTarget needs a fast (Rust) tokenizer; load it with use_fast")
        n_tokens = max(len(tokenizer), n_logits)
        self.ll: llguidance.LLTokenizer = llguidance.hf.from_tokenizer(tokenizer, n_vocab=n_tokens)
        self.n_logits = n_logits
        self.eos = int(self.ll.eos_token)
        self.token_bytes: list[bytes] = [self.ll.decode_bytes([i]) for i in range(n_logits)]
        self.special = {i for i in range(n_logits) if self.ll.is_special_token(i)}
        # Sorted (bytes, id) of ordinary tokens: those starting with some bytes form one range.
        self._sorted = sorted(
            (b, i) for i, b in enumerate(self.token_bytes) if b and i not in self.special
        )
        self._keys = [b for b, _ in self._sorted]
        # Several tokens may share bytes (sentencepiece 'r' and its byte fallback <0x72>).
        self._by_bytes: dict[bytes, list[int]] = {}
        for b, i in self._sorted:
            self._by_bytes.setdefault(b, []).append(i)
        # Tokens that only close something (quotes, brackets, a statement), and EOS.
        closing = [
            i
            for i, b in enumerate(self.token_bytes)
            if b.strip() and not b.strip().strip(_CLOSERS) and i not in self.special
        ]
        self.closers = torch.zeros(n_logits, dtype=torch.bool)
        self.closers[closing + ([self.eos] if self.eos < n_logits else [])] = True
        # Tokens of blanks only (spaces, tabs, line ends).
        self.blanks = torch.zeros(n_logits, dtype=torch.bool)
        self.blanks[
            [
                i
                for i, b in enumerate(self.token_bytes)
                if b and not b.strip() and i not in self.special
            ]
        ] = True

    def encode(self, text: str) -> list[int]:
        """The canonical tokenization of `text` (no special tokens); decodes back to `text`."""
        ids: list[int] = self.ll.tokenize_str(text)
        return ids

    def decode(self, ids: list[int]) -> bytes:
        return b"".join(self.token_bytes[i] for i in ids)

    def healing_mask(self, pending: bytes) -> torch.Tensor:
        """Tokens whose bytes start with `pending`, or are a non-empty prefix of it."""
        mask = torch.zeros(self.n_logits, dtype=torch.bool)
        lo = bisect.bisect_left(self._keys, pending)
        hi = bisect.bisect_left(self._keys, pending + b"\xff" * 8)
        ids = [i for _, i in self._sorted[lo:hi]]
        for k in range(1, len(pending)):
            ids += self._by_bytes.get(pending[:k], [])
        mask[ids] = True
        return mask

    def grammar_mask(self, matcher: llguidance.LLMatcher) -> torch.Tensor:
        """The tokens `matcher` allows next, as a bool tensor over `n_logits`."""
        # Not llguidance.torch's fill_next_token_bitmask / apply_token_bitmask_inplace: on the
        # SmolLM2 vocabulary (CPU, one torch thread) they took 1.1x this path's time per mask,
        # each part slower (fill 1.4x compute_bitmask, apply 1.3x unpack + masked_fill), and the
        # apply kernel needs torch.compile (seconds on first use).
        bits = np.frombuffer(matcher.compute_bitmask(), dtype=np.uint8)
        allowed = np.unpackbits(bits, bitorder="little")[: self.n_logits]
        return torch.from_numpy(allowed.astype(bool))
