"""The errors `backtrack serve` answers with, and where every failure becomes one.

    ServeError              .status .kind .code .param .retry_after .partial
    └── RequestError        400: a field, an option or the body is not what it must be

`to_serve_error(exc)` is the one mapping, for what a guided request can raise:

    MalformedBody           400 invalid_request      (the shape's own fields: model, messages...)
    GrammarError            400 invalid_grammar      (line and column in the message)
    TextError               422 grammar_budget       (a draft passed the grammar's work budget)
    TextLostError           422 text_lost            (past `backtrack.max_lost_chars`; partial)
    ProviderError           the upstream's own 4xx (429 with its Retry-After), else 502 (a 5xx,
                            a dropped or timed-out connection); the partial result rides along
    TargetError             500 target_error         (the local model failed; partial result)
    TimeoutError            504 timeout              (the request's time limit; `timed_out`
                                                      gives it with the partial result)
    TypeError, ValueError   400 invalid_option       (GuideOptions refused a `backtrack` field)

Messages go through `providers.errors.redact`: no key is ever echoed. `error_response` writes
one in a shape's error body.
"""

from __future__ import annotations

import math

from starlette.responses import JSONResponse, Response

from backtrack.trace.result import TextLostError
from backtrack.wire.shape import MalformedBody, Shape
from grammars import BacktrackError, GrammarError, PartialResult, TextError
from local_target.errors import TargetError
from providers.errors import ProviderError, redact

# The error type each status carries (both protocols use these names).
_KINDS = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    422: "invalid_request_error",
    429: "rate_limit_error",
    504: "timeout_error",
}


class ServeError(BacktrackError):
    """A request answered with an error: `status`, the protocol's error `kind`, a short `code`,
    the request field at fault (`param`), the wait a 429 asks for, and the `partial` result of a
    guided run that failed after some work."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        code: str,
        param: str | None = None,
        retry_after: float | None = None,
        partial: PartialResult | None = None,
    ) -> None:
        self.status = status
        self.message = redact(message)
        self.kind = _KINDS.get(status, "api_error")
        self.code = code
        self.param = param
        self.retry_after = retry_after
        self.partial = partial
        super().__init__(self.message)


class RequestError(ServeError):
    """A malformed request: 400."""

    def __init__(self, message: str, *, param: str | None = None, status: int = 400) -> None:
        super().__init__(status, message, code="invalid_request", param=param)


def to_serve_error(exc: Exception) -> ServeError:
    """The ServeError for a failure of a guided request (re-raises what it does not know)."""
    if isinstance(exc, ServeError):
        return exc
    if isinstance(exc, MalformedBody):
        return RequestError(str(exc), param=exc.param)
    if isinstance(exc, GrammarError):
        return ServeError(400, f"invalid grammar: {exc}", code="invalid_grammar")
    if isinstance(exc, TextError):
        return ServeError(422, str(exc), code="grammar_budget", partial=exc.partial)
    if isinstance(exc, TextLostError):
        return ServeError(422, str(exc), code="text_lost", partial=exc.partial)
    if isinstance(exc, ProviderError):
        return _upstream(exc)
    if isinstance(exc, TargetError):
        return ServeError(
            500, f"the local target failed: {exc}", code="target_error", partial=exc.partial
        )
    if isinstance(exc, TimeoutError):
        return ServeError(504, "the request took longer than the server's limit", code="timeout")
    if isinstance(exc, (TypeError, ValueError)):
        return ServeError(400, str(exc), code="invalid_option", param="backtrack")
    raise exc


def _upstream(exc: ProviderError) -> ServeError:
    """An upstream failure: its own status when it is the client's (4xx), else 502."""
    status = exc.status if exc.status is not None and exc.status < 500 else 502
    return ServeError(
        status,
        f"upstream: {exc}",
        code="upstream_error",
        retry_after=exc.retry_after,
        partial=exc.partial,
    )


def timed_out(limit: float, partial: PartialResult) -> ServeError:
    """A guided run stopped at the request's time limit, with what it had committed."""
    return ServeError(
        504,
        f"the request took longer than the server's limit ({limit:g} s)",
        code="timeout",
        partial=partial,
    )


def error_response(shape: Shape, error: ServeError) -> Response:
    """`error` in `shape`'s error body, with its status (and the wait a 429 asks for)."""
    headers = {}
    if error.retry_after is not None:
        headers["retry-after"] = str(math.ceil(error.retry_after))
    return JSONResponse(shape.error_body(error), status_code=error.status, headers=headers)
