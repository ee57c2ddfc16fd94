"""backtrack: grammar-valid output from black-box LLMs.

The API drafts freely; an Earley check (llguidance) cuts the draft at the first byte the grammar
cannot continue; a small local model writes the correction; the API carries on.

The top layer: the loop, guide(), wrap(), the trace, its HTML view and the CLI. It stands on
`grammars` (what a grammar is, checking), `providers` (the drafters) and `local_target` (the
correcting model), and re-exports their public names; none of them imports it.

Importing it imports no torch or transformers (seconds): `LocalTarget`, the one name that needs
them, is read from local_target on first use (`__getattr__`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from backtrack.local_drafter import LocalDrafter
from backtrack.run.guide import DrafterLike, aguide, guide
from backtrack.run.options import GuideOptions
from backtrack.trace.record import Drop, Round, Span, Trace
from backtrack.trace.result import GuideResult, TextLostError
from backtrack.wrap import wrap
from grammars import (
    BacktrackError,
    Checker,
    Grammar,
    GrammarError,
    GrammarLike,
    GrammarLimits,
    PrefixCheck,
    TextError,
)
from local_target import Sampling
from local_target.errors import TargetError
from providers.errors import ProviderError

if TYPE_CHECKING:
    from local_target import LocalTarget

__all__ = [
    "BacktrackError",
    "Checker",
    "DrafterLike",
    "Drop",
    "Grammar",
    "GrammarError",
    "GrammarLike",
    "GrammarLimits",
    "GuideOptions",
    "GuideResult",
    "LocalDrafter",
    "LocalTarget",
    "PrefixCheck",
    "ProviderError",
    "Round",
    "Sampling",
    "Span",
    "TargetError",
    "TextError",
    "TextLostError",
    "Trace",
    "aguide",
    "guide",
    "wrap",
]


def __getattr__(name: str) -> Any:
    if name == "LocalTarget":
        import local_target

        return local_target.LocalTarget
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
