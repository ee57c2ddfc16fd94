"""One request's state on the target model: a token sequence, its KV cache, its grammar matcher.

Invariants (tested): the KV cache holds exactly `self.ids`, and `self.logits` are the next-token
logits after them, equal (within float tolerance) to a fresh forward pass over `self.ids`,
whatever series of moves led there. The matcher has consumed exactly the text tokens it records.
Moving to new text crops both back to the longest common prefix of old and new token ids and feeds
the rest in one forward pass.

The invariants hold under any exception, at any point (KeyboardInterrupt, MemoryError, a
cancelled correction): the sequence (ids, cache, logits) is one attribute and the matcher (with
the tokens it consumed) another. Each is taken out of the session while it is changed in place and
put back whole once it is consistent again. An exception in between leaves the session without
it, and the next use rebuilds it: the sequence from the prompt (through the target's prompt
cache), the matcher from the grammar.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

import llguidance
import torch

from local_target.errors import TargetError
from local_target.sampling import Sampling, choose

if TYPE_CHECKING:
    from grammars.grammar import Grammar
    from local_target.target import LocalTarget

# How a token was chosen: "healed" (re-chose the backed-off last committed token), "forced" (the
# only one the grammar allows, no sampling), "sampled" (the model's own choice, which the grammar
# allowed), "masked" (chosen under the full grammar mask after the model's choice was refused),
# "closing" (chosen with a bias towards closing tokens, in the last part of a completion budget).
TokenFlag = Literal["healed", "forced", "sampled", "masked", "closing"]
Until = Literal["terminal", "complete"] | int
# Why a correction stopped: "eos" (the model ended: EOS, or at a complete point a choice past the
# grammar's end), "grammar_end" (nothing may follow), "terminal" (a lexeme ended), "max_tokens".
StopReason = Literal["eos", "grammar_end", "terminal", "max_tokens"]

# Added to the logits of closing tokens (quotes, brackets, ';', EOS) near the end of a completion.
_CLOSING_BONUS = 10.0
# A correction stops at the end of a lexeme ("terminal") once a token ends in one of these or in
# whitespace: the drafter is better placed to write the next word.
_LEXEME_ENDS = frozenset(b",:;()[]{}\"'`=<>+-*/%|&!?.")


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


@dataclass(frozen=True)
class Correction:
    """What the target wrote after the committed text.

    `text` is new text only (healing may re-choose the last committed token, but the text it
    covered stays as it was). `flags[i]` says how `tokens[i]` was chosen. `complete` is True only
    when the committed text plus `text` is a full sentence of the grammar.
    """

    text: str
    tokens: tuple[int, ...]
    flags: tuple[TokenFlag, ...]
    complete: bool
    stop_reason: StopReason
    healed_bytes: int
    seconds: float
    forward_seconds: float
    mask_seconds: float
    forward_passes: int
    runs: tuple[tuple[TokenFlag, str], ...] = field(default=())
    """`text` split by how its tokens were chosen: consecutive tokens with the same flag form one
    run; a run boundary never splits a character."""


class _Sequence(NamedTuple):
    """Token ids, a KV cache holding exactly them, and the next-token logits after them."""

    ids: list[int]
    cache: Any
    logits: torch.Tensor


class _Matcher(NamedTuple):
    """A grammar's matcher and the text tokens it has consumed."""

    grammar: Grammar
    matcher: llguidance.LLMatcher
    consumed: list[int]


