"""A drafter over the Anthropic SDK: the Messages API, streamed, with assistant prefill.

The text so far goes in as a final assistant message, which the model continues. Two wrinkles:

* The API rejects a final assistant message that ends in whitespace. The drafter sends the text
  without its trailing whitespace and aligns the reply against what it cut: a reply that writes
  that whitespace again has it stripped, one that does not passes unchanged.
* Some models refuse prefill with an HTTP 400 ("This model does not support assistant message
  prefill"). The drafter remembers the model and raises a retryable ProviderError that asks for no
  wait: the loop's next attempt, like every later draft for that model by any AnthropicDrafter,
  goes straight to the instruction form (providers.align). The refused request is an attempt the
  trace counts, as every request sent is.

Takes `anthropic.Anthropic` (for `draft()`) or `anthropic.AsyncAnthropic` (for `adraft()`). What
every SDK drafter shares (the client, draft/adraft, the stream) is providers.sdk; here are the
request and the reading of its events.
"""

from __future__ import annotations

import logging
import re
import threading
from typing import Any, ClassVar

from providers.align import Aligner, as_messages, continued_text, instruction
from providers.base import Capabilities, DraftRequest, FinishReason, Message
from providers.errors import ProviderError
from providers.sdk import SDKDrafter, SDKRequest
from providers.sdk_errors import to_provider_error
from providers.sdk_stream import AnyStream, finish

__all__ = ["AnthropicDrafter", "is_prefill_refusal"]

logger = logging.getLogger(__name__)

_STOP: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "stop",
}
_PREFILL_REFUSAL = re.compile(
    r"prefill|final\s+`?assistant`?\s+(content|message)|must end with a user message", re.IGNORECASE
)


def is_prefill_refusal(exc: BaseException) -> bool:
    """True for an HTTP 400 whose message says the model will not continue an assistant message."""
    if getattr(exc, "status_code", None) != 400:
        return False
    texts = (getattr(exc, "api_message", None), getattr(exc, "message", None), str(exc))
    return any(isinstance(t, str) and _PREFILL_REFUSAL.search(t) for t in texts)


def _split_system(messages: list[Message]) -> tuple[list[Message], Any]:
    """The conversation without its system messages, and those as the `system` parameter."""
    system = [m for m in messages if m.get("role") == "system"]
    rest = [m for m in messages if m.get("role") != "system"]
    if not system:
        return rest, None
    contents = [m.get("content") for m in system]
    if all(isinstance(c, str) for c in contents):
        return rest, "\n\n".join(c for c in contents if isinstance(c, str))
    blocks: list[Any] = []
    for content in contents:
        if isinstance(content, str):
            blocks.append({"type": "text", "text": content})
        elif isinstance(content, list):
            blocks.extend(content)
    return rest, blocks


def _input_tokens(usage: Any) -> int:
    """All input tokens: uncached, written to the cache, and read from it."""
    names = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    return sum(getattr(usage, name, None) or 0 for name in names)


