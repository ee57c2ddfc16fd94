"""FunctionDrafter: any plain function as a drafter.

The function is the black box. It continues text, so it has prefill; it streams when it yields.

    def f(prompt, prefix) -> str                     both, as given
    def f(text) -> str                               prompt + prefix (the prompt must be a str)
    def f(...) -> Reply                              a str and why it ended ("length": cut short)
    def f(...) -> Iterator[str]                      a generator: chunks, streaming
    async def f(...) -> str / async generator        for adraft() and aguide()

A str is a reply that ended as its writer meant ("stop"); a function that knows its reply was
cut short at its token budget returns `Reply(text, "length")`, and the run asks for the rest.

A function that names `max_tokens` among its parameters gets it too. Whatever it
raises reaches the loop as a ProviderError (`from` the original) with every key masked: an SDK or
transport error keeps its retryable flag, anything else is not retryable.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Generator, Iterator, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

from providers.base import (
    AsyncDraftStream,
    Capabilities,
    DraftRequest,
    DraftStream,
    FinishReason,
    NoChunks,
)
from providers.errors import ProviderError, masked, masked_cause, redact
from providers.sdk_errors import mapped_exceptions, to_provider_error

__all__ = ["FunctionDrafter", "Reply"]

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
_FORWARDED = ("max_tokens",)
_END = object()  # what next()/anext() give when a function's chunks run out


@contextlib.contextmanager
def _translated() -> Iterator[None]:
    """Whatever the function raises leaves as a ProviderError with every key masked: its own
    ProviderError as it is, anything else translated (`from` the original)."""
    try:
        yield
    except ProviderError as exc:
        masked(exc)
        raise
    except mapped_exceptions() as exc:
        raise to_provider_error(exc) from masked_cause(exc)
    except Exception as exc:
        raise ProviderError(
            redact(f"the drafter function raised {type(exc).__name__}: {exc}")
        ) from masked_cause(exc)


def _takes_prefix(fn: Callable[..., Any]) -> tuple[bool, frozenset[str]]:
    """Whether `fn` is `(prompt, prefix)` (else `(text)`), and which of _FORWARDED it names."""
    try:
        parameters = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return False, frozenset()
    # max_tokens goes by keyword; the text arguments are the other positional ones.
    positional = [p for p in parameters if p.kind in _POSITIONAL and p.name not in _FORWARDED]
    required = [p for p in positional if p.default is inspect.Parameter.empty]
    variadic = any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters)
    two = (
        len(required) >= 2 or variadic or (len(positional) >= 2 and positional[1].name == "prefix")
    )
    if not positional and not variadic:
        raise TypeError(f"{fn!r} takes no positional argument: it cannot receive the text")
    named = frozenset(p.name for p in parameters if p.name in _FORWARDED)
    return two, named


@dataclass(frozen=True)
class Reply:
    """A drafter function's whole reply and why it ended: "stop" (it said all it meant to, as a
    plain str does) or "length" (cut short at its token budget: the run asks for the rest)."""

    text: str
    finish_reason: FinishReason = "stop"


def _whole(result: object) -> tuple[str, FinishReason] | None:
    """A function's whole reply (a str or a Reply) and its finish reason; None for chunks."""
    if isinstance(result, str):
        return result, "stop"
    if isinstance(result, Reply):
        return result.text, result.finish_reason
    return None


def _is_streaming(fn: Callable[..., Any]) -> bool:
    # A callable object streams when its __call__ is a generator function.
    call = fn if inspect.isroutine(fn) else type(fn).__call__
    return inspect.isgeneratorfunction(call) or inspect.isasyncgenfunction(call)


def _check_chunk(chunk: object) -> str:
    if not isinstance(chunk, str):
        raise ProviderError(
            f"the drafter function yielded {type(chunk).__name__}, not str", retryable=False
        )
    return chunk


