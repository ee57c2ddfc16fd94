"""The draft's rest after a cut, handed back to after the target's correction.

The correction is cut where the rest goes on after it (`HandBack.kept`), and the rest is reused
up to its next slip (`HandBack.reuse`). Where the rest's first characters are the slip the
correction replaced (`3` where the correction wrote an enum's `"high"`), they are skipped, as
a repair skips them, and the rest after them is reused: the API is not asked again to write
what it already wrote.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from backtrack.repair.candidates import Edit, skips
from backtrack.run.output import REPAIR_LIMITS
from backtrack.run.trailing import BLANKS_OR_END, CLOSERS

if TYPE_CHECKING:
    from backtrack.run.output import Output
    from backtrack.trace.record import Repair
    from grammars import Checker

# A correction is cut where this much of the draft's rest fits after it (`HandBack.kept`).
_HAND_BACK_PROBE = 64


@dataclass
class HandBack:
    """The last cut draft's rest after its cut, which the target's correction hands back to."""

    rest: str = ""
    # The drafter's reply was read to its end: the rest is all of it (the drafter had finished).
    reply_ended: bool = False
    # The rest is the run's own text after a key a JSON schema's settling inserted: the target
    # writes the key's value, and the rest is reused after it (a completion would write it anew).
    settled: bool = False
    # The rest was kept once for a correction that stopped inside a word (`_mid_word`).
    waited: bool = False

    @classmethod
    def after_settling(cls, rest: str | None) -> HandBack:
        """What a JSON schema's settling cut hands back: the text after the cut (None: none)."""
        return cls(rest or "", reply_ended=rest is not None, settled=bool(rest))

    def settling(self) -> bool:
        """Whether the next correction is the value of a key the settling inserted."""
        return self.settled and bool(self.rest)

    def api_finished(self) -> bool:
        """The drafter's reply ended after its slip with nothing but closing what it had open
        (`\\n}`, a required key left out before it; `42"\\n}`, the slip the correction replaced
        skipped as a repair skips it): should the correction not reach that, the API has said
        all it means to (asked again, a weak model restarts its answer: `"occupation": {"name":
        ...`), and the target finishes the text. A reply whose rest holds content (`True, "n":
        None}`) or stopped mid-way (`"b": 2, `) is the API's to go on."""
        rest = self.rest
        return self.reply_ended and any(_only_closers(rest[skip:]) for skip in _slips(rest, True))

    def kept(self, checker: Checker, written: str) -> int:
        """How much of the target's `written` text to keep: all of it where the rest goes on
        after it (as far as a repair needs to resynchronise) or there is no rest, else the
        longest start after which it does (` 4,` is cut to ` 4` where the rest goes on with
        `], "b"`), or after the quoted value the rest opens with, which the correction replaced
        (`4000,` is cut to `4000` where the rest is `"Minimum Salary",\n  "salary_max"`): the
        draft takes over there."""
        probe = self.rest[:_HAND_BACK_PROBE]
        # As much as resynchronises a repair; less only where that is the reply's whole rest (a
        # stream closed at the cut left only the start of its rest: no evidence).
        need = REPAIR_LIMITS.min_fit
        if self.reply_ended:
            need = min(len(probe), need)
        if not probe or len(probe) < need:
            return len(written)
        value = quoted_end(self.rest)
        after = [] if value is None else [self.rest[value:][:_HAND_BACK_PROBE]]
        start = checker.chars
        for keep in range(len(written), 0, -1):
            probes = [probe, *after] if written[:keep].strip() else [probe]  # blanks replace none
            if all(checker.fits(written[:keep] + p) - keep < need for p in probes):
                continue
            checker.feed(written[:keep])
            inside = checker.in_free_text()  # the rest would be a string's content
            checker.rollback(start)
            if not inside:
                return keep
        return len(written)

    def reuse(
        self, output: Output, min_chars: int, blanks: int = 0, wrote: bool = True
    ) -> tuple[str, Repair | None]:
        """After a correction, commit what of the rest fits (`_reusable`): all of it where that
        completes the text or is at least `min_chars` long, else its start up to its next slip
        when that is; what follows the slip stays for the target's next correction. Where none
        of it is reusable so, nor does it fit whole, the fewest of its first characters (as a
        repair skips: up to `REPAIR_LIMITS.max_skip`, or its first word) after which it is are
        skipped. Where what is reused starts a line of its own, the correction's `blanks` at the
        committed text's end go: the draft's layout goes on, not a blank line. Where none is
        reusable and the correction stopped inside a word (`_mid_word`: an enum's opening `"`),
        the rest stays for the target's next correction, once a cut: asked to go on from there,
        the API writes a word the grammar refuses (SmolLM2's `"severity": "42"`) and takes a call
        more, while the rest may fit once the word is written (`"medium"`, then `,\n "steps"`).
        Returns what was reused, and the repair that skipped, if one did."""
        rest, self.rest = self.rest, ""
        checker = output.checker
        if not rest or checker.in_free_text():
            # Nothing, or inside a string the correction opened: the draft's rest would be its
            # content; the run's own text after a settled key's value waits for the value's end.
            self.rest = rest if self.settled else ""
            return "", None
        for skip in _slips(rest, wrote):  # 0 first
            taken, reusable = _reusable(checker, rest[skip:], min_chars)
            if reusable:
                break
            if taken == len(rest):
                return "", None  # it fits whole (`]` short of the text's end): no slip to skip
        else:
            if not self.waited and _mid_word(checker):
                self.rest, self.waited = rest, True
            return "", None
        reused, self.rest = rest[skip : skip + reusable], rest[skip + reusable :]
        if blanks and reused.lstrip(" \t")[:1] in ("\n", "\r"):
            _take_back_blanks(output, blanks, reused)
        skipped = output.make(Edit(0, skip, "", "", rest[:skip], reusable, skip)) if skip else None
        checker.feed(reused)
        output.add(reused, "reused")
        return reused, skipped


