"""Where an edit's characters go among the blanks at the cut.

A closing bracket an edit leaves after blanks is spaced as its opener is: where nothing stands
between the opener and the text after it, nothing stands between the text and the closer
(`($x: Boolean ){`, a `)` inserted, as `($x: Boolean) {`; `<img alt="x" />`, its `/` deleted,
as `<img alt="x">`; `[1, 2, ]`, its comma deleted, as `[1, 2]`). The blanks go after an
inserted closer, or with the deletion. Where the opener has a blank after it (`{ id }`), or is
not found near, the edit stays as it was.

A separator or terminator the draft left out (`,`, `;`), inserted after blanks, goes right
after the word it ends, before the blanks, where its writer puts it: `{"a": 1, "b": 2}` and, at
a line's end, `"a": 1,` and `string name = 1;`, not `1 ,"b"`, `,"b": 2` and `;}`."""

from __future__ import annotations

import re
from dataclasses import replace

from backtrack.repair.candidates import Edit
from grammars import Checker

_OPENERS = {")": "(", "]": "[", "}": "{", ">": "<"}
_REACH = 256  # characters before the edit searched for the opener


def glued(checker: Checker, edit: Edit, rest: str, floor: int) -> Edit:
    """`edit` at `checker`'s cut (the draft's `rest` after it), with the blanks before it moved
    past the closer it inserts, or deleted with it where it leaves one (blanks it inserts too),
    when the closer's opener has none after it, no further back than character `floor`, and
    where the draft fits as far after it as after `edit`; else `edit`. The checker is left
    where it was."""
    committed = checker.text
    start = len(committed) - edit.back
    text = committed[max(0, start - _REACH) : start]
    blanks = len(text) - len(text.rstrip(" \t"))
    spaces = text[len(text) - blanks :]
    after = rest[edit.skip :]
    inserts_closer = bool(edit.insert.strip(" \t"))
    closer = edit.insert if inserts_closer else after[:1]
    pads = bool(edit.insert) and not inserts_closer  # blanks inserted before the closer
    if not (blanks or pads) or start - blanks < floor or not _opener_glued(text, blanks, closer):
        return edit
    moved = replace(
        edit,
        back=edit.back + blanks,
        deleted=spaces + edit.deleted,
        insert=edit.insert + spaces if inserts_closer else "",
    )
    fitting = moved.insert + after[: edit.fits]
    return moved if fits_at(checker, start - blanks, fitting) == len(fitting) else edit


def _opener_glued(text: str, blanks: int, closer: str) -> bool:
    """Whether the bracket that `closer` after `text` (which ends in `blanks` blanks) would close
    stands in `text` with no blank after it."""
    opener = _OPENERS.get(closer)
    depth = 0
    for at in range(len(text) - blanks - 1, -1, -1):
        if text[at] == closer:
            depth += 1
        elif text[at] == opener and depth:
            depth -= 1
        elif text[at] == opener:
            return not text[at + 1 : at + 2].isspace()
    return False


_LINE_ENDERS = frozenset(",;")  # what ends a line's item, in most notations
_BLANKS = re.compile(r"[ \t]*(?:\r?\n[ \t]*)*\Z")  # blanks and line ends before the cut
_WORD_END = re.compile(r"(?<=\S)[ \t]")  # where a word of a line ends


def ended(checker: Checker, edit: Edit, rest: str, floor: int) -> Edit:
    """`edit`, where it only inserts separators or terminators after blanks, with them put
    before the blanks, right after the word they end, where the draft fits as far after that as
    after `edit`; after a line end, else after the last word of the line before after which it
    does (a line comment after it: `1; // id`). No further back than character `floor`. Else
    `edit`. The checker is left where it was."""
    committed = checker.text
    if edit.back or edit.skip or not edit.insert or not set(edit.insert) <= _LINE_ENDERS:
        return edit
    blanks = _BLANKS.search(committed, max(floor, len(committed) - _REACH))
    if blanks is None or not blanks.group():
        return edit
    places = [blanks.start()]
    if "\n" in blanks.group():
        line = max(floor, committed.rfind("\n", 0, blanks.start()) + 1)
        places += reversed([m.start() for m in _WORD_END.finditer(committed, line, blanks.start())])
    for at in places:
        moved = replace(
            edit,
            back=len(committed) - at,
            deleted=committed[at:],
            insert=edit.insert + committed[at:],
        )
        fitting = moved.insert + rest[: edit.fits]
        if fits_at(checker, at, fitting) == len(fitting):
            return moved
    return edit


def fits_at(checker: Checker, at: int, text: str) -> int:
    """How many characters of `text` fit after the checker's first `at` characters; the checker
    is left at the text it holds."""
    held = checker.text[at:]
    checker.rollback(at)
    fits = checker.fits(text)
    checker.feed(held)
    return fits
