"""GuideResult: what guide() returns, with its counts (from the trace) and its HTML view."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from backtrack.trace.html import render
from backtrack.trace.record import Drop, StopReason, Trace
from grammars import BacktrackError, Grammar
from providers.base import Usage


@dataclass(frozen=True)
class GuideResult:
    """The outcome of guide(): `text`, whether it is `valid` (parses), and the full `trace`."""

    text: str
    """The output: the committed text, a sentence of the grammar when `valid`."""
    valid: bool
    """`complete`, and a JSON schema's validator takes the text (where the grammar has one)."""
    complete: bool
    """The text is a full sentence of the grammar."""
    stop_reason: StopReason
    """Why the run ended: "complete", "trailing_dropped" (complete; the drafter's rest was
    dropped), "target_completed" (the corrections ran out; the target finished the text),
    "max_corrections" (they ran out with `complete_on_budget=False`), "context_full" (the text
    came near what the target's context holds: drafting stopped, and the target finished the text
    in the room left, where there was room and completion is on; `complete` says whether it could),
    "incomplete" (the target could not finish within its tokens), "error" (on a partial
    result)."""
    trace: Trace
    """Every span of the text with its origin, every round, every drop."""
    seconds: float
    """The run's wall time."""
    grammar: Grammar | None = field(default=None, repr=False, compare=False)
    """The grammar the run was held to (for `tree`)."""

    @property
    def rounds(self) -> int:
        """Draft, correction and completion rounds in all."""
        return len(self.trace.rounds)

    @property
    def api_calls(self) -> int:
        """Requests sent to the drafter, retries included (Trace.api_calls)."""
        return self.trace.api_calls

    @property
    def corrections(self) -> int:
        """Rounds of the local target (Trace.corrections)."""
        return self.trace.corrections

    @property
    def repairs(self) -> int:
        """Edits made inside draft rounds, with no API call (Trace.repairs)."""
        return self.trace.repairs

    @property
    def accepted_chars(self) -> int:
        """Characters of the drafter's text in the output, reused ones included."""
        return self.trace.accepted_chars

    @property
    def rejected_chars(self) -> int:
        """Characters of the drafter's text left out: rejected, dropped, skipped or deleted."""
        return self.trace.rejected_chars

    @property
    def local_tokens(self) -> int:
        """Tokens the local target wrote."""
        return self.trace.local_tokens

    @property
    def kept(self) -> float:
        """The share of the API's answer text the output carries as written (Trace.kept)."""
        return self.trace.kept

    @property
    def lost_chars(self) -> int:
        """Characters of the API's answer text the output does not carry (Trace.lost_chars)."""
        return self.trace.lost_chars

    @property
    def drops(self) -> tuple[Drop, ...]:
        """The API's text left out, each with its reason (preamble, trailing, fence...)."""
        return self.trace.drops

    @property
    def reused_chars(self) -> int:
        """Characters of a cut draft's rest kept after a correction (origin "reused")."""
        return self.trace.reused_chars

    @property
    def usage(self) -> Usage:
        """API token usage summed over rounds, as the provider reported it."""
        return self.trace.usage

    @functools.cached_property
    def tree(self) -> Any:
        """The lark parse tree of `text` (Lark grammars only)."""
        if self.grammar is None:
            raise ValueError("this result carries no grammar")
        return self.grammar.parse(self.text)

    @functools.cached_property
    def parsed(self) -> Any:
        """The text as an instance of the pydantic model that was the grammar
        (`Model.model_validate_json(text)`: pydantic's ValidationError where the text does not
        validate, as a run that is not valid may leave it); None for any other grammar."""
        model = None if self.grammar is None else self.grammar.model
        return None if model is None else model.model_validate_json(self.text)

    def to_html(self) -> str:
        """The trace as one self-contained HTML page (backtrack.trace.html)."""
        return render(
            self.trace, valid=self.valid, stop_reason=self.stop_reason, seconds=self.seconds
        )

    def save_html(self, path: str | Path) -> Path:
        """Writes `to_html()` to `path`, and returns the path."""
        path = Path(path)
        path.write_text(self.to_html(), encoding="utf-8")
        return path

    def _repr_html_(self) -> str:
        return self.to_html()


class TextLostError(BacktrackError):
    """A run left out more of the API's answer text than `GuideOptions.max_lost_chars` allows.
    `partial` is the whole result (valid or not): its `drops` and trace say what was lost."""

    def __init__(self, result: GuideResult, limit: int) -> None:
        self.partial = result
        super().__init__(
            f"{result.lost_chars} non-blank characters of the API's answer text were left out, "
            f"more than max_lost_chars={limit} ({result.kept:.0%} kept)"
        )
