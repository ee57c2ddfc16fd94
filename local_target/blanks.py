"""Which tokens of blanks a correction may not write next.

A grammar with free whitespace (JSON) lets a small model pad on with blanks where it has nothing
to say: to its whole budget (seen: SmolLM2 finishing a recipe object, 512 tokens of line ends and
spaces), in one wide token (59 spaces after `"severity":`), or between a refusal and the next
(`"email" : \\n             \\n         \\n        false`, a string refused where a schema takes a
boolean). The limits are DecodingPolicy's `max_blank_run`, `blank_depth` and `refusal_blanks`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from local_target.repeats import BLANKS, deepest_indent, line_gap, padding

if TYPE_CHECKING:
    import torch

    from local_target.policy import DecodingPolicy
    from local_target.vocab import Vocabulary


class BlankLimits:
    """The blank limits of one correction, after the committed text `committed`."""

    def __init__(self, vocab: Vocabulary, policy: DecodingPolicy, committed: bytes) -> None:
        self.vocab = vocab
        self.policy = policy
        # The committed text's blanks at its end, and its deepest indentation.
        self._blanks = committed[len(committed.rstrip()) :]
        self._deepest = deepest_indent(committed)

    def refused(self, new: bytes | bytearray, pending: bytes) -> torch.Tensor | None:
        """Tokens of blanks not to choose after the `new` text (`pending`: the healed token's
        bytes still owed; None: none): all of them where the text ends in padding, a run of
        `max_blank_run` blank bytes in the new text, or blanks past the text's own indentation
        (the committed text's end and the new text: `repeats.padding`); else those that would
        take the line's gap past that at once (seen: SmolLM2 wrote one token of 59 spaces after
        `"severity":`). A healed token of blanks (the committed text's last) is measured from
        the text before them, and may keep them as wide as the draft had them."""
        vocab = self.vocab
        run = bytes(new[len(new.rstrip()) :])
        if len(run) >= self.policy.max_blank_run:
            return vocab.blanks
        past = self.policy.blank_depth
        if past is None:
            return None
        deepest = max(self._deepest, deepest_indent(new))
        blanks = self._blanks + run if len(run) == len(new) else run  # the committed text's too
        if pending and not pending.strip():
            # Healing blanks: the token writes them again, after the text before them; it may
            # widen their line's gap up to the bound, or as wide as the draft had it.
            before = blanks[: len(blanks) - len(pending)]
            return vocab.wide_blanks(line_gap(before), max(deepest + past, line_gap(blanks)))
        if (run or not new) and padding(blanks, deepest, past):
            return vocab.blanks
        return vocab.wide_blanks(line_gap(blanks), deepest + past)

    def after_refusal(self, new: bytes | bytearray, pending: bytes) -> torch.Tensor | None:
        """Tokens not to choose where the grammar refused the model's own choice: those that
        write a blank first, where the text ends in one already (`DecodingPolicy.refusal_blanks`).
        Healing, what a token writes first past the committed text counts: ` "` after `": `
        stays (a blank written again, then a quote: the tokens a text has, not ` ` and `"`)."""
        if self.policy.refusal_blanks:
            return None
        end = new[-1:] if new else self._blanks[-1:]  # healing: the committed text's
        if not end or end not in BLANKS:
            return None
        return self.vocab.blank_after(pending)