class TargetSession:
    """The state of one request on a LocalTarget. Not shared between requests."""

    def __init__(
        self, target: LocalTarget, prompt_ids: list[int], cache: Any, logits: torch.Tensor
    ) -> None:
        """`cache` holds exactly `prompt_ids`; `logits` are the next-token logits after them."""
        self.target = target
        self._prompt = tuple(prompt_ids)
        self._seq: _Sequence | None = _Sequence(list(prompt_ids), cache, logits)
        self._matcher: _Matcher | None = None
        self.forward_passes = 0
        self.forward_seconds = 0.0

    # -- the token sequence ---------------------------------------------------------------------

    @property
    def prompt_len(self) -> int:
        return len(self._prompt)

    @property
    def ids(self) -> list[int]:
        """The token sequence: the prompt's ids, then the text's (a copy)."""
        return list(self._sequence().ids)

    @property
    def logits(self) -> torch.Tensor:
        """The next-token logits after `ids`, [1, 1, V]."""
        return self._sequence().logits

    def _sequence(self) -> _Sequence:
        """The sequence; rebuilt at the prompt when an interrupted change left the session none."""
        if self._seq is None:
            cache, logits = self.target.cache_for(list(self._prompt))
            self._seq = _Sequence(list(self._prompt), cache, logits)
        return self._seq

    def _take(self, length: int, cancel: threading.Event | None) -> _Sequence:
        """The sequence, taken out of the session to be changed in place and then grown to `length`
        tokens. Refused (TargetError) before anything changes when `cancel` is set or `length`
        would not fit the model's context."""
        if cancel is not None and cancel.is_set():
            raise TargetError("cancelled before a forward pass; the session is unchanged")
        self.target.check_length(length, "the session's token sequence")
        seq = self._sequence()
        self._seq = None
        return seq

    def _grow(self, kept: list[int], cache: Any, new: list[int]) -> None:
        """Feed `new` after `kept` (which `cache` holds) and put the sequence back."""
        start = time.perf_counter()
        logits = self.target.forward(new, cache)
        self.forward_seconds += time.perf_counter() - start
        self.forward_passes += 1
        kept.extend(new)
        self._seq = _Sequence(kept, cache, logits)

    def move_to(self, ids: list[int], *, cancel: threading.Event | None = None) -> None:
        """Make the sequence `ids` (which must start with the prompt): crop to the common prefix,
        feed the rest. At least the last token is always fed, to get its logits."""
        seq = self._sequence()
        if ids == seq.ids:
            return
        if tuple(ids[: self.prompt_len]) != self._prompt:
            raise TargetError("a session's prompt cannot change; start a new session")
        keep = min(_common_prefix(seq.ids, ids), len(ids) - 1)
        seq = self._take(len(ids), cancel)
        cache = seq.cache
        if keep < len(seq.ids):
            if cache.is_croppable:
                cache.crop(keep - len(seq.ids))
            else:
                keep, cache = 0, self.target.new_cache()
        self._grow(ids[:keep], cache, ids[keep:])

    def feed(self, new: list[int], *, cancel: threading.Event | None = None) -> None:
        """Append `new` tokens in one forward pass."""
        if not new:
            return
        seq = self._take(len(self._sequence().ids) + len(new), cancel)
        self._grow(seq.ids, seq.cache, new)

    # -- the matcher ----------------------------------------------------------------------------

    def _matcher_at(self, grammar: Grammar, text_ids: list[int]) -> llguidance.LLMatcher:
        """`grammar`'s matcher after exactly `text_ids`, taken out of the session: the caller puts
        it back (`self._matcher`) once it knows what the matcher has consumed."""
        held, self._matcher = self._matcher, None
        if held is None or held.grammar is not grammar:
            held = _Matcher(grammar, grammar.matcher(self.target.vocab.ll), [])
        matcher = held.matcher
        keep = _common_prefix(held.consumed, text_ids)
        if keep < len(held.consumed):
            matcher.rollback(len(held.consumed) - keep)
        if not matcher.consume_tokens(text_ids[keep:]):
            error = matcher.get_error().split("\n", 1)[0]
            raise TargetError(f"the committed text does not match the grammar: {error}")
        return matcher

    # -- writing ----------------------------------------------------------------------------------

    def generate(
        self, text: str, *, max_tokens: int, sampling: Sampling | None = None
    ) -> Iterator[str]:
        """Unconstrained continuation of `text`, streamed as text chunks (whole characters).
        Ends at a special token (EOS, end of turn) or after `max_tokens` tokens, or where the
        model's context ends: a draft is cut there as at its budget (the grammar checks it
        anyway), while a prompt and text that do not fit raise TargetError."""
        sampling = sampling or Sampling()
        generator = sampling.generator()
        vocab = self.target.vocab
        ids = [*self._prompt, *vocab.encode(text)]
        self.move_to(ids)
        if self.target.context_length is not None:
            max_tokens = min(max_tokens, self.target.context_length - len(ids))
        pending = bytearray()
        for _ in range(max_tokens):
            token, _masked = choose(self.logits[0, -1], _any, _no_mask, sampling, generator)
            if token in vocab.special or token == vocab.eos:
                return
            self.feed([token])
            pending.extend(vocab.token_bytes[token])
            if not _incomplete_utf8(pending):
                yield pending.decode("utf-8", "replace")
                pending.clear()

    def correct(
        self,
        text: str,
        grammar: Grammar,
        *,
        max_tokens: int = 32,
        until: Until = "terminal",
        sampling: Sampling | None = None,
        heal: bool = True,
        cancel: threading.Event | None = None,
    ) -> Correction:
        """Write a grammar-valid continuation of `text` (which must be a valid prefix).

        The prompt, the tokens of `text` and `max_tokens` must fit the model's context together
        (else TargetError, before any forward pass); a correction goes past `max_tokens` only to
        finish a character or the healed token. Setting `cancel` (from another thread) stops the
        correction before its next forward pass with a TargetError; the session stays usable.
        """
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
        sampling = sampling or Sampling()
        generator = sampling.generator()
        start = time.perf_counter()
        forward0, passes0 = self.forward_seconds, self.forward_passes
        vocab = self.target.vocab

        text_ids = vocab.encode(text)
        self.target.check_length(
            self.prompt_len + len(text_ids) + max_tokens,
            f"the prompt ({self.prompt_len} tokens) + committed text ({len(text_ids)} tokens)"
            f" + max_tokens ({max_tokens})",
        )
        backed_off = text_ids[-1:] if heal and text_ids else []
        base = text_ids[: len(text_ids) - len(backed_off)]
        pending = vocab.decode(backed_off)
        healed_bytes = len(pending)
        matcher = self._matcher_at(grammar, base)
        if matcher.validate_tokens(backed_off) != len(backed_off):
            raise TargetError("the committed text does not match the grammar at its last token")
        self.move_to([*self._prompt, *base], cancel=cancel)

        tokens: list[int] = []
        flags: list[TokenFlag] = []
        new = bytearray()
        pieces: list[bytes] = []  # the new bytes each token added
        mask_seconds = 0.0
        stop: StopReason = "max_tokens"
        limit = until if isinstance(until, int) else max_tokens

        def accept(token: int, flag: TokenFlag) -> None:
            nonlocal pending
            piece = vocab.token_bytes[token]
            if pending:
                flag = "healed"
                if piece.startswith(pending):
                    piece, pending = piece[len(pending) :], b""
                else:
                    piece, pending = b"", pending[len(piece) :]
            new.extend(piece)
            pieces.append(piece)
            tokens.append(token)
            flags.append(flag)

        while True:
            unfinished_char = _incomplete_utf8(new)
            if len(tokens) >= min(limit, max_tokens) and not pending and not unfinished_char:
                break
            if matcher.is_stopped():
                stop = "grammar_end"
                break
            if not pending:
                forced = matcher.compute_ff_tokens()
                if forced:
                    forced = forced[: max(1, max_tokens - len(tokens))]
                    matcher.consume_tokens(forced)
                    for token in forced:
                        accept(token, "forced")
                    self.feed(forced, cancel=cancel)
                    if _ends_lexeme(new, until) and not _incomplete_utf8(new):
                        stop = "terminal"
                        break
                    continue
            logits = self.logits[0, -1]
            left = max_tokens - len(tokens)
            closing = until == "complete" and left <= _closing_window(max_tokens)
            if closing:  # the budget is nearly spent: prefer closing over rambling on
                logits = logits.float().cpu() + _CLOSING_BONUS * vocab.closers
            mask_start = time.perf_counter()
            token, masked = choose(
                logits,
                lambda t: (
                    _allowed(vocab.token_bytes[t], pending, t == vocab.eos)
                    and matcher.validate_tokens([t]) == 1
                ),
                lambda: _full_mask(vocab, matcher, pending),
                sampling,
                generator,
            )
            mask_seconds += time.perf_counter() - mask_start
            # At a complete point, a choice the grammar refuses means the model is past the end
            # (a closing fence, a remark): end here rather than pad with what the mask leaves.
            ended = masked and not pending and matcher.is_accepting()
            if token == vocab.eos or ended:
                stop = "eos"
                break
            if not matcher.consume_token(token):
                raise TargetError(f"the grammar refused token {token} it had allowed")
            accept(token, "closing" if closing else "masked" if masked else "sampled")
            self.feed([token], cancel=cancel)
            if not pending and _ends_lexeme(new, until) and not _incomplete_utf8(new):
                stop = "terminal"
                break

        self._matcher = _Matcher(grammar, matcher, base + tokens)
        return Correction(
            text=bytes(new).decode("utf-8"),
            tokens=tuple(tokens),
            flags=tuple(flags),
            complete=bool(matcher.is_accepting()),
            stop_reason=stop,
            healed_bytes=healed_bytes,
            seconds=time.perf_counter() - start,
            forward_seconds=self.forward_seconds - forward0,
            mask_seconds=mask_seconds,
            forward_passes=self.forward_passes - passes0,
            runs=_runs(flags, pieces),
        )


