"""The transformers KV-cache interface, spelled once for the installed release.

transformers 5.24 renamed the forward argument `past_key_values` to `cache` (the old name warns,
and is removed in 5.40); older releases know only `past_key_values`. `CacheApi.of(model)` reads
the model's forward signature once, at load, and every forward pass of local_target passes its
cache through `CacheApi.args`, so no call of ours uses a deprecated spelling on either side.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Literal

CacheKwarg = Literal["cache", "past_key_values"]


@dataclass(frozen=True)
class CacheApi:
    """How to hand a KV cache to one model's forward pass, and how to make an empty one."""

    kwarg: CacheKwarg
    config: Any

    @classmethod
    def of(cls, model: Any) -> CacheApi:
        """The spelling `model.forward` takes: `cache` where the release has it, else the old
        `past_key_values` (the head and the base model of one release take the same)."""
        params = inspect.signature(model.forward).parameters
        return cls("cache" if "cache" in params else "past_key_values", model.config)

    def new(self) -> Any:
        """An empty cache for this model's layers."""
        from transformers import DynamicCache

        return DynamicCache(config=self.config)

    def args(self, cache: Any) -> dict[str, Any]:
        """The keyword arguments that make a forward pass read and extend `cache`."""
        return {self.kwarg: cache, "use_cache": True}
