"""The grammars shipped with backtrack, as data.

Each `NAME.lark` file here is a grammar in the Lark dialect that llguidance and the lark library
read alike; its first line is a `// one-line description`. Grammars with parameters are built by a
function from such a file (see `PARAMETRIC`).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from pathlib import Path

from grammars.errors import GrammarError

_HERE = Path(__file__).parent


def _json_keys(n: int = 3) -> str:
    """A JSON object with exactly `n` string-valued keys (grammar-guide's benchmark shape)."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"json_keys needs a whole number of keys >= 1, got {n!r}")
    # Blanks are explicit (after each token), not %ignore'd: llguidance applies %ignore only
    # between tokens, so it would cut blanks before and after the object that lark accepts. They
    # go through the nullable rule _w: lark expands each `_WS?` into a copy of its rule (2**n).
    pairs = ' "," _w '.join(["pair"] * n)
    return (
        f"// A JSON object with exactly {n} string-valued keys.\n"
        f'start: _w "{{" _w {pairs} "}}" _w\n'
        'pair: STRING _w ":" _w STRING _w\n'
        r'STRING: /"([^"\\\x00-\x1f]|\\["\\\/bfnrt]|\\u[0-9a-fA-F]{4})*"/'
        "\n_WS: /[ \\t\\n\\r]+/\n_w: _WS?\n"
    )


PARAMETRIC: dict[str, Callable[..., str]] = {"json_keys": _json_keys}
"""The shipped grammars built from parameters: each name's function takes them as keywords and
gives the Lark text (`source("json_keys", n=5)`)."""


def names() -> list[str]:
    """Every shipped grammar's name, sorted."""
    return sorted({p.stem for p in _HERE.glob("*.lark")} | set(PARAMETRIC))


def not_shipped(name: str) -> GrammarError:
    """The error for a name that is not a shipped grammar, with the closest one when there is."""
    close = difflib.get_close_matches(name, names(), n=1)
    if close:
        return GrammarError(f"no shipped grammar {name!r}; did you mean {close[0]!r}?")
    return GrammarError(f"no shipped grammar {name!r} (known: {', '.join(names())})")


def source(name: str, **params: int) -> str:
    """The Lark text of shipped grammar `name`. Raises KeyError for an unknown name."""
    if name in PARAMETRIC:
        return PARAMETRIC[name](**params)
    path = _HERE / f"{name}.lark"
    if "/" in name or "\\" in name or not path.is_file():
        raise KeyError(name)
    if params:
        raise TypeError(f"grammar {name!r} takes no parameters, got {sorted(params)}")
    return path.read_text(encoding="utf-8")


def describe(name: str) -> str:
    """The one-line description of a shipped grammar."""
    first = source(name).split("\n", 1)[0]
    return first.removeprefix("//").strip()
