"""Commentary after the answer, told by its lines: sentences after a complete text, whether the
grammar refused them (`prose_lines_after`, at a cut) or happened to take them (`closing_remarks`,
at the reply's end), and what is held back from the caller while they may be either."""

from __future__ import annotations

from typing import TYPE_CHECKING

from backtrack.run.prose import sentence, spoken

if TYPE_CHECKING:
    from backtrack.run.output import Output


def open_line_after_answer(output: Output) -> int | None:
    """Where the text's last line starts, when that line is not ended yet and the text is
    complete before it: the line may still turn out to be commentary after the answer
    (`prose_lines_after`), so nothing of it is final yet. None otherwise."""
    start, complete = output.checker.last_line()
    return start if complete and 0 < start < output.chars else None


def prose_lines_after(output: Output, rest: str, *, final: bool, stray: bool = False) -> int | None:
    """Where the text is complete at the start of the cut's line, and that line and every line
    after it read so far are sentences (two of them, or all of the reply's rest): the line's
    start (or the end of the text before it, blanks apart), from where it and the rest are
    commentary after the answer (`This INI file does what you asked.`, which an INI grammar
    reads as a key and a value after one edit). `stray`: the cut's line is one no edit reads
    on through (a PGN result, `1-0`, where the grammar has none), and the lines after it are
    the sentences. None otherwise; also where the line starts as an earlier line of the
    document does (`SELECT`)."""
    text, checker = output.text, output.checker
    start, complete_at_start = checker.last_line()
    if start == 0:
        return None
    lines = [ln for ln in (text[start:] + rest).splitlines() if ln.strip()]
    said = lines[1:] if stray else lines
    if not said or not all(sentence(ln) for ln in said) or not (final or len(said) >= 2):
        return None
    first = lines[0].split()[0]
    if any(ln.split()[:1] == [first] for ln in text[:start].splitlines()):
        return None
    return complete_before(output, start, complete_at_start)


def complete_before(output: Output, start: int, complete_at_start: bool | None) -> int | None:
    """Where the text is complete at character `start` (a line's; `complete_at_start`, where
    known), or before the blanks that end the text there (a grammar that takes no blank line
    at the end of its text), and nothing from there is passed on or an edit's: that point, or
    None."""
    text, checker = output.text, output.checker
    fixed = max(output.edit_end, output.promised)
    if complete_at_start and start >= fixed:
        return start
    for end in dict.fromkeys((start, len(text[:start].rstrip()))):
        if end < fixed:
            return None
        checker.rollback(end)
        complete = checker.complete
        checker.feed(text[end:])
        if complete:
            return end
    return None


def closing_remarks(output: Output) -> int | None:
    """Where the text's last lines are remarks the grammar happened to take (`Let me know if
    you need anything else!` as an S-expression's symbols, or a CSV record; `Note: adjust the
    values.` as a CSS selector, left open): `spoken` sentences (`remarks_start`), none of them
    starting as a line of the document before them does, where the text is complete before
    them (`complete_before`); where the text is complete after them too, also none with a mark
    that every line of the document has (a CSV's `,`, an S-expression's parentheses; a
    document whose lines share none tells nothing). The first one's start, or the end of the
    text before it (blanks apart); None otherwise."""
    text = output.text
    at = remarks_start(text)
    remarks = [ln for ln in text[at:].splitlines() if ln.strip()]
    document = [ln for ln in text[:at].splitlines() if ln.strip()]
    if not remarks or not document:
        return None
    starts = {ln.split()[0] for ln in document}
    if any(ln.split()[0] in starts for ln in remarks):
        return None
    if output.checker.complete:  # read whole as document: only the document's marks tell
        marks = set.intersection(
            *({c for c in ln if not (c.isalnum() or c.isspace())} for ln in document)
        )
        if not marks or any(marks & set(ln) for ln in remarks):
            return None
    return complete_before(output, at, None)


def remarks_start(text: str, end: int | None = None) -> int:
    """Where the last lines of the text up to character `end` (a line's end; its end when None)
    that are blank or `spoken` start: at most `_REMARK_LINES` of them with text, all in the
    last `_REMARK_CHARS` characters before `end` (the cost of a call is bounded so). `end`
    where the last line is neither."""
    end = len(text) if end is None else end
    at, said, reach = end, 0, max(0, end - _REMARK_CHARS)
    while at > reach:
        start = text.rfind("\n", reach, at - 1) + 1
        if start == 0 and reach > 0:
            break  # the line starts before the reach
        line = text[start:at]
        if line.strip():
            if said == _REMARK_LINES or not spoken(line):
                break
            said += 1
        at = start
    return at


_REMARK_LINES = 3  # remarks closing a reply: a few sentences
_REMARK_CHARS = 480
