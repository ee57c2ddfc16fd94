"""`backtrack serve`: an OpenAI- and Anthropic-compatible HTTP server in front of an upstream API.

    POST /v1/chat/completions, /v1/completions   (upstream kind openai)
    POST /v1/messages                            (upstream kind anthropic)
    GET  /v1/models                              passed through
    GET  /health

A request without a grammar goes upstream untouched, streamed or not. One with a grammar
(backtrack.serve.fields) is guided: the upstream drafts through the provider SDK, the local
target corrects, and the reply comes in the protocol's own shape with a `backtrack` summary;
`stream: true` sends the text as it becomes final (guide's `on_text`), the summary on the last
event. Guided runs are aguide's (`AsyncGuideRun`) on the server's event loop: upstream calls are
awaited there, while checks and repair searches run in aguide's check threads and the target's
forward passes in worker threads that take the target's lock one at a time, so one slow run holds
up no other request and one loaded target serves every request. A client that hangs up (mid-stream
or while waiting for a whole reply) cancels its run: the upstream stream is closed, a correction
stops before its next forward pass.

Limits (ServeLimits) answer in the protocol's error shape: a body past `max_body_bytes` 413, a
grammar past `max_grammar_bytes` or `compile_seconds` 400, a run past `timeout` 504 with the
partial result, as an upstream failure's error carries it.

Each request is handled inside `providers.errors.scoped_keys` with the keys it brings: every error
message made for it masks them, and the process forgets them after it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import traceback
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from backtrack.run.guide import AsyncGuideRun
from backtrack.run.options import GuideOptions, resolve
from backtrack.serve.errors import RequestError, ServeError, timed_out, to_serve_error
from backtrack.serve.fields import Asked, GrammarSpec, take_fields
from backtrack.serve.upstream import Upstream
from backtrack.trace.result import GuideResult
from backtrack.wire.protocol import (
    PROTOCOLS,
    ChatCompletions,
    Guided,
    Messages,
    Protocol,
    UpstreamKind,
    summary,
)
from grammars import Grammar, GrammarLimits
from providers.errors import redact, scoped_keys

if TYPE_CHECKING:
    from local_target import LocalTarget

logger = logging.getLogger(__name__)

# Compiled grammars kept for requests that send the same one again.
_GRAMMAR_CACHE = 64
# The status logged for a request whose client hung up before its reply (nginx's; never sent).
_CLIENT_GONE = 499

T = TypeVar("T")


@dataclass(frozen=True)
class ServeLimits:
    """What one request may cost: its body in bytes, its grammar in bytes and compile seconds,
    and the seconds its whole run may take."""

    max_body_bytes: int = 1 << 20
    max_grammar_bytes: int = 64 << 10
    compile_seconds: float = 10.0
    timeout: float = 300.0


@dataclass(frozen=True)
class ServeConfig:
    """The server's upstream (its root URL and protocol), the server-side key (None: each
    request's own is forwarded), the limits and the GuideOptions every guided run starts from."""

    upstream: str
    upstream_kind: UpstreamKind = "openai"
    upstream_key: str | None = field(default=None, repr=False)
    limits: ServeLimits = field(default_factory=ServeLimits)
    options: GuideOptions = field(default_factory=GuideOptions)


def create_app(config: ServeConfig, target: LocalTarget | None = None) -> Starlette:
    """The ASGI app. `target`: the local model every guided run shares (None: SmolLM2, loaded at
    the first correction)."""
    server = _Server(config, target)
    routes = [
        Route("/health", server.health, methods=["GET"]),
        Route("/v1/models", server.models, methods=["GET"]),
        *(Route(p.path, server.endpoint(p), methods=["POST"]) for p in PROTOCOLS),
    ]
    return Starlette(routes=routes, lifespan=server.lifespan)


def run_server(
    config: ServeConfig, target: LocalTarget | None, *, host: str, port: int, log_level: str
) -> None:
    """Serve until interrupted (uvicorn)."""
    import uvicorn

    uvicorn.run(create_app(config, target), host=host, port=port, log_level=log_level)


