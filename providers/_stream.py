"""SDK streams as DraftStreams: one sync and one async shell around the same per-event step.

`absorb(event, stream)` is the provider-specific part with no I/O: it returns the text an event
carries and records usage and the finish reason on `stream`. The shells iterate the SDK stream,
translate its errors (adding the request id the response headers gave), optionally align the text,
and close the HTTP response however the iteration ends, or when the DraftStream is closed.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Generator
from typing import Any

from backtrack.errors import ProviderError
from providers.align import aalign, align
from providers.base import AsyncDraftStream, DraftStream, FinishReason
from providers.errors import mapped_exceptions, to_provider_error

AnyStream = DraftStream | AsyncDraftStream
Absorb = Callable[[Any, AnyStream], str | None]


class Alignment:
    """How to align a reply: `Aligner` options for `prefix` (see providers.align)."""

    def __init__(self, prefix: str, *, anchored: bool = False, strip_fence: bool = True) -> None:
        self.prefix = prefix
        self.anchored = anchored
        self.strip_fence = strip_fence


class NoChunks:
    """A placeholder async iterator (a real one replaces it before the stream is handed out)."""

    def __aiter__(self) -> NoChunks:
        return self

    async def __anext__(self) -> str:
        raise StopAsyncIteration


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


def provider_error(exc: BaseException, request_id: str | None) -> ProviderError:
    """`exc` translated, with `request_id` filled in when the error itself did not carry one."""
    error = to_provider_error(exc)
    if error.request_id is None and request_id is not None:
        error.request_id = request_id
    return error


def finish(stream: AnyStream, reason: FinishReason) -> None:
    """Record the reason the provider gave, unless the stream was closed first."""
    if stream.finish_reason != "closed":
        stream.finish_reason = reason


def sync_stream(
    sdk_stream: Any,
    absorb: Absorb,
    *,
    request_id: str | None,
    alignment: Alignment | None = None,
) -> DraftStream:
    """A DraftStream over a sync SDK stream (iterable of events, with `close()`)."""
    stream = DraftStream(chunks=iter(()), request_id=request_id)

    def events() -> Generator[str, None, None]:
        try:
            for event in sdk_stream:
                text = absorb(event, stream)
                if text:
                    yield text
        except mapped_exceptions() as exc:
            raise provider_error(exc, request_id) from exc
        finally:
            sdk_stream.close()

    raw = events()
    chunks = raw
    if alignment is not None:
        chunks = align(
            alignment.prefix,
            raw,
            anchored=alignment.anchored,
            strip_fence=alignment.strip_fence,
        )

    def close() -> None:
        try:
            chunks.close()
            raw.close()
        finally:
            sdk_stream.close()

    stream.chunks = chunks
    stream.closer = close
    return stream


def async_stream(
    sdk_stream: Any,
    absorb: Absorb,
    *,
    request_id: str | None,
    alignment: Alignment | None = None,
) -> AsyncDraftStream:
    """The async twin of `sync_stream` (an async iterable of events, with `await close()`)."""
    stream = AsyncDraftStream(chunks=NoChunks(), request_id=request_id)

    async def events() -> AsyncGenerator[str, None]:
        try:
            async for event in sdk_stream:
                text = absorb(event, stream)
                if text:
                    yield text
        except mapped_exceptions() as exc:
            raise provider_error(exc, request_id) from exc
        finally:
            await sdk_stream.close()

    raw = events()
    chunks = raw
    if alignment is not None:
        chunks = aalign(
            alignment.prefix,
            raw,
            anchored=alignment.anchored,
            strip_fence=alignment.strip_fence,
        )

    async def close() -> None:
        try:
            await chunks.aclose()
            await raw.aclose()
        finally:
            await sdk_stream.close()

    stream.chunks = chunks
    stream.closer = close
    return stream
