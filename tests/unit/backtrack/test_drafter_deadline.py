"""GuideOptions.max_seconds holds across a drafter call (backtrack.run.deadline): a sync drafter
that blocks, before its reply or between chunks, is left in its thread at the bound; an async one
that never returns is cancelled. The run goes on as when a chunk comes past the bound: the draft
ends as "length" with what it committed, then the target completes (here the runs opt out of the
completion, so a target that is used fails the test). Bounds are generous: a 1 s limit, 30 s to
end."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from backtrack import Grammar, GuideResult, aguide, guide

JSON = Grammar.load("json")
LIMIT = 1.0
BOUND = 30.0
HEAD = '{"a": [1, 2'  # what the drafters below write before they block


class NoTarget:
    """A target whose use fails the test: with complete_on_budget=False none is needed."""

    def session(self, prompt: Any) -> Any:
        raise AssertionError("the local target was asked for a correction")


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """What a blocked sync drafter waits for: set when the test ends, so no thread outlives it."""
    event = threading.Event()
    yield event
    event.set()


OPTIONS: dict[str, Any] = {"max_seconds": LIMIT, "complete_on_budget": False, "target": NoTarget()}


def guide_within_bound(fn: Any) -> GuideResult:
    """guide(fn) in a thread; the test fails if it has not ended after BOUND seconds."""
    results: list[GuideResult | BaseException] = []

    def run() -> None:
        try:
            results.append(guide(fn, JSON, prompt="p", **OPTIONS))
        except BaseException as exc:
            results.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(BOUND)
    assert not thread.is_alive(), f"guide() still running {BOUND} s past a {LIMIT} s max_seconds"
    (result,) = results
    assert isinstance(result, GuideResult), result
    return result


def assert_ended_with(result: GuideResult, text: str) -> None:
    assert result.text == text  # every committed character kept
    assert result.stop_reason == "max_corrections"  # the budget is spent: the target would complete
    assert [r.kind for r in result.trace.rounds] == ["draft"]
    assert result.trace.rounds[0].accepted_chars == len(text)


def test_a_sync_drafter_that_blocks_before_its_reply_ends_at_max_seconds(
    release: threading.Event,
):
    def stuck(prompt: str, prefix: str) -> str:
        release.wait()
        return HEAD + "]}"

    assert_ended_with(guide_within_bound(stuck), "")


def test_a_sync_drafter_that_blocks_between_chunks_keeps_what_it_wrote(release: threading.Event):
    closed = threading.Event()

    def stuck(prompt: str, prefix: str) -> Iterator[str]:
        try:
            yield HEAD
            release.wait()
            yield "]}"
        finally:
            closed.set()

    assert_ended_with(guide_within_bound(stuck), HEAD)
    assert not closed.is_set()  # the drafter's thread is still blocked, left to itself
    release.set()
    assert closed.wait(BOUND)  # once its call returns, the thread closes the stream


def aguide_within_bound(fn: Any) -> GuideResult:
    async def run() -> GuideResult:
        return await asyncio.wait_for(aguide(fn, JSON, prompt="p", **OPTIONS), BOUND)

    return asyncio.run(run())


def test_an_async_drafter_that_never_returns_is_cancelled_at_max_seconds():
    cancelled: list[bool] = []

    async def stuck(prompt: str, prefix: str) -> str:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return HEAD

    assert_ended_with(aguide_within_bound(stuck), "")
    assert cancelled == [True]


def test_an_async_drafter_that_stops_between_chunks_keeps_what_it_wrote():
    async def stuck(prompt: str, prefix: str) -> AsyncIterator[str]:
        yield HEAD
        await asyncio.Event().wait()
        yield "]}"

    assert_ended_with(aguide_within_bound(stuck), HEAD)
