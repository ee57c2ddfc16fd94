"""What a session needs of its model, and token sequences compared."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from local_target.head import Next
from local_target.vocab import Vocabulary


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """The length of the longest common prefix of two token sequences."""
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


class TargetModel(Protocol):
    """What a session needs of its model (a LocalTarget, which the session does not import)."""

    @property
    def vocab(self) -> Vocabulary: ...

    @property
    def context_length(self) -> int | None:
        """The most tokens the model takes (None: no known limit)."""
        ...

    def forward(self, ids: list[int], cache: Any, rows: int = 1) -> list[Next]:
        """Feed `ids` after what `cache` holds; the model's output at its last `rows` positions."""
        ...

    def new_cache(self) -> Any:
        """An empty KV cache."""
        ...

    def cache_for(self, ids: list[int]) -> tuple[Any, Next]:
        """A new KV cache holding exactly the prompt `ids`, and the model's output after them."""
        ...

    def check_length(self, n_tokens: int, what: str) -> None:
        """Raise TargetError when `what`, `n_tokens` long, would not fit the model's context."""
        ...
