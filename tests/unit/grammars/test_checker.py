"""Checker: incremental feeds agree with one check; rollback; cuts; cost linear in new bytes."""

from __future__ import annotations

import json
import random
import time

import pytest

from grammars.grammar import Grammar

JSON = Grammar.load("json")

DOC = json.dumps(
    {
        "名前": "日本語テキスト 😀👍🏽 e\u0301",
        "items": [{"id": i, "tag": "ü" * i, "ok": i % 2 == 0, "x": None} for i in range(6)],
        "nested": {"a": [1.5, -2e-3, {"b": "中文"}], "c": "👩\u200d👩\u200d👧"},
    },
    ensure_ascii=False,
    indent=1,
)

TEXTS = {
    "whole": DOC,
    "partial": DOC[: len(DOC) // 2],
    "cut-early": '{"a": 1,} and more',
    "cut-late": DOC[:-3] + "?}" + DOC[-3:],
    "cut-after-cjk": '["日本", 01, "x"]',
    "empty": "",
    "junk-after": DOC + "trailing prose",
}
CASES = [pytest.param(text, id=name) for name, text in TEXTS.items()]


def split(text: str, rng: random.Random, most: int) -> list[str]:
    """`text` cut at random character offsets into pieces of 1 to `most` characters."""
    pieces, i = [], 0
    while i < len(text):
        n = rng.randint(1, most)
        pieces.append(text[i : i + n])
        i += n
    return pieces


def feed_all(pieces: list[str]):
    checker = JSON.checker()
    taken = [checker.feed(piece) for piece in pieces]
    return checker, taken


def assert_same_as_check(checker, text: str) -> None:
    result = JSON.check(text)
    assert checker.text == result.prefix
    assert (checker.chars, checker.bytes) == (result.chars, result.bytes)
    assert checker.cut == (not result.valid)
    assert checker.complete == result.complete
    assert checker.expected() == result.expected


@pytest.mark.parametrize("text", CASES)
@pytest.mark.parametrize(
    "how",
    [
        pytest.param("one", id="one-chunk"),
        pytest.param("chars", id="1-char"),
        pytest.param("small", id="random-1-8"),
        pytest.param("large", id="random-1-100"),
    ],
)
def test_chunks_agree_with_check(text, how):
    rng = random.Random(f"{how}:{text}")
    if how == "one":
        pieces = [text] if text else []
    elif how == "chars":
        pieces = list(text)
    else:
        pieces = split(text, rng, 8 if how == "small" else 100)
    assert "".join(pieces) == text
    checker, taken = feed_all(pieces)
    assert_same_as_check(checker, text)
    assert sum(taken) == checker.chars
    # every piece before the cut is taken whole; the one holding the cut partly; the rest not at all
    full = [n == len(p) for n, p in zip(taken, pieces, strict=True)]
    first_short = full.index(False) if False in full else len(pieces)
    assert all(full[:first_short])
    assert all(n == 0 for n in taken[first_short + 1 :])


@pytest.mark.parametrize("seed", range(5))
def test_random_drafts_with_errors(seed):
    """Random edits of a valid document, fed in random pieces, agree with one check."""
    rng = random.Random(seed)
    chars = list(DOC)
    for _ in range(3):
        chars.insert(rng.randrange(len(chars)), rng.choice(["}", ",", "é", "😀", "x", '"', " "]))
    text = "".join(chars)
    checker, _ = feed_all(split(text, rng, 16))
    assert_same_as_check(checker, text)


def test_feed_returns_chars_taken_and_stops_after_cut():
    checker = JSON.checker()
    assert checker.feed('{"日本": ') == 7
    assert checker.feed("1,}") == 2
    assert checker.cut
    assert (checker.text, checker.chars, checker.bytes) == ('{"日本": 1,', 9, 13)
    assert checker.feed('"b": 2}') == 0
    assert checker.feed("") == 0
    assert checker.text == '{"日本": 1,'


def test_feed_cut_inside_a_multibyte_character():
    # 本 = e6 9c ac, 朝 = e6 9c 9d: the matcher takes two bytes of 朝, the checker none
    checker = Grammar.from_regex("日本+").checker()
    assert checker.feed("日") == 1
    assert checker.feed("本本朝") == 2
    assert (checker.chars, checker.bytes, checker.cut) == (3, 9, True)
    checker.rollback(3)
    assert checker.allows("本")
    assert not checker.allows("朝")
    assert checker.feed("本") == 1
    assert checker.complete


def test_empty_feed_does_not_cut():
    checker = JSON.checker()
    assert checker.feed("") == 0
    assert not checker.cut
    assert checker.feed("[1]") == 3
    assert checker.complete


@pytest.mark.parametrize(
    "text", [pytest.param(TEXTS["whole"], id="whole"), pytest.param(TEXTS["cut-late"], id="cut")]
)
def test_rollback_then_refeed(text):
    checker = JSON.checker()
    checker.feed(text)
    accepted = checker.text
    rng = random.Random(7)
    points = sorted({0, len(accepted), *(rng.randrange(len(accepted) + 1) for _ in range(10))})
    for at in reversed(points):
        checker.rollback(at)
        assert not checker.cut
        fresh = JSON.checker()
        fresh.feed(accepted[:at])
        assert (checker.text, checker.chars, checker.bytes) == (
            fresh.text,
            fresh.chars,
            fresh.bytes,
        )
        assert checker.complete == fresh.complete
        assert checker.expected() == fresh.expected()
    # from the start again, in pieces: the same result as the first time
    for piece in split(text, rng, 50):
        checker.feed(piece)
    assert_same_as_check(checker, text)


def test_rollback_after_cut_then_fix():
    checker = JSON.checker()
    assert checker.feed('{"😀": 1,}') == 8
    assert checker.cut
    checker.rollback(7)  # before the comma
    assert checker.text == '{"😀": 1' and checker.bytes == 10
    assert checker.feed("}") == 1
    assert checker.complete and not checker.cut


def test_rollback_to_same_point_is_a_no_op():
    checker = JSON.checker()
    checker.feed("[1, 2")
    checker.rollback(checker.chars)
    assert checker.feed("]") == 1
    assert checker.complete


def test_rollback_after_the_grammar_has_ended():
    checker = Grammar.from_regex("ab").checker()
    assert checker.feed("abc") == 2
    assert checker.complete and checker.cut
    checker.rollback(1)
    assert not checker.complete
    assert checker.feed("b") == 1
    assert checker.complete


@pytest.mark.parametrize("chars", [pytest.param(-1, id="negative"), pytest.param(4, id="past-end")])
def test_rollback_bounds(chars):
    checker = JSON.checker()
    checker.feed("[1,")
    with pytest.raises(ValueError, match=f"cannot roll back to character {chars} of 3"):
        checker.rollback(chars)
    assert checker.text == "[1,"
    assert checker.feed("2]") == 2


def test_feed_takes_only_str():
    with pytest.raises(TypeError, match="feed\\(\\) takes str, not bytes"):
        JSON.checker().feed(b"[1]")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("probe", "fed", "chunk", "answer"),
    [
        pytest.param("allows", "", '{"a"', True, id="allows-start"),
        pytest.param("allows", "", "}", False, id="allows-bad-start"),
        pytest.param("allows", '{"a": 1', "", True, id="allows-empty-chunk"),
        pytest.param("allows", '{"a": 1', ", ", True, id="allows-comma"),
        pytest.param("allows", '{"a": 1', "}x", False, id="allows-junk-after-end"),
        pytest.param("allows", '{"a": "', "日本😀", True, id="allows-multibyte"),
        pytest.param("allows", '{"a": 1,}', '"b": 2}', True, id="allows-after-cut"),
        pytest.param("allows", '{"a": 1,}', "}", False, id="allows-after-cut-same-bad-char"),
        pytest.param("free_after", "{", '"', True, id="free-after-opens-a-string"),
        pytest.param("free_after", '{"a', '"', False, id="free-after-closes-it"),
        pytest.param("free_after", '{"a": 1', ",", False, id="free-after-structure"),
        pytest.param("free_after", '{"a": "x', "y}z", True, id="free-after-more-content"),
        pytest.param("free_after", "{", '"a": 1 ]', False, id="free-after-as-much-as-fits"),
    ],
)
def test_probes_leave_state_unchanged(probe, fed, chunk, answer):
    checker = JSON.checker()
    checker.feed(fed)
    before = (checker.text, checker.chars, checker.bytes, checker.cut, checker.complete)
    assert getattr(checker, probe)(chunk) is answer
    assert (checker.text, checker.chars, checker.bytes, checker.cut, checker.complete) == before
    assert checker.expected() == JSON.check(checker.text).expected


