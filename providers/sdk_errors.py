"""Every error a provider SDK raises, as a ProviderError: the one place where they are translated.

    ProviderError                        .retryable .status .request_id .retry_after
    ├── from openai / anthropic APIStatusError
    │       status and request id from the response; retryable for 408, 409, 429 and 5xx;
    │       retry_after from the retry-after-ms / Retry-After headers. An error event inside a
    │       streamed 200 reply (an overload mid-stream) is retryable when its type says so.
    ├── from APIConnectionError, APITimeoutError          retryable (the request may not have run)
    ├── from APIResponseValidationError, malformed JSON   not retryable (the same body would return)
    ├── from httpx2 / httpx transport errors, OSError     retryable (a drop mid-stream)
    └── from anything else under OpenAIError / AnthropicError (credentials, webhooks, finish-reason
            errors)                                        not retryable

The SDKs are never imported here: an error from an SDK means the SDK is loaded already, so the
classes are looked up in `sys.modules`. Every message goes through `redact` (providers.errors).
"""

from __future__ import annotations

import email.utils
import json
import logging
import math
import ssl
import sys
import time
from collections.abc import Mapping
from typing import Any

from providers.errors import ProviderError, redact

__all__ = [
    "RETRYABLE_STATUS",
    "event_error",
    "is_retryable_status",
    "mapped_exceptions",
    "retry_after_seconds",
    "to_provider_error",
]

logger = logging.getLogger(__name__)

RETRYABLE_STATUS = frozenset({408, 409, 429})
"""Client-error statuses worth a retry; every 5xx is retryable too (`is_retryable_status`)."""

# Error types sent inside a body (an SSE `error` event in a 200 stream, or an OpenAI stream error)
# that a later attempt can get past.
_RETRYABLE_ERROR_TYPES = frozenset(
    {"overloaded_error", "api_error", "rate_limit_error", "timeout_error", "server_error"}
)


def is_retryable_status(status: int | None) -> bool:
    """True for 408, 409, 429 and 5xx: statuses a later attempt may get past."""
    return status is not None and (status in RETRYABLE_STATUS or 500 <= status <= 599)


def retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
    """The wait a response asks for: `retry-after-ms`, else `Retry-After` (seconds or HTTP date).

    None when neither header is there or parses; never negative (a date in the past gives 0).
    """
    if headers is None:
        return None
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            delay = float(value) / divisor
        except ValueError:
            continue
        if math.isfinite(delay):
            return max(delay, 0.0)
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        parsed = email.utils.parsedate_tz(value)
        if parsed is None:
            return None
        return max(float(email.utils.mktime_tz(parsed) - time.time()), 0.0)
    except (TypeError, ValueError, OverflowError):
        return None


def _classes(module: str, *names: str) -> tuple[type[BaseException], ...]:
    """The named exception classes of `module` if it is loaded (none when it is not)."""
    loaded = sys.modules.get(module)
    if loaded is None:
        return ()
    found = (getattr(loaded, name, None) for name in names)
    return tuple(c for c in found if isinstance(c, type) and issubclass(c, BaseException))


def _is(exc: BaseException, *candidates: tuple[type[BaseException], ...]) -> bool:
    classes = tuple(c for group in candidates for c in group)
    return bool(classes) and isinstance(exc, classes)


def _sdk_classes(name: str) -> tuple[type[BaseException], ...]:
    return _classes("openai", name) + _classes("anthropic", name)


def mapped_exceptions() -> tuple[type[BaseException], ...]:
    """The foreign exception classes `to_provider_error` translates, for an `except` clause.

    Everything the SDKs raise, the HTTP layer's errors (httpx2, httpx), dropped connections, and
    malformed JSON. Not arbitrary exceptions: a bug in backtrack should surface as itself. Not
    ProviderError either: one raised already passes through as it is (re-raising it `from` itself
    would make it its own cause).
    """
    return (
        *_classes("openai", "OpenAIError"),
        *_classes("anthropic", "AnthropicError"),
        *_classes("httpx2", "HTTPError", "StreamError", "InvalidURL"),
        *_classes("httpx", "HTTPError", "StreamError", "InvalidURL"),
        *_classes("anyio", "EndOfStream", "BrokenResourceError", "ClosedResourceError"),
        json.JSONDecodeError,
        ConnectionError,
        TimeoutError,
        ssl.SSLError,
    )


def _sdk_name(exc: BaseException) -> str:
    root = type(exc).__module__.split(".")[0]
    return root if root in ("openai", "anthropic", "httpx2", "httpx") else ""


def _describe(exc: BaseException, detail: str | None = None) -> str:
    sdk = _sdk_name(exc)
    name = f"{sdk}.{type(exc).__name__}" if sdk else type(exc).__name__
    text = detail if detail is not None else (getattr(exc, "message", None) or str(exc))
    return redact(f"{name}: {text}" if text else name)


def _body_error_type(body: object) -> str | None:
    """The `type` (or `code`) of the error in a body: {"error": {"type": ...}} or {"type": ...}."""
    if not isinstance(body, Mapping):
        return None
    inner = body.get("error", body)
    if not isinstance(inner, Mapping):
        return None
    for key in ("type", "code"):
        value = inner.get(key)
        if isinstance(value, str) and value != "error":
            return value
    return None


def _headers(exc: BaseException) -> Mapping[str, str] | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    return headers if isinstance(headers, Mapping) else None


