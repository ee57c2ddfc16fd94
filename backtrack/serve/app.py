"""`backtrack serve`: an OpenAI- and Anthropic-compatible HTTP server in front of an upstream API.

    POST /v1/chat/completions, /v1/completions,  (upstream kind openai)
         /v1/responses
    POST /v1/messages                            (upstream kind anthropic)
    GET  /v1/models                              passed through
    GET  /health

A request without a grammar goes upstream untouched, streamed or not. One with a grammar
(backtrack.serve.fields) is guided (backtrack.serve.guided): the upstream drafts through the
provider SDK, the target corrects, and the reply comes in the shape's own form
(backtrack.wire) with a `backtrack` summary; `stream: true` sends the text as it becomes final
(guide's `on_text`), the summary on the last event. Guided runs are aguide's (`AsyncGuideRun`) on
the server's event loop: upstream calls are awaited there, while checks and repair searches run in
aguide's check threads and corrections in its correction threads, so one slow run holds up no
other request. One target serves every request: in process (`LocalTarget`, its forward passes
one at a time behind its lock), or a vLLM server (`--target vllm:URL`), which batches the
corrections of concurrent requests; the server then holds no model and any number of replicas
may share that one. A client that hangs up (mid-stream or while waiting for a whole reply) cancels
its run: the upstream stream is closed, a correction stops before its next forward pass (on vLLM,
one not yet sent is not sent).

Limits (ServeLimits) answer in the shape's error form: a body past `max_body_bytes` 413, a
grammar past `max_grammar_bytes` or `compile_seconds` 400, a run past `timeout` 504 with the
partial result, as an upstream failure's error carries it. A body nested more than
MAX_BODY_DEPTH (256) levels is a 400 that says where, before it is parsed.

Each request is handled inside `providers.errors.scoped_keys` with the keys it brings: every error
message made for it masks them, and the process forgets them after it. Replies passed through have
those keys masked too, and the access log masks keys in query strings (backtrack.serve.keys).
"""

from __future__ import annotations

import contextlib
import json
import logging
import traceback
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from backtrack.run.options import GuideOptions
from backtrack.serve.errors import RequestError, ServeError, error_response
from backtrack.serve.fields import take_fields
from backtrack.serve.grammar_cache import GrammarCache
from backtrack.serve.guided import GuidedRequests
from backtrack.serve.keys import ACCESS_LOGGER, QueryKeyFilter
from backtrack.serve.upstream import Upstream
from backtrack.wire.anthropic_messages import AnthropicMessages
from backtrack.wire.openai_chat import OpenAIChat
from backtrack.wire.openai_completions import OpenAICompletions
from backtrack.wire.openai_responses import OpenAIResponses
from backtrack.wire.shape import Shape, UpstreamKind
from grammars import GrammarLimits
from grammars.limits import nesting_past
from providers.errors import redact, scoped_keys

if TYPE_CHECKING:
    import uvicorn

    from local_target import Target

logger = logging.getLogger(__name__)

SHAPES: tuple[Shape, ...] = (
    OpenAIChat(),
    OpenAICompletions(),
    OpenAIResponses(),
    AnthropicMessages(),
)


@dataclass(frozen=True)
class ServeLimits:
    """What one request may cost: its body in bytes, its grammar in bytes and compile seconds,
    the seconds its whole run may take, and the seconds the client has to send its headers (from
    the connection's start, or the next request's first byte) and its body (from the headers)
    before a 408 closes the connection (backtrack.serve.read_timeouts)."""

    max_body_bytes: int = 1 << 20
    max_grammar_bytes: int = 64 << 10
    compile_seconds: float = 10.0
    timeout: float = 300.0
    header_seconds: float = 10.0
    body_seconds: float = 60.0


@dataclass(frozen=True)
class ServeConfig:
    """The server's upstream (its root URL and protocol), the server-side key (None: each
    request's own is forwarded), the limits and the GuideOptions every guided run starts from."""

    upstream: str
    upstream_kind: UpstreamKind = "openai"
    upstream_key: str | None = field(default=None, repr=False)
    limits: ServeLimits = field(default_factory=ServeLimits)
    options: GuideOptions = field(default_factory=GuideOptions)


def create_app(config: ServeConfig, target: Target | None = None) -> Starlette:
    """The ASGI app. `target`: the target every guided run shares (None: SmolLM2 in process,
    loaded at the first correction)."""
    server = _Server(config, target)
    routes = [
        Route("/health", server.health, methods=["GET"]),
        Route("/v1/models", server.models, methods=["GET"]),
        *(Route(s.path, server.endpoint(s), methods=["POST"]) for s in SHAPES),
    ]
    return Starlette(routes=routes, lifespan=server.lifespan)


def run_server(
    config: ServeConfig, target: Target | None, *, host: str, port: int, log_level: str
) -> None:
    """Serve until interrupted (uvicorn)."""
    import uvicorn

    server = uvicorn.Server(
        uvicorn_config(config, target, host=host, port=port, log_level=log_level)
    )
    server.run()
    if not server.started:  # the port taken, the lifespan failed: uvicorn logged why
        raise SystemExit(3)  # uvicorn.run's exit status for a failed start


def uvicorn_config(
    config: ServeConfig, target: Target | None, *, host: str, port: int, log_level: str
) -> uvicorn.Config:
    """uvicorn's settings for the app: its h11 HTTP/1.1 protocol with the read timeouts of
    `config.limits` (h11 also where httptools is installed), the app's lifespan on."""
    import uvicorn

    from backtrack.serve.read_timeouts import read_timeout_protocol

    limits = config.limits
    return uvicorn.Config(
        create_app(config, target),
        host=host,
        port=port,
        log_level=log_level,
        lifespan="on",
        http=read_timeout_protocol(limits.header_seconds, limits.body_seconds),
    )


