"""Where the draft's layout ended the block of a bracket it left open: a closer's place further
back than a repair reaches by characters.

`node [shape=plaintext;` left its `]` out, and the next line, as deep as that one, reads on as
more of the list until it slips (`"6th Edition" [`, `s218[`, `A1 -> B1`). The line shows the
list ended before it: the closer goes at the end of the content of the line before (before its
`;` or `,`), however long the line the cut is on. A closer written anywhere after that place
is one edit more (backtrack.repair.candidates)."""

from __future__ import annotations

from backtrack.repair.notations import BRACKETS, brackets

_REACH = 512  # characters read before the cut's line for the open bracket, and of that line
_AFTER_CONTENT = " \t\r\n;,"  # what the closer goes before, at the end of a line


def block_end(committed: str, floor: int) -> tuple[int, str] | None:
    """Where in the committed text the innermost bracket still open was closed by the layout,
    and its closer: the bracket opened on an earlier line than the committed text's last, and
    that line (not starting with a closer) is no deeper than the bracket's; the place is the
    end of the content of the line before, at or after character `floor`. None otherwise."""
    line = committed.rfind("\n") + 1
    if not line or committed[line:].lstrip(" \t")[:1] in BRACKETS.values():
        return None
    start = max(floor, line - _REACH)
    if start and committed[start - 1] != "\n":  # from a line's start
        start = committed.find("\n", start, line) + 1
    if (not start and line > _REACH) or len(committed) - line > _REACH:
        return None  # no line starts within reach, or the cut's line is longer than that
    stack = _open(committed, start)
    if not stack or stack[-1][0] >= line:
        return None
    at, closer = stack[-1]
    opened_on = committed.rfind("\n", 0, at) + 1
    if _indent(committed, line) > _indent(committed, opened_on):
        return None
    end = len(committed[:line].rstrip(_AFTER_CONTENT))
    return (end, closer) if end > at and end >= floor else None


def _open(text: str, start: int) -> list[tuple[int, str]]:
    """The brackets open at the text's end, read from character `start` (those in double-quoted
    strings aside): where each is, and its closer; empty where a closer does not match the
    bracket open."""
    stack: list[tuple[int, str]] = []
    for at, char in brackets(text, start):
        if char in BRACKETS:
            stack.append((at, BRACKETS[char]))
        elif stack:  # else it closes one opened before `start`
            if stack[-1][1] != char:
                return []
            stack.pop()
    return stack


def _indent(text: str, line: int) -> int:
    """How deep the line starting at character `line` is indented (blanks before its text)."""
    end = line
    while end < len(text) and text[end] in " \t":
        end += 1
    return end - line
