"""grammars: what a grammar is and how a text is checked against it; the bottom layer.

    Grammar                     a compiled grammar (Lark text, a shipped name, a JSON schema, a
                                regex, a guidance grammar) (grammar)
    GrammarLimits               the bounds on what a grammar may cost (limits)
    Checker, PrefixCheck        incremental prefix checking, one byte at a time (checker)
    BacktrackError, GrammarError, TextError    the error root and the errors of this layer (errors)
    names(), source(), describe()              the grammars shipped as `NAME.lark` files (shipped)

`providers`, `local_target` and `backtrack` stand on this package; it imports none of them.
"""

from grammars.checker import Checker, PrefixCheck
from grammars.errors import BacktrackError, GrammarError, PartialResult, TextError
from grammars.grammar import Grammar, GrammarLike
from grammars.limits import GrammarLimits
from grammars.shipped import PARAMETRIC, describe, names, source

__all__ = [
    "PARAMETRIC",
    "BacktrackError",
    "Checker",
    "Grammar",
    "GrammarError",
    "GrammarLike",
    "GrammarLimits",
    "PartialResult",
    "PrefixCheck",
    "TextError",
    "describe",
    "names",
    "source",
]
