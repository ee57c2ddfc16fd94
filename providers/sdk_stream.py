"""SDK streams as DraftStreams: one sync and one async shell around the same per-event step.

`read_event(event, stream)` is the protocol's part with no I/O (providers.openai,
providers.anthropic): it returns the text an event carries and records usage and the finish reason
on `stream` (with `finish`). The shells iterate the SDK stream, translate its errors (adding the
request id the response headers gave), optionally align the text, and close the HTTP response
however the iteration ends, or when the DraftStream is closed.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncGenerator, Callable, Generator
from typing import Any

from providers.align import Aligner
from providers.base import AsyncDraftStream, DraftStream, FinishReason, NoChunks
from providers.errors import ProviderError, masked_cause
from providers.sdk_errors import mapped_exceptions, to_provider_error

__all__ = ["AnyStream", "ReadEvent", "async_stream", "finish", "header", "sync_stream"]

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
        self, stream: AnyStream, aligner: Aligner | None, content_type: str | None
    ) -> None:
        self.stream = stream
        self.content_type = content_type or ""
        self.aligner = aligner
        self.high = ""  # a high surrogate that ended the last event, waiting for its pair

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
) -> DraftStream:
    """A DraftStream over a sync SDK stream (iterable of events, with `close()`)."""
    stream = DraftStream(chunks=iter(()), request_id=request_id)
    text = _Text(stream, aligner, header(getattr(sdk_stream, "response", None), "content-type"))

    def events() -> Generator[str, None, None]:
        try:
            for event in sdk_stream:
                if piece := text.feed(read_event(event, stream) or ""):
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
) -> AsyncDraftStream:
    """The async twin of `sync_stream` (an async iterable of events, with `await close()`)."""
    stream = AsyncDraftStream(chunks=NoChunks(), request_id=request_id)
    text = _Text(stream, aligner, header(getattr(sdk_stream, "response", None), "content-type"))

    async def events() -> AsyncGenerator[str, None]:
        # The SDK's iterator is an async generator of its own: closed here, not left suspended
        # for the garbage collector to finalize later, in whatever task then runs.
        iterator = sdk_stream.__aiter__()
        try:
            async for event in iterator:
                if piece := text.feed(read_event(event, stream) or ""):
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
