"""A closing bracket an edit leaves after blanks, spaced as its opener is: where nothing stands
between the opener and the text after it, nothing stands between the text and the closer
(`($x: Boolean ){`, a `)` inserted, as `($x: Boolean) {`; `<img alt="x" />`, its `/` deleted,
as `<img alt="x">`; `[1, 2, ]`, its comma deleted, as `[1, 2]`). The blanks go after an
inserted closer, or with the deletion. Where the opener has a blank after it (`{ id }`), or is
not found near, the edit stays as it was."""

from __future__ import annotations

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
    checker.rollback(start - blanks)
    fits = checker.fits(fitting)  # the state is unchanged
    checker.feed(committed[start - blanks :])
    return moved if fits == len(fitting) else edit


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
