"""What reads as prose in a reply, rather than as the answer: a preamble, commentary, a
sentence someone says, the prompt echoed (backtrack.run.answer_start, early_slip, read_ahead and
trailing decide with these)."""

from __future__ import annotations

import bisect
import re
from typing import TYPE_CHECKING

from providers.align import FENCE

if TYPE_CHECKING:
    from grammars.grammar import Grammar
    from providers.align import Echo


def preamble(text: str) -> bool:
    """Whether `text`, before where an answer could start, reads as a preamble to drop: a code
    fence, or prose. Text that reads as code (`x = 1; y = 2; `, `; a comment`, `<p class='a'>`)
    may be the answer with a slip early on: the repairs see to it."""
    return FENCE in text or prose(text)


def prose(text: str) -> bool:
    """Whether `text` reads as prose: it starts with a word or a markdown mark, and at least half
    of what is not blank is letters."""
    marks = text.split()
    if not marks:
        return True
    first = marks[0][0]
    letters = sum(c.isalpha() for mark in marks for c in mark)
    return (first.isalnum() or first in MARKDOWN) and 2 * letters >= sum(map(len, marks))


MARKDOWN = "*_>#-\"'"


def sentence(line: str) -> bool:
    """Whether `line` reads as a sentence of prose: it starts with a letter, and of its words
    (three or more) all but one, and at least three in four, are plain words: letters (an
    apostrophe or a hyphen inside), maybe in brackets or quotes, maybe with a comma, a stop, a
    colon or a mark after. A record or a statement (`3,New York,Big Apple`, `created = 2024-03-18
    UTC`, `forward 100`) is not one."""
    words = line.split()
    if len(words) < 3 or not words[0][:1].isalpha():
        return False
    plain = sum(1 for word in words if _PLAIN_WORD.fullmatch(word))
    return plain >= len(words) - 1 and 4 * plain >= 3 * len(words)


def commentary(text: str) -> bool:
    """Whether `text`, dropped before the answer, reads as commentary: each of its lines is
    blank, a code fence, a markdown heading (`### Solution`), or `spoken` (`Sure!`, `Here you
    go:`). What does not (`setpencolor blue`, `setpencolor red yellow`) may be answer text the
    answer's start was placed past."""
    return all(
        spoken(line)
        or line.rstrip()[-1:] in ".:!?"
        or line.lstrip().startswith(FENCE)
        or _HEADING.match(line) is not None
        for line in text.splitlines()
        if line.strip()
    )


_HEADING = re.compile(r"\s*#{1,6} +\w")


def capitalised(text: str) -> bool:
    """Whether `text` opens as a sentence does: a capital letter, then a small one."""
    return _CAPITALISED.match(text) is not None


_CAPITALISED = re.compile(r"\s*[A-Z](?:[a-z']|\s)")


def spoken(line: str) -> bool:
    """Whether `line` is a sentence someone says: it reads as a `sentence` and opens with a
    capital or ends as a sentence does. A line of lower-case words without a stop is as likely a
    statement of the answer (`c red yellow`, a turtle's colours)."""
    return sentence(line) and (capitalised(line) or line.rstrip()[-1:] in ".:!?")


def past_sentences(grammar: Grammar, text: str, start: int, echo: Echo | None = None) -> int:
    """Where the answer starts when the lines from `start`'s own (all of it, `start` may be
    inside it) open with sentences the grammar happens to take (symbols in an S-expression, keys
    in INI): the first line after them that is not `spoken` nor a sentence that echoes the
    caller's prompt (`echo`: `6502 assembly: the start of a bubble sort ... exchange them.`),
    where the text from there fits as far as it has come. `start` otherwise, and where the text
    is all sentences (a grammar of prose)."""
    at = text.rfind("\n", 0, start) + 1
    sentences = 0
    while (end := text.find("\n", at)) >= 0:
        line = text[at:end]
        if line.strip() and not (spoken(line) or echoes_prompt(line, echo)):
            break
        sentences += bool(line.strip())
        at = end + 1
    rest = text[at:]
    if not sentences or not rest.strip() or sentence(rest.split("\n", 1)[0]):
        return start
    return at if grammar.checker().feed(rest) == len(rest) else start


def echoes_prompt(line: str, echo: Echo | None) -> bool:
    """Whether `line` reads as a sentence of the prompt's: it echoes the prompt (`echo`), opens
    with a word, not a blank or a comment mark (` ; 16-bit square root.`, a comment of the
    answer's in the prompt's words), and ends as a sentence does (a record made of the prompt's
    words, `id, name, city, country, population`, ends otherwise)."""
    opens, ends = line[:1].isalnum(), line.rstrip()[-1:] in ".:!?"
    return echo is not None and opens and ends and echo.of(line)


class LineWords:
    """The words of the reply's last line, counted once as it grows: whether the line up to any
    offset reads as a `sentence`, in time linear in the line however often it is asked."""

    def __init__(self, start: int = 0) -> None:
        self.start = start  # where the line starts in the reply
        # After each blank counted so far: its offset + 1, and the words and plain words before.
        self._bounds = [start]
        self._counts = [(0, 0)]
        self._first = ""  # the line's first word, once counted

    def sentence_to(self, text: str, end: int) -> bool:
        """`sentence(text[self.start:end])`."""
        counted = self._bounds[-1]
        blank = _LAST_BLANK.search(text, counted, end) if end > counted else None
        if blank is not None:
            words, plain = self._counts[-1]
            for word in text[counted : blank.start()].split():
                self._first = self._first or word
                words += 1
                plain += _PLAIN_WORD.fullmatch(word) is not None
            self._bounds.append(blank.start() + 1)
            self._counts.append((words, plain))
        at = bisect.bisect_right(self._bounds, end) - 1
        words, plain = self._counts[at]
        tail = text[self._bounds[at] : end].split()
        words += len(tail)
        plain += sum(_PLAIN_WORD.fullmatch(word) is not None for word in tail)
        first = (self._first if at else "") or (tail[0] if tail else "")
        return words >= 3 and first[:1].isalpha() and plain >= words - 1 and 4 * plain >= 3 * words


_LAST_BLANK = re.compile(r"\s(?=\S*\Z)")
_PLAIN_WORD = re.compile(r"[(\"'“‘]?[^\W\d_]+(?:['’-][^\W\d_]+)*[)\"'”’]?[.,;:!?…]*")


def states_value(rest: str) -> bool:
    """Whether `rest` gives the value of what came before (` = 10` after `3 * 2 + 4`, `=> 7`):
    the answer's result, commentary where the grammar takes no `=` there."""
    return _VALUE.match(rest) is not None


_VALUE = re.compile(r"[ \t]*(?:=>?|≈)[ \t]*[^\s=>]")
