"""Drafters over the OpenAI SDK: chat completions and the (legacy) completions endpoint.

Both take an `openai.OpenAI` or `openai.AsyncOpenAI` client (or a subclass: Azure, any
OpenAI-compatible server through `base_url`) and stream. `draft()` needs a sync client and
`adraft()` an async one; the other pairing raises TypeError.

    OpenAIChatDrafter           chat completions. By default the text so far is shown to the model
                                with an instruction to continue, and the reply is aligned
                                (providers.align). `prefill=True` sends it as a final assistant
                                message to continue instead, with vLLM's `continue_final_message`;
                                only for servers that support it.
    OpenAICompletionsDrafter    /v1/completions: the model continues prompt + prefix verbatim.

Drafters never retry, and call the client through a copy with the SDK's retries off: the loop
retries whole rounds and counts every request (providers.retry).

The SDK is imported lazily: importing backtrack does not import openai.
"""

from __future__ import annotations

from typing import Any

from providers._stream import Alignment, AnyStream, async_stream, finish, header, sync_stream
from providers.align import continued_text, instruction
from providers.base import (
    AsyncDraftStream,
    Capabilities,
    DraftRequest,
    DraftStream,
    FinishReason,
    Message,
)
from providers.errors import mapped_exceptions, remember_keys, to_provider_error
from providers.retry import without_sdk_retries

__all__ = ["OpenAIChatDrafter", "OpenAICompletionsDrafter", "is_async_client"]

_FINISH: dict[str, FinishReason] = {"stop": "stop", "length": "length"}
_RESERVED = frozenset({"model", "messages", "prompt", "stream"})


def is_async_client(client: object) -> bool:
    """True for an async SDK client (openai or anthropic), False for a sync one.

    Decided by the SDK's own base classes, so subclasses (Azure, Bedrock, Vertex) count too.
    """
    for cls in type(client).__mro__:
        if cls.__name__ == "AsyncAPIClient":
            return True
        if cls.__name__ == "SyncAPIClient":
            return False
    raise TypeError(f"not an OpenAI or Anthropic SDK client: {type(client).__name__}")


def _usage(usage: Any, stream: AnyStream) -> None:
    if usage is None:
        return
    stream.usage.input_tokens = getattr(usage, "prompt_tokens", None) or 0
    stream.usage.output_tokens = getattr(usage, "completion_tokens", None) or 0


def _absorb_chat(chunk: Any, stream: AnyStream) -> str | None:
    """The text of one ChatCompletionChunk; records usage (final chunk) and finish reason."""
    _usage(getattr(chunk, "usage", None), stream)
    choices = getattr(chunk, "choices", None) or []
    if not choices:
        return None
    choice = choices[0]
    reason = getattr(choice, "finish_reason", None)
    if reason:
        finish(stream, _FINISH.get(reason, "unknown"))
    delta = getattr(choice, "delta", None)
    content = getattr(delta, "content", None)
    return content if isinstance(content, str) else None


def _absorb_completion(chunk: Any, stream: AnyStream) -> str | None:
    """The text of one streamed Completion; records usage and finish reason."""
    _usage(getattr(chunk, "usage", None), stream)
    choices = getattr(chunk, "choices", None) or []
    if not choices:
        return None
    choice = choices[0]
    reason = getattr(choice, "finish_reason", None)
    if reason:
        finish(stream, _FINISH.get(reason, "unknown"))
    text = getattr(choice, "text", None)
    return text if isinstance(text, str) else None