@pytest.mark.parametrize(
    ("fed", "forced"),
    [
        pytest.param('{"a": t', "rue", id="a-literal-begun"),
        pytest.param('{"a": "x', "", id="free-text"),
        pytest.param('{"a": 1', "", id="a-choice"),
        pytest.param('{"a": ', "", id="a-value"),
    ],
)
def test_forced_is_the_text_the_grammar_leaves_no_choice_for(fed, forced):
    checker = JSON.checker()
    checker.feed(fed)
    assert checker.forced() == forced
    assert checker.text == fed
    if forced:
        assert [chr(b) for b in checker.next_bytes()] == [forced[0]]


def test_forced_leaves_out_a_character_whose_last_bytes_are_a_choice():
    checker = Grammar.from_lark('start: "éa" | "èb" | "ç"').checker()
    assert checker.forced() == ""  # the first byte of é, è and ç is forced, not a character
    checker.feed("é")
    assert checker.forced() == "a"


def test_next_bytes_are_the_bytes_that_feed_takes():
    for fed in ("", '{"a": ', '{"a": "x', '{"a": 1', '{"a": 1}', '["日'):
        checker = JSON.checker()
        checker.feed(fed)
        taken = {b for b in range(256) if checker.fits(bytes([b]).decode("latin-1")) == 1}
        ascii_next = {b for b in checker.next_bytes() if b < 128}
        assert ascii_next == {b for b in taken if b < 128}
        assert (256 in checker.next_bytes()) is checker.complete


