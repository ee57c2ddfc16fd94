"""Another notation's conditional expression, written as the grammar writes one: C's and
JavaScript's `c ? a : b` is Python's `a if c else b`, SQL's `CASE WHEN c THEN a ELSE b END`, or
`if c then a else b` (Haskell, OCaml). The API's own condition and branches, in the grammar's
order: no character of them made up, so the edit costs nothing (backtrack.repair.notations.
distance), though it reaches back past a repair's usual few characters, to where the condition
starts on its line: after an assignment's `=`, a `,`, a `:`, an opening bracket, a keyword
(`return`, `SELECT`), or the line's start.
"""

from __future__ import annotations

import re
from string import Formatter
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from grammars import Checker

MAX_CONDITION = 64  # characters back to the condition's start, at most
_FORMS = ("{a} if {c} else {b}", "if {c} then {a} else {b}")
_SQL_FORM = "CASE WHEN {c} THEN {a} ELSE {b} END"
_OPENERS, _CLOSERS, _QUOTES = "([{", ")]}", "\"'`"
_WORD_ENDS = " \t\r\n,;" + _CLOSERS
_UPPER_WORD = re.compile(r"\b[A-Z]{2,}\b")  # SQL's keywords written in capitals
_KEYWORD = re.compile(r"\b(?:return|yield|else|select|where|having|when|then)\s+", re.I)
_QUESTION = re.compile(r"[ \t]*\?(?![?.])")  # not JavaScript's `??` nor `?.`


def conditionals(
    checker: Checker, committed: str, rest: str, floor: int
) -> list[tuple[int, str, int]]:
    """Where the draft goes on with the `?` of a conditional whose condition ends the committed
    text: (back, insert, skip) for each form of it (`written`), from the condition's start (not
    before `floor`) to the end of its second branch. Leaves the checker backed off."""
    question = _QUESTION.match(rest)
    if question is None:
        return []
    line_start = max(committed.rfind("\n") + 1, floor, len(committed) - MAX_CONDITION)
    start = _condition_start(committed[line_start:])
    after = rest[question.end() : question.end() + MAX_CONDITION]
    branches = _branches(after)
    if start is None or branches is None:
        return []
    start += line_start
    checker.rollback(start)
    upper = _UPPER_WORD.search(committed[:start]) is not None
    colon, ends = branches
    return [
        (len(committed) - start, text, question.end() + end)
        for end in ends
        for text in written(committed[start:], after[:colon], after[colon + 1 : end], upper=upper)
    ]


def written(condition: str, first: str, second: str, *, upper: bool | None) -> list[str]:
    """The conditional `condition ? first : second` in each form a grammar may take; SQL's in the
    letter case of the keywords before it (`upper`; None: in both)."""
    parts = {"c": condition.strip(), "a": first.strip(), "b": second.strip()}
    return [form.format(**parts) for form in _forms(upper)]


def conditional_forms(removed: str) -> list[str]:
    """The forms (`written`) of `removed` when it is one whole conditional `c ? a : b` (its second
    branch running to its end); none otherwise."""
    parts = _parts(removed)
    return [] if parts is None else written(*parts, upper=None)


def conditional_pieces(removed: str, insert: str) -> list[tuple[str, bool]] | None:
    """Where `insert` is a form of the conditional `removed` (`conditional_forms`): `insert` in
    pieces, each with whether it is the API's own text (its condition and branches; the form's
    keywords are not); None where it is not."""
    parts = _parts(removed)
    if parts is None:
        return None
    named = dict(zip("cab", (part.strip() for part in parts), strict=True))
    for form in _forms(None):
        if form.format(**named) == insert:
            pieces = []
            for literal, field, _, _ in Formatter().parse(form):
                pieces += [(literal, False)] if literal else []
                pieces += [(named[field], True)] if field else []
            return pieces
    return None


