"""local_target: a small local model that writes grammar-valid corrections.

It masks over its full vocabulary with llguidance, heals the last committed token, appends forced
bytes without sampling, and rolls its KV cache back instead of recomputing.

Importing the package imports no torch or transformers: each public name is read from its module
on first use (`__getattr__`), so `Sampling` and `Correction` stay light, and torch comes in with
`LocalTarget`, `TargetSession` or the decoding policy, when a local model is needed.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from local_target.correction import Correction
    from local_target.decoding import TokenFlag
    from local_target.engine import CountsTokens, Session, Target
    from local_target.policy import DecodingPolicy
    from local_target.sampling import Sampling
    from local_target.session import TargetSession
    from local_target.target import LocalTarget

__all__ = [
    "Correction",
    "CountsTokens",
    "DecodingPolicy",
    "LocalTarget",
    "Sampling",
    "Session",
    "Target",
    "TargetSession",
    "TokenFlag",
]

# Where each public name lives.
_MODULES = {
    "Correction": "local_target.correction",
    "CountsTokens": "local_target.engine",
    "DecodingPolicy": "local_target.policy",
    "LocalTarget": "local_target.target",
    "Sampling": "local_target.sampling",
    "Session": "local_target.engine",
    "Target": "local_target.engine",
    "TargetSession": "local_target.session",
    "TokenFlag": "local_target.decoding",
}


def __getattr__(name: str) -> Any:
    if name not in _MODULES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_MODULES[name]), name)
    globals()[name] = value  # the next lookup finds it without coming here
    return value
