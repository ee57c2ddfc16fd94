"""Hostile inputs to guide(): each bounded in work and memory; only the last needs the local model.

Drafters here are plain functions that replay fixed text; none reads the grammar. A target that
must not be used raises, so a test fails if the loop asks for a correction it should not need.
"""

from __future__ import annotations

import asyncio
import threading
import tracemalloc
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from backtrack import Grammar, GuideResult, ProviderError, TargetError, aguide, guide
from backtrack.run.answer_start import MAX_LIVE, SLICE
from backtrack.run.draft import MAX_CHARS_PER_TOKEN
from backtrack.run.driver import Run
from backtrack.run.guide import CHECK_SLICE
from backtrack.run.loop import GuideLoop
from backtrack.run.options import GuideOptions
from grammars.checker import Checker
from providers.errors import MaskedCause
from tests.support.scripted import ScriptedTarget

JSON = Grammar.load("json")


class NoTarget:
    """A target whose use fails the test: these runs must never need a correction."""

    def session(self, prompt: Any) -> Any:
        raise AssertionError("the local target was asked for a correction")


def run_guide(asynchronous: bool, *args: Any, **kwargs: Any) -> GuideResult:
    """guide(), or aguide() run to its end: the same checks hold for both."""
    if asynchronous:
        result: GuideResult = asyncio.run(aguide(*args, **kwargs))
        return result
    return guide(*args, **kwargs)


both = pytest.mark.parametrize("asynchronous", [False, True], ids=["guide", "aguide"])


def dropped(result: GuideResult) -> str:
    return "".join(s.text for s in result.trace.spans if s.origin == "dropped")


# -- item 6: a drafter that never ends ------------------------------------------------------------


def test_a_drafter_that_never_ends_is_bounded_by_the_draft_budget() -> None:
    calls: list[int] = []

    def endless(prompt: str, prefix: str) -> Iterator[str]:
        calls.append(len(prefix))
        yield "["
        while True:
            yield "1, "

    settings = {"max_draft_tokens": 16, "max_rounds": 3, "max_corrections": 0}
    result = guide(
        endless, JSON, prompt="p", target=NoTarget(), complete_on_budget=False, **settings
    )
    budget = 16 * MAX_CHARS_PER_TOKEN
    first = result.trace.rounds[0]
    assert (first.ended, first.accepted_chars) == ("drafter_ended", budget)  # cut off at budget
    assert 2 <= len(calls) <= 3  # the next rounds go on from it, up to the round budget
    inserted = sum(len(e.inserted) for r in result.trace.rounds for e in r.repairs)
    assert len(result.text) <= 3 * budget + inserted  # what was read, and the repairs' edits
    assert not result.valid


# -- item 7: the preamble search is linear ---------------------------------------------------------


class Counted:
    """Counts every character any Checker is fed while it is installed."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.chars = 0
        original = Checker.feed

        def feed(checker: Checker, chunk: str) -> int:
            self.chars += len(chunk)
            return original(checker, chunk)

        monkeypatch.setattr(Checker, "feed", feed)


@pytest.mark.parametrize("chunk", [4, 1000, 10**6])
def test_each_received_character_is_checked_a_bounded_number_of_times(
    chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    answer = '{"a": [1, 2, 3], "b": "x"}'
    preamble = "Sure! Here is the value you asked for, with a word on it:" * 400  # 23 KB
    reply = preamble + answer

    def draft(prompt: str, prefix: str) -> Iterator[str]:
        yield from (reply[i : i + chunk] for i in range(0, len(reply), chunk))

    counted = Counted(monkeypatch)
    settings = {"max_preamble_chars": len(reply), "max_draft_tokens": 10**4}
    result = guide(draft, JSON, prompt="p", target=NoTarget(), **settings)  # type: ignore[arg-type]
    assert result.text == answer
    assert dropped(result) == preamble
    # Every offset that may start an answer costs at most a slice; MAX_LIVE checkers are alive.
    assert counted.chars <= (MAX_LIVE + SLICE + 2) * len(reply)


def test_the_answer_is_found_after_pages_of_reasoning_by_default() -> None:
    """Issue 24: a 216 KB preamble before `{"a": 1}` came back as the local model's `1.1`; the
    answer's start is now sought in the whole first draft, streamed as it comes."""
    reasoning = "Let me think about this. The user wants a JSON object with the key a. " * 3000
    reply = reasoning + '\n{"a": 1}'

    def draft(prompt: str, prefix: str) -> Iterator[str]:
        yield from (reply[i : i + 64] for i in range(0, len(reply), 64))

    result = guide(draft, JSON, prompt="p", target=NoTarget(), max_draft_tokens=10**5)
    assert (result.text, result.api_calls, result.corrections) == ('{"a": 1}', 1, 0)
    assert [d.reason for d in result.drops] == ["preamble"]


