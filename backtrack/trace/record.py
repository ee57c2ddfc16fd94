"""The record of a guided generation: every span of text with its origin, every round.

Plain data. The counts are derived from the trace alone, never kept beside it; GuideResult
(backtrack.trace.result) and the HTML view (backtrack.trace.html) read them here. The output text
is the concatenation of the spans whose origin is in OUTPUT_ORIGINS.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from providers.base import Usage

Origin = Literal[
    "draft",  # the API's text, accepted as it came
    "reused",  # the rest of a cut draft, kept after a correction
    "rejected",  # the API's text after a cut, not used
    "correction",  # written by the local target
    "healed",  # the last committed token, re-chosen by the target
    "forced",  # the only bytes the grammar allowed
    "dropped",  # a preamble, a repeat or trailing prose: not part of the answer
    "edit",  # inserted by a repair (backtrack.repair.search): a quote, a comma, `true` for `True`
    "deleted",  # committed text a repair took back (the comma before a `}`)
    "skipped",  # the API's text a repair passed over, reading on after it
]
OUTPUT_ORIGINS: frozenset[str] = frozenset(
    {"draft", "reused", "correction", "healed", "forced", "edit"}
)
TARGET_ORIGINS: frozenset[str] = frozenset({"correction", "healed", "forced"})

DropReason = Literal[
    "preamble",  # before the answer: "Here is the JSON:", a fence opening, `{"sql": "`
    "before_answer",  # before where the answer was found, not reading as prose: maybe answer text
    "reasoning",  # a reasoning model's `<think> ... </think>` block, or what the API sent as
    # reasoning apart from the answer (`reasoning_content`, Anthropic `thinking` blocks)
    "trailing",  # after a complete answer: prose, the blanks before it
    "fence",  # the closing fence of a fenced answer, or the end of a JSON envelope's string
    "repeat",  # the API writing again what was committed (its alignment removed it)
    "unread",  # a failed attempt's text, received before its answer was found
    "stray",  # a continuation that never left the string it began in (a chat reply read as its
    # content), ended there: backtrack.run.stray_reply
    "rewrite",  # a continuation that wrote the answer over in its own way from its first
    # character and never got back to where it stopped: backtrack.repair.restart
]
# Drops that may lose answer text: what follows a complete answer may be more of it (the read-ahead
# of backtrack.run.draft keeps what one edit makes parse), or prose; so may what comes before the
# answer's start where it does not read as prose (`setpencolor blue`); so may a stray continuation
# (a string's text the API stopped in), or a rewrite (what it says anew has no place); a preamble
# or a fence does not.
LOSS_REASONS: frozenset[str] = frozenset({"trailing", "before_answer", "stray", "rewrite"})
RoundKind = Literal["draft", "correction", "completion"]
RoundEnd = Literal[
    "cut",  # the draft hit a byte the grammar cannot take
    "drafter_ended",  # the drafter finished on its own
    "empty",  # the API replied with nothing, and again when retried: the target wrote on
    "trailing",  # the rest of a complete answer was prose or a fence: dropped
    "error",  # the provider or the target failed (see `error`)
    "target_stopped",  # a correction round ended (see the target's stop reason)
]
StopReason = Literal[
    "complete",  # complete under the grammar and the drafter ended
    "trailing_dropped",  # complete; what the drafter wrote after it was dropped
    "target_completed",  # the budget ran out, or the API's reply ended just after a slip: the
    # target finished the text
    "max_corrections",  # the budget ran out and the caller opted out of completion
    "context_full",  # the text came near what the target's context holds: drafting stopped and
    # the target finished the text in the room left (`complete` says whether it could; with no
    # room at all, or complete_on_budget=False, the run ended with what was committed)
    "incomplete",  # the target could not finish within its token budget
    "error",  # a provider or target error ended the run (the partial result rides on it)
]


@dataclass(frozen=True)
class Span:
    """A piece of text, where it came from, and the round that produced it."""

    text: str
    origin: Origin
    round: int


@dataclass(frozen=True)
class Drop:
    """Text of the API's left out of the output (shown as a "dropped" span): why, in which
    round, and at which output character it stood."""

    text: str
    reason: DropReason
    round: int
    at: int


@dataclass(frozen=True)
class Repair:
    """One edit of a repair inside a draft round: at output character `at`, `deleted` (committed
    text taken back) and `skipped` (the API's text passed over) gave way to `inserted`; then
    `fits` characters of the API's text fitted again, read from the same stream."""

    at: int
    deleted: str
    skipped: str
    inserted: str
    fits: int


@dataclass(frozen=True)
class Round:
    """One round: a draft from the API, or a correction / completion by the local target."""

    index: int
    kind: RoundKind
    ended: RoundEnd
    seconds: float
    accepted_chars: int = 0
    rejected_chars: int = 0
    cut_at: int | None = None  # character offset in the output where the draft was cut
    expected: tuple[str, ...] = ()  # what the grammar wanted at the cut
    input_tokens: int = 0
    output_tokens: int = 0
    retries: int = 0
    closed_early: bool = False  # the stream was closed at the cut (no more tokens paid for)
    local_tokens: int = 0
    target_stop: str | None = None
    error: str | None = None
    request_id: str | None = None
    repairs: tuple[Repair, ...] = ()
    usage_known: bool = True  # False: the reply did not report its usage
    repeated_chars: int = 0  # what the API wrote again of the committed text, or over (dropped)


@dataclass(frozen=True)
class Trace:
    """The prompt, every span of text in order, every round, and every drop with its reason."""

    prompt: str
    spans: tuple[Span, ...]
    rounds: tuple[Round, ...]
    drops: tuple[Drop, ...] = ()

    @property
    def api_calls(self) -> int:
        """Requests sent to the drafter, retries included."""
        return sum(1 + r.retries for r in self.rounds if r.kind == "draft")

    @property
    def corrections(self) -> int:
        """Rounds of the local target (corrections and the completion)."""
        return sum(1 for r in self.rounds if r.kind != "draft")

    @property
    def accepted_chars(self) -> int:
        return sum(len(s.text) for s in self.spans if s.origin in ("draft", "reused"))

    @property
    def rejected_chars(self) -> int:
        lost = ("rejected", "dropped", "skipped", "deleted")
        return sum(len(s.text) for s in self.spans if s.origin in lost)

    @property
    def lost_chars(self) -> int:
        """Non-blank characters the API wrote as answer text that the output does not carry:
        dropped after the complete answer, skipped or taken back by a repair, and rejected at the
        cut of the last draft and not reused after it (an earlier draft's rest is asked for
        again). Blanks are not counted: a line end before a closing fence is no loss."""
        last = max((r.index for r in self.rounds if r.kind == "draft"), default=-1)
        lost = sum(ink(d.text) for d in self.drops if d.reason in LOSS_REASONS)
        lost += sum(ink(s.text) for s in self.spans if s.origin in ("skipped", "deleted"))
        rejected = sum(
            ink(s.text) for s in self.spans if s.origin == "rejected" and s.round == last
        )
        reused = sum(ink(s.text) for s in self.spans if s.origin == "reused" and s.round > last)
        return lost + max(0, rejected - reused)

    @property
    def kept(self) -> float:
        """The share of the API's answer text (non-blank characters) that the output carries as
        the API wrote it: accepted / (accepted + lost); 1.0 when the API wrote none."""
        accepted = sum(ink(s.text) for s in self.spans if s.origin in ("draft", "reused"))
        offered = accepted + self.lost_chars
        return accepted / offered if offered else 1.0

    @property
    def repairs(self) -> int:
        """Edits made inside draft rounds, each read on from the same stream (no API call)."""
        return sum(len(r.repairs) for r in self.rounds)

    @property
    def reused_chars(self) -> int:
        return sum(len(s.text) for s in self.spans if s.origin == "reused")

    @property
    def local_tokens(self) -> int:
        return sum(r.local_tokens for r in self.rounds)

    @property
    def usage(self) -> Usage:
        """API token usage summed over rounds, as the provider reported it; not `known` when a
        reply did not report its own."""
        return Usage(
            sum(r.input_tokens for r in self.rounds),
            sum(r.output_tokens for r in self.rounds),
            known=all(r.usage_known for r in self.rounds),
        )


def ink(text: str) -> int:
    """How many characters of `text` are not blank."""
    return sum(not c.isspace() for c in text)
