"""What the target wrote after the committed text, and how it went."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the decoding module imports torch; these are only type aliases
    from local_target.decoding import StopReason, TokenFlag


@dataclass(frozen=True)
class Correction:
    """What the target wrote after the committed text.

    `text` is new text only (healing may re-choose the last committed token, but the text it
    covered stays as it was). `flags[i]` says how `tokens[i]` was chosen. `complete` is True only
    when the committed text plus `text` is a full sentence of the grammar.
    """

    text: str
    tokens: tuple[int, ...]
    flags: tuple[TokenFlag, ...]
    complete: bool
    stop_reason: StopReason
    healed_bytes: int
    seconds: float
    forward_seconds: float
    mask_seconds: float
    forward_passes: int
    runs: tuple[tuple[TokenFlag, str], ...] = field(default=())
    """`text` split by how its tokens were chosen: consecutive tokens with the same flag form one
    run; a run boundary never splits a character."""
