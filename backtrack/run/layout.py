"""A bracket the API forgot to close, placed where the draft's own layout closed its block.

A reply that ends with the text lacking only closers may have left one out lines before its
end, where the grammar could not tell (a nested block's `}` in a block of the same kind, an
S-expression's `)`): every line after it was read one level too deep. Its indentation tells
where the block ended, in either of the two layouts code is written in:
- closers on lines of their own (braces: a line starts with a closer somewhere in the reply): a
  bracket is closed before the next line indented no deeper than the line that opened it (a
  line of a closer: less deep);
- closers at the ends of lines (S-expressions: no line starts with one): a bracket is closed
  before the next line that starts at or left of its own column.
At the first line that breaks its layout while a bracket is open, the innermost open bracket's
closer goes where the layout puts it: at the end of the line before (closers at line ends); on
a blank line before as deep as the bracket's line, else on a line of its own (braces). A bracket
the reply's last line opened and left open, in a reply that stopped after that line's end, is
closed at the line's end (`[6, 28, 496` as `[6, 28, 496]`): asked to go on, an API writes the
closer after the line end, or starts over. Brackets opened on one line close together: where
the last line is closers alone and closed the inner of them (`fill { repeat 36 {` ... `}`), the
outer's closers go after its own (`}}`). A bracket of an earlier line still open otherwise is
not closed: the reply may have been cut short after a whole line, and the API goes on; but
where the reply closed its code fence (it said its answer is over), the closers the text lacks
go at its end. A reply that lacks only a line end at its end gets it there (`line_ended`). The
placement is taken only where the whole text is then complete; else nothing is placed (and the
API is asked to go on, as for a reply cut short). It may reach far back: only where nothing of
the text was passed on as it came (guide() without `on_text`, a reply not streamed); the last
line's closers go after all that was.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple, Protocol

from backtrack.repair.notations import BRACKETS, brackets
from backtrack.run.trailing import closing

if TYPE_CHECKING:
    from backtrack.run.output import Output
    from backtrack.trace.record import Repair
    from grammars import Checker


class _Open(NamedTuple):
    closer: str
    column: int  # where the bracket stands in its line
    indentation: str  # of the line it opened on
    line: int = 0  # where that line starts in the text

    @property
    def indent(self) -> int:
        return len(self.indentation)


class Ended(Protocol):
    """How a reply ended (backtrack.run.draft_round.ReplyEnd): its finish reason, and its text
    from a closing code fence on ("" where none)."""

    @property
    def reason(self) -> str: ...
    @property
    def closing(self) -> str: ...


def close_forgotten(output: Output, start: int, end: Ended) -> Repair | None:
    """Where the reply stopped (`end`), write a closer the API left out where the layout of the
    output's text from character `start` puts it (`forgotten_closer`), the closers its last
    line left open at that line's end (`closed_last_line`), or those of brackets opened with
    the last one it closed after that (`closed_together`), or, where the reply closed its code
    fence, the closers the text lacks at its end, or the line end it lacks there (`line_ended`),
    as an edit in its place, not before the last edit's end nor in text already passed on; its
    record, or None."""
    if end.reason != "stop":
        return None
    begun, start = start, max(start, output.edit_end, output.passed)
    checker = output.checker
    found = (
        forgotten_closer(checker, start)
        or closed_last_line(checker, start)
        or closed_together(checker, begun, start)
        or (closed_at_end(checker) if end.closing else None)
        or line_ended(checker)
    )
    if found is None:
        return None
    return output.insert(*found)


def closed_at_end(checker: Checker) -> tuple[int, str] | None:
    """The end of the checker's text and the closers it lacks there (`trailing.closing`), where
    it lacks only those; else None."""
    closers = closing(checker)
    return (checker.chars, closers) if closers else None


def line_ended(checker: Checker) -> tuple[int, str] | None:
    """The end of the checker's text and a line end, where the text is complete after that
    and not before: a reply that stopped lacks only the line end the grammar ends its lines
    with (a chat API strips a reply's last one)."""
    end = checker.chars
    if checker.complete or not completes_with(checker, end, "\n"):
        return None
    return end, "\n"


def forgotten_closer(checker: Checker, start: int) -> tuple[int, str] | None:
    """Where in the checker's text, at or after character `start`, a closer left out goes by
    the layout of the text from `start` on, and the text to insert there: after it the whole
    text is complete. None where the layout shows none, or the grammar does not complete so.
    The checker is left at the text it holds."""
    text = checker.text
    if start and text[start - 1] != "\n":  # from a line's start: columns count from there
        start = text.find("\n", start) + 1 or len(text)
    lines = text[start:].splitlines(keepends=True)
    own_lines = any(line.lstrip(" \t")[:1] in BRACKETS.values() for line in lines[1:])
    stack: list[_Open] = []
    at, last_end = start, None  # where the line starts; the previous content line's end
    blank: tuple[int, int] | None = None  # a blank line right before: (its end, its indentation)
    for line in lines:
        content = line.rstrip("\r\n")
        body = content.lstrip(" \t")
        indent = len(content) - len(body)
        if not body:
            blank = (at + len(content), indent)
        elif stack and last_end is not None and _breaks(stack[-1], indent, body, own_lines):
            place = _place(stack[-1], last_end, blank, at, own_lines)
            return place if completes_with(checker, *place) else None
        elif _read(body, content[:indent], stack):
            last_end, blank = at + len(content.rstrip(" \t")), None
        else:
            return None
        at += len(line)
    return None


def closed_last_line(checker: Checker, start: int) -> tuple[int, str] | None:
    """Where the text's last line opened brackets it left open, and the reply stopped after
    that line's end: the closers at the end of its text (at or after character `start`),
    where the whole text is then complete. None where a bracket of an earlier line is still
    open (the text is not complete so), after an opener that ends the line, or where the reply
    stopped inside its line: a reply may be cut short after a whole line, or inside one."""
    text = checker.text
    ended = _ended_last_line(text, start)
    if ended is None:
        return None
    line, end = ended
    content = text[line:end]
    if content[-1] in BRACKETS:  # after an opener that ends the line
        return None
    body = content.lstrip(" \t")
    stack: list[_Open] = []
    if not _read(body, content[: len(content) - len(body)], stack) or not stack:
        return None
    place = end, "".join(bracket.closer for bracket in reversed(stack))
    return place if completes_with(checker, *place) else None


def closed_together(checker: Checker, begun: int, start: int) -> tuple[int, str] | None:
    """Where the text's last line is closers alone (`}`), and brackets opened on one line with
    the last it closed are still open (`fill { repeat 36 {`), in a reply that stopped after that
    line's end: their closers after its own (`}}`), at or after character `start`, where the
    whole text is then complete. Brackets opened together close together; a reply cut short
    after such a line goes on with those closers too. The brackets are read from the reply's
    start, character `begun`; None where one closes there that it did not open."""
    text = checker.text
    ended = _ended_last_line(text, start)
    if ended is None:
        return None
    line, end = ended
    if text[line:end].strip(" \t").strip("}])"):  # not closers alone
        return None
    if begun and text[begun - 1] != "\n":  # from a line's start
        begun = text.find("\n", begun) + 1 or len(text)
    stack: list[_Open] = []
    closed: list[_Open] = []
    at = begun
    for content in text[begun:end].split("\n"):
        body = content.lstrip(" \t")
        if not _read(body, content[: len(content) - len(body)], stack, at, closed):
            return None
        at += len(content) + 1
    together = [b for b in stack if closed and b.line == closed[-1].line]
    if not together or stack[-1] is not together[-1]:
        return None
    place = end, "".join(bracket.closer for bracket in reversed(together))
    return place if completes_with(checker, *place) else None


def _ended_last_line(text: str, start: int) -> tuple[int, int] | None:
    """Where the text's last line with content starts and its content ends, where the text
    ends after that line's end and the content ends at or after character `start`; else None
    (also for a text of blanks)."""
    end = len(text.rstrip())
    if not end or end < start or "\n" not in text[end:]:
        return None
    return text.rfind("\n", 0, end) + 1, end


def _place(
    bracket: _Open, last_end: int, blank: tuple[int, int] | None, line: int, own_lines: bool
) -> tuple[int, str]:
    """Where the open `bracket`'s closer goes, and what is inserted there, before the line
    starting at character `line` that shows it closed: at the end of the content line before
    (closers at line ends); on a blank line before as deep as the bracket's line, or on a line
    of its own as deep, before this one (braces)."""
    if not own_lines:
        return last_end, bracket.closer
    if blank is not None and blank[1] == bracket.indent:
        return blank[0], bracket.closer
    return line, bracket.indentation + bracket.closer + "\n"


def _breaks(bracket: _Open, indent: int, body: str, own_lines: bool) -> bool:
    """Whether a line indented `indent` and reading `body` shows the open `bracket` closed
    before it: with closers on lines of their own, a line no deeper than the bracket's, or one
    that starts with a closer less deep (the closer of a bracket further out); else a line
    that starts at or left of the bracket."""
    if not own_lines:
        return indent <= bracket.column
    if body[0] in BRACKETS.values():
        return indent < bracket.indent
    return indent <= bracket.indent


def _read(
    body: str,
    indentation: str,
    stack: list[_Open],
    line: int = 0,
    closed: list[_Open] | None = None,
) -> bool:
    """Open and close the brackets of a line (those outside double-quoted strings) on `stack`,
    the line starting at character `line`; those it closes go on `closed`, when given. False
    where a closer does not match the bracket open (the layout tells nothing then)."""
    for at, char in brackets(body):
        if char in BRACKETS:
            stack.append(_Open(BRACKETS[char], len(indentation) + at, indentation, line))
        else:
            if not stack or stack[-1].closer != char:
                return False
            bracket = stack.pop()
            if closed is not None:
                closed.append(bracket)
    return True


def completes_with(checker: Checker, at: int, insert: str) -> bool:
    """Whether the text with `insert` at character `at` is the grammar's, complete; the checker
    is left at the text it holds."""
    text = checker.text
    checker.rollback(at)
    rest = insert + text[at:]
    complete = checker.feed(rest) == len(rest) and checker.complete
    checker.rollback(at)
    checker.feed(text[at:])
    return complete