def test_no_character_past_the_preamble_limit_is_searched(monkeypatch: pytest.MonkeyPatch) -> None:
    prose = "No JSON here, only words and more words. " * 25_000  # 1 MB in one chunk
    counted = Counted(monkeypatch)
    loop = GuideLoop(JSON, "p", GuideOptions(max_preamble_chars=2000, max_draft_tokens=10**5))
    loop.draft_request()
    loop.receive(prose)
    assert counted.chars <= (MAX_LIVE + SLICE + 2) * (2000 + SLICE) + len(prose)


def long_doc(items: int) -> str:
    return "[" + ", ".join(f'{{"id": {i}, "name": "item {i}"}}' for i in range(items)) + "]"


@pytest.mark.anyio
@pytest.mark.parametrize("preamble", ["", "Here is the list you asked for, in full. " * 600])
async def test_a_huge_chunk_does_not_hold_the_event_loop(
    preamble: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Checking is CPU work (a few microseconds a character): a drafter's megabyte chunk is
    checked in a worker thread, in slices, each checked by the engine in pieces that give the GIL
    back between them (test_grammar_limits), so other tasks run meanwhile. Seen, not timed: how
    often the loop gets a turn depends on this machine's load and the engine's speed, so the test
    records where each slice is checked and how long it is."""
    doc = long_doc(1500)  # 36 KB, and 25 KB of prose before it in one case
    reply = preamble + doc

    async def one_chunk(prompt: str, prefix: str) -> AsyncIterator[str]:
        yield reply

    checked: list[tuple[int, int]] = []  # (thread, characters) of each call
    receive = Run.receive

    def recorded(run: Run, chunk: str, stream: Any) -> bool:
        checked.append((threading.get_ident(), len(chunk)))
        return receive(run, chunk, stream)

    monkeypatch.setattr(Run, "receive", recorded)
    settings = {"max_draft_tokens": 10**5, "max_preamble_chars": len(reply) + 1}
    result = await aguide(one_chunk, JSON, prompt="p", target=NoTarget(), **settings)  # type: ignore[arg-type]
    assert result.text.strip() == doc and dropped(result) + result.text == reply
    assert sum(size for _, size in checked) == len(reply)
    assert max(size for _, size in checked) == CHECK_SLICE
    assert threading.get_ident() not in {thread for thread, _ in checked}


# -- item 12 (the loop's part): memory of a long draft -------------------------------------------


@pytest.mark.parametrize(
    "items",
    [pytest.param(2_000, id="82KB"), pytest.param(40_000, id="1.7MB", marks=pytest.mark.slow)],
)
def test_a_long_valid_draft_costs_a_small_multiple_of_its_size(items: int) -> None:
    listed = ", ".join(f'{{"id": {i}, "name": "item number {i}"}}' for i in range(items))
    document = f"[{listed}]"

    def draft(prompt: str, prefix: str) -> Iterator[str]:
        yield from (document[i : i + 4] for i in range(0, len(document), 4))

    guide(lambda prompt, prefix: "[1]", JSON, prompt="p")  # imports done before measuring
    tracemalloc.start()
    try:
        result = guide(draft, JSON, prompt="p", target=NoTarget(), max_draft_tokens=10**6)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.text == document
    assert len(result.trace.spans) == 1  # one span for the whole draft, not one per chunk
    assert peak <= 6 * len(document)  # 44 bytes per byte with a Span and a str per chunk


# -- item 14: bad arguments fail before any call ---------------------------------------------------


@both
@pytest.mark.parametrize("prompt", [None, 3, ["a", "b"], [{"content": "no role"}], b"bytes"])
def test_a_bad_prompt_is_refused_before_any_call(prompt: Any, asynchronous: bool) -> None:
    calls: list[str] = []

    def draft(prompt: Any, prefix: str) -> str:
        calls.append(prefix)
        return "{}"

    with pytest.raises(TypeError, match="prompt"):
        run_guide(asynchronous, draft, JSON, prompt=prompt, target=NoTarget())
    assert calls == []


@both
@pytest.mark.parametrize("attempts", [0, -1, 1.5, True])
def test_max_attempts_must_be_a_whole_number_of_at_least_one(
    attempts: Any, asynchronous: bool
) -> None:
    calls: list[str] = []

    def draft(prompt: str, prefix: str) -> str:
        calls.append(prefix)
        return "{}"

    with pytest.raises(ValueError, match="max_attempts"):
        run_guide(asynchronous, draft, JSON, prompt="p", target=NoTarget(), max_attempts=attempts)
    assert calls == []


# -- item 15: an error is not its own cause ------------------------------------------------------


@both
@pytest.mark.parametrize("error", [ProviderError("down", retryable=False), KeyError("boom")])
def test_the_raised_error_is_not_its_own_cause(error: Exception, asynchronous: bool) -> None:
    def draft(prompt: str, prefix: str) -> Iterator[str]:
        yield '{"a": '
        raise error

    with pytest.raises(ProviderError) as caught:
        run_guide(asynchronous, draft, JSON, prompt="p", target=NoTarget(), max_attempts=1)
    assert caught.value.__cause__ is not caught.value
    assert caught.value.partial.text == '{"a": '
    if not isinstance(error, ProviderError):
        # The original is named in the chain, as a masked copy (it could quote a key).
        cause = caught.value.__cause__
        assert isinstance(cause, MaskedCause)
        assert str(cause) == "builtins.KeyError: 'boom'"


# -- item 1 (the loop's part): what alignment strips is in the trace -------------------------------


def test_text_the_aligner_stripped_is_a_dropped_span_where_it_was_removed() -> None:
    loop = GuideLoop(JSON, "p", GuideOptions())
    loop.draft_request()
    loop.receive('{"name": ')
    loop.end_draft(finish_reason="length")
    loop.draft_request()
    repeat = '{"name": '
    loop.receive('"Felix"}', stripped=repeat)
    loop.end_draft(finish_reason="stop", stripped=repeat)
    result = loop.result()
    assert result.text == '{"name": "Felix"}'
    assert [(s.text, s.origin, s.round) for s in result.trace.spans] == [
        ('{"name": ', "draft", 0),
        (repeat, "dropped", 1),
        ('"Felix"}', "draft", 1),
    ]


# -- item 13 (the loop's part): a function drafter's error never shows a key ---------------------


def test_a_key_in_a_function_drafters_error_is_masked_everywhere(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    key = "zq7-secret-value-9f8e7d6c5b4a"
    monkeypatch.setenv("MY_SERVICE_API_KEY", key)

    def draft(prompt: str, prefix: str) -> Iterator[str]:
        yield '{"a": '
        raise RuntimeError(f"auth failed for key {key}")

    with pytest.raises(ProviderError) as caught:
        guide(draft, JSON, prompt="p", target=NoTarget(), max_attempts=1)
    shown = [str(caught.value), repr(caught.value), caught.value.partial.to_html()]
    shown += [r.error or "" for r in caught.value.partial.trace.rounds]
    for text in shown:
        assert key not in text
    assert "***" in str(caught.value)


class FailingTarget(ScriptedTarget):
    """A target whose every correction fails, as a model out of memory would."""

    def correct(self, text: str, grammar: Grammar, **options: Any) -> Any:
        raise TargetError("the local target failed: CUDA out of memory")


@both
def test_a_target_error_ends_the_run_with_the_committed_text(asynchronous: bool) -> None:
    """A correction the target cannot make raises TargetError carrying the partial result:
    nothing committed is lost."""
    committed = "[" + "1, " * 20 + "1"
    draft = committed + "}"

    def drafter(prompt: Any, prefix: str) -> Iterator[str]:
        yield draft[len(prefix) :]

    with pytest.raises(TargetError, match="out of memory") as info:
        # Without repairs: the stray "}" goes to the target (an edit would make it "]").
        run_guide(asynchronous, drafter, JSON, prompt="p", target=FailingTarget(), repair_window=0)
    partial = info.value.partial
    assert isinstance(partial, GuideResult)
    assert (partial.text, partial.stop_reason, partial.valid) == (committed, "error", False)
    last = partial.trace.rounds[-1]
    assert (last.kind, last.ended) == ("correction", "error")
    assert last.error is not None and "out of memory" in last.error


@both
def test_a_prompt_past_the_targets_context_ends_the_run_with_the_committed_text(
    asynchronous: bool, target: Any
) -> None:
    """Drafts are held to the target's context (backtrack.run.context), but only the API writes
    where the prompt alone outgrows SmolLM2's 8,192 tokens: the correction has no room, and the
    run ends `context_full` with what was committed (it raised TargetError from the model)."""
    committed = "[" + "1, " * 20 + "1"
    draft = committed + "}"

    def drafter(prompt: Any, prefix: str) -> Iterator[str]:
        yield draft[len(prefix) :]

    prompt = "numbers " * 9000
    result = run_guide(asynchronous, drafter, JSON, prompt=prompt, target=target, repair_window=0)
    assert (result.text, result.stop_reason, result.valid) == (committed, "context_full", False)
    assert [(r.kind, r.ended) for r in result.trace.rounds] == [("draft", "cut")]
