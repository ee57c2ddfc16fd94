"""The three protocols `backtrack serve` speaks, each in its own shape: how a guided request is read
(prompt, model, token budget, the drafter for it), and how its reply, its stream and its errors
are written.

    ChatCompletions   POST /v1/chat/completions   OpenAI   chat.completion / .chunk
    Completions       POST /v1/completions        OpenAI   text_completion
    Messages          POST /v1/messages           Anthropic  message, message_start..message_stop

Every guided reply carries a `backtrack` object (`summary`); a stream carries it on its last event.
"""

from __future__ import annotations

import dataclasses
import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Literal

from backtrack.serve.errors import RequestError, ServeError
from backtrack.trace.result import GuideResult
from backtrack.wrap import anthropic_message, chat_completion
from providers import AnthropicDrafter, OpenAIChatDrafter, OpenAICompletionsDrafter
from providers.base import AsyncDrafter, Message, Prompt, check_prompt

UpstreamKind = Literal["openai", "anthropic"]

# Fields the drafter sets itself (or that a guided request cannot honour); the rest of a body goes
# upstream with each draft request, as it came.
_SET_BY_SERVER = frozenset(
    {"model", "messages", "prompt", "system", "stream", "stream_options", "n"}
    | {"max_tokens", "max_completion_tokens"}
)


def summary(result: GuideResult, *, html: bool = False) -> dict[str, Any]:
    """The `backtrack` object of a reply: how the text came to be (and the HTML trace, asked)."""
    out: dict[str, Any] = {
        "valid": result.valid,
        "stop_reason": result.stop_reason,
        "api_calls": result.api_calls,
        "corrections": result.corrections,
        "edits": result.repairs,
        "accepted_chars": result.accepted_chars,
        "rejected_chars": result.rejected_chars,
        "kept": round(result.kept, 4),
        "lost_chars": result.lost_chars,
        "drops": [dataclasses.asdict(d) for d in result.drops],  # as the CLI's --json has them
        "local_tokens": result.local_tokens,
        "seconds": round(result.seconds, 4),
    }
    if html:
        out["trace_html"] = result.to_html()  # every model and user text in it is escaped
    return out


def sse(data: Any, event: str | None = None) -> bytes:
    """One server-sent event."""
    payload = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    return ((f"event: {event}\n" if event else "") + f"data: {payload}\n\n").encode()


@dataclass(frozen=True)
class Guided:
    """A guided request read: the drafter's model, prompt and token budget, and the fields that
    go upstream with each draft (`extra`)."""

    model: str
    prompt: Prompt
    max_tokens: int | None
    max_tokens_param: str
    extra: dict[str, Any] = field(default_factory=dict)


class Protocol:
    """What the three protocols share; each subclass is one of them."""

    name: str
    path: str
    upstream: UpstreamKind

    # -- reading a request

    def read(self, body: dict[str, Any]) -> Guided:
        model = body.get("model")
        if not isinstance(model, str) or not model:
            raise RequestError("`model` is required", param="model")
        if body.get("n", 1) != 1:
            raise RequestError("a guided request writes one choice: n must be 1", param="n")
        param = "max_completion_tokens" if "max_completion_tokens" in body else "max_tokens"
        limit = body.get(param)
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)):
            raise RequestError(f"`{param}` must be an integer", param=param)
        extra = {k: v for k, v in body.items() if k not in _SET_BY_SERVER}
        return Guided(model, self.prompt(body), limit, param, extra)

    def prompt(self, body: dict[str, Any]) -> Prompt:
        return _messages(body)

    def drafter(self, client: Any, guided: Guided) -> AsyncDrafter:
        raise NotImplementedError

    # -- writing replies

    def reply(self, guided: Guided, result: GuideResult, extra: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    def stream(self, guided: Guided) -> Stream:
        raise NotImplementedError

    def error_body(self, error: ServeError) -> dict[str, Any]:
        body: dict[str, Any] = {
            "error": {
                "message": error.message,
                "type": error.kind,
                "param": error.param,
                "code": error.code,
            }
        }
        return _with_partial(body, error)

    def error_event(self, error: ServeError) -> bytes:
        return sse(self.error_body(error))


def _messages(body: dict[str, Any]) -> list[Message]:
    messages = body.get("messages")
    try:
        if not isinstance(messages, list) or not messages:
            raise TypeError("a non-empty list of messages is required")
        check_prompt(messages)
    except TypeError as exc:
        raise RequestError(f"`messages`: {exc}", param="messages") from None
    return messages


def _with_partial(body: dict[str, Any], error: ServeError) -> dict[str, Any]:
    """`body` with the partial result of a run that failed after some work."""
    if isinstance(error.partial, GuideResult):
        body["backtrack"] = {**summary(error.partial), "text": error.partial.text}
    return body


class Stream:
    """One reply as server-sent events: `start()`, `text(piece)` as pieces become final, then
    `end(result, extra)`; chunks carry one id."""

    def __init__(self, guided: Guided) -> None:
        self.guided = guided
        self.id = uuid.uuid4().hex
        self.created = int(time.time())

    def start(self) -> bytes:
        raise NotImplementedError

    def text(self, piece: str) -> bytes:
        raise NotImplementedError

    def end(self, result: GuideResult, extra: dict[str, Any]) -> bytes:
        raise NotImplementedError


def _usage(result: GuideResult) -> dict[str, int]:
    usage = result.usage
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.output_tokens,
    }


def _finish(result: GuideResult) -> str:
    return "stop" if result.valid else "length"


# -- OpenAI chat completions ---------------------------------------------------------------------


