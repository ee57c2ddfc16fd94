"""local_target: a small local model that writes grammar-valid corrections.

It masks over its full vocabulary with llguidance, heals the last committed token, appends forced
bytes without sampling, and rolls its KV cache back instead of recomputing.
"""

from local_target.correction import Correction
from local_target.decoding import DecodingPolicy, TokenFlag
from local_target.sampling import Sampling
from local_target.session import TargetSession
from local_target.target import LocalTarget

__all__ = [
    "Correction",
    "DecodingPolicy",
    "LocalTarget",
    "Sampling",
    "TargetSession",
    "TokenFlag",
]
