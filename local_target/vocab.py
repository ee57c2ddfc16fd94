"""The model's vocabulary as llguidance and token healing see it.

Built once per tokenizer (about half a second for 50k tokens). The model's embedding may have more
rows than the tokenizer has tokens: masks are sized to the model (`n_logits`); rows past the
tokenizer are never allowed.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from typing import Any

import llguidance
import llguidance.hf
import numpy as np
import torch

from grammars.checker import PRINTABLE, takes_free_text
from local_target.errors import TargetError
from local_target.repeats import BLANKS, ink

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
        ordinary = [(b, i) for i, b in enumerate(self.token_bytes) if b and i not in self.special]
        self._bytes = _Prefixes(ordinary)
        self._ink: _Prefixes | None = None  # the same, by their bytes but blanks (`ink_mask`)
        # Tokens that only close something (quotes, brackets, a statement), and EOS.
        closing = self._ordinary(lambda b: bool(b.strip()) and not b.strip().strip(_CLOSERS))
        eos = [self.eos] if self.eos < n_logits else []
        self.closers = self.mask_of(closing + eos)
        self._printable, self._quotes = self._strings(closing, eos)
        # Tokens of blanks only (spaces, tabs, line ends).
        self.blanks = self.mask_of(self._ordinary(lambda b: bool(b) and not b.strip()))
        self._blank_after: dict[bytes, torch.Tensor] = {}

        # For each token of blanks only, how far it takes the line's gap: the blanks after its
        # last line end (`new_line`), or all of them, added to the gap before it.
        widths = [
            (len(b), b.rfind(b"\n")) if self.blanks[i] else (0, -1)
            for i, b in enumerate(self.token_bytes)
        ]
        self._blank_width = torch.tensor([w - (n + 1) for w, n in widths])
        self._new_line = torch.tensor([n >= 0 for _, n in widths])
        self._wide: dict[tuple[int, int], torch.Tensor | None] = {}
        self._opening: dict[tuple[bytes, bool], torch.Tensor] = {}
        self._starts: dict[bytes, list[tuple[int, int]]] = {}
        # Tokens that start with a digit.
        self.digits = self.mask_of(self._ordinary(lambda b: b[:1].isdigit()))

    def wide_blanks(self, gap: int, most: int) -> torch.Tensor | None:
        """Tokens of blanks that would take a line's gap of `gap` blanks (its indentation, or a
        gap without a line end) past `most`: a token with a line end, by its blanks after the
        last one. None: no token does."""
        key = (gap, most)
        if key not in self._wide:
            width = self._blank_width
            after = torch.where(self._new_line, width, width + gap)
            wide = self.blanks & (after > most)
            if len(self._wide) >= _MOST_KEPT:
                self._wide.clear()
            self._wide[key] = wide if bool(wide.any()) else None
        return self._wide[key]

    def opening_mask(self, opener: bytes, *, after_blanks: bool) -> torch.Tensor:
        """Tokens whose bytes start with `opener`, after their leading blanks where
        `after_blanks` (a comment's opener: local_target.comments)."""
        key = (opener, after_blanks)
        if key not in self._opening:
            self._opening[key] = self.mask_of(
                [
                    i
                    for i, b in enumerate(self.token_bytes)
                    if (b.lstrip(BLANKS) if after_blanks else b).startswith(opener)
                    and i not in self.special
                ]
            )
        return self._opening[key]

    def opener_starts(self, opener: bytes) -> list[tuple[int, int]]:
        """Tokens whose bytes, after their leading blanks, are a start of `opener` short of it
        (`/` of `//`), each with the length of that start."""
        if opener not in self._starts:
            self._starts[opener] = [
                (i, len(start))
                for i, b in enumerate(self.token_bytes)
                if (start := b.lstrip(BLANKS))
                and opener.startswith(start)
                and len(start) < len(opener)
                and i not in self.special
            ]
        return self._starts[opener]

    def bytes_after(self, matcher: llguidance.LLMatcher, token: int) -> frozenset[int]:
        """The printable ASCII bytes `matcher` allows after `token` (which it need not have
        consumed: it is validated with each)."""
        return frozenset(
            byte for byte, t in self._printable if matcher.validate_tokens([token, t]) == 2
        )

    def encode(self, text: str) -> list[int]:
        """The canonical tokenization of `text` (no special tokens); decodes back to `text`."""
        ids: list[int] = self.ll.tokenize_str(text)
        return ids

    def decode(self, ids: list[int]) -> bytes:
        return b"".join(self.token_bytes[i] for i in ids)

    def healing_mask(self, pending: bytes) -> torch.Tensor:
        """Tokens whose bytes start with `pending`, or are a non-empty prefix of it."""
        return self._bytes.mask(pending, self.n_logits)

    def blank_after(self, pending: bytes) -> torch.Tensor:
        """Tokens whose bytes are `pending` and then a blank: with `pending` empty, those that
        start with one; healing, those that write a blank past the committed text's end."""
        if pending not in self._blank_after:
            if len(self._blank_after) >= _MOST_KEPT:
                self._blank_after.clear()
            ids = [i for blank in BLANKS for i in self._bytes.starting(pending + bytes([blank]))]
            self._blank_after[pending] = self.mask_of(ids)
        return self._blank_after[pending]

    def ink_mask(self, start: bytes) -> torch.Tensor:
        """Tokens whose bytes but blanks start with `start`, or are a non-empty prefix of it
        (`, "` for `,"`; tokens of blanks alone are not among them)."""
        if self._ink is None:
            pairs = [(ink(b), i) for b, i in self._bytes.pairs]
            self._ink = _Prefixes([(k, i) for k, i in pairs if k])
        return self._ink.mask(start, self.n_logits)

    def in_free_text(self, matcher: llguidance.LLMatcher) -> bool:
        """Whether `matcher` is inside a string (a free-text lexeme), where nearly any printable
        character goes on: brackets and quotes of other kinds are its text there, and close
        nothing (grammars.checker.takes_free_text, asked of the one-character tokens)."""
        allowed = [byte for byte, t in self._printable if matcher.validate_tokens([t])]
        return takes_free_text(frozenset(allowed))

    def _strings(
        self, closing: list[int], eos: list[int]
    ) -> tuple[list[tuple[int, int]], dict[int | None, torch.Tensor]]:
        """The printable ASCII bytes with their one-character tokens (which of them the grammar
        allows tells whether the text is inside a string: `in_free_text`), and each quote's
        token with the closing tokens that begin with that quote, and EOS (`string_closers`);
        under None, EOS alone."""
        singles = {b: i for i, b in enumerate(self.token_bytes) if len(b) == 1}
        printable = [(c, singles[bytes([c])]) for c in PRINTABLE if bytes([c]) in singles]
        quotes: dict[int | None, torch.Tensor] = {
            singles[quote]: self.mask_of(
                [i for i in closing if self.token_bytes[i].strip()[:1] == quote] + eos
            )
            for quote in (b'"', b"'")
            if quote in singles
        }
        quotes[None] = self.mask_of(eos)
        return printable, quotes

    def string_closers(self, matcher: llguidance.LLMatcher) -> torch.Tensor:
        """Inside a string (`in_free_text`), the closing tokens that begin with the quote that
        ends it, and EOS: a bracket, or a quote of another kind, is the string's text there.
        EOS alone where no quote ends it (a CSV field's text, a comment)."""
        for quote, closers in self._quotes.items():
            if quote is None or matcher.validate_tokens([quote]) != 1:
                continue
            matcher.consume_token(quote)
            ends = not self.in_free_text(matcher)
            matcher.rollback(1)
            if ends:
                return closers
        return self._quotes[None]

    def _ordinary(self, keep: Callable[[bytes], bool]) -> list[int]:
        """The tokens, special ones aside, whose bytes `keep` takes."""
        return [i for i, b in enumerate(self.token_bytes) if keep(b) and i not in self.special]

    def mask_of(self, tokens: list[int]) -> torch.Tensor:
        """A mask of `tokens`."""
        mask = torch.zeros(self.n_logits, dtype=torch.bool)
        mask[tokens] = True
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


def either(one: torch.Tensor | None, other: torch.Tensor | None) -> torch.Tensor | None:
    """The tokens of either mask (None: none)."""
    return other if one is None else one if other is None else one | other


_MOST_KEPT = 256  # the most masks `wide_blanks` and `blank_after` keep each


class _Prefixes:
    """Tokens by a key of bytes each (sorted: those whose key starts with some bytes form one
    range), for masks of the tokens whose key starts a text or that the text starts."""

    def __init__(self, pairs: list[tuple[bytes, int]]) -> None:
        self.pairs = sorted(pairs)
        self._keys = [k for k, _ in self.pairs]
        # Several tokens may share bytes (sentencepiece 'r' and its byte fallback <0x72>).
        self._by_key: dict[bytes, list[int]] = {}
        for k, i in self.pairs:
            self._by_key.setdefault(k, []).append(i)

    def mask(self, text: bytes, size: int) -> torch.Tensor:
        """Tokens whose key starts with `text`, or is a non-empty prefix of it."""
        mask = torch.zeros(size, dtype=torch.bool)
        shorter = [i for k in range(1, len(text)) for i in self._by_key.get(text[:k], [])]
        mask[self.starting(text) + shorter] = True
        return mask

    def starting(self, text: bytes) -> list[int]:
        """Tokens whose key starts with `text`."""
        lo = bisect.bisect_left(self._keys, text)
        hi = bisect.bisect_left(self._keys, text + b"\xff" * 8)
        return [i for _, i in self.pairs[lo:hi]]


def incomplete_utf8(data: bytes | bytearray) -> bool:
    """`data` ends inside a multi-byte character."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & 0xC0 != 0x80:  # a lead byte (or ASCII): how many bytes does it need?
            need = 1 if byte < 0x80 else 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return need > back
    return False