def _runs(flags: list[TokenFlag], pieces: list[bytes]) -> tuple[tuple[TokenFlag, str], ...]:
    runs: list[tuple[TokenFlag, bytearray]] = []
    for flag, piece in zip(flags, pieces, strict=True):
        if runs and (runs[-1][0] == flag or _incomplete_utf8(runs[-1][1])):
            runs[-1][1].extend(piece)
        else:
            runs.append((flag, bytearray(piece)))
    return tuple((flag, data.decode("utf-8")) for flag, data in runs if data)


def _closing_window(max_tokens: int) -> int:
    """How many tokens before the end of a completion budget the closing bias starts."""
    return min(32, max(4, max_tokens // 4))


def _any(_token: int) -> bool:
    return True


def _no_mask() -> torch.Tensor:
    raise AssertionError("unconstrained generation never asks for a mask")


def _allowed(piece: bytes, pending: bytes, is_eos: bool) -> bool:
    """Token healing: while `pending` bytes are owed, a token must cover them or be a prefix."""
    if not pending:
        return True
    if is_eos or not piece:
        return False
    return piece.startswith(pending) or pending.startswith(piece)


def _full_mask(vocab: Any, matcher: llguidance.LLMatcher, pending: bytes) -> torch.Tensor:
    """The tokens allowed next. While healing, the candidates that cover `pending` are checked one
    by one with `validate_tokens`, the same test as the opportunistic path: in a state where the
    grammar forces bytes, `compute_bitmask` allows only the canonical token of those bytes."""
    if not pending:
        mask: torch.Tensor = vocab.grammar_mask(matcher)
        return mask
    candidates = vocab.healing_mask(pending).nonzero().flatten().tolist()
    mask = torch.zeros(vocab.n_logits, dtype=torch.bool)
    mask[[t for t in candidates if matcher.validate_tokens([t]) == 1]] = True
    return mask


def _incomplete_utf8(data: bytearray) -> bool:
    """`data` ends inside a multi-byte character."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & 0xC0 != 0x80:  # a lead byte (or ASCII): how many bytes does it need?
            need = 1 if byte < 0x80 else 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return need > back
    return False


def _ends_lexeme(new: bytearray, until: Until) -> bool:
    """`new` ends a lexeme and has written something besides blanks."""
    if until != "terminal" or not new.strip():
        return False
    last = new[-1]
    return last in _LEXEME_ENDS or last in b" \t\r\n"
