"""Is the text before the answer's found start a preamble to drop, or the answer itself with a
slip early on? Measured by the repairs that would make the reply fit from its first character."""

from __future__ import annotations

from typing import TYPE_CHECKING

from backtrack.repair.search import search
from backtrack.run.output import REPAIR_LIMITS
from backtrack.run.prose import capitalised, commentary, past_sentences, preamble

if TYPE_CHECKING:
    from backtrack.run.answer_start import AnswerStart
    from grammars import Grammar


def answer_offset(grammar: Grammar, seeker: AnswerStart, start: int, *, window: int) -> int:
    """Where the answer starts in the first reply, the `seeker`'s text, given the offset it found
    the answer's start at (`start`; `seeker.inside`: an answer inside a sentence, rule 4 of
    backtrack.run.answer_start): past sentences the grammar happens to take (or that echo the
    prompt: `seeker.echo`), but at 0 where what comes before is the answer with a slip early
    on, or the reply is the answer with a slip rather than a sentence around one."""
    received, inside = seeker.text, seeker.inside
    found, start = start, past_sentences(grammar, received, start, seeker.echo)
    if start and slipped_answer(grammar, received, start, window):
        return 0  # a slip early in the answer, for the repairs, not a preamble to drop
    if start == found and start and inside and repairable(grammar, received, window):
        return 0  # the reply is the answer with a slip, not a sentence around one
    return _past_blanks(grammar, received, start) if start else 0


def repairable(grammar: Grammar, text: str, window: int) -> bool:
    """Whether `text`, from the reply's start, fits the grammar or has a repair at its first cut
    within `window` characters (a slip early in the answer: `x = 1; y = 2; `, `; a comment`)."""
    checker = grammar.checker()
    taken = checker.feed(text)
    if taken == len(text):
        return True
    return (
        search(checker, text[taken : taken + window], final=False, floor=0, limits=REPAIR_LIMITS)
        is not None
    )


def slipped_answer(grammar: Grammar, received: str, start: int, window: int) -> bool:
    """Whether the text before the answer's `start` is the answer with a slip early on: it reads
    as code, and the repairs make it fit (`x = 1; y = 2; `, `; a comment`); or it reads as no
    commentary, does not open as a sentence does (`Turtle program v2`), and the repairs that make
    the reply fit from its first character change fewer characters than dropping the text would
    (`setpencolor blue` for `c blue`)."""
    skipped = received[:start]
    if not preamble(skipped) and repairable(grammar, skipped, window):
        return True
    if commentary(skipped) or capitalised(skipped):
        return False
    cost = repair_cost(grammar, received, start, window)
    return cost is not None and cost < len("".join(skipped.split()))


def repair_cost(grammar: Grammar, text: str, start: int, window: int) -> int | None:
    """The characters the repairs remove and insert after which `text` fits from its first
    character to `_PAST_START` characters past `start`: the answer read from the reply's start,
    against its start placed at `start`. None where that takes more than `_EARLY_REPAIRS`
    repairs, or a cut has none."""
    checker = grammar.checker()
    end = min(len(text), start + _PAST_START)
    at, cost = 0, 0
    for _ in range(_EARLY_REPAIRS + 1):
        at += checker.feed(text[at:end])
        if at == end:
            return cost
        edit = search(checker, text[at : at + window], final=False, floor=0, limits=REPAIR_LIMITS)
        if edit is None:
            return None
        checker.rollback(checker.chars - edit.back)
        checker.feed(edit.insert)
        at += edit.skip
        cost += len(edit.deleted) + len(edit.skipped) + len(edit.insert)
    return None


_EARLY_REPAIRS = 3  # repairs at most before an answer read from the reply's start fits
_PAST_START = 16  # characters past a found start that the reply read from its start must fit


def _past_blanks(grammar: Grammar, text: str, start: int) -> int:
    """The answer's start after a preamble ending at `start`: the blanks between them go with
    the preamble, but for the indentation of the answer's first line, where the grammar takes it
    (an assembly program's first instruction)."""
    end = start
    while text[end : end + 1].isspace():
        end += 1
    line = text.rfind("\n", 0, end) + 1
    indented = 0 < line < end and not text[line:end].strip()
    if indented and grammar.checker().feed(text[line : end + 1]) == end + 1 - line:
        return line
    return end