class AnthropicDrafter(SDKDrafter):
    """The Anthropic Messages API as a drafter (prefill, with fallback to instruction + alignment).

    `create_kwargs` go to every `messages.create` call (metadata, thinking, extra_body...). System
    messages in the prompt become the `system` parameter. `prefill=False` never tries prefill.
    """

    reserved = frozenset({"model", "messages", "stream", "max_tokens"})
    request_id_header = "request-id"
    tool_choice_none: ClassVar[object] = {"type": "none"}
    # Models that answered a prefill with a 400, shared by every drafter in the process.
    _no_prefill: ClassVar[set[str]] = set()
    _lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(
        self,
        client: Any,
        model: str,
        *,
        prefill: bool = True,
        guided_tool: str | None = None,
        **create_kwargs: Any,
    ) -> None:
        super().__init__(client, model, create_kwargs)
        self.guided_tool = guided_tool
        self.prefill = prefill
        self.capabilities = Capabilities(prefill=self._prefill_allowed(), streaming=True)

    @classmethod
    def refuses_prefill(cls, model: str) -> bool:
        """True once `model` has refused a prefill in this process."""
        with cls._lock:
            return model in cls._no_prefill

    @classmethod
    def forget_prefill_refusals(cls) -> None:
        """Forget which models refused prefill (they are tried again)."""
        with cls._lock:
            cls._no_prefill.clear()

    def _prefill_allowed(self) -> bool:
        return self.prefill and not self.refuses_prefill(self.model)

    def _endpoint(self) -> Any:
        return self.client.messages

    def _read_event(self, event: Any, stream: AnyStream) -> str | None:
        """The text of one Messages stream event (reading tools: the guided tool_use block's
        input JSON); records usage, the stop reason and the reasoning of `thinking` blocks
        (`thinking_delta`), which is no part of the text."""
        kind = getattr(event, "type", None)
        reply = self.tool_reply if self.reading_tools else None
        if kind == "content_block_start" and reply is not None:
            block: Any = getattr(event, "content_block", None)
            if getattr(block, "type", None) == "tool_use":
                reply.start(event.index, block.id, block.name)
        elif kind == "content_block_delta":
            delta = getattr(event, "delta", None)
            if reply is not None and getattr(delta, "type", None) == "input_json_delta":
                return reply.arguments(event.index, getattr(delta, "partial_json", None) or "")
            if getattr(delta, "type", None) == "thinking_delta":
                stream.reasoning += getattr(delta, "thinking", None) or ""
                return None
            text = getattr(delta, "text", None)
            is_text = getattr(delta, "type", None) == "text_delta" and isinstance(text, str)
            if reply is not None and is_text:
                return reply.text(str(text))
            return text if is_text else None
        if kind == "message_start":
            usage = getattr(getattr(event, "message", None), "usage", None)
            if usage is not None:
                stream.usage.input_tokens = _input_tokens(usage)
                stream.usage.output_tokens = getattr(usage, "output_tokens", None) or 0
                stream.usage.known = True
        elif kind == "message_delta":
            usage = getattr(event, "usage", None)
            if usage is not None:
                # Cumulative counts: the last event's are the totals.
                if getattr(usage, "input_tokens", None) is not None:
                    stream.usage.input_tokens = _input_tokens(usage)
                stream.usage.output_tokens = getattr(usage, "output_tokens", None) or 0
                stream.usage.known = True
            reason = getattr(getattr(event, "delta", None), "stop_reason", None)
            if reason:
                finish(stream, _STOP.get(reason, "unknown"))
                if reply is not None:
                    reply.ended(stream.request_id)
        return None

    def _failed(self, exc: BaseException, sdk_request: SDKRequest) -> ProviderError:
        """The error for a request that failed with `exc`. A refused prefill is remembered, and
        retryable at once: the next attempt asks without it."""
        if not (sdk_request.prefilled and is_prefill_refusal(exc)):
            return to_provider_error(exc)
        with self._lock:
            self._no_prefill.add(self.model)
        logger.debug("model %r refuses prefill; asking without it from now on", self.model)
        self.capabilities = Capabilities(prefill=False, streaming=True)
        return ProviderError(
            f"{self.model!r} refuses assistant prefill; the next attempt asks without it",
            retryable=True,
            status=400,
            request_id=to_provider_error(exc).request_id,
            retry_after=0.0,
        )

    def _prepare(self, request: DraftRequest) -> SDKRequest:
        return self.request(request, prefill=self._prefill_allowed())

    def request(self, request: DraftRequest, *, prefill: bool) -> SDKRequest:
        """The `messages.create` request for `request`, with prefill or without."""
        conversation, system = _split_system(as_messages(request.prompt))
        history, text = continued_text(conversation, request.prefix)
        if prefill:
            messages = history
            head = text.rstrip()
            if head:
                messages.append({"role": "assistant", "content": head})
            # The reply starts where `head` ends; it may or may not write the cut whitespace.
            aligner = Aligner(text[len(head) :], anchored=True, strip_fence=not head)
        else:
            messages = instruction(conversation, request.prefix)
            aligner = Aligner(text)
        kwargs = self._create_kwargs(request)
        if system is not None:
            kwargs["system"] = system
        kwargs.update(
            model=self.model, messages=messages, max_tokens=request.max_tokens, stream=True
        )
        return SDKRequest(kwargs, aligner, prefilled=prefill)
