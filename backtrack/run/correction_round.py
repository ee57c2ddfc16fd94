"""One correction round of a guided run (backtrack.run.loop): the local target continues the
committed text, up to its next terminal or, once the run's budget is spent, to a complete text;
what it wrote is committed, then what of the last cut draft's rest fits after it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from backtrack.trace.record import Origin, Round, RoundKind
from local_target.errors import TargetError
from providers.errors import redact

if TYPE_CHECKING:
    from backtrack.run.hand_back import HandBack
    from backtrack.run.options import GuideOptions
    from backtrack.run.output import Output
    from grammars import Checker
    from grammars.grammar import Grammar
    from local_target import Correction
    from local_target.policy import Until

logger = logging.getLogger(__name__)

_TOKEN_ORIGIN: dict[str, Origin] = {
    "healed": "healed",
    "forced": "forced",
    "sampled": "correction",
    "masked": "correction",
    "closing": "correction",
}


@dataclass(frozen=True)
class TargetCall:
    """What the local target is asked: continue `text` until `until`, in at most `max_tokens`."""

    text: str
    until: Until
    max_tokens: int
    grammar: Grammar
    hint: str = ""  # what the API wrote after the cut: proposals the target verifies, if it agrees


class CorrectionRound:
    """The correction round under way, the output's round: a completion when it
    completes the text (`until` "complete", the run's budget is spent; "close", finishing what an
    ended reply left), else a correction up to the next terminal, after which the last cut
    draft's rest (`hand_back`, shared with the loop) is reused."""

    def __init__(
        self,
        output: Output,
        hand_back: HandBack,
        until: Until,
        most: int | None = None,
    ) -> None:
        self.output = output
        self.hand_back = hand_back
        self.until = until
        self.most = most  # tokens, less than the options' budget for the round, where given
        self.index = output.round

    @property
    def completes(self) -> bool:
        """Whether the round completes the text (a completion), not up to the next terminal."""
        return self.until != "terminal"

    @property
    def kind(self) -> RoundKind:
        return "completion" if self.completes else "correction"

    def call(self, grammar: Grammar, options: GuideOptions) -> TargetCall:
        budget = options.completion_tokens if self.completes else options.correction_tokens
        budget = budget if self.most is None else min(budget, self.most)
        return TargetCall(self.output.text, self.until, budget, grammar, self.hand_back.rest)

    def apply(self, correction: Correction, min_reuse_chars: int) -> tuple[Round, str]:
        """Commit the target's correction: up to where the draft's rest goes on after it (all of
        it when the target completes), then what of that rest fits, at least `min_reuse_chars`
        of it, its slip skipped (`hand_back.HandBack`). The round's record, and the rest
        reused."""
        self._check(correction)
        if self.completes:
            keep = _without_final_blanks(self.output.checker, correction.text)
        else:
            keep = self.hand_back.kept(self.output.checker, correction.text)
        self._commit(correction, keep)
        kept = correction.text[:keep]
        blanks = keep - len(kept.rstrip())  # the correction's, at its end
        wrote = bool(kept.strip())
        reused, skipped = self.hand_back.reuse(self.output, min_reuse_chars, blanks, wrote)
        logger.debug(
            "%s round %d: %d characters in %d local tokens (%s), %d characters of the draft reused",
            self.kind,
            self.index,
            len(correction.text),
            len(correction.tokens),
            correction.stop_reason,
            len(reused),
        )
        record = Round(
            index=self.index,
            kind=self.kind,
            ended="target_stopped",
            seconds=correction.seconds,
            accepted_chars=len(reused),
            local_tokens=len(correction.tokens),
            target_stop=correction.stop_reason,
            repairs=(skipped,) if skipped else (),
        )
        return record, reused

    def failed(self, error: TargetError) -> Round:
        """The record of a round whose target failed for good."""
        return Round(
            index=self.index, kind=self.kind, ended="error", seconds=0.0, error=redact(str(error))
        )

    def _check(self, correction: Correction) -> None:
        """The correction must fit the committed text (the draft's cut is cleared first)."""
        checker = self.output.checker
        start = checker.chars
        checker.rollback(start)  # clears the draft's cut; nothing is removed
        taken = checker.fits(correction.text)
        if taken != len(correction.text):
            raise TargetError(
                f"the target wrote text the grammar refuses at character {start + taken}"
            )

    def _commit(self, correction: Correction, keep: int) -> None:
        """Commit the correction's first `keep` characters, each token's in its origin's span."""
        self.output.checker.feed(correction.text[:keep])
        at = 0
        for flag, piece in correction.runs:
            self.output.add(piece[: max(0, keep - at)], _TOKEN_ORIGIN[flag])
            at += len(piece)


def _without_final_blanks(checker: Checker, written: str) -> int:
    """How much of a completion to keep: all but the blanks it ended with, where the text is
    complete without them (the local model's line end after a JSON document is not the API's)."""
    stripped = written.rstrip()
    if stripped == written:
        return len(written)
    start = checker.chars
    checker.feed(stripped)
    complete = checker.complete
    checker.rollback(start)
    return len(stripped) if complete else len(written)