class FunctionDrafter:
    """A callable as a Drafter (`draft`) and, when it is async or not, an AsyncDrafter (`adraft`).

    `draft()` refuses an async function (TypeError); `adraft()` takes both, and calls a sync one
    in the event loop's thread (it should not block for long). `streaming` overrides what the
    function's kind says (a plain function that returns an iterator streams, but looks as if it
    did not); `takes_prefix` overrides the reading of its signature.
    """

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        streaming: bool | None = None,
        takes_prefix: bool | None = None,
    ) -> None:
        if not callable(fn):
            raise TypeError(f"FunctionDrafter needs a callable, got {type(fn).__name__}")
        self.fn = fn
        two, self._forwarded = _takes_prefix(fn)
        self.takes_prefix = two if takes_prefix is None else takes_prefix
        self.capabilities = Capabilities(
            prefill=True, streaming=_is_streaming(fn) if streaming is None else streaming
        )

    def __repr__(self) -> str:
        return f"FunctionDrafter({self.fn!r})"

    def _call(self, request: DraftRequest) -> Any:
        if self.takes_prefix:
            args: tuple[Any, ...] = (request.prompt, request.prefix)
        elif isinstance(request.prompt, str):
            args = (request.prompt + request.prefix,)
        else:
            raise TypeError(
                "a one-argument drafter function continues a text: give guide() a str prompt, "
                "or take (prompt, prefix) to receive chat messages"
            )
        kwargs: dict[str, Any] = {}
        if "max_tokens" in self._forwarded:
            kwargs["max_tokens"] = request.max_tokens
        with _translated():
            return self.fn(*args, **kwargs)

    def draft(self, request: DraftRequest) -> DraftStream:
        """Call the function; its str or chunks become the stream."""
        result = self._call(request)
        if inspect.iscoroutine(result):
            result.close()  # never awaited: close it so that Python does not warn
            raise TypeError(f"{self.fn!r} is async: use adraft() (aguide) with it")
        if hasattr(result, "__aiter__"):
            raise TypeError(f"{self.fn!r} yields asynchronously: use adraft() (aguide) with it")
        _check_result(result)
        stream = DraftStream(chunks=iter(()))
        if whole := _whole(result):  # the whole reply is here, even if it is not all read
            source: Iterator[Any] = iter([whole[0]])
            stream.finish_reason = whole[1]
        elif hasattr(result, "__iter__"):
            source = iter(result)
        else:
            raise ProviderError(
                f"the drafter function returned {type(result).__name__}, not str or chunks"
            )
        chunks = self._chunks(source, stream)
        stream.chunks = chunks
        stream.closer = chunks.close
        return stream

    @staticmethod
    def _chunks(source: Iterator[Any], stream: DraftStream) -> Generator[str, None, None]:
        try:
            while True:
                with _translated():
                    chunk = next(source, _END)
                if chunk is _END:
                    break
                if text := _check_chunk(chunk):
                    yield text
            if stream.finish_reason == "unknown":  # a Reply's own stays
                stream.finish_reason = "stop"
        finally:
            close = getattr(source, "close", None)
            if close is not None:
                close()

    async def adraft(self, request: DraftRequest) -> AsyncDraftStream:
        """Call (and await) the function; its str or chunks, sync or async, become the stream."""
        result = self._call(request)
        if inspect.isawaitable(result):
            with _translated():
                result = await result
        _check_result(result)
        stream = AsyncDraftStream(chunks=NoChunks())
        if whole := _whole(result):  # the whole reply is here, even if it is not all read
            source: AsyncIterator[Any] = _aiter_sync(iter([whole[0]]))
            stream.finish_reason = whole[1]
        elif hasattr(result, "__aiter__"):
            source = aiter(result)
        elif hasattr(result, "__iter__"):
            source = _aiter_sync(iter(result))
        else:
            raise ProviderError(
                f"the drafter function returned {type(result).__name__}, not str or chunks"
            )
        chunks = self._achunks(source, stream)
        stream.chunks = chunks
        stream.closer = chunks.aclose
        return stream

    @staticmethod
    async def _achunks(
        source: AsyncIterator[Any], stream: AsyncDraftStream
    ) -> AsyncGenerator[str, None]:
        try:
            while True:
                with _translated():
                    chunk = await anext(source, _END)
                if chunk is _END:
                    break
                if text := _check_chunk(chunk):
                    yield text
            if stream.finish_reason == "unknown":  # a Reply's own stays
                stream.finish_reason = "stop"
        finally:
            aclose = getattr(source, "aclose", None)
            if aclose is not None:
                await aclose()


def _check_result(result: object) -> None:
    """A function's result that iterates but is no stream of text (a dict's keys, a set's
    items, bytes' numbers) is a ProviderError, not text made of its parts."""
    if isinstance(result, (Mapping, AbstractSet, bytes, bytearray)):
        raise ProviderError(
            f"the drafter function returned {type(result).__name__}, not str or chunks of str"
        )


async def _aiter_sync(source: Iterator[Any]) -> AsyncIterator[Any]:
    try:
        for item in source:
            yield item
    finally:
        close = getattr(source, "close", None)
        if close is not None:
            close()
