"""One guided request, run: its options and grammar, its drafter on the upstream's SDK client, the
run (aguide's `AsyncGuideRun` on the server's event loop, within the time limit) and its reply,
whole or streamed as the text becomes final. A client that hangs up cancels its run.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from backtrack.run.guide import AsyncGuideRun
from backtrack.run.options import GuideOptions, capped, resolve
from backtrack.serve.errors import ServeError, error_response, timed_out, to_serve_error
from backtrack.serve.fields import Asked, GrammarSpec
from backtrack.serve.grammar_cache import GrammarCache
from backtrack.serve.upstream import Upstream
from backtrack.trace.result import GuideResult
from backtrack.wire.shape import GuidedRequest, MalformedBody, Shape, summary
from providers.errors import scoped_keys
from providers.tool_calls import NoGuidedCall

if TYPE_CHECKING:
    from local_target import Target

logger = logging.getLogger(__name__)

# The status logged for a request whose client hung up before its reply (nginx's; never sent).
_CLIENT_GONE = 499

T = TypeVar("T")
Run = Callable[[Callable[[str], None] | None], Coroutine[Any, Any, GuideResult]]


@dataclass(frozen=True)
class GuidedRequests:
    """How a server answers guided requests: the options every run starts from, the target they
    share, the time limit of one run, and the compiled grammars."""

    options: GuideOptions
    target: Target | None
    timeout: float
    grammars: GrammarCache

    async def answer(
        self, request: Request, shape: Shape, asked: Asked, spec: GrammarSpec, upstream: Upstream
    ) -> Response:
        """The reply to a guided request, in `shape`."""
        try:
            guided = shape.read_body(asked.body)
        except MalformedBody as exc:
            raise to_serve_error(exc) from None
        changes = dict(asked.options)
        if guided.max_tokens is not None:
            changes["max_draft_tokens"] = guided.max_tokens
        try:  # the client's budgets held to the server's: its cost per request is bounded
            options = capped(resolve("backtrack", self.options, changes), self.options)
        except (TypeError, ValueError) as exc:
            raise to_serve_error(exc) from exc
        grammar = await self.grammars.get(spec)
        client = upstream.client(request.headers)
        tool = {"guided_tool": asked.tool} if asked.tool else {}
        drafter = shape.drafter(client, guided.model, **guided.drafter_options, **tool)
        logger.info("%s: guided (%s from %s)", shape.path, grammar.kind, spec.field)
        limit = self.timeout

        async def run(on_text: Callable[[str], None] | None = None) -> GuideResult:
            guide = AsyncGuideRun(
                drafter,
                grammar,
                prompt=guided.prompt,
                target=self.target,
                options=options,
                on_text=on_text,
            )
            with anyio.move_on_after(limit):
                return await guide.result()
            partial = await guide.stop(TimeoutError(f"the server's time limit ({limit:g} s)"))
            raise timed_out(limit, partial)

        if asked.body.get("stream") is True:
            keys = upstream.keys(request.headers)
            return await _stream(request, shape, guided, asked, run, keys)
        try:
            done = await _unless_hung_up(request, run())
        except NoGuidedCall as exc:  # the reply called no guided function: passed on as it is
            done = _Done(exc.partial)
        except Exception as exc:
            raise to_serve_error(exc) from exc
        if done is None:
            return _gone(shape)
        extra = summary(done.value, html=asked.trace_html)
        return JSONResponse(shape.reply(guided, done.value, extra, drafter.tool_reply))


async def _stream(
    request: Request,
    shape: Shape,
    guided: GuidedRequest,
    asked: Asked,
    run: Run,
    keys: tuple[str | None, ...],
) -> Response:
    """The run's text as events, each piece as soon as it is final. Nothing is sent before the
    first piece: a run that fails before it answers with its error status instead."""
    pieces: asyncio.Queue[str | None] = asyncio.Queue()

    async def work() -> GuideResult:
        try:
            return await run(pieces.put_nowait)
        finally:
            pieces.put_nowait(None)

    task = asyncio.create_task(work())
    task.add_done_callback(_retrieve)
    try:
        got = await _unless_hung_up(request, pieces.get())
    except BaseException:
        task.cancel()
        raise
    if got is None:
        task.cancel()
        return _gone(shape)
    first = got.value
    if first is None and task.exception() is not None:
        raise to_serve_error(_exception(task))
    stream = shape.stream(guided)

    async def events() -> AsyncIterator[bytes]:
        try:
            yield stream.start()
            piece = first
            while piece is not None:
                yield stream.text(piece)
                piece = await pieces.get()
            try:
                result = await task
            except Exception as exc:
                with scoped_keys(*keys):  # past the handler's block: the response's own
                    event = shape.error_event(to_serve_error(exc))
                yield event
                return
            yield stream.end(result, summary(result, html=asked.trace_html))
        finally:
            task.cancel()  # the client hung up: stop the run

    return StreamingResponse(
        events(), media_type="text/event-stream", headers={"cache-control": "no-cache"}
    )


@dataclass(frozen=True)
class _Done:
    value: Any


async def _unless_hung_up(request: Request, work: Coroutine[Any, Any, T]) -> _Done | None:
    """`work`'s result (as `_Done(value)`), or None when the client hangs up first: `work` is
    then cancelled. The request's body has been read: the next message is the disconnect."""
    task = asyncio.ensure_future(work)
    watch = asyncio.ensure_future(_hung_up(request))
    try:
        await asyncio.wait({task, watch}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        watch.cancel()
        gone = not task.done()
        if gone:
            task.cancel()
    if gone:
        await asyncio.wait({task})  # its upstream stream closed before the handler returns
        logger.info("%s: the client hung up; its run is stopped", request.url.path)
        return None
    return _Done(task.result())


async def _hung_up(request: Request) -> None:
    while (await request.receive())["type"] != "http.disconnect":
        pass


def _gone(shape: Shape) -> Response:
    """The answer to a client that has left (the server drops it)."""
    error = ServeError(_CLIENT_GONE, "the client closed the connection", code="client_gone")
    return error_response(shape, error)


def _exception(task: asyncio.Task[GuideResult]) -> Exception:
    exc = task.exception()
    if not isinstance(exc, Exception):
        raise RuntimeError("the run did not fail")
    return exc


def _retrieve(task: asyncio.Task[GuideResult]) -> None:
    """Mark a run's failure as seen when nobody awaits it (its client hung up)."""
    if not task.cancelled():
        task.exception()
