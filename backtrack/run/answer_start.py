"""Where the answer starts in a reply that may open with prose ("Here is the JSON: ```json").

`AnswerStart` reads the reply as it streams and decides, as early as it can, the offset where the
answer starts:

1. the content of the first code fence, if its first character is valid under the grammar (not
   in a reply whose fence is open already, `fence_opened`: a fence there closes the answer);
2. else offset 0 when the text from there is valid across a line (a preamble fails on its first
   line), or to the end of what arrived, unless that reads as prose and is shorter than
   `LONG_RUN` (so that a reply streamed in small pieces is judged as it would be whole);
3. else the first offset not inside a word or a string ("ok": None, ...) from which the text runs
   valid for at least `LONG_RUN` characters past where the valid runs from earlier offsets end, or,
   once the reply is over, to its end (`SHORT_RUN` characters or more);
4. else, once the reply is over, the offset whose valid run is a complete text: an answer inside
   a sentence ("The sentiment is neutral.", "It is 42."); one that does not read as prose before
   one that does (`42` before `answer`, where a grammar takes names too), then the longest, then
   the earliest (`inside` says the offset is this rule's: the loop prefers offset 0 where a
   repair makes the reply fit from there, `ok = a && b`).

While the reply may still be opening a fence at its start ("``", "```cs"), nothing is decided:
rules 2 and 3 would take the fence's backticks as text where the grammar does (CSV). While its
first line may echo the prompt (`echo`), rule 3 waits, and so does rule 2 once it has found
offset 0: the grammar may take the sentence's end (symbols in an S-expression), and once the
line after it has ended, backtrack.run.prose.past_sentences takes the answer past the echo.

The work is linear in the reply: each offset that may start an answer gets an incremental checker
that advances only on new text, at most `MAX_LIVE` of them are alive at a time, and text reaches a
new checker in slices of `SLICE` characters, so no character is checked more than
`MAX_LIVE + SLICE` times, and nothing past `limit` characters is checked at all.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from backtrack.run.prose import MARKDOWN, LineWords, echoes_prompt, prose, sentence
from grammars.text import append_piece
from providers.align import FENCE

if TYPE_CHECKING:
    from grammars.checker import Checker
    from grammars.grammar import Grammar
    from providers.align import Echo

LONG_RUN = 16
SHORT_RUN = 4
MAX_LIVE = 16
SLICE = 32
# A start right after one of these (or a letter or a digit) is inside a word or a string.
_INSIDE = "\"'_"


@dataclass
class _Run:
    """The valid run of text from `start`: alive while it reaches the end of what arrived."""

    start: int
    checker: Checker
    alive: bool = True
    floor: int = 0  # where the runs of earlier, already discarded offsets ended
    newline: bool = field(default=False)  # the run crosses a line end

    @property
    def end(self) -> int:
        return self.start + self.checker.chars

    def advance(self, text: str) -> None:
        taken = self.checker.feed(text)
        self.newline = self.newline or "\n" in text[:taken]
        self.alive = taken == len(text)


class AnswerStart:
    """Give it the reply chunk by chunk; `seek` and `finish` return the answer's offset once
    known."""

    def __init__(self, grammar: Grammar, *, limit: int, echo: Echo | None = None) -> None:
        self.grammar = grammar
        self.echo = echo  # the caller's prompt: a sentence that echoes it is no answer text
        self._echo_open = echo is not None  # the reply may still be opening with such a one
        self._zero_found = False  # offset 0 was found while that was not known
        self.limit = limit  # offsets past this are not considered (the text is still kept)
        self._parts: list[str] = []
        self.length = 0
        self._last = ""  # the last characters received (a fence may span two slices)
        self._runs: list[_Run] = []  # in order of start; dead ones leave at the next decision
        self._dead_reach = 0  # the furthest end of every discarded run
        self._fence = -1  # offset of the first fence opening, -1 until one is seen
        self._fence_body = -1  # offset where that fence's content starts, once its line ended
        self._fence_done = False
        self._may_open = True  # the reply so far may be the start of a fence opening line
        # Rule 4's best candidate so far: (not prose, length, -start).
        self._whole: tuple[bool, int, int] | None = None
        self.inside = False  # the offset found is rule 4's: an answer inside a sentence
        self._line = LineWords()  # the last line's words, for `_in_sentence`
        # What `prose` reads of the whole text, counted as it arrives (for `_sure`).
        self._first_mark = ""  # the first character that is no blank
        self._letters = 0
        self._ink = 0  # the characters that are no blanks

    @property
    def text(self) -> str:
        """Everything received so far."""
        if len(self._parts) > 1:
            self._parts[:] = ["".join(self._parts)]
        return self._parts[0] if self._parts else ""

    def fence_opened(self) -> None:
        """The reply's fence is open already (a drafter's alignment stripped its opening line):
        rule 1 is off, and nothing waits for a fence opening."""
        self._fence_done = True
        self._may_open = False

    def seek(self, chunk: str) -> int | None:
        """Read the next chunk (kept whole in `text`); the answer's offset once it is known."""
        for i in range(0, len(chunk), SLICE):
            if self.length >= self.limit:
                self._keep(chunk[i:])
                return None
            piece = chunk[i : i + SLICE]
            start = self.length
            self._keep(piece)
            found = self._check(piece, start)
            if found is not None:
                self._keep(chunk[i + SLICE :])
                return found
        return None

    def _keep(self, text: str) -> None:
        if text:
            append_piece(self._parts, text)
            self._letters += sum(c.isalpha() for c in text)
            self._ink += sum(not c.isspace() for c in text)
            self._first_mark = self._first_mark or text.lstrip()[:1]
            line = text.rfind("\n") + 1
            if line:
                self._line = LineWords(self.length + line)
            self.length += len(text)

    def _check(self, piece: str, start: int) -> int | None:
        """Advance every rule over `piece`, the text from offset `start` on."""
        found = None if self._fence_done else self._fenced(piece, start)
        if found is not None:
            return found
        for run in self._runs:
            if run.alive:
                run.advance(piece)
        self._new_runs(piece, start)
        return self._decide(final=False)

    def finish(self) -> int | None:
        """The reply is over: decide with what arrived (None: no answer found)."""
        return self._decide(final=True)

    def _fenced(self, piece: str, start: int) -> int | None:
        """Rule 1, on `piece`, the text from offset `start` on."""
        if self._fence < 0:
            window = self._last[-(len(FENCE) - 1) :] + piece
            found = window.find(FENCE)
            if found < 0:
                return None
            self._fence = start - (len(window) - len(piece)) + found
        if self._fence_body < 0:
            newline = piece.find("\n", max(self._fence + len(FENCE) - start, 0))
            if newline < 0:
                return None
            self._fence_body = start + newline + 1
        if self.length <= self._fence_body:
            return None
        self._fence_done = True
        first = piece[self._fence_body - start]
        return self._fence_body if self.grammar.checker().feed(first) else None

    def _new_runs(self, piece: str, start: int) -> None:
        previous = self._last[-1:]
        live = sum(run.alive for run in self._runs)
        for i, char in enumerate(piece):
            offset = start + i
            candidate = offset == 0 or not (previous.isalnum() or previous in _INSIDE)
            previous = char
            if not candidate or live >= MAX_LIVE:
                continue
            run = _Run(offset, self.grammar.checker(), floor=self._dead_reach)
            run.advance(piece[i:])
            self._runs.append(run)
            live += run.alive
        self._last = (self._last + piece)[-(len(FENCE) - 1) :]

    def _opening(self) -> bool:
        """The reply so far may be the start of a fence opening line (blanks, backticks and an
        info string, up to its line end: rule 1 decides on the first character after it)."""
        if self._may_open:
            head = self.text.lstrip()
            info, _, after = head[len(FENCE) :].partition("\n")
            self._may_open = FENCE.startswith(head) or (
                head.startswith(FENCE) and not after and "`" not in info
            )
        return self._may_open

    def _decide(self, *, final: bool) -> int | None:
        if not final and self._opening():
            return None
        # While the reply may open with the prompt echoed, a start found waits (offset 0 too, once
        # found: backtrack.run.prose.past_sentences takes the answer past the echo).
        echo = not final and self._may_echo()
        if self._zero_found and not echo:
            return 0
        reach = 0
        for run in self._runs:
            beyond = run.end - max(run.start, reach, run.floor)
            if run.start == 0 and (run.newline or (run.alive and self._sure(final))):
                if not echo:
                    return 0
                self._zero_found = True
            to_end = run.alive and final and beyond >= SHORT_RUN and beyond == run.checker.chars
            if ((beyond >= LONG_RUN and not self._in_sentence(run, final)) or to_end) and not echo:
                return run.start
            reach = max(reach, run.end)
        self._discard_dead()
        if not final:
            return None
        for run in self._runs:
            self._note_whole(run)
        self.inside = self._whole is not None
        return -self._whole[2] if self._whole is not None else None

    def _may_echo(self) -> bool:
        """The reply may open with a sentence that echoes the prompt: its first line is still
        arriving, or it has, and the next line with text has not ended. Then the decision waits:
        backtrack.run.prose.past_sentences drops the sentence once the line after it tells."""
        if self._echo_open and self.echo is not None:
            line, newline, after = self.text.partition("\n")
            if newline:
                self._echo_open = echoes_prompt(line, self.echo) and "\n" not in after.lstrip()
            else:
                self._echo_open = line[:1].isalnum() and self.echo.may_be(line)
        return self._echo_open

    def _note_whole(self, run: _Run) -> None:
        """Rule 4's candidate: `run`, where its valid text is a complete one."""
        if run.checker.chars and run.checker.complete:
            unlike_prose = not prose(self.text[run.start : run.end])
            key = (unlike_prose, run.checker.chars, -run.start)
            if self._whole is None or key > self._whole:
                self._whole = key

    def _in_sentence(self, run: _Run, final: bool) -> bool:
        """Whether `run`'s valid text, on a line that has not ended, is in what reads as a
        sentence so far (the line from its start): it is decided on once it crosses the line's
        end (a sentence fails before) or the reply is over."""
        if final or run.newline:
            return False
        text = self.text
        if run.start >= self._line.start:  # on the last line: its words are counted as it grows
            return self._line.sentence_to(text, run.end)
        return sentence(text[text.rfind("\n", 0, run.start) + 1 : run.end])  # died before it

    def _sure(self, final: bool) -> bool:
        """Whether a valid start at offset 0 is the answer's: the reply is over, it does not
        read as prose (a streamed "Here" is a CSV record so far, and prose may follow that ends
        the run), or it is long and its first line no sentence (a grammar that takes words may
        take much of one: `An association list for Ada` is five symbols)."""
        if final or not self._reads_as_prose():
            return True
        # The run from 0 has crossed no line end: the text is one line, the last.
        return self.length >= LONG_RUN and not self._line.sentence_to(self.text, self.length)

    def _reads_as_prose(self) -> bool:
        """`prose(self.text)`, from counts kept as the text arrives."""
        if not self._ink:
            return True
        return (self._first_mark.isalnum() or self._first_mark in MARKDOWN) and (
            2 * self._letters >= self._ink
        )

    def _discard_dead(self) -> None:
        """Dead runs never qualify later (their reach only grows for later ones): keep only where
        they ended, for the runs that start after them. One pass: the runs are in order of start."""
        kept: list[_Run] = []
        dead_end = 0  # the furthest end of the dead runs passed so far
        for run in self._runs:
            if run.alive:
                run.floor = max(run.floor, dead_end)
                kept.append(run)
            else:
                dead_end = max(dead_end, run.end)
                self._note_whole(run)
        self._dead_reach = max(self._dead_reach, dead_end)
        self._runs = kept
