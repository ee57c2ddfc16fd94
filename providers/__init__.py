"""Drafters: the black-box models guide() lets write, behind one protocol (providers.base).

    FunctionDrafter             any function (prompt, prefix) -> str, text -> str, or a generator
                                (a Reply: a str and its finish reason)
    OpenAIChatDrafter           openai chat completions (instruction + alignment, or prefill)
    OpenAICompletionsDrafter    openai completions endpoint (raw continuation)
    OpenAIResponsesDrafter      openai Responses API (instruction + alignment)
    AnthropicDrafter            anthropic messages (prefill, falling back where a model refuses it)

`as_drafter(obj)` makes a drafter of a function (or passes a drafter through). The SDK drafters
share one base (providers.sdk); `client_kind` (providers.clients) tells which SDK a client is of.
SDK errors become ProviderError (providers.sdk_errors); retries are the loop's, per round
(providers.retry). This package stands on `grammars` only: it never imports `local_target` or
`backtrack`.
"""

from __future__ import annotations

from providers.align import Aligner, instruction
from providers.anthropic import AnthropicDrafter
from providers.base import (
    AsyncDrafter,
    AsyncDraftStream,
    Capabilities,
    Drafter,
    DraftRequest,
    DraftStream,
    Usage,
)
from providers.clients import client_kind
from providers.errors import ProviderError
from providers.function import FunctionDrafter, Reply
from providers.openai import OpenAIChatDrafter, OpenAICompletionsDrafter
from providers.openai_responses import OpenAIResponsesDrafter
from providers.retry import next_wait, should_retry
from providers.sdk_errors import to_provider_error

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
    "OpenAIResponsesDrafter",
    "ProviderError",
    "Reply",
    "Usage",
    "as_drafter",
    "instruction",
    "next_wait",
    "should_retry",
    "to_provider_error",
]


def as_drafter(obj: object) -> Drafter | AsyncDrafter:
    """`obj` as a drafter: a Drafter or AsyncDrafter as it is, any other callable as a
    FunctionDrafter. An SDK client needs a model: give `wrap(client)` (backtrack.wrap) or build
    its drafter (`OpenAIChatDrafter(client, model)`, `AnthropicDrafter(client, model)`)."""
    if isinstance(obj, (Drafter, AsyncDrafter)):
        return obj
    kind = client_kind(obj)
    if kind is not None:
        drafter = "OpenAIChatDrafter" if kind.sdk == "openai" else "AnthropicDrafter"
        raise TypeError(
            f"a {type(obj).__name__} client needs a model: use backtrack.wrap(client) and its "
            f"grammar= argument, or guide({drafter}(client, model), ...)"
        )
    if callable(obj):
        return FunctionDrafter(obj)
    raise TypeError(
        f"cannot draft with a {type(obj).__name__}: give a function, a Drafter, or use "
        "backtrack.wrap(client) for an OpenAI or Anthropic client"
    )