class _OpenAIDrafter:
    """What both drafters share: the client pairing, the create call, the stream wrapping."""

    capabilities: Capabilities

    def __init__(self, client: Any, model: str, create_kwargs: dict[str, Any]) -> None:
        clash = _RESERVED & create_kwargs.keys()
        if clash:
            raise TypeError(f"set by the drafter, not by create kwargs: {', '.join(sorted(clash))}")
        self.is_async = is_async_client(client)
        remember_keys(client)
        self.client = without_sdk_retries(client)
        self.model = model
        self.create_kwargs = create_kwargs

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r})"

    def _endpoint(self) -> Any:
        raise NotImplementedError

    def _kwargs(self, request: DraftRequest) -> tuple[dict[str, Any], Alignment | None]:
        raise NotImplementedError

    def _absorb(self, chunk: Any, stream: AnyStream) -> str | None:
        raise NotImplementedError

    def _common(self, request: DraftRequest) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        return kwargs

    def draft(self, request: DraftRequest) -> DraftStream:
        """Start a streamed request (sync client). Raises ProviderError when it fails."""
        if self.is_async:
            raise TypeError(f"{self!r} has an async client: use adraft() (aguide)")
        kwargs, alignment = self._kwargs(request)
        try:
            sdk_stream = self._endpoint().create(**kwargs)
        except mapped_exceptions() as exc:
            raise to_provider_error(exc) from exc
        request_id = header(getattr(sdk_stream, "response", None), "x-request-id")
        return sync_stream(sdk_stream, self._absorb, request_id=request_id, alignment=alignment)

    async def adraft(self, request: DraftRequest) -> AsyncDraftStream:
        """Start a streamed request (async client). Raises ProviderError when it fails."""
        if not self.is_async:
            raise TypeError(f"{self!r} has a sync client: use draft() (guide)")
        kwargs, alignment = self._kwargs(request)
        try:
            sdk_stream = await self._endpoint().create(**kwargs)
        except mapped_exceptions() as exc:
            raise to_provider_error(exc) from exc
        request_id = header(getattr(sdk_stream, "response", None), "x-request-id")
        return async_stream(sdk_stream, self._absorb, request_id=request_id, alignment=alignment)


class OpenAIChatDrafter(_OpenAIDrafter):
    """Chat completions as a drafter.

    `prefill=False` (the default, right for OpenAI itself): the text so far goes in as the model's
    last message with an instruction to continue it; the reply is aligned, so the stream yields
    only new text. `prefill=True`: the text so far is a final assistant message that the server
    continues verbatim (vLLM: `continue_final_message`, `add_generation_prompt=False`).

    `create_kwargs` go to every `chat.completions.create` call (temperature, seed, extra_body...).
    The token limit is sent as `max_completion_tokens` (what current OpenAI models take); pass
    `max_tokens_param="max_tokens"` for servers that know only the older name.
    """

    def __init__(
        self,
        client: Any,
        model: str,
        *,
        prefill: bool = False,
        max_tokens_param: str = "max_completion_tokens",
        **create_kwargs: Any,
    ) -> None:
        super().__init__(client, model, create_kwargs)
        self.prefill = prefill
        self.max_tokens_param = max_tokens_param
        self.capabilities = Capabilities(prefill=prefill, streaming=True)

    def _endpoint(self) -> Any:
        return self.client.chat.completions

    def _absorb(self, chunk: Any, stream: AnyStream) -> str | None:
        return _absorb_chat(chunk, stream)

    def messages(self, request: DraftRequest) -> tuple[list[Message], Alignment | None]:
        """The messages this drafter sends for `request`, and how the reply will be aligned."""
        history, text = continued_text(request.prompt, request.prefix)
        if not self.prefill:
            asked = instruction(request.prompt, request.prefix)
            return asked, Alignment(text)
        if not text:
            return history, Alignment("")  # a fresh answer: only a fence opening to strip
        history.append({"role": "assistant", "content": text})
        return history, None

    def _kwargs(self, request: DraftRequest) -> tuple[dict[str, Any], Alignment | None]:
        messages, alignment = self.messages(request)
        kwargs = {**self.create_kwargs, **self._common(request)}
        kwargs["messages"] = messages
        kwargs[self.max_tokens_param] = request.max_tokens
        if self.prefill and messages and messages[-1]["role"] == "assistant":
            extra = dict(kwargs.get("extra_body") or {})
            extra.update(continue_final_message=True, add_generation_prompt=False)
            kwargs["extra_body"] = extra
        return kwargs, alignment


class OpenAICompletionsDrafter(_OpenAIDrafter):
    """The completions endpoint as a drafter: the model continues `prompt + prefix` verbatim.

    The prompt must be a str (this endpoint takes no messages).
    """

    def __init__(self, client: Any, model: str, **create_kwargs: Any) -> None:
        super().__init__(client, model, create_kwargs)
        self.capabilities = Capabilities(prefill=True, streaming=True)

    def _endpoint(self) -> Any:
        return self.client.completions

    def _absorb(self, chunk: Any, stream: AnyStream) -> str | None:
        return _absorb_completion(chunk, stream)

    def _kwargs(self, request: DraftRequest) -> tuple[dict[str, Any], Alignment | None]:
        if not isinstance(request.prompt, str):
            raise TypeError(
                "the completions endpoint continues a text: give a str prompt, "
                "or use OpenAIChatDrafter for chat messages"
            )
        kwargs = {**self.create_kwargs, **self._common(request)}
        kwargs["prompt"] = request.prompt + request.prefix
        kwargs["max_tokens"] = request.max_tokens
        return kwargs, None
