"""A correction decided one token at a time, for an engine that asks for each token in turn.

`Correcting` (local_target.decoding) runs its own loop over a TokenSequence. An engine such as
vLLM runs the loop itself and calls back once per position with its logits; `Steps` makes the
same decisions in the same order there, with Correcting's own choice and bookkeeping: token
healing, bytes the grammar forces (a batch from `compute_ff_tokens`, one token per call), the
model's choice checked first and the full mask only where it is refused, the closing bias, and
the stop rules (`StopReason`). What the engine does at a stop is its own: vLLM's logits processor
leaves only EOS.

`replay` walks tokens an engine wrote through the same decisions: the client learns how each was
chosen and why the correction stopped without the engine telling it. A token the model chose is
flagged "sampled" there: whether its first choice was refused is known only beside the logits.

Imports only torch, llguidance and local_target's own modules, so it loads inside vLLM's
environment as well as ours.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from local_target.decoding import Correcting, Written, healing_allows
from local_target.errors import TargetError
from local_target.head import Pass

if TYPE_CHECKING:
    import torch

    from local_target.decoding import StopReason

CHOOSE = -1  # plan(): the next token is the model's choice, not a forced one


class Steps(Correcting):
    """One correction's decisions, made one token at a time (the arguments are Correcting's)."""

    stopped: StopReason | None = None  # why the correction stopped, once it has
    _forced: tuple[int, ...] = ()  # the rest of a forced batch, consumed by the matcher already
    _ended = False  # a lexeme ended: stop once the forced batch is out

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.healed_bytes = len(self.pending)  # the healed token's bytes, owed at the start

    def next_token(self, logits: torch.Tensor) -> int | None:
        """The next token, chosen from `logits` (the model's output at this position, [V])
        where the grammar leaves a choice; None once the correction has stopped."""
        token = self.plan()
        if token != CHOOSE:
            return token
        token, masked = self.choice(logits)
        if token is None:
            self.stopped = "eos"
            return None
        self.take(token, masked)
        return token

    def choice(self, logits: torch.Tensor) -> tuple[int | None, bool]:
        """(token, masked): the model's choice from `logits` where `plan()` said CHOOSE, None
        where the model ends here; nothing changes until `take(token, masked)`. (Greedy: the
        same for the same logits. Sampling draws from the generator each time.)"""
        (after,) = Pass.of_logits(logits.view(1, -1)).rows()
        token, masked = self._choose(after, self._closing())
        # At a complete point, a choice the grammar refuses means the model is past the end.
        if token == self.vocab.eos or (masked and not self.pending and self.matcher.is_accepting()):
            return None, masked
        return token, masked

    def take(self, token: int, masked: bool) -> None:
        """Write `token`, chosen where `plan()` said CHOOSE."""
        if not self.matcher.consume_token(token):
            raise TargetError(f"the grammar refused token {token} it had allowed")
        self._accept(token, "closing" if self._closing() else "masked" if masked else "sampled")
        self._ended = self._lexeme_ended()

    def replay(self, tokens: list[int]) -> None:
        """Walk `tokens`, written by an engine under these decisions, through them: tokens,
        flags, text and matcher as if chosen here. TargetError at a token the decisions do not
        allow."""
        for token in tokens:
            planned = self.plan()
            if planned is None:
                raise TargetError(f"token {token} after the correction stopped ({self.stopped})")
            if planned != CHOOSE:
                if token != planned:
                    raise TargetError(f"token {token} where the grammar forces {planned}")
                continue
            piece = self.vocab.token_bytes[token]
            allowed = healing_allows(piece, self.pending, token == self.vocab.eos)
            if not allowed or self.matcher.validate_tokens([token]) != 1:
                raise TargetError(f"token {token} is one the grammar or token healing refuses")
            self.take(token, masked=False)

    def stop_reason(self) -> StopReason:
        """Why the correction stopped after the tokens replayed: as the decisions say, or "eos"
        where they would go on (the engine's model ended)."""
        if self._forced or self.plan() is not None:
            self.stopped = "eos"
        assert self.stopped is not None  # plan() sets it where it returns None
        return self.stopped

    def written(self) -> Written:
        """What the replayed tokens wrote, and why the correction stopped after them."""
        return self._written(self.stop_reason())

    def plan(self) -> int | None:
        """The next forced token; CHOOSE where the model chooses (`choice`, then `take`); None
        where the correction stops (`stopped` says why). The checks and their order are
        Correcting's loop's. Asked again before `take`, it says CHOOSE again."""
        if self.stopped is not None:
            return None
        if self._forced:
            token, self._forced = self._forced[0], self._forced[1:]
            return token
        if self._ended:
            self.stopped = "terminal"
        elif self._spent():
            self.stopped = "max_tokens"
        elif self.matcher.is_stopped():
            self.stopped = "grammar_end"
        if self.stopped is not None:
            return None
        if self.pending:
            return CHOOSE
        forced = self.matcher.compute_ff_tokens()
        if not forced:
            return CHOOSE
        forced = forced[: max(1, self.max_tokens - len(self.tokens))]
        self.matcher.consume_tokens(forced)
        for token in forced:
            self._accept(token, "forced")
        self._ended = self._lexeme_ended()
        self._forced = tuple(forced[1:])
        return int(forced[0])
