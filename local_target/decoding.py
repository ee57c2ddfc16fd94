"""The decoding policy: how the target chooses its tokens and when it stops.

A correction writes after the committed text under the grammar's matcher, step by step:
- token healing (DESIGN 4): the last committed token is backed off, and the first tokens must
  cover its bytes or be a prefix of them, so a token bridging the old boundary stays reachable;
- forced bytes (DESIGN 8): where the grammar allows one continuation, its tokens are appended
  without sampling, fed in the same forward pass as the token chosen before them;
- speculation (local_target.speculation): each pass also feeds proposed tokens, and the choices
  that equal them cost no further pass (the tokens chosen are the same);
- opportunistic masks (DESIGN 8, local_target.sampling): the model's own choice is checked
  first, the full mask computed only when the grammar refuses it;
- the closing bias: in the last part of a completion budget (`until="complete"`), and past its
  first `closing_after` tokens, or from its first token (`until="close"`), closing tokens
  (quotes, brackets, ';', EOS) get a bonus, so the text ends rather than rambles on;
- the stop rules: EOS, or at a complete point a choice the grammar refuses ("eos"); nothing may
  follow ("grammar_end"); a lexeme ended ("terminal"); the budget spent, or text that has
  stopped being new (`DecodingPolicy.min_novelty`; copies of a long block,
  `DecodingPolicy.max_repeats`) ("max_tokens"), but never inside a character
  or the healed token.

The numbers behind these choices are a DecodingPolicy's fields. This module only decides: the
session it writes in (a `TokenSequence`) keeps the token sequence, the KV cache and the logits
in step, and the matcher it is given has consumed exactly the text before the healed token.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from functools import partial
from typing import TYPE_CHECKING, Literal, NamedTuple

import llguidance
import torch

from local_target.blanks import BlankLimits
from local_target.errors import TargetError
from local_target.head import Next
from local_target.policy import DecodingPolicy, Until
from local_target.repeats import (
    bare_lines,
    digit_run,
    long_loop,
    looping,
    repeated_block,
    repeated_shape,
)
from local_target.sampling import Sampling, choose
from local_target.speculation import Cursor, TokenSequence
from local_target.vocab import Vocabulary, either, incomplete_utf8

if TYPE_CHECKING:
    from local_target.comments import Comments

TokenFlag = Literal["healed", "forced", "sampled", "masked", "closing"]
"""How a token was chosen: "healed" (re-chose the backed-off last committed token), "forced" (the
only one the grammar allows, no sampling), "sampled" (the model's own choice, which the grammar
allowed), "masked" (chosen under the full grammar mask after the model's choice was refused),
"closing" (chosen with a bias towards closing tokens, in the last part of a completion budget)."""
StopReason = Literal["eos", "grammar_end", "terminal", "max_tokens"]
"""Why a correction stopped: "eos" (the model ended: EOS, or at a complete point a choice past the
grammar's end), "grammar_end" (nothing may follow), "terminal" (a lexeme ended), "max_tokens"."""


class Written(NamedTuple):
    """What a correction wrote: `text` is new text only (a healed token's re-chosen bytes that
    the committed text already had are not in it); `flags[i]` says how `tokens[i]` was chosen;
    `runs` is `text` split by flag, never inside a character."""

    text: str
    tokens: tuple[int, ...]
    flags: tuple[TokenFlag, ...]
    runs: tuple[tuple[TokenFlag, str], ...]
    stop_reason: StopReason
    mask_seconds: float


class Correcting:
    """One correction being written: the tokens chosen so far, how, and the bytes they added.

    `matcher` has consumed the committed text's tokens up to the healed one, whose bytes are
    `pending`; it consumes each token as it is chosen.
    """

    def __init__(
        self,
        vocab: Vocabulary,
        matcher: llguidance.LLMatcher,
        pending: bytes,
        *,
        max_tokens: int,
        until: Until,
        sampling: Sampling,
        policy: DecodingPolicy,
        hint: list[int] | None = None,
        committed: bytes = b"",
        earlier: bytes = b"",
        comments: Comments | None = None,
    ) -> None:
        self.vocab = vocab
        self.matcher = matcher
        self.pending = pending
        self.max_tokens = max_tokens
        self.until = until
        self.sampling = sampling
        self.policy = policy
        self.hint = hint or []  # tokens that may come next, for proposals (speculation)
        self.tokens: list[int] = []
        self.flags: list[TokenFlag] = []
        self.pieces: list[bytes] = []  # the new bytes each token added
        self.new = bytearray()
        self._blanks = BlankLimits(vocab, policy, committed)
        # What the model wrote just before, in the corrections that led to the committed text's
        # end: a lexeme written over several rounds is one text to the loop guards (`_refused`).
        self._earlier = earlier
        self._comments = comments  # the openers of the grammar's comments, refused (None: none)
        self.mask_seconds = 0.0
        self._generator = sampling.generator()
        self._limit = min(until if isinstance(until, int) else max_tokens, max_tokens)

    def write(self, seq: TokenSequence, cancel: threading.Event | None = None) -> Written:
        """Choose tokens, feeding each to `seq`, until a stop rule says to stop."""
        return self._written(self._run(seq, cancel))

    def _written(self, stop: StopReason) -> Written:
        return Written(
            text=bytes(self.new).decode("utf-8"),
            tokens=tuple(self.tokens),
            flags=tuple(self.flags),
            runs=_runs(self.flags, self.pieces),
            stop_reason=stop,
            mask_seconds=self.mask_seconds,
        )

    def _run(self, seq: TokenSequence, cancel: threading.Event | None) -> StopReason:
        cursor = Cursor(seq, cancel, self.hint)
        stop = self._choose_all(cursor)
        cursor.settle()
        return stop

    def _choose_all(self, cursor: Cursor) -> StopReason:
        matcher = self.matcher
        while True:
            if self._spent():
                return "max_tokens"
            if matcher.is_stopped():
                return "grammar_end"
            if not self.pending:
                forced = matcher.compute_ff_tokens()
                if forced:
                    forced = forced[: max(1, self.max_tokens - len(self.tokens))]
                    matcher.consume_tokens(forced)
                    for token in forced:
                        self._accept(token, "forced")
                    cursor.advance(forced)
                    if self._lexeme_ended():
                        return "terminal"
                    continue
            closing = self._closing()
            # Proposals once healing is done, and not past the budget (nor the context it fits).
            room = self._limit - len(self.tokens) - 1
            after = cursor.next(0 if self.pending else min(self.policy.speculate, room))
            token, masked = self._choose(after, closing)
            # At a complete point, a choice the grammar refuses means the model is past the end
            # (a closing fence, a remark): end here rather than pad with what the mask leaves.
            if token == self.vocab.eos or (masked and not self.pending and matcher.is_accepting()):
                return "eos"
            if not matcher.consume_token(token):
                raise TargetError(f"the grammar refused token {token} it had allowed")
            self._accept(token, "closing" if closing else "masked" if masked else "sampled")
            cursor.advance([token])
            if self._lexeme_ended():
                return "terminal"

    def _closing(self) -> bool:
        left = self.max_tokens - len(self.tokens)
        window = self.policy.closing_window(self.max_tokens)
        return self.until == "close" or (self.until == "complete" and left <= window)

    def _choose(self, after: Next, closing: bool) -> tuple[int, bool]:
        """(token, masked): the model's own choice where the grammar allows it; else, or where
        only the allowed rows' logits are computed (`_selective`), a choice under the mask."""
        vocab, matcher, pending = self.vocab, self.matcher, self.pending
        refused = self._refused()
        if self._selective(after):
            start = time.perf_counter()
            mask = _without(full_mask(vocab, matcher, pending), refused)
            self.mask_seconds += time.perf_counter() - start
            if int(mask.sum()) <= self.policy.selective_share * vocab.n_logits:
                allowed = mask.nonzero().flatten()
                logits = self._biased(after.logits_for(allowed), closing, allowed)
                index, _ = choose(logits, _any, partial(_everything, len(allowed)), *self._draw)
                return int(allowed[index]), True
            logits = self._biased(after.logits(), closing)
            return choose(logits, lambda t: bool(mask[t]), lambda: self._refusal(mask), *self._draw)
        logits = self._biased(after.logits(), closing)
        start = time.perf_counter()
        chosen = choose(
            logits,
            lambda t: (
                healing_allows(vocab.token_bytes[t], pending, t == vocab.eos)
                and (refused is None or not refused[t])
                and matcher.validate_tokens([t]) == 1
            ),
            lambda: self._refusal(_without(full_mask(vocab, matcher, pending), refused)),
            *self._draw,
        )
        self.mask_seconds += time.perf_counter() - start
        return chosen

    def _refusal(self, mask: torch.Tensor) -> torch.Tensor:
        """What may answer the grammar's refusal of the model's own choice: `mask`, less what
        the blank limits refuse after a refusal (`BlankLimits.after_refusal`)."""
        return _without(mask, self._blanks.after_refusal(self.new, self.pending))

    @property
    def _draw(self) -> tuple[Sampling, torch.Generator | None]:
        return self.sampling, self._generator

    def _biased(
        self, logits: torch.Tensor, closing: bool, rows: torch.Tensor | None = None
    ) -> torch.Tensor:
        """In the closing window, closing tokens get a bonus: the text ends rather than rambles
        on. Inside a string only those that begin with the quote that ends it: a bracket there
        is the string's text (a bonus for it had a small model write `}}}}` in a string to its
        whole budget). `rows`: the tokens `logits` are for (all when None)."""
        if not closing:
            return logits
        vocab, matcher = self.vocab, self.matcher
        inside = not self.pending and vocab.in_free_text(matcher)
        closers = vocab.string_closers(matcher) if inside else vocab.closers
        closers = closers if rows is None else closers[rows]
        return logits.float().cpu() + self.policy.closing_bonus * closers

    def _selective(self, after: Next) -> bool:
        """Compute the mask first and then only the allowed rows' logits: for a large vocabulary,
        before the logits exist, and where no stop rule needs to know whether the grammar
        refuses the model's own choice (at a complete point it means the text has ended)."""
        return (
            after.split
            and self.vocab.n_logits >= self.policy.selective_vocab
            and bool(self.pending or not self.matcher.is_accepting())
        )

    def _accept(self, token: int, flag: TokenFlag) -> None:
        piece = self.vocab.token_bytes[token]
        if self.pending:
            flag = "healed"
            if piece.startswith(self.pending):
                piece, self.pending = piece[len(self.pending) :], b""
            else:
                piece, self.pending = b"", self.pending[len(piece) :]
        self.new.extend(piece)
        self.pieces.append(piece)
        self.tokens.append(token)
        self.flags.append(flag)

    def _refused(self) -> torch.Tensor | None:
        """Tokens not to choose (None: none): blanks past max_blank_run (or wider than the
        text's indentation allows), a comment's opener, a digit past max_digit_run, a loop's
        next copy, or the next of lines of marks alone (`bare_lines`)."""
        refused = self._blanks.refused(self.new, self.pending)
        if self._comments is not None and not self.pending:  # healing: the committed text's
            refused = either(refused, self._comments.refused(self.matcher, self.new))
        own = self.own
        if digit_run(own, self.policy.max_digit_run):
            refused = either(refused, self.vocab.digits)
        if (block := repeated_block(own, self.policy.max_repeats)) is not None:
            return either(refused, self.vocab.healing_mask(block))  # its starts, and past it
        if (start := repeated_shape(own, self.policy.max_repeats)) is not None:
            return either(refused, self.vocab.ink_mask(start))  # the same, blanks left out
        for byte in bare_lines(own, self.policy.max_repeats) or b"":
            # An empty comment written again and again: not one more.
            refused = either(refused, self.vocab.ink_mask(bytes([byte])))
        return refused

    @property
    def own(self) -> bytes:
        """What the model wrote: in the corrections before that led to the committed text's end
        (`earlier`), then in this one."""
        return self._earlier + self.new

    def _spent(self) -> bool:
        """The budget is spent, or what the model writes has stopped being new (`looping`, or
        `long_loop`: whole lines again), and no character or healed token is left half-written."""
        if self.pending or self._mid_char():
            return False
        if len(self.tokens) >= self._limit:
            return True
        own = self.own
        return looping(own, self.policy.min_novelty) or long_loop(own, self.policy.max_repeats)

    def _mid_char(self) -> bool:
        return incomplete_utf8(self.new)

    def _lexeme_ended(self) -> bool:
        return (
            not self.pending
            and self.policy.ends_lexeme(self.new, self.until)
            and not self._mid_char()
        )


def unconstrained(
    seq: TokenSequence,
    vocab: Vocabulary,
    *,
    max_tokens: int,
    sampling: Sampling,
    speculate: int = 0,
) -> Iterator[str]:
    """Unconstrained continuation of `seq`, streamed as text chunks (whole characters); ends at a
    special token (EOS, end of turn) or after `max_tokens` tokens. Up to `speculate` proposed
    tokens are verified in each forward pass (local_target.speculation)."""
    generator = sampling.generator()
    everything = partial(_everything, vocab.n_logits)  # sampling with top_p < 1 asks for it
    cursor = Cursor(seq)
    pending = bytearray()
    try:
        for written in range(max_tokens):
            after = cursor.next(min(speculate, max_tokens - written - 1))
            token, _masked = choose(after.logits(), _any, everything, sampling, generator)
            if token in vocab.special or token == vocab.eos:
                return
            cursor.advance([token])
            pending.extend(vocab.token_bytes[token])
            if not incomplete_utf8(pending):
                yield pending.decode("utf-8", "replace")
                pending.clear()
    finally:  # the session keeps the tokens fed so far: the next draft moves it where it needs
        cursor.settle(append=False)


def healing_allows(piece: bytes, pending: bytes, is_eos: bool) -> bool:
    """Token healing: while `pending` bytes are owed, a token must cover them or be a prefix."""
    if not pending:
        return True
    if is_eos or not piece:
        return False
    return piece.startswith(pending) or pending.startswith(piece)


def _without(mask: torch.Tensor, refused: torch.Tensor | None) -> torch.Tensor:
    """`mask` less the `refused` tokens, where that leaves any."""
    if refused is None:
        return mask
    kept = mask & ~refused
    return kept if bool(kept.any()) else mask


def full_mask(vocab: Vocabulary, matcher: llguidance.LLMatcher, pending: bytes) -> torch.Tensor:
    """The tokens allowed next. While healing, the candidates that cover `pending` are checked one
    by one with `validate_tokens`, the same test as the opportunistic path: in a state where the
    grammar forces bytes, `compute_bitmask` allows only the canonical token of those bytes."""
    if not pending:
        return vocab.grammar_mask(matcher)
    candidates = vocab.healing_mask(pending).nonzero().flatten().tolist()
    mask = torch.zeros(vocab.n_logits, dtype=torch.bool)
    mask[[t for t in candidates if matcher.validate_tokens([t]) == 1]] = True
    return mask


def _runs(flags: list[TokenFlag], pieces: list[bytes]) -> tuple[tuple[TokenFlag, str], ...]:
    runs: list[tuple[TokenFlag, bytearray]] = []
    for flag, piece in zip(flags, pieces, strict=True):
        if runs and (runs[-1][0] == flag or incomplete_utf8(runs[-1][1])):
            runs[-1][1].extend(piece)
        else:
            runs.append((flag, bytearray(piece)))
    return tuple((flag, data.decode("utf-8")) for flag, data in runs if data)


def _any(_token: int) -> bool:
    return True


def _everything(n: int) -> torch.Tensor:
    return torch.ones(n, dtype=torch.bool)