def _slips(rest: str, wrote: bool) -> list[int]:
    """How much of the rest a correction may have replaced: what a repair skips (`skips`), or,
    where it `wrote` more than blanks, the quoted value the rest opens with (`quoted_end`)."""
    found = skips(rest, REPAIR_LIMITS)
    value = quoted_end(rest) if wrote else None
    return found if value is None or value in found else sorted([*found, value])


def quoted_end(rest: str) -> int | None:
    """Where the quoted value `rest` opens with (`"Minimum Salary"`, a string where a number
    goes) ends, its blanks after it too; None where it opens with none on its line."""
    quote = rest[:1]
    if quote not in ('"', "'"):
        return None
    end = 1
    while end < min(len(rest), _QUOTED_MOST):
        char = rest[end]
        if char == "\n":
            return None
        if char == quote:
            return len(rest) - len(rest[end + 1 :].lstrip(" \t"))
        end += 2 if char == "\\" else 1
    return None


_QUOTED_MOST = 256  # characters a quoted value `quoted_end` skips may take


def _reusable(checker: Checker, rest: str, min_chars: int) -> tuple[int, int]:
    """How much of `rest` fits after the checker's text, and how much of it a correction's end
    hands back to: all of it where it fits and completes the text or is at least `min_chars`
    long, else its start up to its next slip when that is `min_chars` long and leaves no string
    open (the rest would be a string's content); else nothing. The checker is left at the text
    it holds."""
    before = checker.chars
    taken = checker.feed(rest)
    complete, inside = checker.complete, checker.in_free_text()
    checker.rollback(before)
    if taken == len(rest) and (complete or taken >= min_chars):
        return taken, taken
    return taken, taken if taken >= min_chars and not inside else 0


def _mid_word(checker: Checker) -> bool:
    """Whether the text stands inside a word of the grammar's (no blank may follow, nor may it
    end there), not a string's free text: the draft's rest cannot go on from there."""
    return not checker.next_bytes() & BLANKS_OR_END and not checker.in_free_text()


def _take_back_blanks(output: Output, blanks: int, reused: str) -> None:
    """The last `blanks` characters of the output (the target's) leave it, where `reused` fits
    as well without them."""
    checker = output.checker
    at = checker.chars - blanks
    own = checker.text[at:]
    checker.rollback(at)
    fits = checker.fits(reused) == len(reused)
    checker.feed(own)
    if fits:
        output.unread(at)


def _only_closers(text: str) -> bool:
    """Whether `text` closes what is open and holds nothing else (blanks aside)."""
    ink = "".join(text.split())
    return bool(ink) and not ink.strip(CLOSERS)
