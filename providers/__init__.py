"""Drafters: the black-box models guide() lets write, behind one protocol (providers.base).

    FunctionDrafter             any function (prompt, prefix) -> str, text -> str, or a generator
    OpenAIChatDrafter           openai chat completions (instruction + alignment, or prefill)
    OpenAICompletionsDrafter    openai completions endpoint (raw continuation)
    AnthropicDrafter            anthropic messages (prefill, falling back where a model refuses it)

`as_drafter(obj, model=...)` picks one of these for whatever it is given. SDK errors become
`backtrack.errors.ProviderError` (providers.errors); retries are the loop's, per round
(providers.retry).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from providers.align import Aligner, instruction
from providers.base import (
    AsyncDrafter,
    AsyncDraftStream,
    Capabilities,
    Drafter,
    DraftRequest,
    DraftStream,
    Usage,
)

if TYPE_CHECKING:
    from providers.anthropic import AnthropicDrafter
    from providers.errors import to_provider_error
    from providers.function import FunctionDrafter
    from providers.openai import OpenAIChatDrafter, OpenAICompletionsDrafter
    from providers.retry import async_retrying, retrying, should_retry

# Loaded on first use. Importing these here would import backtrack.errors, hence the backtrack
# package, whose guide() imports `providers` back: `import providers` would then find this
# module half-built. Lazy, the import order does not matter (and `import providers` stays cheap).
_LAZY = {
    "AnthropicDrafter": "providers.anthropic",
    "FunctionDrafter": "providers.function",
    "OpenAIChatDrafter": "providers.openai",
    "OpenAICompletionsDrafter": "providers.openai",
    "async_retrying": "providers.retry",
    "retrying": "providers.retry",
    "should_retry": "providers.retry",
    "to_provider_error": "providers.errors",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'providers' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "Aligner",
    "AnthropicDrafter",
    "AsyncDraftStream",
    "AsyncDrafter",
    "Capabilities",
    "DraftRequest",
    "DraftStream",
    "Drafter",
    "FunctionDrafter",
    "OpenAIChatDrafter",
    "OpenAICompletionsDrafter",
    "Usage",
    "as_drafter",
    "async_retrying",
    "instruction",
    "retrying",
    "should_retry",
    "to_provider_error",
]


def _sdk_client(obj: object) -> str | None:
    """'openai' or 'anthropic' for a client of that SDK (sync or async, subclasses too)."""
    for cls in type(obj).__mro__:
        if cls.__name__ in ("SyncAPIClient", "AsyncAPIClient"):
            root = cls.__module__.split(".")[0]
            if root in ("openai", "anthropic"):
                return root
    return None


def as_drafter(obj: Any, *, model: str | None = None) -> Drafter | AsyncDrafter:
    """`obj` as a drafter.

    A Drafter or AsyncDrafter comes back as it is. An `openai` client (OpenAI, AsyncOpenAI, Azure)
    becomes an OpenAIChatDrafter and an `anthropic` one an AnthropicDrafter; both need `model`.
    Any other callable becomes a FunctionDrafter. For the completions endpoint, vLLM's prefill or
    create kwargs, build the drafter yourself.
    """
    if isinstance(obj, (Drafter, AsyncDrafter)):
        if model is not None:
            raise TypeError(f"model= is for SDK clients; {obj!r} is a drafter already")
        return obj
    sdk = _sdk_client(obj)
    if sdk is not None:
        if not model:
            raise TypeError(f"a {type(obj).__name__} client needs model= (which model drafts)")
        if sdk == "openai":
            from providers.openai import OpenAIChatDrafter

            return OpenAIChatDrafter(obj, model)
        from providers.anthropic import AnthropicDrafter

        return AnthropicDrafter(obj, model)
    if callable(obj):
        if model is not None:
            raise TypeError("model= is for SDK clients, not for functions")
        from providers.function import FunctionDrafter

        return FunctionDrafter(obj)
    raise TypeError(
        f"cannot draft with a {type(obj).__name__}: give a function, an OpenAI or Anthropic "
        "client, or a Drafter"
    )
