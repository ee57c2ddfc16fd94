"""Where a correction hands back to the draft's rest (backtrack.run.hand_back): after the quoted
value the rest opens with, where the correction wrote a value in its place; never where it
wrote blanks alone (SmolLM2's restaurant: a correction's `\\n    }` was cut to its blanks, a
second address's `"500 Elm Street"` skipped as if replaced, and the API asked again)."""

from __future__ import annotations

from backtrack import Grammar
from backtrack.run.hand_back import HandBack, quoted_end

JSON = Grammar.load("json")


def _kept(committed: str, rest: str, written: str) -> int:
    checker = JSON.checker()
    assert checker.feed(committed) == len(committed)
    return HandBack(rest, reply_ended=True).kept(checker, written)


def test_a_quoted_value_ends_at_its_closing_quote_on_its_line() -> None:
    assert quoted_end('"Minimum Salary",\n  "b": 1') == len('"Minimum Salary"')
    assert quoted_end('"a \\" b"  , c') == len('"a \\" b"  ')  # an escaped quote; blanks after
    assert quoted_end("'x' y") == 4
    assert quoted_end('"open\n"') is None and quoted_end("3, 4") is None


def test_a_correction_is_cut_where_the_rest_goes_on_after_the_value_it_replaced() -> None:
    assert _kept('{"a": ', '"many", "c": 1}', "7,") == 1  # `7`, then `, "c": 1}`
    assert _kept('{"a": ', '"many", "c": 1}', "7") == 1


def test_blanks_replace_no_value() -> None:
    # After `\n` alone the rest would go on past its quoted value (`, "c": 1}`), but blanks
    # replace nothing: the correction, which closes the text, is kept whole.
    assert _kept('{"a": {"b": 1}', '"x", "c": 1}', "\n}") == 2
