"""What follows a draft's cut: commentary after a complete answer, or more of the answer.

At a complete point, the draft's rejected rest may be commentary (`= 10` after an expression, a
sentence, anything after JSON's last brace), dropped as trailing text, or more document after a
slip, which the read-ahead keeps when one edit lets everything read after it parse (`reads_on`).
Before a complete point, the rest goes back to the target with the correction
(backtrack.run.hand_back).
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import TYPE_CHECKING

from backtrack.repair.search import Prefer, completes, search
from backtrack.run.output import REPAIR_LIMITS
from backtrack.run.prose import prose, sentence, states_value
from backtrack.run.remarks import complete_before, open_line_after_answer, remarks_start

if TYPE_CHECKING:
    from collections.abc import Callable

    from backtrack.repair.candidates import Edit
    from backtrack.run.output import Output
    from grammars import Checker, Grammar

BLANKS_OR_END = frozenset(b" \t\r\n") | {256}
_LETTERS = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")

# Text after a complete point that reads as commentary is still more document when a repair at
# the cut lets everything read after it parse, and at least this much of it or on into another
# line (a CSV row or a TOML line goes on; ` = 10` after an expression does not).
_READS_ON = 16
READ_ON_LIMITS = replace(REPAIR_LIMITS, min_fit=_READS_ON)
_ANOTHER_LINE = re.compile(r"[\r\n]\s*\S")


def answer_ended(checker: Checker, rest: str, grammar: Grammar) -> bool:
    """At a complete point, the grammar takes nothing more but blanks, and `rest` is more than
    blanks: no repair can make it document. Not where `grammar`'s schema refuses the text."""
    if not (checker.complete and rest.strip()) or closed_too_soon(grammar, checker.text, rest):
        return False
    return checker.stopped or checker.next_bytes() <= BLANKS_OR_END


def closed_too_soon(grammar: Grammar, text: str, rest: str) -> bool:
    """Whether the complete `text` is a JSON object closed before its required keys, or
    otherwise refused by its schema's validator (a schema whose drafts are read in any key
    order), and the draft's `rest` may be more of it: it does not go on with a key the object
    has already (the object again, or another record), as far as it has arrived."""
    validator = grammar.schema.validator if grammar.schema else None
    if validator is None or validator(text):  # the checker found the text complete already
        return False
    key = _NEXT_KEY.match(rest)
    if key is None:
        return True
    try:
        closed = json.loads(text)
    except ValueError:
        return True
    return not isinstance(closed, dict) or key.group(1) not in closed


_NEXT_KEY = re.compile(r'\s*[,{]?\s*"((?:[^"\\]|\\.)*)"\s*:')


def is_trailing(checker: Checker, rest: str) -> bool:
    """At a complete point, is the rejected rest commentary rather than a slip? It is when the
    grammar cannot go on at all or only with blanks, when the rest is a blank and a word where no
    word may follow (SQL after its ";" takes only blanks and comments), when it states the text's
    value where no `=` may follow (` = 10` after an expression), or when it starts a new line or a
    code fence (and is not more of the answer, below)."""
    following = checker.next_bytes()
    if checker.stopped or not rest.strip() or following <= BLANKS_OR_END:
        return True
    text = checker.text
    after_blank = rest[:1].isspace() or text[-1:].isspace()
    if after_blank and rest.lstrip()[:1].isalpha() and not following & _LETTERS:
        return True  # a word after a blank (right after a closing quote, a slip in the text)
    if ord("=") not in following and states_value(rest):
        return True
    tail = text[len(text.rstrip()) :]
    if not ("\n" in tail or rest.lstrip(" \t").startswith(("\n", "\r", "```"))):
        return False
    # A new line: commentary, unless it is more of the answer after blank lines the grammar
    # refuses (an empty line between CSV records): not prose, and it fits to its end.
    after = rest.lstrip()
    line = after.split("\n", 1)[0]
    more = not prose(line) and checker.fits(after) >= min(len(after), len(line) + 1)
    return not more


