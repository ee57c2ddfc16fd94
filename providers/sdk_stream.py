"""SDK streams as DraftStreams: one sync and one async shell around the same per-event step.

`read_event(event, stream)` is the protocol's part with no I/O (providers.openai,
providers.anthropic): it returns the text an event carries and records usage and the finish reason
on `stream` (with `finish`). The shells iterate the SDK stream, translate its errors (adding the
request id the response headers gave), optionally align the text, and close the HTTP response
however the iteration ends, or when the DraftStream is closed.

Each stream also holds to the request's token budget whatever the server does: llama.cpp's server
ignores `max_completion_tokens` (asked for 5, it sent 51). Every event that carries text (answer
or reasoning) carries at least one token, so a stream whose events pass the budget was not cut by
the server: it ends there as "length", as if the server had stopped it, and the request is closed.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import AsyncGenerator, Callable, Generator
from typing import Any

from providers.align import Aligner
from providers.base import AsyncDraftStream, DraftStream, FinishReason, NoChunks, Usage
from providers.errors import ProviderError, masked_cause
from providers.sdk_errors import mapped_exceptions, to_provider_error

__all__ = ["AnyStream", "ReadEvent", "async_stream", "finish", "header", "sync_stream"]

logger = logging.getLogger(__name__)

AnyStream = DraftStream | AsyncDraftStream
ReadEvent = Callable[[Any, AnyStream], str | None]


def header(response: Any, *names: str) -> str | None:
    """The first of `names` present in `response.headers` (None when there is no response)."""
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    for name in names:
        value = headers.get(name)
        if value:
            return str(value)
    return None


def finish(stream: AnyStream, reason: FinishReason) -> None:
    """Record the reason the provider gave (the stream ended properly), unless closed first."""
    stream.finished = True
    if stream.finish_reason != "closed":
        stream.finish_reason = reason


class _Text:
    """The draft text of a stream's events, with the faults of the wire handled.

    A surrogate pair split across two events (JSON `\\ud83d` then `\\ude00`) is joined; a lone
    surrogate is a malformed reply. The aligner (optional) strips what the reply repeats, and what
    it strips is recorded on the stream (`stream.stripped`). A stream that ends without the
    provider's finish reason (no `[DONE]`, no `message_stop`) was cut off on the way: `finish()`
    raises a retryable ProviderError, so the round resumes from the committed text, as after a drop.
    """

    def __init__(
        self,
        stream: AnyStream,
        aligner: Aligner | None,
        content_type: str | None,
        max_tokens: int | None,
    ) -> None:
        self.stream = stream
        self.content_type = content_type or ""
        self.aligner = aligner
        self.high = ""  # a high surrogate that ended the last event, waiting for its pair
        self.max_tokens = max_tokens
        self.events = 0  # events that carried text or reasoning: at least a token each

    def over_budget(self, text: str, reasoning_before: int) -> bool:
        """One more event read and fed (its answer `text`; the reasoning was `reasoning_before`
        long before it): True when the events passed the token budget, so the server ignored
        it. The stream then ends as "length" and this event's text is not used. Text while
        alignment may still strip it (a repeat of the committed text) is not counted:
        conservative, for servers that send a token in pieces."""
        aligned = self.aligner is None or self.aligner.decided
        if (text and aligned) or len(self.stream.reasoning) > reasoning_before:
            self.events += 1
        if self.max_tokens is None or self.events <= self.max_tokens:
            return False
        logger.warning(
            "the server sent more than the %d tokens asked for (it ignores the limit's name: "
            "OpenAIChatDrafter(max_tokens_param='max_tokens') for llama.cpp); the draft ends there",
            self.max_tokens,
        )
        self.stream.reasoning = self.stream.reasoning[:reasoning_before]
        finish(self.stream, "length")
        return True

    def read(self, event: Any, read_event: ReadEvent) -> str | None:
        """The draft text of `event` (None: the budget is passed, read no further; what the
        aligner holds back stays unread, as when the stream is closed: it may be a repeat)."""
        before = len(self.stream.reasoning)
        text = read_event(event, self.stream) or ""
        piece = self.feed(text)
        return None if self.over_budget(text, before) else piece

    def feed(self, text: str) -> str:
        text = self.high + text
        self.high = ""
        if text and _HIGH_SURROGATES.match(text[-1]):
            self.high, text = text[-1], text[:-1]
        text = _joined(text, self.stream.request_id)
        if self.aligner is None:
            return text
        out = self.aligner.feed(text)
        self.stream.stripped = self.aligner.stripped
        return out

    def finish(self) -> str:
        if self.high:
            raise ProviderError(
                "the reply ended inside a surrogate pair",
                retryable=True,
                request_id=self.stream.request_id,
            )
        if not self.stream.finished:
            # A body that is no event stream (a proxy that ignored `stream`) reads as no events.
            sse = self.content_type.startswith("text/event-stream") or not self.content_type
            raise ProviderError(
                "the stream ended without a finish reason (cut off on the way)"
                if sse
                else f"the reply to a streamed request was {self.content_type}, not a stream",
                retryable=True,
                request_id=self.stream.request_id,
            )
        if self.aligner is None:
            return ""
        out = self.aligner.finish()
        self.stream.stripped = self.aligner.stripped
        return out


_HIGH_SURROGATES = re.compile("[\ud800-\udbff]")
_PAIRS = re.compile("[\ud800-\udbff][\udc00-\udfff]")
_LONE = re.compile("[\ud800-\udfff]")


def _joined(text: str, request_id: str | None) -> str:
    """`text` with surrogate pairs made characters; a lone surrogate is a malformed reply."""
    text = _PAIRS.sub(lambda m: m.group().encode("utf-16", "surrogatepass").decode("utf-16"), text)
    lone = _LONE.search(text)
    if lone is not None:
        raise ProviderError(
            f"the reply holds a lone surrogate U+{ord(lone.group()):04X}",
            retryable=True,
            request_id=request_id,
        )
    return text


def _read_error(exc: BaseException, request_id: str | None) -> ProviderError:
    """An error while reading a started stream. A malformed event there is a fault on the way
    (the next attempt gets a fresh stream), so it is retryable, unlike a malformed whole reply."""
    if isinstance(exc, json.JSONDecodeError):
        return ProviderError(
            f"malformed event in the stream: {exc}", retryable=True, request_id=request_id
        )
    error = to_provider_error(exc)
    if error.request_id is None:
        error.request_id = request_id
    return error


def sync_stream(
    sdk_stream: Any,
    read_event: ReadEvent,
    *,
    request_id: str | None,
    aligner: Aligner | None = None,
    max_tokens: int | None = None,
) -> DraftStream:
    """A DraftStream over a sync SDK stream (iterable of events, with `close()`), ended at
    `max_tokens` events with text whatever the server does."""
    stream = DraftStream(chunks=iter(()), request_id=request_id, usage=Usage(known=False))
    content_type = header(getattr(sdk_stream, "response", None), "content-type")
    text = _Text(stream, aligner, content_type, max_tokens)

    def events() -> Generator[str, None, None]:
        try:
            for event in sdk_stream:
                piece = text.read(event, read_event)
                if piece is None:
                    return  # as a close: what alignment holds back is no new text for sure
                if piece:
                    yield piece
            if piece := text.finish():
                yield piece
        except mapped_exceptions() as exc:
            raise _read_error(exc, request_id) from masked_cause(exc)
        finally:
            sdk_stream.close()

    chunks = events()

    def close() -> None:
        try:
            chunks.close()
        finally:
            sdk_stream.close()

    stream.chunks = chunks
    stream.closer = close
    return stream


def async_stream(
    sdk_stream: Any,
    read_event: ReadEvent,
    *,
    request_id: str | None,
    aligner: Aligner | None = None,
    max_tokens: int | None = None,
) -> AsyncDraftStream:
    """The async twin of `sync_stream` (an async iterable of events, with `await close()`)."""
    stream = AsyncDraftStream(chunks=NoChunks(), request_id=request_id, usage=Usage(known=False))
    content_type = header(getattr(sdk_stream, "response", None), "content-type")
    text = _Text(stream, aligner, content_type, max_tokens)

    async def events() -> AsyncGenerator[str, None]:
        # The SDK's iterator is an async generator of its own: closed here, not left suspended
        # for the garbage collector to finalize later, in whatever task then runs.
        iterator = sdk_stream.__aiter__()
        try:
            async for event in iterator:
                piece = text.read(event, read_event)
                if piece is None:
                    return  # as a close: what alignment holds back is no new text for sure
                if piece:
                    yield piece
            if piece := text.finish():
                yield piece
        except mapped_exceptions() as exc:
            raise _read_error(exc, request_id) from masked_cause(exc)
        finally:
            try:
                if hasattr(iterator, "aclose"):
                    await iterator.aclose()
            finally:
                await sdk_stream.close()

    chunks = events()

    async def close() -> None:
        try:
            await chunks.aclose()
        finally:
            await sdk_stream.close()

    stream.chunks = chunks
    stream.closer = close
    return stream
