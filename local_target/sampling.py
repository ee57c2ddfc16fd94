"""Choosing the next token under a mask, opportunistically.

The model's own choice is checked first; the full mask is computed only when that choice is
refused. This is exact: for greedy decoding trivially; for sampling because drawing t ~ p and
keeping it when allowed, else drawing from p restricted to the allowed set, gives
P(a) = p(a) + (1 - p(A)) p(a) / p(A) = p(a) / p(A) for every allowed a. With top_p < 1 the
nucleus would differ before and after masking, so the mask is always computed first there.

torch is imported where a tensor is made, not at the top: `Sampling` is an option of every run
(GuideOptions, the command line), which must not wait for torch when no local model runs.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class Sampling:
    """temperature 0 means greedy. `seed` makes sampling reproducible."""

    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = None

    def __post_init__(self) -> None:
        # Written so that NaN fails too: every comparison with NaN is False.
        if not 0 <= self.temperature < math.inf:
            raise ValueError(f"temperature must be a finite number >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")

    def generator(self) -> torch.Generator | None:
        if self.seed is None:
            return None
        import torch

        return torch.Generator().manual_seed(self.seed)


def _probabilities(logits: torch.Tensor, sampling: Sampling) -> torch.Tensor:
    import torch

    probs = torch.softmax(logits.float() / sampling.temperature, dim=-1)
    if sampling.top_p < 1:
        sorted_p, order = torch.sort(probs, descending=True)
        outside = torch.cumsum(sorted_p, dim=-1) - sorted_p >= sampling.top_p
        sorted_p[outside] = 0
        probs = torch.zeros_like(probs).scatter(-1, order, sorted_p)
    return probs / probs.sum()


def choose(
    logits: torch.Tensor,
    allowed: Callable[[int], bool],
    full_mask: Callable[[], torch.Tensor],
    sampling: Sampling,
    generator: torch.Generator | None,
) -> tuple[int, bool]:
    """(token, masked): `masked` is True when the full mask had to be computed."""
    import torch

    logits = logits.float().cpu()
    greedy = sampling.temperature == 0
    if greedy or sampling.top_p == 1:
        if greedy:
            first = int(torch.argmax(logits))
        else:
            first = int(torch.multinomial(_probabilities(logits, sampling), 1, generator=generator))
        if allowed(first):
            return first, False
    mask = full_mask()
    masked = logits.masked_fill(~mask, float("-inf"))
    if greedy:
        return int(torch.argmax(masked)), True
    return int(torch.multinomial(_probabilities(masked, sampling), 1, generator=generator)), True
