"""backtrack: grammar-valid output from black-box LLMs.

The API drafts freely; an Earley check (llguidance) cuts the draft at the first byte the grammar
cannot continue; a small local model writes the correction; the API carries on.
"""

from backtrack.errors import BacktrackError, GrammarError, ProviderError, TargetError, TextError
from backtrack.grammar import Grammar, GrammarLimits
from backtrack.guide import aguide, guide
from backtrack.prefix import Checker, PrefixCheck
from backtrack.trace import GuideResult, Round, Span, Trace
from backtrack.wrap import wrap

__all__ = [
    "BacktrackError",
    "Checker",
    "Grammar",
    "GrammarError",
    "GrammarLimits",
    "GuideResult",
    "PrefixCheck",
    "ProviderError",
    "Round",
    "Span",
    "TargetError",
    "TextError",
    "Trace",
    "aguide",
    "guide",
    "wrap",
]
