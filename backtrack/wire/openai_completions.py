"""The OpenAI completions shape: `POST /v1/completions`, one text continued (`text_completion`)."""

from __future__ import annotations

import time
import uuid
from typing import Any

from backtrack.trace.result import GuideResult
from backtrack.wire.openai_chat import finish_reason, usage
from backtrack.wire.shape import (
    Event,
    EventStream,
    GuidedRequest,
    MalformedBody,
    Shape,
    UpstreamKind,
    with_extra,
)
from backtrack.wire.sse import sse
from providers import OpenAICompletionsDrafter
from providers.base import Prompt
from providers.tool_calls import ToolReply


class OpenAICompletions(Shape):
    name = "completions"
    path = "/v1/completions"
    upstream: UpstreamKind = "openai"

    def drafter(self, client: Any, model: str, **options: Any) -> OpenAICompletionsDrafter:
        return OpenAICompletionsDrafter(client, model, **options)

    def prompt_from_body(self, body: dict[str, Any]) -> Prompt:
        prompt = body.get("prompt")
        if not isinstance(prompt, str):
            raise MalformedBody("a guided completion continues one text: `prompt` must be a string")
        return prompt

    def reply(
        self,
        guided: GuidedRequest,
        result: GuideResult,
        extra: dict[str, Any],
        tools: ToolReply | None = None,  # a completion takes no tools
    ) -> dict[str, Any]:
        choice = {"index": 0, "text": result.text, "finish_reason": finish_reason(result)}
        return {
            "id": f"cmpl-backtrack-{uuid.uuid4().hex}",
            "object": "text_completion",
            "created": int(time.time()),
            "model": guided.model,
            "choices": [{**choice, "logprobs": None}],
            "usage": usage(result),
            "backtrack": extra,
        }

    def stream(self, guided: GuidedRequest) -> EventStream:
        return _CompletionStream(guided.model)


class _CompletionStream(EventStream):
    done = sse("[DONE]")

    def _chunk(self, text: str, finish: str | None = None) -> dict[str, Any]:
        return {
            "id": f"cmpl-backtrack-{self.id}",
            "object": "text_completion",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "text": text, "finish_reason": finish, "logprobs": None}],
        }

    def start_events(self) -> list[Event]:
        return []

    def text_events(self, piece: str) -> list[Event]:
        return [Event(self._chunk(piece))]

    def end_events(self, result: GuideResult, extra: dict[str, Any] | None) -> list[Event]:
        last = with_extra({**self._chunk(""), "choices": [], "usage": usage(result)}, extra)
        return [Event(self._chunk("", finish_reason(result))), Event(last)]
