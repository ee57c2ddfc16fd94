"""One request's state on the target model: a token sequence, its KV cache, its grammar matcher.

Invariants (tested): the KV cache holds exactly `self.ids`, and `self.logits` are the next-token
logits after them (computed from `self.next` when asked), equal (within float tolerance) to a
fresh forward pass over `self.ids`, whatever series of moves led there. The matcher has consumed
exactly the text tokens it records. Moving to new text crops both back to the longest common
prefix of old and new token ids and feeds the rest in one forward pass.

The invariants hold under any exception, at any point (KeyboardInterrupt, MemoryError, a
cancelled correction): the sequence (ids, cache, next) is one attribute and the matcher (with
the tokens it consumed) another. Each is taken out of the session while it is changed in place and
put back whole once it is consistent again. An exception in between leaves the session without
it, and the next use rebuilds it: the sequence from the prompt (through the target's prompt
cache), the matcher from the grammar.

How tokens are chosen (healing, forced bytes, masks, the closing bias, when to stop) is the
decoding policy's, in local_target.decoding; the session keeps the state it runs on.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, NamedTuple

import llguidance
import torch

from local_target.comments import Comments, refused_openers
from local_target.correction import Correction
from local_target.decoding import Correcting, Written, unconstrained
from local_target.errors import TargetError
from local_target.head import Next
from local_target.model import TargetModel, common_prefix
from local_target.policy import DEFAULT_POLICY, DecodingPolicy, Until
from local_target.repeats import OwnText
from local_target.sampling import Sampling

if TYPE_CHECKING:
    from grammars.grammar import Grammar

logger = logging.getLogger(__name__)

_FINALISTS = 3  # texts likeliest() scores whole, out of those likeliest by their first token

# A hint is tokenized with this many characters of the text before it, so that the text's last
# tokens, as n-grams, find their place in it.
_HINT_OVERLAP = 16
_HINT_CHARS = 2000  # and at most this much of it


class _Sequence(NamedTuple):
    """Token ids, a KV cache holding exactly them, and the model's output after them."""

    ids: list[int]
    cache: Any
    next: Next


class _Timings(NamedTuple):
    """What a correction took: seconds in all, seconds in forward passes, forward passes."""

    seconds: float
    forward_seconds: float
    forward_passes: int


class _Matcher(NamedTuple):
    """A grammar's matcher and the text tokens it has consumed."""

    grammar: Grammar
    matcher: llguidance.LLMatcher
    consumed: list[int]


