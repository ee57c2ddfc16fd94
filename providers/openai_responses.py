"""A drafter over OpenAI's Responses API (`client.responses.create`), streamed.

The Responses API continues no assistant text, so the drafter asks as chat completions does
without prefill: the text so far goes in as the model's last message with an instruction to
continue it, and the reply is aligned (providers.align). The prompt's messages go in `input` (a
system message as it is: the API takes `system` and `developer` roles there), the token budget in
`max_output_tokens`.

Its stream is typed events: the text comes in `response.output_text.delta`, the usage and the end
in `response.completed` (`response.incomplete` when the budget ran out). An `error` event or a
`response.failed` is an error the SDK yields rather than raises: it becomes a ProviderError here,
retryable when its code says so.
"""

from __future__ import annotations

from typing import Any

from providers.align import instructed
from providers.base import Capabilities, DraftRequest
from providers.sdk import SDKDrafter, SDKRequest
from providers.sdk_errors import event_error
from providers.sdk_stream import AnyStream, finish

__all__ = ["OpenAIResponsesDrafter"]


class OpenAIResponsesDrafter(SDKDrafter):
    """The Responses API as a drafter (instruction + alignment). `create_kwargs` go to every
    `responses.create` call (temperature, reasoning, text, extra_body...)."""

    reserved = frozenset({"model", "input", "stream", "max_output_tokens"})
    request_id_header = "x-request-id"

    def __init__(self, client: Any, model: str, **create_kwargs: Any) -> None:
        super().__init__(client, model, create_kwargs)
        self.capabilities = Capabilities(prefill=False, streaming=True)

    def _endpoint(self) -> Any:
        return self.client.responses

    def _prepare(self, request: DraftRequest) -> SDKRequest:
        messages, aligner = instructed(request.prompt, request.prefix)
        kwargs = {
            **self.create_kwargs,
            "model": self.model,
            "input": messages,
            "max_output_tokens": request.max_tokens,
            "stream": True,
        }
        return SDKRequest(kwargs, aligner)

    def _read_event(self, event: Any, stream: AnyStream) -> str | None:
        """The text of one Responses stream event; records usage and the end, raises on an
        error event."""
        kind = getattr(event, "type", None)
        if kind == "response.output_text.delta":
            delta = getattr(event, "delta", None)
            return delta if isinstance(delta, str) else None
        response = getattr(event, "response", None)
        if kind in ("response.completed", "response.incomplete"):
            usage = getattr(response, "usage", None)
            if usage is not None:
                stream.usage.input_tokens = getattr(usage, "input_tokens", None) or 0
                stream.usage.output_tokens = getattr(usage, "output_tokens", None) or 0
                stream.usage.known = True
            details = getattr(response, "incomplete_details", None)
            ran_out = getattr(details, "reason", None) == "max_output_tokens"
            finish(
                stream,
                "stop" if kind == "response.completed" else "length" if ran_out else "unknown",
            )
        elif kind == "error":
            error = {
                "code": getattr(event, "code", None),
                "message": getattr(event, "message", None),
            }
            raise event_error(error, stream.request_id)
        elif kind == "response.failed":
            failure = getattr(response, "error", None)
            error = {
                "code": getattr(failure, "code", None),
                "message": getattr(failure, "message", None),
            }
            raise event_error(error, stream.request_id)
        return None
