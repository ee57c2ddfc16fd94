"""A separator or terminator the draft left out at a line's end, told by its layout.

`margin: 0` then `padding: 0;` on the next line: CSS reads on from the first line into the next
(a value of terms, `0 padding`) and the draft slips only at the second line's `:`, where the
cheapest edit reads it another way (`padding = 0`, as another notation's `:` costs nothing).
The layout says otherwise: the line the cut is on ends with the mark (`;`, `,`; closers after
it aside) that the line before it, which ends an item (a word, a number, a closing quote or
bracket), lacks. The mark goes at the end of that line; where the draft then reads on through
the cut's line, that edit costs nothing and every other edit at the cut one more
(backtrack.repair.candidates). A repair there reads the cut's line to its end (`line_through`)."""

from __future__ import annotations

_MARKS = ",;"
_REACH = 256  # characters of the cut's line read before the cut
_ITEM_END = "\"')]}"  # besides letters and digits, what an item's text may end with


def item_end(committed: str, floor: int) -> int | None:
    """Where the line before the cut's ends (its content's end), where that line ends an item,
    at or after character `floor`; else None."""
    line = committed.rfind("\n", max(0, len(committed) - _REACH)) + 1
    if not line:
        return None
    end = len(committed[:line].rstrip())
    last = committed[end - 1 : end]
    return end if end > floor and (last.isalnum() or last in _ITEM_END) else None


def line_end(committed: str, rest: str, floor: int) -> tuple[int, str] | None:
    """Where the line before the cut's ends and the mark left out there (`item_end`), where the
    draft's `rest` holds the end of the cut's line and that line ends with the mark; else
    None."""
    end = item_end(committed, floor)
    newline = rest.find("\n")
    if end is None or newline < 0:
        return None
    line = committed[committed.rfind("\n") + 1 :] + rest[:newline]
    mark = line.rstrip(" \t\r)]}")[-1:]
    return (end, mark) if mark and mark in _MARKS else None


def line_through(committed: str, rest: str, floor: int, reach: int) -> int:
    """How much of the draft's `rest` a repair reads for the layout: through the cut's line's
    end, where the line before it ends an item and that end is within `reach`; else 0."""
    if item_end(committed, floor) is None:
        return 0
    return rest.find("\n", 0, reach) + 1
