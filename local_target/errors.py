"""The local target's error."""

from __future__ import annotations

from grammars.errors import BacktrackError, PartialResult


class TargetError(BacktrackError):
    """The local target model failed or was used wrongly. When it ends a guided generation,
    `partial` is the GuideResult of the work committed before it (else None)."""

    def __init__(self, message: str, *, partial: PartialResult | None = None) -> None:
        self.partial = partial
        super().__init__(message)