def test_allows_agrees_with_feed():
    rng = random.Random(3)
    for piece in split(DOC, rng, 12):
        fresh = JSON.checker()
        fresh.feed(piece)
        checker = JSON.checker()
        assert checker.allows(piece) == (not fresh.cut)


@pytest.mark.parametrize(
    ("pieces", "complete"),
    [
        pytest.param([], False, id="nothing"),
        pytest.param(["[1", "]"], True, id="array"),
        pytest.param(["[1", "]", "]"], True, id="cut-after-complete"),
        pytest.param(["12"], True, id="number-could-go-on"),
        pytest.param(['"a'], False, id="open-string"),
        pytest.param(['{"a": tr'], False, id="partial-literal"),
    ],
)
def test_complete(pieces, complete):
    checker = JSON.checker()
    for piece in pieces:
        checker.feed(piece)
    assert checker.complete is complete


def test_text_is_everything_accepted():
    checker = JSON.checker()
    assert checker.text == ""
    accepted = ""
    for piece in ["[", '"é', "😀", '"', ",", "1]", "]", "2"]:
        accepted += piece[: checker.feed(piece)]
        assert checker.text == accepted  # read after every feed: joined pieces, nothing lost
    assert checker.text == '["é😀",1]'
    assert (checker.chars, checker.bytes) == (8, 12)


def test_checkers_are_independent():
    first, second = JSON.checker(), JSON.checker()
    first.feed("[1")
    assert second.feed("{") == 1
    assert first.feed("]") == 1
    assert first.complete and not second.complete


class CountingMatcher:
    """A matcher proxy that counts the tokens passed to validate and consume."""

    def __init__(self, inner):
        self.inner = inner
        self.tokens = 0

    def validate_tokens(self, tokens):
        self.tokens += len(tokens)
        return self.inner.validate_tokens(tokens)

    def consume_tokens(self, tokens):
        self.tokens += len(tokens)
        return self.inner.consume_tokens(tokens)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def test_feed_work_is_proportional_to_new_bytes():
    """Each feed hands the matcher its own bytes (twice at most), never the text before them."""
    checker = JSON.checker()
    counter = checker._matcher = CountingMatcher(checker._matcher)
    for piece in split(DOC, random.Random(1), 5):
        before = counter.tokens
        checker.feed(piece)
        assert counter.tokens - before <= 2 * len(piece.encode("utf-8"))
    assert checker.complete


@pytest.mark.parametrize(
    ("small", "big"),
    [
        pytest.param(50_000, 500_000, id="500KB"),
        pytest.param(1_000_000, 10_000_000, id="10MB", marks=pytest.mark.slow),
    ],
)
def test_feed_is_linear(small, big):
    """A text ten times as long, fed in 64 KB pieces, costs about ten times as much (quadratic
    would be a hundred): 500 KB against 50 KB daily, 10 MB against 1 MB under `make test`."""
    item = json.dumps({"id": 1, "name": "héllo 日本 😀", "tags": ["a", "b"]}, ensure_ascii=False)

    def draft(size: int) -> str:
        return "[" + ", ".join([item] * (size // (len(item.encode()) + 2))) + "]"

    def cost(text: str) -> float:
        checker = JSON.checker()
        start = time.process_time()
        for i in range(0, len(text), 65536):
            checker.feed(text[i : i + 65536])
        elapsed = time.process_time() - start
        assert checker.chars == len(text) and checker.complete
        assert len(checker.text) == len(text)
        return elapsed

    base = min(cost(draft(small)) for _ in range(3))
    assert cost(draft(big)) < 40 * base


@pytest.mark.parametrize("seed", range(5))
def test_last_line_says_where_the_last_line_starts_and_whether_the_text_is_complete_there(
    seed: int,
) -> None:
    """Kept as text is fed (in pieces with line ends anywhere) and rolled back: the same as
    reading the text afresh."""
    grammar = Grammar.load("csv")
    doc = "id,name\n1,Ann\n2,Bob\n\n3,Cy\n"  # the blank line is refused: the check cuts there
    rng = random.Random(seed)
    checker = grammar.checker()

    def expected() -> tuple[int, bool]:
        start = checker.text.rfind("\n") + 1
        fresh = grammar.checker()
        fresh.feed(checker.text[:start])
        return start, fresh.complete

    at = 0
    while at < len(doc) and not checker.cut:
        size = rng.randint(1, 7)
        checker.feed(doc[at : at + size])
        at += size
        assert checker.last_line() == expected()
        if rng.random() < 0.3:
            checker.rollback(rng.randint(0, checker.chars))
            at = checker.chars
            assert checker.last_line() == expected()