def edit_at_cut(
    output: Output, grammar: Grammar, rest: str, window: str, *, final: bool, prefer: Prefer | None
) -> Edit | None:
    """The best edit at the output's cut after which the draft's `rest` (all of the reply's
    rest when `final`; searched in its first characters, `window`) fits again, or None. After
    a complete text, only one that lets what looks like commentary read on as more document
    (`reads_on`, `reads_on_after_edits`); none where the answer has ended (`answer_ended`)."""
    checker = output.checker
    if answer_ended(checker, rest, grammar):
        return None
    looks_trailing = checker.complete and is_trailing(checker, rest)
    ended, floor = final and len(rest) <= len(window), output.edit_end
    limits = READ_ON_LIMITS if looks_trailing else REPAIR_LIMITS
    edit = search(
        checker,
        window,
        final=ended,
        floor=floor,
        limits=limits,
        prefer=prefer,
        alone=looks_trailing,
    )
    if looks_trailing and not (edit and reads_on(edit, window, checker, ended=ended)):
        edit = reads_on_after_edits(checker, rest, len(window), final=final, floor=floor)
    return edit


def reads_on(edit: Edit, window: str, checker: Checker, *, ended: bool) -> bool:
    """Whether, after `edit`, what looked like commentary after the complete text (`checker`'s)
    is more document: what was read after the edit parses to the end of its first line (all of
    it, if it has no line end), a good stretch of it or on into another line (or, where the
    `window` is the reply's end, some of it to that end, a complete text, the edit making nothing
    up: `"max-line-length" = 160` as `max-line-length = 160` on the last line), and that line is
    no sentence (which CSV, say, would take as a record), unless the edit wrote the line's own list
    mark as the text's last line has it (`2. Build a tree.` as `- Build a tree.` after a line
    `- Parse...`). The next line may hold the next slip: a document written in another notation
    slips on every line (`1.` for `-` in a markdown list)."""
    after = window[edit.skip :]
    own = edit.insert in edit.deleted + edit.skipped  # deleted, or the API's text unquoted
    to_end = ended and own and 0 < edit.fits == len(after) and completes(checker, edit, after)
    remarked = _remarked(edit, checker.text)
    return _reads_through(after, edit.fits, remarked=remarked, to_end=to_end)


def _reads_through(after: str, fits: int, *, remarked: bool, to_end: bool = False) -> bool:
    """`reads_on` for the text `after` an edit, of which the first `fits` characters are read
    (`to_end`: all of the reply's rest, after an edit that made nothing up)."""
    line = next((ln for ln in after.splitlines() if ln.strip()), "")
    line_end = after.find("\n", after.find(line) + len(line)) + 1 if line else 0
    fits_line = fits >= (line_end or len(after))
    stretch = to_end or fits >= _READS_ON or _ANOTHER_LINE.search(after[:fits]) is not None
    return fits_line and stretch and (remarked or not sentence(line))


def _remarked(edit: Edit, text: str) -> bool:
    """Whether `edit` replaced a line's own list mark (`2.`, `*`) by the one the last line of
    `text` starts with (`-`)."""
    last = next((ln for ln in reversed(text.splitlines()) if ln.strip()), "")
    own, meant = _MARK.fullmatch(edit.skipped.strip()), _MARK.match(last.lstrip())
    if own is None or meant is None:
        return False
    return edit.insert.strip() == meant.group() != own.group()


_MARK = re.compile(r"\d{1,3}[.)]|[^\w\s]{1,3}")  # a list mark: `1.`, `-`, `*`, `>`


def reads_on_after_edits(
    checker: Checker, rest: str, window: int, *, final: bool, floor: int
) -> Edit | None:
    """Where no one edit lets what looked like commentary after a complete text read on, the
    first of a few (`_PATH`) after which it does, as `reads_on` has it: a line written in another
    notation may slip twice (`"envlist" = py27` where INI keys are bare, a `;` comment at a
    line's end). The draft's `rest` is read through the line its first `window` characters end
    in (`through_line`). The edits are made in turn, each the best at its cut, and undone: the
    checker is left at the text it had."""
    window_text = through_line(rest, window)
    final = final and window_text == rest
    return _after_edits(checker, window_text, final=final, floor=floor)


def through_line(rest: str, window: int) -> str:
    """`rest` through the end of the line its first `window` characters end in (or
    `LINE_MORE` characters past them, at most)."""
    end = rest.find("\n", max(window - 1, 0))
    limit = window + LINE_MORE
    return rest[: limit if end < 0 else min(end + 1, limit)]


LINE_MORE = 256  # characters past a repair's window read on for the end of its line


def _after_edits(checker: Checker, window: str, *, final: bool, floor: int) -> Edit | None:
    text, start = checker.text, checker.chars
    low, at, first = start, 0, None
    try:
        for _ in range(_PATH):
            edit = search(checker, window[at:], final=final, floor=floor, limits=REPAIR_LIMITS)
            if edit is None:
                return None
            first = first or edit
            low = min(low, checker.chars - edit.back)
            checker.rollback(checker.chars - edit.back)
            checker.feed(edit.insert)
            at += edit.skip
            at += checker.feed(window[at:])
            if _reads_through(window[first.skip :], at - first.skip, remarked=False):
                return first
            if at == len(window):
                return None
        return None
    finally:
        checker.rollback(low)
        checker.feed(text[low:start])


