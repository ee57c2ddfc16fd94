"""A quotation in a bare field: free text the grammar takes bare up to a quote it refuses there
(`Ann,She said "hi" twice` in CSV, whose bare fields take no quote) is quoted whole, from the
field's start, in that quote, its own quotes escaped as the grammar escapes them there (doubled
in CSV, after a backslash in JSON): `Ann,"She said ""hi"" twice"`. The quotes are the API's text,
not a slip to delete; deleting them is the smaller edit, but changes what the field says.
"""

from __future__ import annotations

from grammars import Checker

MAX_FIELD = 64  # characters back to a field's start, and on to its last quote, at most
_QUOTES = "\"'"
_LINE_ENDS = "\r\n"


def quoted_fields(
    checker: Checker, committed: str, rest: str, floor: int
) -> list[tuple[int, str, int]]:
    """Where the draft goes on with a quote that the free text it is in refuses: (back, insert,
    skip) for the field quoted whole, from its start (the nearest point before the cut, on its
    line and not before `floor`, where the grammar takes that quote) to each place on the line
    after the cut where it may end. Leaves the checker backed off."""
    quote = rest[:1]
    if not quote or quote not in _QUOTES or not checker.in_free_text():
        return []
    base = len(committed)
    back = _field_start(checker, committed, quote, floor)
    if back is None:
        return []
    escape = _escape(checker, quote)
    if escape is None:
        return []
    field = committed[base - back :]
    line = rest[:MAX_FIELD]
    line = line[: min((i for i, c in enumerate(line) if c in _LINE_ENDS), default=len(line))]
    # The field ends after one of its quotes, or where a mark or the line ends it (`the "best"
    # one,`); what fits after each tells.
    ends = {i + 1 for i, char in enumerate(line) if char == quote} | {len(line)}
    ends.update(
        i for i, c in enumerate(line) if i and not (c.isalnum() or c.isspace() or c == quote)
    )
    found = []
    for skip in sorted(ends):
        text = field + line[:skip]
        if escape.startswith("\\"):
            text = text.replace("\\", "\\\\")
        found.append((back, quote + text.replace(quote, escape) + quote, skip))
    return found


def _field_start(checker: Checker, committed: str, quote: str, floor: int) -> int | None:
    """How far back the field starts: the nearest point where the grammar takes `quote` (the
    checker is left there); None past the line's start, `floor` or MAX_FIELD."""
    base = len(committed)
    for back in range(1, min(MAX_FIELD, base - floor) + 1):
        if committed[base - back] in _LINE_ENDS:
            return None
        checker.rollback(base - back)
        if checker.fits(quote) == 1:
            return back
    return None


def quote_escapes(quote: str) -> tuple[str, str]:
    """The ways a grammar writes `quote` inside a string it opens with one: after a backslash
    (JSON, Python), or doubled (CSV, SQL). The backslash first: where two strings may be written
    side by side (Python's `"a" "b"`), a doubled quote ends one and opens the next."""
    return "\\" + quote, quote * 2


def _escape(checker: Checker, quote: str) -> str | None:
    """How the grammar writes `quote` inside a string it opens with one, at the checker
    (`quote_escapes`; None: neither way)."""
    for escape in quote_escapes(quote):
        probe = f"{quote}a{escape}b"
        if checker.fits(probe) == len(probe):
            return escape
    return None


def quoted_pieces(removed: str, insert: str) -> list[tuple[str, bool]] | None:
    """Where `insert` is `removed` in quotes, its own quotes escaped (`quoted_fields`): `insert`
    in pieces, each with whether it is the API's own text (the quotes and the escapes' first
    characters are not); None where it is not."""
    quote = insert[:1]
    if len(insert) < 2 or quote not in _QUOTES or insert[-1] != quote:
        return None
    inner = insert[1:-1]
    for escapes in ((quote * 2,), ("\\" + quote, "\\\\")):
        own, text, at = [False], "", 0
        while at < len(inner):
            size = 2 if inner[at : at + 2] in escapes else 1
            if size == 1 and inner[at] == quote:
                break  # a quote not escaped: not this way of escaping
            own += [False, True] if size == 2 else [True]
            text += inner[at + size - 1]
            at += size
        if at == len(inner) and text == removed:
            return _runs(insert, [*own, False])
    return None


def _runs(text: str, own: list[bool]) -> list[tuple[str, bool]]:
    """`text` in runs of characters alike in `own`."""
    runs: list[tuple[str, bool]] = []
    for char, mine in zip(text, own, strict=True):
        if runs and runs[-1][1] == mine:
            runs[-1] = (runs[-1][0] + char, mine)
        else:
            runs.append((char, mine))
    return runs
