"""The simulated API of benchmarks/bench_latency.py: what a stream costs, on a fake clock.

A piece i of a reply arrives TTFT + i / rate after the call; every call pays the TTFT again; a
stream closed early (a cut) stops paying; a slow reader finds pieces already waiting.
"""

from __future__ import annotations

import pytest

from benchmarks.bench_latency import LatencyAPI, Speed, by_chars

SPEED = Speed("test", ttft=0.5, rate=10.0)
REPLY = "abcdefghijklmnopqrst"  # 5 pieces of 4 characters


class FakeClock:
    """A clock that only sleeping moves."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def api(clock: FakeClock, reply: str = REPLY) -> LatencyAPI:
    return LatencyAPI(lambda prompt, prefix: reply, SPEED, clock=clock, sleep=clock.sleep)


def test_pieces_join_to_the_text() -> None:
    assert by_chars(REPLY) == ["abcd", "efgh", "ijkl", "mnop", "qrst"]
    assert "".join(by_chars("a × b ÷ c")) == "a × b ÷ c"
    assert by_chars("") == []


def test_a_whole_reply_costs_ttft_then_one_piece_per_tick(clock: FakeClock) -> None:
    stream = api(clock)
    assert stream.complete("", "") == REPLY
    assert clock.now == pytest.approx(SPEED.seconds(5)) == pytest.approx(0.5 + 4 / 10)
    assert stream.waited == pytest.approx(clock.now)


def test_every_call_pays_the_ttft(clock: FakeClock) -> None:
    stream = api(clock)
    stream.complete("", "")
    stream.complete("", "")
    assert stream.calls == 2
    assert clock.now == pytest.approx(2 * SPEED.seconds(5))


def test_an_empty_reply_still_costs_the_ttft(clock: FakeClock) -> None:
    assert api(clock, "").complete("", "") == ""
    assert clock.now == pytest.approx(SPEED.ttft)


def test_closing_the_stream_stops_paying(clock: FakeClock) -> None:
    stream = api(clock)
    pieces = stream("", "")
    assert next(pieces) == "abcd"
    assert clock.now == pytest.approx(SPEED.ttft)
    pieces.close()
    assert clock.now == pytest.approx(SPEED.ttft)
    assert stream.pieces_sent == 1


def test_a_slow_reader_finds_the_pieces_waiting(clock: FakeClock) -> None:
    stream = api(clock)
    pieces = stream("", "")
    next(pieces)
    clock.sleep(1.0)  # the reader works for a second: the server keeps generating meanwhile
    assert list(pieces) == ["efgh", "ijkl", "mnop", "qrst"]
    assert clock.now == pytest.approx(SPEED.ttft + 1.0)
    assert stream.waited == pytest.approx(SPEED.ttft)
