"""The Drafter protocol: what guide() needs from a black-box model.

A drafter continues `prefix` (text already committed) for a `prompt`, streaming. The stream yields
only new text: a drafter whose API cannot continue text by itself (chat without prefill) aligns the
reply first, so the loop never sees the prefix repeated. Closing a stream early stops the request,
so nothing after the first bad byte is paid for.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

Message = dict[str, Any]
"""One chat message, as the SDKs take it: a dict with a str "role" and a "content"."""
Prompt = str | Sequence[Message]
"""What a run is asked: a str, or a sequence of chat messages (check_prompt)."""


def check_prompt(prompt: object) -> Prompt:
    """`prompt` if it is a Prompt: a str, or a sequence of chat messages (dicts with a str "role"
    and a "content"). Anything else is a TypeError that says what was given, raised before any
    call is made."""
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, Sequence) and not isinstance(prompt, (bytes, bytearray)):
        for index, message in enumerate(prompt):
            if not (
                isinstance(message, dict)
                and isinstance(message.get("role"), str)
                and "content" in message
            ):
                raise TypeError(
                    f"prompt[{index}] must be a chat message, a dict with 'role' (str) and "
                    f"'content', not {type(message).__name__} {_short(message)}"
                )
            if not _is_content(message["content"]):
                raise TypeError(
                    f"prompt[{index}]['content'] must be a str or a list of content parts "
                    f"(dicts), not {type(message['content']).__name__} "
                    f"{_short(message['content'])}"
                )
        return prompt
    raise TypeError(
        "prompt must be a str or a list of chat messages (dicts with 'role' and 'content'), "
        f"not {type(prompt).__name__} {_short(prompt)}"
    )


def _is_content(content: object) -> bool:
    """A message's content as the SDKs take it: text, parts (OpenAI's, Anthropic's blocks), or
    None (an assistant message that only calls tools)."""
    if content is None or isinstance(content, str):
        return True
    return isinstance(content, list) and all(isinstance(part, dict) for part in content)


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


@dataclass(frozen=True)
class DraftRequest:
    """One round: continue `prefix` for `prompt`, at most `max_tokens` new tokens."""

    prompt: Prompt
    prefix: str = ""
    max_tokens: int = 512


@dataclass
class Usage:
    """Token counts as the provider reported them (0 where it did not).

    `known` is False where a reply did not report its usage: a server that sends none (llama.cpp's
    ignores `stream_options`), or an OpenAI stream closed at a cut (its usage comes last). The
    counts then leave that reply out: they are a lower bound."""

    input_tokens: int = 0
    output_tokens: int = 0
    known: bool = True


@dataclass(frozen=True)
class Capabilities:
    """What a drafter can do. `prefill`: it continues the prefix verbatim (raw completions, chat
    prefill). `streaming`: chunks arrive as generated, so a cut stops the request early."""

    prefill: bool
    streaming: bool


FinishReason = Literal["stop", "length", "closed", "unknown"]


@dataclass
class DraftStream:
    """A draft in progress. Iterate for text chunks; `close()` ends the request early.

    After iteration (or close) `usage`, `finish_reason` and `request_id` hold what the provider
    said, and `reasoning` the reasoning it sent apart from the answer (a `reasoning_content`
    delta, an Anthropic `thinking` block): never part of the draft, shown in the trace. `chunks`
    is any iterator of str; `closer` is called once by `close()`.
    """

    chunks: Iterator[str]
    closer: Any = None
    usage: Usage = field(default_factory=Usage)
    finish_reason: FinishReason = "unknown"
    request_id: str | None = None
    # The provider said the reply ended (a finish reason); a stream that ends without it was cut.
    finished: bool = False
    # What alignment removed from the reply's start (a fence opening, a repeat of the prefix).
    stripped: str = ""
    reasoning: str = ""

    def __iter__(self) -> Iterator[str]:
        return self.chunks

    def close(self) -> None:
        if self.finish_reason == "unknown":
            self.finish_reason = "closed"
        if self.closer is not None:
            closer, self.closer = self.closer, None
            closer()


class NoChunks:
    """An empty async iterator: what an AsyncDraftStream holds until its real chunks are made
    (they may need the stream itself, to record usage and the finish reason on it)."""

    def __aiter__(self) -> NoChunks:
        return self

    async def __anext__(self) -> str:
        raise StopAsyncIteration


@dataclass
class AsyncDraftStream:
    """The async twin of DraftStream: `async for` chunks, `await aclose()`."""

    chunks: AsyncIterator[str]
    closer: Any = None
    usage: Usage = field(default_factory=Usage)
    finish_reason: FinishReason = "unknown"
    request_id: str | None = None
    finished: bool = False
    stripped: str = ""
    reasoning: str = ""

    def __aiter__(self) -> AsyncIterator[str]:
        return self.chunks

    async def aclose(self) -> None:
        if self.finish_reason == "unknown":
            self.finish_reason = "closed"
        if self.closer is not None:
            closer, self.closer = self.closer, None
            await closer()


@runtime_checkable
class Drafter(Protocol):
    """A black-box model that drafts continuations."""

    @property
    def capabilities(self) -> Capabilities: ...

    def draft(self, request: DraftRequest) -> DraftStream:
        """Start a draft. Raises ProviderError (retryable or not) when the request fails."""
        ...


@runtime_checkable
class AsyncDrafter(Protocol):
    """The async twin of Drafter."""

    @property
    def capabilities(self) -> Capabilities: ...

    async def adraft(self, request: DraftRequest) -> AsyncDraftStream:
        """Start a draft. Raises ProviderError (retryable or not) when the request fails."""
        ...