def _request_id(exc: BaseException) -> str | None:
    found = getattr(exc, "request_id", None)
    if isinstance(found, str) and found:
        return found
    headers = _headers(exc)
    if headers is None:
        return None
    return headers.get("x-request-id") or headers.get("request-id")


def _status_error(exc: BaseException) -> ProviderError:
    raw_status = getattr(exc, "status_code", None)
    status = raw_status if isinstance(raw_status, int) else None
    headers = _headers(exc)
    if status is not None and status >= 400:
        retryable = is_retryable_status(status)
    else:
        # An error event inside a 200 stream: the HTTP status says nothing, the event type does.
        error_type = _body_error_type(getattr(exc, "body", None))
        retryable = error_type in _RETRYABLE_ERROR_TYPES
        status = None
    return ProviderError(
        _describe(exc),
        retryable=retryable,
        status=status,
        request_id=_request_id(exc),
        retry_after=retry_after_seconds(headers) if retryable else None,
    )


def to_provider_error(exc: BaseException) -> ProviderError:
    """`exc` as a ProviderError; raise it `from masked_cause(exc)` (the original, masked, in the
    chain).

    A ProviderError comes back unchanged. Any other exception becomes a non-retryable one, so
    callers may pass whatever they caught from `mapped_exceptions()`.
    """
    if isinstance(exc, ProviderError):
        return exc
    error = _translated(exc)
    logger.debug(
        "%s from the provider: status %s, retryable %s, request id %s",
        type(exc).__name__,
        error.status,
        error.retryable,
        error.request_id,
    )
    return error


def _translated(exc: BaseException) -> ProviderError:
    """`exc` as a ProviderError: an SDK's own error, else one of the HTTP layer or the socket."""
    if _is(exc, _sdk_classes("OpenAIError"), _sdk_classes("AnthropicError")):
        return _sdk_error(exc)
    return _transport_error(exc)


def _sdk_error(exc: BaseException) -> ProviderError:
    """An error under OpenAIError or AnthropicError, by its class (the most specific first)."""
    if _is(exc, _sdk_classes("APIStatusError")):
        return _status_error(exc)
    if _is(exc, _sdk_classes("APIConnectionError")):
        timed_out = _is(exc, _sdk_classes("APITimeoutError"))
        return ProviderError(
            _describe(exc, "request timed out" if timed_out else None),
            retryable=True,
            request_id=_request_id(exc),
        )
    if _is(exc, _sdk_classes("APIResponseValidationError")):
        status = getattr(exc, "status_code", None)
        return ProviderError(
            _describe(exc, f"malformed response: {getattr(exc, 'message', exc)}"),
            retryable=False,
            status=status if isinstance(status, int) else None,
            request_id=_request_id(exc),
        )
    if _is(exc, _sdk_classes("APIError")):
        # A bare APIError: an error object sent inside an OpenAI stream, or a webhook check.
        error_type = _body_error_type(getattr(exc, "body", None))
        return ProviderError(_describe(exc), retryable=error_type in _RETRYABLE_ERROR_TYPES)
    if _is(
        exc, _classes("anthropic", "RetryableError"), _sdk_classes("WebSocketConnectionClosedError")
    ):
        return ProviderError(_describe(exc), retryable=True)
    status = getattr(exc, "status_code", None)
    status = status if isinstance(status, int) else None
    return ProviderError(
        _describe(exc),
        retryable=is_retryable_status(status),
        status=status,
        request_id=_request_id(exc),
    )


def _transport_error(exc: BaseException) -> ProviderError:
    """An error of the HTTP layer (httpx2, httpx, anyio), the socket, TLS or JSON decoding."""
    if _is(exc, _classes("httpx2", "HTTPStatusError"), _classes("httpx", "HTTPStatusError")):
        response: Any = getattr(exc, "response", None)
        status = getattr(response, "status_code", None)
        retryable = is_retryable_status(status)
        return ProviderError(
            _describe(exc),
            retryable=retryable,
            status=status,
            request_id=_request_id(exc),
            retry_after=retry_after_seconds(_headers(exc)) if retryable else None,
        )
    transport = (
        _classes("httpx2", "TransportError"),
        _classes("httpx", "TransportError"),
        _classes("anyio", "EndOfStream", "BrokenResourceError"),
    )
    if _is(exc, *transport) or isinstance(exc, (ConnectionError, TimeoutError)):
        return ProviderError(_describe(exc, f"connection lost: {exc}"), retryable=True)
    if isinstance(exc, ssl.SSLError):
        # A certificate that does not verify will not verify next time either.
        return ProviderError(
            _describe(exc), retryable=not isinstance(exc, ssl.SSLCertVerificationError)
        )
    if isinstance(exc, json.JSONDecodeError):
        return ProviderError(_describe(exc, f"malformed response body: {exc}"), retryable=False)
    return ProviderError(_describe(exc), retryable=False)


def event_error(error: Mapping[str, Any], request_id: str | None) -> ProviderError:
    """An error sent as an event of its own inside a 200 stream, which the SDK yields as an event
    rather than raising (the Responses API's `error`, a `response.failed`'s `error`): retryable
    when its type or code says a later attempt can get past it."""
    message = error.get("message")
    error_type = _body_error_type(error)
    text = message if isinstance(message, str) and message else "the stream reported an error"
    return ProviderError(
        redact(f"{error_type or 'error'} in the stream: {text}"),
        retryable=error_type in _RETRYABLE_ERROR_TYPES,
        request_id=request_id,
    )
