"""AnswerStart: where the answer starts in a reply that may open with prose.

The offsets it finds, the same however the reply is chunked; and its work: each received character
reaches the grammar's checkers a bounded number of times, in 1-, 4-character or whole chunks, so a
long preamble costs time in its own length, not in its length times the number of chunks.
Counted, not timed.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from backtrack.run.answer_start import MAX_LIVE, SLICE, AnswerStart
from backtrack.run.prose import LineWords, commentary, sentence
from grammars import Grammar
from grammars.checker import Checker

JSON = Grammar.load("json")
ANSWER = '{"a": [1, 2, 3], "b": "x"}'
WHOLE = 10**9  # one chunk, however long the reply
CHUNKS = [1, 2, 3, 4, 7, SLICE - 1, SLICE, SLICE + 1, 2 * SLICE, WHOLE]


def seek(reply: str, chunk: int, *, limit: int = 10**6, grammar: Grammar = JSON) -> int | None:
    """Give `reply` in chunks of `chunk` characters, as backtrack.run.draft does: the first offset
    found."""
    seeker = AnswerStart(grammar, limit=limit)
    for i in range(0, len(reply), chunk):
        found = seeker.seek(reply[i : i + chunk])
        if found is not None:
            return found
    return seeker.finish()


# -- where the answer starts -----------------------------------------------------------------------

OFFSETS = {
    "no preamble": ('{"a": 1}', 0),
    "blank lines first": ('  \n  {"a": 1}', 0),
    "a fence's content": ('Here is the JSON:\n```json\n{"a": 1}\n```\nHope this helps!', 26),
    "a bare fence's content": ('```\n{"a": 1}\n```', 4),
    "prose, then the answer and prose": (f"Sure! {ANSWER}\nAs requested.", 5),
    "numbers in the prose": (f"Values 1, 2 and 3, then {ANSWER}", 24),
    "a long run that prose follows": ("Here it is: [1, 2, 3, 4, 5, 6, 7, 8, 9] and more words", 11),
    "a short answer that runs to the end": ("short: [1]", 6),
    "a fence whose content is not the answer": (f"Use:\n```json\nplain text\n```\n{ANSWER}", 27),
    "no answer": ("No JSON here at all.", None),
    # Rule 4, once the reply is over: a complete value inside a sentence is the answer.
    "a number inside a sentence": ("The answer is 42 apples.", 14),
    "a number a period leaves open": ("The answer is 42.", None),  # `42.` goes on: `42.5`
    "a short run that prose follows": ("short: [1] ok", 6),
    "a value, not a word": ("It is null, or maybe 42.5 then", 21),
}


@pytest.mark.parametrize("chunk", CHUNKS)
@pytest.mark.parametrize(("reply", "offset"), OFFSETS.values(), ids=OFFSETS.keys())
def test_the_answer_starts_at_the_same_offset_however_the_reply_is_chunked(
    reply: str, offset: int | None, chunk: int
) -> None:
    assert seek(reply, chunk) == offset


def test_a_first_chunk_valid_to_its_end_starts_the_answer_at_once() -> None:
    """Rule 2: the text from offset 0 is valid as far as it arrived; the answer starts there and
    a later refusal (`True`) is the loop's cut, not a preamble. A start that reads as prose
    waits for LONG_RUN characters or a line's end: "Here" is a CSV record, and so is "Here is
    the table", but not 'Here is the "people" table:'."""
    seeker = AnswerStart(JSON, limit=10**6)
    assert seeker.seek('{"ok": ') == 0
    csv = AnswerStart(Grammar.load("csv"), limit=10**6)
    reply = 'Here is the "people" table:\n```csv\na,b\n'
    found = next(f for c in reply if (f := csv.seek(c)) is not None)
    assert found == reply.index("a,b")


def test_the_text_is_kept_whole_after_the_answer_is_found_and_past_the_limit() -> None:
    reply = "Sure! " + ANSWER + " and " + "more words " * 100
    for limit in (10**6, 3):
        seeker = AnswerStart(JSON, limit=limit)
        for i in range(0, len(reply), 7):
            seeker.seek(reply[i : i + 7])
        assert (seeker.text, seeker.length) == (reply, len(reply))


def test_an_answer_past_the_limit_is_not_found() -> None:
    reply = "words " * 100 + ANSWER
    assert seek(reply, 4, limit=len(reply) - len(ANSWER)) is None
    assert seek(reply, 4, limit=len(reply)) == len(reply) - len(ANSWER)


# -- the work --------------------------------------------------------------------------------------