class TargetSession:
    """The state of one request on a LocalTarget. Not shared between requests."""

    def __init__(self, target: TargetModel, prompt_ids: list[int], cache: Any, after: Next) -> None:
        """`cache` holds exactly `prompt_ids`; `after` is the model's output after them."""
        self.target = target
        self._prompt = tuple(prompt_ids)
        self._seq: _Sequence | None = _Sequence(list(prompt_ids), cache, after)
        self._matcher: _Matcher | None = None
        self._own = OwnText()  # what the model wrote up to the last correction's end
        self.forward_passes = 0
        self.forward_seconds = 0.0

    @classmethod
    def at_prompt(cls, target: TargetModel, prompt_ids: list[int]) -> TargetSession:
        """A session holding `prompt_ids`, from the target's prompt cache where it matches."""
        cache, after = target.cache_for(list(prompt_ids))
        return cls(target, prompt_ids, cache, after)

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
        return self._sequence().next.logits().view(1, 1, -1)

    @property
    def next(self) -> Next:
        """The model's output after `ids`: the next-token logits, all or some."""
        return self._sequence().next

    def _sequence(self) -> _Sequence:
        """The sequence; rebuilt at the prompt when an interrupted change left the session none."""
        if self._seq is None:
            logger.warning("an interrupted update lost the session's KV cache: rebuilding it")
            cache, after = self.target.cache_for(list(self._prompt))
            self._seq = _Sequence(list(self._prompt), cache, after)
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

    def _grow(self, kept: list[int], cache: Any, new: list[int], rows: int = 1) -> list[Next]:
        """Feed `new` after `kept` (which `cache` holds) and put the sequence back; the model's
        output at the last `rows` positions."""
        start = time.perf_counter()
        out = self.target.forward(new, cache, rows)
        self.forward_seconds += time.perf_counter() - start
        self.forward_passes += 1
        kept.extend(new)
        self._seq = _Sequence(kept, cache, out[-1])
        return out

    def move_to(self, ids: list[int], *, cancel: threading.Event | None = None) -> None:
        """Make the sequence `ids` (which must start with the prompt): crop to the common prefix,
        feed the rest. At least the last token is always fed, to get its logits."""
        seq = self._sequence()
        if ids == seq.ids:
            return
        if tuple(ids[: self.prompt_len]) != self._prompt:
            raise TargetError("a session's prompt cannot change; start a new session")
        keep = min(common_prefix(seq.ids, ids), len(ids) - 1)
        seq = self._take(len(ids), cancel)
        cache = seq.cache
        if keep < len(seq.ids):
            if cache.is_croppable:
                cache.crop(keep - len(seq.ids))
            else:
                keep, cache = 0, self.target.new_cache()
            logger.debug(
                "KV cache rolled back: %d tokens kept, %d dropped, %d fed",
                keep,
                len(seq.ids) - keep,
                len(ids) - keep,
            )
        self._grow(ids[:keep], cache, ids[keep:])

    def append(
        self, new: list[int], *, cancel: threading.Event | None = None, rows: int = 1
    ) -> list[Next]:
        """Append `new` tokens in one forward pass; the model's output at its last `rows`
        positions (after each of its last `rows` prefixes)."""
        if not new:
            return [self.next]
        if not 1 <= rows <= len(new):
            raise ValueError(f"rows must be between 1 and {len(new)}, got {rows}")
        seq = self._take(len(self._sequence().ids) + len(new), cancel)
        return self._grow(seq.ids, seq.cache, new, rows)

    def drop(self, n: int, after: Next) -> None:
        """Remove the last `n` text tokens; `after` is the model's output after the rest (from the
        pass that appended them: one of `append`'s rows)."""
        seq = self._sequence()
        if not 0 < n <= len(seq.ids) - self.prompt_len:
            raise ValueError(f"can drop 1 to {len(seq.ids) - self.prompt_len} tokens, got {n}")
        if not seq.cache.is_croppable:
            self.move_to(seq.ids[:-n])
            return
        seq = self._take(len(seq.ids) - n, None)
        seq.cache.crop(-n)
        self._seq = _Sequence(seq.ids[:-n], seq.cache, after)

    def likeliest(self, texts: list[str]) -> int:
        """The index of the text the model finds likeliest after the prompt, among texts that
        differ only in their ends: the log-probability of each one's tokens after the tokens
        they all start with, the session's cache cropped back after. The first of those tokens
        is scored for all at once; the `_FINALISTS` likeliest by it are scored whole, one
        forward pass each (a pass costs about 0.1 s on a CPU core)."""
        vocab = self.target.vocab
        encoded = [vocab.encode(text) for text in texts]
        if len(texts) < 2 or not all(encoded):
            return 0
        shared = min(common_prefix(encoded[0], ids) for ids in encoded)
        shared = min(shared, *(len(ids) - 1 for ids in encoded))  # each scores a token at least
        self.move_to([*self._prompt, *encoded[0][:shared]])
        before = self.next
        first = torch.log_softmax(before.logits().float(), dim=-1)
        ranked = sorted(range(len(texts)), key=lambda i: -float(first[encoded[i][shared]]))
        scores: dict[int, float] = {}
        for i in ranked[:_FINALISTS]:
            new = encoded[i][shared:]
            scores[i] = float(first[new[0]])
            if len(new) > 1:  # the output after the last token is not needed
                outputs = self.append(new[:-1], rows=len(new) - 1)
                scores[i] += sum(
                    float(torch.log_softmax(out.logits().float(), dim=-1)[token])
                    for out, token in zip(outputs, new[1:], strict=True)
                )
                self.drop(len(new) - 1, before)
        logger.debug("likeliest of %d texts: scores %s", len(texts), scores)
        return max(scores, key=scores.__getitem__)

    # -- the matcher ----------------------------------------------------------------------------

    def _matcher_at(self, grammar: Grammar, text_ids: list[int]) -> llguidance.LLMatcher:
        """`grammar`'s matcher after exactly `text_ids`, taken out of the session: the caller puts
        it back (`self._matcher`) once it knows what the matcher has consumed."""
        held, self._matcher = self._matcher, None
        if held is None or held.grammar is not grammar:
            held = _Matcher(grammar, grammar.matcher(self.target.vocab.ll), [])
        matcher = held.matcher
        keep = common_prefix(held.consumed, text_ids)
        if keep < len(held.consumed):
            matcher.rollback(len(held.consumed) - keep)
        if not matcher.consume_tokens(text_ids[keep:]):
            error = matcher.get_error().split("\n", 1)[0]
            raise TargetError(f"the committed text does not match the grammar: {error}")
        return matcher

    # -- writing ----------------------------------------------------------------------------------

    def generate(
        self,
        text: str,
        *,
        max_tokens: int,
        sampling: Sampling | None = None,
        speculate: int = DEFAULT_POLICY.speculate,
    ) -> Iterator[str]:
        """Unconstrained continuation of `text`, streamed as text chunks (whole characters).
        Ends at a special token (EOS, end of turn) or after `max_tokens` tokens, or where the
        model's context ends: a draft is cut there as at its budget (the grammar checks it
        anyway), while a prompt and text that do not fit raise TargetError. Up to `speculate`
        proposed tokens are verified in each forward pass (local_target.speculation)."""
        vocab = self.target.vocab
        ids = [*self._prompt, *vocab.encode(text)]
        self.move_to(ids)
        if self.target.context_length is not None:
            max_tokens = min(max_tokens, self.target.context_length - len(ids))
        yield from unconstrained(
            self,
            vocab,
            max_tokens=max_tokens,
            sampling=sampling or Sampling(),
            speculate=speculate,
        )

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
        policy: DecodingPolicy = DEFAULT_POLICY,
        hint: str = "",
    ) -> Correction:
        """Write a grammar-valid continuation of `text` (which must be a valid prefix), choosing
        tokens as `policy` says (local_target.policy, local_target.decoding).

        The prompt, the tokens of `text` and `max_tokens` must fit the model's context together
        (else TargetError, before any forward pass); a correction goes past `max_tokens` only to
        finish a character or the healed token. Setting `cancel` (from another thread) stops the
        correction before its next forward pass with a TargetError; the session stays usable.
        `hint` is text that may follow `text` (a draft's rejected rest): speculation proposes
        from it too, which changes the number of forward passes, never the tokens chosen."""
        start = time.perf_counter()
        forward0, passes0 = self.forward_seconds, self.forward_passes
        base, backed_off = self._healed_split(text, max_tokens, heal=heal, until=until)
        vocab = self.target.vocab
        pending = vocab.decode(backed_off)
        matcher = self._matcher_at(grammar, base)
        if matcher.validate_tokens(backed_off) != len(backed_off):
            raise TargetError("the committed text does not match the grammar at its last token")
        committed = text.encode("utf-8", "surrogatepass")
        correcting = Correcting(
            vocab,
            matcher,
            pending,
            max_tokens=max_tokens,
            until=until,
            sampling=sampling or Sampling(),
            policy=policy,
            hint=vocab.encode(text[-_HINT_OVERLAP:] + hint[:_HINT_CHARS]) if hint else [],
            committed=committed,
            earlier=self._own.before(text),
            comments=Comments.of(vocab, refused_openers(grammar, policy), committed),
        )
        written = self._write(correcting, base, cancel)
        self._matcher = _Matcher(grammar, matcher, base + list(written.tokens))
        self._own.wrote(text, written.text, correcting.own)
        passes = self.forward_passes - passes0
        timings = _Timings(time.perf_counter() - start, self.forward_seconds - forward0, passes)
        return _correction(written, matcher, len(pending), timings)

    def _healed_split(
        self, text: str, max_tokens: int, *, heal: bool, until: Until
    ) -> tuple[list[int], list[int]]:
        """`text`'s tokens as those kept and the last one backed off to heal (none without
        `heal`); TargetError when they and `max_tokens` would not fit the model's context."""
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
        text_ids = self.target.vocab.encode(text)
        self.target.check_length(
            self.prompt_len + len(text_ids) + max_tokens,
            f"the prompt ({self.prompt_len} tokens) + committed text ({len(text_ids)} tokens)"
            f" + max_tokens ({max_tokens})",
        )
        backed_off = text_ids[-1:] if heal and text_ids else []
        logger.debug(
            "correction starts: %d committed tokens, %d to heal, max_tokens=%d, until=%r",
            len(text_ids),
            len(backed_off),
            max_tokens,
            until,
        )
        return text_ids[: len(text_ids) - len(backed_off)], backed_off

    def _write(
        self, correcting: Correcting, base: list[int], cancel: threading.Event | None
    ) -> Written:
        """Run `correcting` from the prompt and `base`, logging how it ended if it raised."""
        try:
            self.move_to([*self._prompt, *base], cancel=cancel)
            return correcting.write(self, cancel)
        except BaseException as exc:
            cancelled = cancel is not None and cancel.is_set()
            log = logger.debug if cancelled else logger.warning
            log(
                "correction %s after %d tokens (%s)",
                "cancelled" if cancelled else "failed",
                len(correcting.tokens),
                type(exc).__name__,
            )
            raise


def _correction(
    written: Written, matcher: llguidance.LLMatcher, healed_bytes: int, timings: _Timings
) -> Correction:
    """What `written` amounts to, with what it took."""
    correction = Correction(
        text=written.text,
        tokens=written.tokens,
        flags=written.flags,
        complete=bool(matcher.is_accepting()),
        stop_reason=written.stop_reason,
        healed_bytes=healed_bytes,
        seconds=timings.seconds,
        forward_seconds=timings.forward_seconds,
        mask_seconds=written.mask_seconds,
        forward_passes=timings.forward_passes,
        runs=written.runs,
    )
    logger.debug(
        "correction ends: %d tokens (%d forced), %d forward passes, stop %s, %.3f s",
        len(correction.tokens),
        correction.flags.count("forced"),
        correction.forward_passes,
        correction.stop_reason,
        correction.seconds,
    )
    return correction