class ChatCompletions(Protocol):
    name = "chat.completions"
    path = "/v1/chat/completions"
    upstream: UpstreamKind = "openai"

    def drafter(self, client: Any, guided: Guided) -> AsyncDrafter:
        return OpenAIChatDrafter(
            client, guided.model, max_tokens_param=guided.max_tokens_param, extra_body=guided.extra
        )

    def reply(self, guided: Guided, result: GuideResult, extra: dict[str, Any]) -> dict[str, Any]:
        reply: dict[str, Any] = chat_completion(guided.model, result).model_dump(
            mode="json", exclude_unset=True, exclude={"guide_result"}
        )
        return {**reply, "backtrack": extra}

    def stream(self, guided: Guided) -> Stream:
        return _ChatStream(guided)


class _ChatStream(Stream):
    def _chunk(self, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": f"chatcmpl-backtrack-{self.id}",
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.guided.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    def start(self) -> bytes:
        return sse(self._chunk({"role": "assistant", "content": ""}))

    def text(self, piece: str) -> bytes:
        return sse(self._chunk({"content": piece}))

    def end(self, result: GuideResult, extra: dict[str, Any]) -> bytes:
        last = {**self._chunk({}), "choices": [], "usage": _usage(result), "backtrack": extra}
        return sse(self._chunk({}, _finish(result))) + sse(last) + sse("[DONE]")


# -- OpenAI completions --------------------------------------------------------------------------


class Completions(Protocol):
    name = "completions"
    path = "/v1/completions"
    upstream: UpstreamKind = "openai"

    def prompt(self, body: dict[str, Any]) -> Prompt:
        prompt = body.get("prompt")
        if not isinstance(prompt, str):
            raise RequestError("a guided completion continues one text: `prompt` must be a string")
        return prompt

    def drafter(self, client: Any, guided: Guided) -> AsyncDrafter:
        return OpenAICompletionsDrafter(client, guided.model, extra_body=guided.extra)

    def reply(self, guided: Guided, result: GuideResult, extra: dict[str, Any]) -> dict[str, Any]:
        choice = {"index": 0, "text": result.text, "finish_reason": _finish(result)}
        return {
            "id": f"cmpl-backtrack-{uuid.uuid4().hex}",
            "object": "text_completion",
            "created": int(time.time()),
            "model": guided.model,
            "choices": [{**choice, "logprobs": None}],
            "usage": _usage(result),
            "backtrack": extra,
        }

    def stream(self, guided: Guided) -> Stream:
        return _CompletionStream(guided)


class _CompletionStream(Stream):
    def _chunk(self, text: str, finish: str | None = None) -> dict[str, Any]:
        return {
            "id": f"cmpl-backtrack-{self.id}",
            "object": "text_completion",
            "created": self.created,
            "model": self.guided.model,
            "choices": [{"index": 0, "text": text, "finish_reason": finish, "logprobs": None}],
        }

    def start(self) -> bytes:
        return b""

    def text(self, piece: str) -> bytes:
        return sse(self._chunk(piece))

    def end(self, result: GuideResult, extra: dict[str, Any]) -> bytes:
        last = {**self._chunk(""), "choices": [], "usage": _usage(result), "backtrack": extra}
        return sse(self._chunk("", _finish(result))) + sse(last) + sse("[DONE]")


# -- Anthropic messages --------------------------------------------------------------------------


class Messages(Protocol):
    name = "messages"
    path = "/v1/messages"
    upstream: UpstreamKind = "anthropic"

    def prompt(self, body: dict[str, Any]) -> Prompt:
        messages = _messages(body)
        system = body.get("system")
        if system is not None:
            return [{"role": "system", "content": system}, *messages]
        return messages

    def drafter(self, client: Any, guided: Guided) -> AsyncDrafter:
        return AnthropicDrafter(client, guided.model, extra_body=guided.extra)

    def reply(self, guided: Guided, result: GuideResult, extra: dict[str, Any]) -> dict[str, Any]:
        reply: dict[str, Any] = anthropic_message(guided.model, result).model_dump(
            mode="json", exclude_unset=True, exclude={"guide_result"}
        )
        return {**reply, "backtrack": extra}

    def stream(self, guided: Guided) -> Stream:
        return _MessageStream(guided)

    def error_body(self, error: ServeError) -> dict[str, Any]:
        body = {"type": "error", "error": {"type": error.kind, "message": error.message}}
        return _with_partial(body, error)

    def error_event(self, error: ServeError) -> bytes:
        return sse(self.error_body(error), "error")


class _MessageStream(Stream):
    def start(self) -> bytes:
        message: dict[str, Any] = {
            "id": f"msg_backtrack_{self.id}",
            "type": "message",
            "role": "assistant",
            "model": self.guided.model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 0, "output_tokens": 0},
        }
        block = {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "text", "text": ""},
        }
        return sse({"type": "message_start", "message": message}, "message_start") + sse(
            block, "content_block_start"
        )

    def text(self, piece: str) -> bytes:
        delta = {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": piece},
        }
        return sse(delta, "content_block_delta")

    def end(self, result: GuideResult, extra: dict[str, Any]) -> bytes:
        usage = result.usage
        delta = {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn" if result.valid else "max_tokens"},
            "usage": {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens},
            "backtrack": extra,
        }
        return (
            sse({"type": "content_block_stop", "index": 0}, "content_block_stop")
            + sse(delta, "message_delta")
            + sse({"type": "message_stop"}, "message_stop")
        )


PROTOCOLS: tuple[Protocol, ...] = (ChatCompletions(), Completions(), Messages())
