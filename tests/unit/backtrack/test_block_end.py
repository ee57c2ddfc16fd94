"""Where the draft's layout ended the block of a bracket left open (backtrack.repair.block_end)."""

from __future__ import annotations

import pytest

from backtrack.repair.block_end import block_end

LIST = "digraph g {\n\tnode [shape=plaintext;\n\t"


@pytest.mark.parametrize(
    ("committed", "expected"),
    [
        # The next line, as deep as the list's: before the `;` ending the list's line.
        (LIST + "A1 -", (len(LIST) - 3, "]")),
        ('{\n  "a": [1, 2,\n  "b"', (len('{\n  "a": [1, 2'), "]")),
        # Less deep, and a bracket opened before the text read (its closer on the way is no
        # mismatch): the innermost still open.
        (
            "x [\n  a = [1,\n    2\n  ];\n  b = [3,\nc",
            (len("x [\n  a = [1,\n    2\n  ];\n  b = [3"), "]"),
        ),
    ],
)
def test_a_line_no_deeper_than_the_brackets_shows_where_its_block_ended(
    committed: str, expected: tuple[int, str]
) -> None:
    assert block_end(committed, 0) == expected


@pytest.mark.parametrize(
    "committed",
    [
        "graph [\tfontsize = 36,\n\t\tsize = ",  # deeper: the list goes on
        '{\n  "a": [1, 2]\n  "b"',  # the list closed; the brace's line less deep
        "digraph g {\n\tnode [shape=plaintext; A1 -",  # one line: a repair's own reach
        LIST + "]",  # the line starts with a closer
        '{\n  "a": "[",\n  "b"',  # a bracket in a string
        "x [\n" + "a " * 300,  # the cut's line longer than the reach: not read
        "x [\n" + "  a\n" * 200 + "b",  # the bracket opened further back than the reach
    ],
)
def test_no_place_where_the_layout_shows_none(committed: str) -> None:
    assert block_end(committed, 0) is None


def test_the_place_is_not_before_the_floor() -> None:
    committed = '{"a": [1,\n"b"'
    assert block_end(committed, 0) == (len('{"a": [1'), "]")
    assert block_end(committed, len(committed) - 2) is None