class _Server:
    def __init__(self, config: ServeConfig, target: Target | None) -> None:
        self.config = config
        limits = config.limits
        grammars = GrammarCache(
            GrammarLimits(max_source_bytes=limits.max_grammar_bytes), limits.compile_seconds
        )
        self.guided = GuidedRequests(config.options, target, limits.timeout, grammars)
        self._upstream: Upstream | None = None
        self._shape: Shape = (
            AnthropicMessages() if config.upstream_kind == "anthropic" else OpenAIChat()
        )

    @contextlib.asynccontextmanager
    async def lifespan(self, _app: Starlette) -> AsyncIterator[None]:
        self._upstream = Upstream(
            self.config.upstream,
            self.config.upstream_kind,
            key=self.config.upstream_key,
            timeout=self.config.limits.timeout,
        )
        # uvicorn's access line quotes each request's query: `?api_key=` must not reach the log.
        access = logging.getLogger(ACCESS_LOGGER)
        keys_out = QueryKeyFilter([self.config.upstream_key])
        access.addFilter(keys_out)
        try:
            yield
        finally:
            access.removeFilter(keys_out)
            await self._upstream.aclose()

    @property
    def upstream(self) -> Upstream:
        if self._upstream is None:
            raise RuntimeError("the server has not started (its lifespan did not run)")
        return self._upstream

    async def health(self, _request: Request) -> Response:
        return JSONResponse({"status": "ok", "upstream_kind": self.config.upstream_kind})

    async def models(self, request: Request) -> Response:
        with scoped_keys(*self.upstream.keys(request.headers)):
            try:
                return await self.upstream.forward(
                    "GET", "/v1/models", request.headers, b"", request.url.query
                )
            except ServeError as exc:
                return error_response(self._shape, exc)

    def endpoint(self, shape: Shape) -> Any:
        async def handle(request: Request) -> Response:
            with scoped_keys(*self.upstream.keys(request.headers)):
                try:
                    return await self._post(request, shape)
                except ServeError as exc:
                    return error_response(shape, exc)
                except Exception as exc:
                    # The message masked; the traceback (which would quote it) left out.
                    where = traceback.extract_tb(exc.__traceback__)[-1]
                    logger.error(
                        "%s: unexpected failure at %s:%s: %s",
                        shape.path,
                        where.filename,
                        where.lineno,
                        redact(f"{type(exc).__name__}: {exc}"),
                    )
                    error = ServeError(500, "internal error", code="internal_error")
                    return error_response(shape, error)

        return handle

    async def _post(self, request: Request, shape: Shape) -> Response:
        if shape.upstream != self.config.upstream_kind:
            paths = [s.path for s in SHAPES if s.upstream == self.config.upstream_kind]
            raise ServeError(
                404,
                f"this server forwards to an {self.config.upstream_kind} API: "
                f"POST {' or '.join(paths)}",
                code="not_found",
            )
        raw = await self._body(request)
        body = parse_body(raw)
        asked = take_fields(body, shape)
        if asked.grammar is None:
            if "backtrack" in body:
                raw = json.dumps(asked.body).encode()
            return await self.upstream.forward("POST", shape.path, request.headers, raw)
        return await self.guided.answer(request, shape, asked, asked.grammar, self.upstream)

    async def _body(self, request: Request) -> bytes:
        limit = self.config.limits.max_body_bytes
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise _too_large(int(declared), limit)
        chunks: list[bytes] = []
        size = 0
        try:
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    raise _too_large(size, limit)
                chunks.append(chunk)
        except ClientDisconnect:  # gone, or closed by the body's read timeout: nobody to answer
            raise ServeError(408, "the body did not arrive", code="timeout") from None
        return b"".join(chunks)


def _too_large(size: int, limit: int) -> ServeError:
    return ServeError(
        413, f"the body is {size:,} bytes; this server takes at most {limit:,}", code="too_large"
    )


# How deep a body's arrays and objects may nest: room for a schema at the engine's own limit
# (grammars.limits.SCHEMA_MAX_DEPTH, 124) inside a request, and far from the depth where Python's
# JSON reader and everything that walks the body after it would recurse out of stack.
MAX_BODY_DEPTH = 256


def parse_body(raw: bytes) -> dict[str, Any]:
    """A request's body as a JSON object; RequestError (400) when it is not one, or nests deeper
    than MAX_BODY_DEPTH. The depth is measured first, in linear time, over brackets outside
    strings, so no body makes the reader recurse past it."""
    at = nesting_past(raw, MAX_BODY_DEPTH)
    if at is not None:
        raise RequestError(
            f"the body nests arrays and objects more than {MAX_BODY_DEPTH} levels deep (at byte "
            f"{at:,}); this server takes at most {MAX_BODY_DEPTH}"
        )
    try:
        body = json.loads(raw)
    except ValueError:
        raise RequestError("the body is not JSON") from None
    except RecursionError:  # nesting the scan above cannot see (a body in UTF-16)
        raise RequestError(
            f"the body is nested too deeply to read; this server takes at most {MAX_BODY_DEPTH} "
            "levels"
        ) from None
    if not isinstance(body, dict):
        raise RequestError("the body must be a JSON object")
    return body
