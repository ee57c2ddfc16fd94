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

What every SDK drafter shares (the client, draft/adraft, the stream) is providers.sdk; here are
the requests and the reading of their chunks.

The SDK is imported lazily: importing backtrack does not import openai.
"""

from __future__ import annotations

from typing import Any

from providers.align import Aligner, continued_text, instructed
from providers.base import Capabilities, DraftRequest, FinishReason, Message
from providers.sdk import SDKDrafter, SDKRequest
from providers.sdk_stream import AnyStream, finish

__all__ = ["OpenAIChatDrafter", "OpenAICompletionsDrafter"]

_FINISH: dict[str, FinishReason] = {"stop": "stop", "length": "length", "tool_calls": "stop"}


def _first_choice(chunk: Any, stream: AnyStream) -> Any:
    """The first choice of a streamed chunk (None when it has none); records the usage (the final
    chunk's) and the finish reason on `stream`."""
    usage = getattr(chunk, "usage", None)
    if usage is not None:
        stream.usage.input_tokens = getattr(usage, "prompt_tokens", None) or 0
        stream.usage.output_tokens = getattr(usage, "completion_tokens", None) or 0
        stream.usage.known = True
    choices = getattr(chunk, "choices", None) or []
    if not choices:
        return None
    choice = choices[0]
    reason = getattr(choice, "finish_reason", None)
    if reason:
        finish(stream, _FINISH.get(reason, "unknown"))
    return choice


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _reasoning(delta: Any) -> str:
    """The reasoning a chat delta carries apart from its content: `reasoning_content` (DeepSeek,
    vLLM, llama.cpp) or `reasoning` (vLLM's newer name, OpenRouter). The SDK keeps such unknown
    fields as extra attributes."""
    for name in ("reasoning_content", "reasoning"):
        value = getattr(delta, name, None)
        if isinstance(value, str):
            return value
    return ""


class _OpenAIDrafter(SDKDrafter):
    """What both endpoints share: the reserved kwargs, the request id, the streaming options."""

    reserved = frozenset({"model", "messages", "prompt", "stream"})
    request_id_header = "x-request-id"

    def _kwargs(self, request: DraftRequest) -> dict[str, Any]:
        """The create kwargs for `request`, with the model and streaming set, and usage asked for
        in the final chunk (without it a run's usage reads 0/0) unless the caller's
        `stream_options` says otherwise: its other options are kept."""
        options = {"include_usage": True, **(self.create_kwargs.get("stream_options") or {})}
        return {
            **self._create_kwargs(request),
            "model": self.model,
            "stream": True,
            "stream_options": options,
        }


class OpenAIChatDrafter(_OpenAIDrafter):
    """Chat completions as a drafter.

    `prefill=False` (the default, right for OpenAI itself): the text so far goes in as the model's
    last message with an instruction to continue it; the reply is aligned, so the stream yields
    only new text. `prefill=True`: the text so far is a final assistant message that the server
    continues verbatim (vLLM: `continue_final_message`, `add_generation_prompt=False`).

    `create_kwargs` go to every `chat.completions.create` call (temperature, seed, extra_body...).
    The token limit is sent as `max_completion_tokens` (what current OpenAI models take; OpenAI's
    reasoning models refuse `max_tokens`, so the drafter never sends both); pass
    `max_tokens_param="max_tokens"` for servers that know only the older name (llama.cpp's
    server ignores the newer one). Either way the stream ends at the budget, counted in events
    (providers.sdk_stream), whatever the server sends.

    `guided_tool`: the function whose call's arguments are the draft (providers.tool_calls).
    """

    def __init__(
        self,
        client: Any,
        model: str,
        *,
        prefill: bool = False,
        max_tokens_param: str = "max_completion_tokens",
        guided_tool: str | None = None,
        **create_kwargs: Any,
    ) -> None:
        super().__init__(client, model, create_kwargs)
        self.guided_tool = guided_tool
        self.prefill = prefill
        self.max_tokens_param = max_tokens_param
        self.capabilities = Capabilities(prefill=prefill, streaming=True)

    def _endpoint(self) -> Any:
        return self.client.chat.completions

    def _read_event(self, event: Any, stream: AnyStream) -> str | None:
        """The text of one ChatCompletionChunk (reading tools: the guided call's arguments)."""
        delta = getattr(_first_choice(event, stream), "delta", None)
        stream.reasoning += _reasoning(delta)
        content = _text(getattr(delta, "content", None))
        reply = self.tool_reply if self.reading_tools else None
        if reply is None:
            return content
        pieces = [reply.text(content or "") or ""]
        for call in getattr(delta, "tool_calls", None) or []:
            function = getattr(call, "function", None)
            reply.start(call.index, call.id or "", getattr(function, "name", None) or "")
            piece = reply.arguments(call.index, _text(getattr(function, "arguments", None)) or "")
            pieces.append(piece or "")
        if stream.finished:
            reply.ended(stream.request_id)
        return "".join(pieces)

    def messages(self, request: DraftRequest) -> tuple[list[Message], Aligner | None]:
        """The messages this drafter sends for `request`, and the aligner of the reply."""
        if not self.prefill:
            return instructed(request.prompt, request.prefix)
        history, text = continued_text(request.prompt, request.prefix)
        if not text:
            return history, Aligner("")  # a fresh answer: only a fence opening to strip
        history.append({"role": "assistant", "content": text})
        return history, None

    def _prepare(self, request: DraftRequest) -> SDKRequest:
        messages, aligner = self.messages(request)
        kwargs = self._kwargs(request)
        kwargs["messages"] = messages
        kwargs[self.max_tokens_param] = request.max_tokens
        prefilled = self.prefill and bool(messages) and messages[-1]["role"] == "assistant"
        if prefilled:
            extra = dict(kwargs.get("extra_body") or {})
            extra.update(continue_final_message=True, add_generation_prompt=False)
            kwargs["extra_body"] = extra
        return SDKRequest(kwargs, aligner, prefilled)


class OpenAICompletionsDrafter(_OpenAIDrafter):
    """The completions endpoint as a drafter: the model continues `prompt + prefix` verbatim.

    The prompt must be a str (this endpoint takes no messages).
    """

    def __init__(self, client: Any, model: str, **create_kwargs: Any) -> None:
        super().__init__(client, model, create_kwargs)
        self.capabilities = Capabilities(prefill=True, streaming=True)

    def _endpoint(self) -> Any:
        return self.client.completions

    def _read_event(self, event: Any, stream: AnyStream) -> str | None:
        """The text of one streamed Completion."""
        return _text(getattr(_first_choice(event, stream), "text", None))

    def _prepare(self, request: DraftRequest) -> SDKRequest:
        if not isinstance(request.prompt, str):
            raise TypeError(
                "the completions endpoint continues a text: give a str prompt, "
                "or use OpenAIChatDrafter for chat messages"
            )
        kwargs = self._kwargs(request)
        kwargs["prompt"] = request.prompt + request.prefix
        kwargs["max_tokens"] = request.max_tokens
        return SDKRequest(kwargs, None)