class _Server:
    def __init__(self, config: ServeConfig, target: LocalTarget | None) -> None:
        self.config = config
        self.target = target
        self._upstream: Upstream | None = None
        self._grammars: OrderedDict[GrammarSpec, Grammar] = OrderedDict()
        self._shape: Protocol = (
            Messages() if config.upstream_kind == "anthropic" else ChatCompletions()
        )

    @contextlib.asynccontextmanager
    async def lifespan(self, _app: Starlette) -> AsyncIterator[None]:
        self._upstream = Upstream(
            self.config.upstream,
            self.config.upstream_kind,
            key=self.config.upstream_key,
            timeout=self.config.limits.timeout,
        )
        try:
            yield
        finally:
            await self._upstream.aclose()

    @property
    def upstream(self) -> Upstream:
        if self._upstream is None:
            raise RuntimeError("the server has not started (its lifespan did not run)")
        return self._upstream

    # -- routes ---------------------------------------------------------------------------------

    async def health(self, _request: Request) -> Response:
        return JSONResponse({"status": "ok", "upstream_kind": self.config.upstream_kind})

    async def models(self, request: Request) -> Response:
        try:
            return await self.upstream.forward(
                "GET", "/v1/models", request.headers, b"", request.url.query
            )
        except ServeError as exc:
            return _error(self._shape, exc)

    def endpoint(self, protocol: Protocol) -> Any:
        async def handle(request: Request) -> Response:
            with scoped_keys(*self.upstream.keys(request.headers)):
                try:
                    return await self._post(request, protocol)
                except ServeError as exc:
                    return _error(protocol, exc)
                except Exception as exc:
                    # The message masked; the traceback (which would quote it) left out.
                    where = traceback.extract_tb(exc.__traceback__)[-1]
                    logger.error(
                        "%s: unexpected failure at %s:%s: %s",
                        protocol.path,
                        where.filename,
                        where.lineno,
                        redact(f"{type(exc).__name__}: {exc}"),
                    )
                    error = ServeError(500, "internal error", code="internal_error")
                    return _error(protocol, error)

        return handle

    async def _post(self, request: Request, protocol: Protocol) -> Response:
        if protocol.upstream != self.config.upstream_kind:
            paths = [p.path for p in PROTOCOLS if p.upstream == self.config.upstream_kind]
            raise ServeError(
                404,
                f"this server forwards to an {self.config.upstream_kind} API: "
                f"POST {' or '.join(paths)}",
                code="not_found",
            )
        raw = await self._body(request)
        try:
            body = json.loads(raw)
        except ValueError:
            raise RequestError("the body is not JSON") from None
        if not isinstance(body, dict):
            raise RequestError("the body must be a JSON object")
        asked = take_fields(body)
        if asked.grammar is None:
            if "backtrack" in body:
                raw = json.dumps(asked.body).encode()
            return await self.upstream.forward("POST", protocol.path, request.headers, raw)
        return await self._guided(request, protocol, asked, asked.grammar)

    async def _body(self, request: Request) -> bytes:
        limit = self.config.limits.max_body_bytes
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise _too_large(int(declared), limit)
        chunks: list[bytes] = []
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise _too_large(size, limit)
            chunks.append(chunk)
        return b"".join(chunks)

    # -- guided requests ------------------------------------------------------------------------

    async def _guided(
        self, request: Request, protocol: Protocol, asked: Asked, spec: GrammarSpec
    ) -> Response:
        guided = protocol.read(asked.body)
        changes = dict(asked.options)
        if guided.max_tokens is not None:
            changes["max_draft_tokens"] = guided.max_tokens
        try:
            options = resolve("backtrack", self.config.options, changes)
        except (TypeError, ValueError) as exc:
            raise to_serve_error(exc) from exc
        grammar = await self._grammar(spec)
        drafter = protocol.drafter(self.upstream.client(request.headers), guided)
        logger.info("%s: guided (%s from %s)", protocol.path, grammar.kind, spec.field)

        limit = self.config.limits.timeout

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
            return await self._stream(request, protocol, guided, asked, run)
        try:
            done = await _unless_hung_up(request, run())
        except Exception as exc:
            raise to_serve_error(exc) from exc
        if done is None:
            return _gone(protocol)
        extra = summary(done.value, html=asked.trace_html)
        return JSONResponse(protocol.reply(guided, done.value, extra))

    async def _stream(
        self,
        request: Request,
        protocol: Protocol,
        guided: Guided,
        asked: Asked,
        run: Callable[[Callable[[str], None]], Coroutine[Any, Any, GuideResult]],
    ) -> Response:
        """The run's text as events, each piece as soon as it is final. Nothing is sent before
        the first piece: a run that fails before it answers with its error status instead."""
        pieces: asyncio.Queue[str | None] = asyncio.Queue()
        keys = self.upstream.keys(request.headers)

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
            return _gone(protocol)
        first = got.value
        if first is None and task.exception() is not None:
            raise to_serve_error(_exception(task))
        stream = protocol.stream(guided)

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
                        event = protocol.error_event(to_serve_error(exc))
                    yield event
                    return
                yield stream.end(result, summary(result, html=asked.trace_html))
            finally:
                task.cancel()  # the client hung up: stop the run

        return StreamingResponse(
            events(), media_type="text/event-stream", headers={"cache-control": "no-cache"}
        )

    async def _grammar(self, spec: GrammarSpec) -> Grammar:
        """The compiled grammar, from the cache or compiled in a worker thread within the
        limits."""
        cached = self._grammars.get(spec)
        if cached is not None:
            self._grammars.move_to_end(spec)
            return cached
        limits = self.config.limits
        grammar_limits = GrammarLimits(max_source_bytes=limits.max_grammar_bytes)
        try:
            with anyio.fail_after(limits.compile_seconds):
                grammar = await anyio.to_thread.run_sync(
                    spec.compile, grammar_limits, abandon_on_cancel=True
                )
        except TimeoutError:
            raise ServeError(
                400,
                f"the grammar in `{spec.field}` took longer than {limits.compile_seconds:g} s "
                "to compile",
                code="grammar_too_costly",
                param=spec.field,
            ) from None
        except Exception as exc:
            raise to_serve_error(exc) from exc
        self._grammars[spec] = grammar
        if len(self._grammars) > _GRAMMAR_CACHE:
            self._grammars.popitem(last=False)
        return grammar


def _too_large(size: int, limit: int) -> ServeError:
    return ServeError(
        413, f"the body is {size:,} bytes; this server takes at most {limit:,}", code="too_large"
    )


def _error(protocol: Protocol, error: ServeError) -> Response:
    headers = {}
    if error.retry_after is not None:
        headers["retry-after"] = str(math.ceil(error.retry_after))
    return JSONResponse(protocol.error_body(error), status_code=error.status, headers=headers)


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


def _gone(protocol: Protocol) -> Response:
    """The answer to a client that has left (the server drops it)."""
    error = ServeError(_CLIENT_GONE, "the client closed the connection", code="client_gone")
    return _error(protocol, error)


def _exception(task: asyncio.Task[GuideResult]) -> Exception:
    exc = task.exception()
    if not isinstance(exc, Exception):
        raise RuntimeError("the run did not fail")
    return exc


def _retrieve(task: asyncio.Task[GuideResult]) -> None:
    """Mark a run's failure as seen when nobody awaits it (its client hung up)."""
    if not task.cancelled():
        task.exception()