class Counted:
    """Counts the characters fed to any Checker, and the checkers made, while installed."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.chars = 0
        self.checkers = 0
        feed, init = Checker.feed, Checker.__init__

        def counted_feed(checker: Checker, chunk: str) -> int:
            self.chars += len(chunk)
            return feed(checker, chunk)

        def counted_init(checker: Checker, *args: Any, **kwargs: Any) -> None:
            self.checkers += 1
            init(checker, *args, **kwargs)

        monkeypatch.setattr(Checker, "feed", counted_feed)
        monkeypatch.setattr(Checker, "__init__", counted_init)


# Prose, and preambles that give the checkers more to do: numbers and brackets are valid starts.
PREAMBLES = {
    "prose": "Sure! Here is the value you asked for, with a word on it: ",
    "numbers": "Values 1, 2, 3, 4 and 5; then 6 and 7 (8) [9] ",
    "brackets": "( [ { ( [ { x } ] ) ",
}


def preamble(kind: str, length: int) -> str:
    """About `length` characters of the kind; the answer will start at its last, a line end."""
    text = PREAMBLES[kind] * (length // len(PREAMBLES[kind]) + 1)
    return text[: length - 2].rstrip() + ":\n"


def counted_seek(monkeypatch: pytest.MonkeyPatch, reply: str, chunk: int) -> Counted:
    with monkeypatch.context() as patch:
        counted = Counted(patch)
        assert seek(reply, chunk) == reply.index(ANSWER) - 1
    return counted


@pytest.mark.parametrize("chunk", [1, 4, WHOLE])
@pytest.mark.parametrize("kind", PREAMBLES)
def test_each_received_character_is_checked_a_bounded_number_of_times(
    kind: str, chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 2,000-character preamble: at most MAX_LIVE checkers read a character as they advance,
    and a new checker reads at most a slice, however the reply is chunked. A search that checked
    all received text again on each 4-character chunk would read each character hundreds of
    times."""
    reply = preamble(kind, 2000) + ANSWER
    counted = counted_seek(monkeypatch, reply, chunk)
    assert counted.chars <= (MAX_LIVE + SLICE) * len(reply)
    assert counted.checkers <= len(reply)  # at most one per offset


@pytest.mark.parametrize("chunk", [4, WHOLE])
@pytest.mark.parametrize("kind", PREAMBLES)
def test_the_work_grows_with_the_preamble_not_faster(
    kind: str, chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Four times the preamble, about four times the characters checked (sixteen if quadratic)."""
    short = counted_seek(monkeypatch, preamble(kind, 2000) + ANSWER, chunk)
    long = counted_seek(monkeypatch, preamble(kind, 8000) + ANSWER, chunk)
    assert long.chars <= 4.5 * short.chars
    assert long.checkers <= 4.5 * short.checkers


def test_nothing_past_the_limit_is_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    prose = "No JSON here, only words and more words. " * 25_000  # 1 MB
    counted = Counted(monkeypatch)
    seeker = AnswerStart(JSON, limit=2000)
    assert seeker.seek(prose) is None
    assert seeker.length == len(prose)
    assert counted.chars <= (MAX_LIVE + SLICE) * (2000 + SLICE)


@pytest.mark.parametrize(
    ("line", "is_sentence"),
    [
        ("This INI file does exactly what you asked; I've kept it short.", True),
        ("Let me know if you'd like any changes!", True),
        ("An association list for Ada: name, born 1815 (dotted pairs), and more.", True),
        ("Here is the list:", True),
        ("born 1815", False),  # two words: too few to tell
        ('5,"Eve" de la Cruz,Oslo', False),  # a CSV record
        ("3,New York,Big Apple", False),
        ("created = 2024-03-18T09:30:00 UTC", False),  # a TOML line
        ("forward 100 right 90", False),  # a statement
        ("repeat 4 {", False),
        ("- [Docs](https://x.io/) to read", False),  # a markdown item starts with a mark
    ],
)
def test_a_sentence_is_mostly_plain_words(line: str, is_sentence: bool) -> None:
    assert sentence(line) is is_sentence


@pytest.mark.parametrize(
    ("text", "reads_as_commentary"),
    [
        ("Here is the JSON:\n```json\n", True),
        ("Sure!\n\n", True),
        ("The sentiment is ", True),
        ("Certainly. Below is the 6502 assembly program.\n\n", True),
        ("setpencolor blue\n", False),  # a command of another dialect: maybe answer text
        ("x = 1; y = 2\n", False),
        ("### Turtle program v2\n\n", True),  # a markdown heading
        ("#define N 4\n", False),
    ],
)
def test_what_is_dropped_before_an_answer_reads_as_commentary_or_not(
    text: str, reads_as_commentary: bool
) -> None:
    assert commentary(text) is reads_as_commentary


@pytest.mark.parametrize("seed", range(3))
def test_a_lines_words_counted_as_it_grows_read_as_the_line_itself(seed: int) -> None:
    """`LineWords` answers `sentence` of the line up to any offset, asked in any order, from
    words it counts once (a long first line is not read again at every decision)."""
    rng = random.Random(seed)
    words = ["Let", "me", "think,", "(about)", "it's", "42", "x=1", "don't", "b.", "\t", "The"]
    for _ in range(200):
        text = "x\n" + " ".join(rng.choice(words) for _ in range(rng.randint(0, 12)))
        line = LineWords(2)
        ends = list(range(2, len(text) + 1))
        rng.shuffle(ends)
        for end in ends:
            assert line.sentence_to(text, end) == sentence(text[2:end]), (text, end)