_PATH = 3  # edits at most in a line read on after a complete text


def drop_final_blanks(output: Output) -> None:
    """Blanks that end a complete text before dropped trailing text go with the trailing text
    where the text without them is complete and they are no line's end (`1 + 2 ` before `= 3`),
    or the grammar would take nothing but blanks after it (JSON). Elsewhere the last line's end
    stays (a CSV record's; before a closing fence too, whose block's content ends with its last
    line's break, as CommonMark has it), and blank lines after it go. Never blanks already
    passed on as final."""
    text, checker = output.text, output.checker
    kept = len(text.rstrip())
    if kept == len(text) or kept < max(output.edit_end, output.promised):
        return
    checker.rollback(kept)
    blanks = text[kept:]
    line_end = "\n" in blanks or "\r" in blanks
    if not (checker.complete and (not line_end or checker.next_bytes() <= BLANKS_OR_END)):
        # The last line's end stays; blank lines after it go with the trailing text.
        kept += blanks.find("\n") + 1 if "\n" in blanks else len(blanks)
        checker.feed(text[len(text.rstrip()) : kept])
        if not checker.complete or kept == len(text):
            checker.feed(text[kept:])
            return
    output.log.retract(len(text) - kept, shown=False)
    output.drop(text[kept:], "trailing")


CLOSING_BRACKETS = ")]}>"
CLOSERS = CLOSING_BRACKETS + "\"';,"  # what closes what is open (and separates)


def closing(checker: Checker) -> str | None:
    """The closers after which the text is complete, where it lacks only those (a bracket left
    out, a string left open): at each step the first of `)]}>` the grammar takes, or, where the
    text is inside a string, first the quote that ends it (a bracket there is the string's
    text); None where it takes none of them before the text is complete, or needs more than
    `_MAX_CLOSERS`. The checker is left at the text it had."""
    start, written = checker.chars, ""
    try:
        while not checker.complete:
            following = checker.next_bytes()
            closer = _quote(checker, following) or next(
                (c for c in CLOSING_BRACKETS if ord(c) in following), None
            )
            if closer is None or len(written) == _MAX_CLOSERS:
                return None
            checker.feed(closer)
            written += closer
        return written
    finally:
        checker.rollback(start)


_MAX_CLOSERS = 16


def _quote(checker: Checker, following: frozenset[int]) -> str | None:
    """Inside a string, the quote that ends it (None: none, or not inside a string)."""
    if not checker.in_free_text():
        return None
    for quote in "\"'":
        if ord(quote) in following and not checker.free_after(quote):
            return quote
    return None


def final_point(output: Output, limit: int) -> int:
    """How many characters of the output's text are final: no later step changes them (never
    fewer than an earlier call said), and at most `limit`. A repair takes back at most
    `REPAIR_LIMITS.max_back` characters and none before the last edit's end; a complete text's
    trailing blanks may go with dropped trailing text, so a final part never ends in a blank run
    it could be part of, nor takes in a line after a complete text before the line ends (it may
    be commentary), nor its last lines after a point where the text is complete while they are
    sentences someone says (closing remarks: `closing_remarks`), nor a continuation held inside
    a string (`Output.hold`: stray_reply)."""
    text, edit_end = output.text, output.edit_end
    final = max(edit_end, len(text) - REPAIR_LIMITS.max_back)
    final = min(final, open_line_after_answer(output) or final, output.hold or final)
    # The last ended lines of a text complete before them may be remarks (`closing_remarks`),
    # whatever its open line is, and whether or not the grammar took them whole.
    remarks = remarks_start(text, text.rfind("\n", max(0, len(text) - LINE_MORE)) + 1)
    if 0 < remarks < final and complete_before(output, remarks, None) is not None:
        final = remarks
    while final > edit_end and text[final - 1].isspace():
        final -= 1
    output.promised = max(output.promised, min(final, limit))
    return output.promised


def close_up(output: Output, met: Callable[[str], bool]) -> bool:
    """Where the text lacks only closers (`closing`), and `met` takes the text they complete (a
    JSON schema's required keys are there), write them, as an edit."""
    closers = closing(output.checker)
    if not closers or not met(output.text + closers):
        return False
    output.checker.feed(closers)
    output.add(closers, "edit")
    return True