def _forms(upper: bool | None) -> tuple[str, ...]:
    """The forms, SQL's in capitals (`upper`), in small letters, or both (None)."""
    if upper is None:
        return (*_FORMS, _SQL_FORM, _SQL_FORM.lower())
    return (*_FORMS, _SQL_FORM if upper else _SQL_FORM.lower())


def _parts(removed: str) -> tuple[str, str, str] | None:
    """(condition, first branch, second branch) of `removed` when it is one whole conditional."""
    question = removed.find("?")
    match = _QUESTION.match(removed, question) if question > 0 else None
    if match is None:
        return None  # no `?` after a condition (every candidate scored asks: the common case)
    after = removed[match.end() :]
    branches = _branches(after)
    if branches is None or branches[1][-1] != len(after):
        return None
    condition, colon = removed[:question], branches[0]
    whole = _condition_start(condition) == 0
    return (condition, after[:colon], after[colon + 1 :]) if whole else None


def _condition_start(line: str) -> int | None:
    """Where the condition that ends `line` starts: after the last `=` of an assignment, `,`,
    `;`, `:`, opening bracket not closed, or `return`-like keyword, and the blanks after it;
    None where a bracket closes that it did not open, a quote is left open, or nothing is left."""
    starts = [0]  # where an expression starts, at each bracket level open
    quoted, left_open = _quoted(line)
    for at, char in enumerate(line):
        if quoted[at]:
            continue
        if char in _OPENERS:
            starts.append(at + 1)
        elif char in _CLOSERS:
            if len(starts) == 1:
                return None
            starts.pop()
        elif char in ",;:" or (char == "=" and _assigns(line, at)):
            starts[-1] = at + 1
    if left_open:
        return None
    start = starts[-1]
    keywords = list(_KEYWORD.finditer(line, start))
    start = keywords[-1].end() if keywords else start
    start += len(line[start:]) - len(line[start:].lstrip())
    return start if start < len(line) else None


def _quoted(text: str) -> tuple[list[bool], bool]:
    """For each character of `text`, whether it is in a quoted text (its opening quote, but not
    its closing one, which ends a word); and whether a quote is left open."""
    quoted, quote = [], ""
    for at, char in enumerate(text):
        if quote:
            quote = "" if char == quote and text[at - 1] != "\\" else quote
        elif char in _QUOTES:
            quote = char
        quoted.append(bool(quote))
    return quoted, bool(quote)


def _assigns(line: str, at: int) -> bool:
    """Whether the `=` at `at` assigns, not compares (`==`, `<=`, `>=`, `!=`)."""
    return line[at - 1 : at] not in ("=", "<", ">", "!") and line[at + 1 : at + 2] != "="


def _word_ends(text: str, at: int, colon: int) -> bool:
    """Whether a word of the second branch (after the `colon`) ends at character `at`."""
    after = text[at + 1 : at + 2]
    return at > colon and not text[at].isspace() and (not after or after in _WORD_ENDS)


def _branches(text: str) -> tuple[int, list[int]] | None:
    """After a conditional's `?`: (the `:` that ends its first branch, where its second may end).
    The first runs to a `:` outside brackets and quotes; the second to the end of one of its
    words (SQL's `'fail' AS result` ends after `'fail'`) before a bracket it did not open, a `,`
    or `;` outside brackets, its line's end or the text's end."""
    colon, ends = None, []
    depth, quoted = 0, _quoted(text)[0]
    for at, char in enumerate(text):
        if quoted[at]:
            continue
        if char in _OPENERS:
            depth += 1
        elif char in _CLOSERS and depth:
            depth -= 1
        elif char in _CLOSERS or char in "\r\n" or (not depth and char in ",;"):
            break
        elif char == ":" and not depth and colon is None:
            colon = at
        if colon is not None and not depth and _word_ends(text, at, colon):
            ends.append(at + 1)
    if colon is None or not text[:colon].strip() or not ends:
        return None
    return colon, ends
