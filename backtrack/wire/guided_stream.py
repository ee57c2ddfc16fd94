"""What wrap's create(..., grammar=..., stream=True) returns: the SDK's stream, guided.

Iterated, it yields the SDK's own stream items (OpenAI's ChatCompletionChunk, Anthropic's
message_start .. message_stop events, from the same EventStream the server sends), a text delta
for each piece of the output as it becomes final (guide()'s `on_text`): never text that a repair
may still take back. After the last item, `guide_result` holds the run's GuideResult. A run that
fails raises its error (a ProviderError carrying `.partial`) to the caller that iterates, after
every piece it had made final. Closed early (`close()`, or leaving its `with` block), the run
stops and its draft under way is closed.

The sync stream runs the run as a generator in the caller's thread (guide_pieces): nothing
happens between two items the caller asks for. The async one runs aguide's run as a task on the
caller's loop, started at the first item.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable, Generator, Iterator
from types import TracebackType
from typing import Any, Generic, TypeVar

from backtrack.run.guide import AsyncGuideRun
from backtrack.trace.result import GuideResult
from backtrack.wire.shape import Event, EventStream

# The SDK's stream item: ChatCompletionChunk, RawMessageStreamEvent.
Item = TypeVar("Item")


class GuidedStream(Generic[Item]):
    """The SDK's Stream, guided: iterate it for the SDK's stream items; `guide_result` is the
    GuideResult once the last one is out (None before)."""

    def __init__(self, pieces: Generator[str, None, GuideResult], events: EventStream) -> None:
        self.guide_result: GuideResult | None = None
        self._pieces = pieces
        self._events = events
        self._items = self._iterate()

    def __iter__(self) -> Iterator[Item]:
        return self

    def __next__(self) -> Item:
        return next(self._items)

    def __enter__(self) -> GuidedStream[Item]:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Stop the run (its draft under way is closed); no more items."""
        self._items.close()
        self._pieces.close()

    def _iterate(self) -> Generator[Item, None, None]:
        events = self._events
        yield from _sdk(events, events.start_events())
        while True:
            try:
                piece = next(self._pieces)
            except StopIteration as done:
                result: GuideResult = done.value
                break
            yield from _sdk(events, events.text_events(piece))
        self.guide_result = result
        yield from _sdk(events, events.end_events(result, None))


class AsyncGuidedStream(Generic[Item]):
    """The SDK's AsyncStream, guided: `async for` it for the SDK's stream items; `guide_result`
    is the GuideResult once the last one is out (None before). `run(on_text)` makes the run
    (its arguments checked there, at once); it starts at the first item."""

    def __init__(
        self, run: Callable[[Callable[[str], None]], AsyncGuideRun], events: EventStream
    ) -> None:
        self.guide_result: GuideResult | None = None
        self._pieces: asyncio.Queue[str | None] = asyncio.Queue()
        self._run = run(self._pieces.put_nowait)
        self._events = events
        self._items = self._iterate()

    def __aiter__(self) -> AsyncGuidedStream[Item]:
        return self

    async def __anext__(self) -> Item:
        return await self._items.__anext__()

    async def __aenter__(self) -> AsyncGuidedStream[Item]:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        """Stop the run (cancelled: its draft under way is closed); no more items."""
        await self._items.aclose()

    async def _iterate(self) -> AsyncGenerator[Item, None]:
        events, pieces = self._events, self._pieces

        async def work() -> GuideResult:
            try:
                return await self._run.result()
            finally:
                pieces.put_nowait(None)

        task = asyncio.ensure_future(work())
        try:
            for item in _sdk(events, events.start_events()):
                yield item
            while (piece := await pieces.get()) is not None:
                for item in _sdk(events, events.text_events(piece)):
                    yield item
            result = await task
        finally:
            task.cancel()
            await asyncio.wait({task})  # stopped: its draft under way is closed before we go on
            if not task.cancelled():
                task.exception()  # seen, raised above or not
        self.guide_result = result
        for item in _sdk(events, events.end_events(result, None)):
            yield item


def _sdk(events: EventStream, made: list[Event]) -> Iterator[Any]:
    return map(events.sdk, made)
