"""Which SDK a client object belongs to, and whether it is async: the one test every caller uses.

The answer comes from the SDKs' own base classes, read by name along the client's class hierarchy
(`SyncAPIClient` or `AsyncAPIClient`, defined in the `openai` or `anthropic` package), so every
subclass counts (AzureOpenAI, AnthropicBedrock, AnthropicVertex, a user's own) and neither SDK is
imported to ask.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["SDK", "ClientKind", "client_kind"]

SDK = Literal["openai", "anthropic"]

# The SDKs' client base classes by name, and whether each is the async one.
_BASES = {"SyncAPIClient": False, "AsyncAPIClient": True}
_PACKAGES: dict[str, SDK] = {"openai": "openai", "anthropic": "anthropic"}


@dataclass(frozen=True)
class ClientKind:
    """The SDK a client comes from, and whether its calls are awaited (AsyncOpenAI,
    AsyncAnthropic) or not (OpenAI, Anthropic)."""

    sdk: SDK
    is_async: bool


def client_kind(obj: object) -> ClientKind | None:
    """The kind of SDK client `obj` is (sync or async, subclasses too); None for anything else."""
    for cls in type(obj).__mro__:
        is_async = _BASES.get(cls.__name__)
        if is_async is None:
            continue
        sdk = _PACKAGES.get(cls.__module__.split(".")[0])
        if sdk is not None:
            return ClientKind(sdk, is_async)
    return None
