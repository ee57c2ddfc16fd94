"""The retry policy, in one place: which failures to retry, how long to wait, how many times.

The guide loop wraps each whole draft round in `retrying()` / `async_retrying()`, not each HTTP
request: a connection dropped mid-stream must resume from the text committed so far, which only
the loop knows. Drafters therefore never retry by themselves, and the SDK clients they are given
do not either: each drafter calls its client through `without_sdk_retries(client)` (a copy with
`max_retries=0`; the user's client is not changed), so every request sent is one the loop counts.

    for attempt in retrying(on_retry=count):
        with attempt:
            run_round()

Tests set the wait to zero by patching `providers.retry.backoff`.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import tenacity

from providers.errors import ProviderError

__all__ = [
    "DEFAULT_MAX_ATTEMPTS",
    "INITIAL_BACKOFF",
    "MAX_BACKOFF",
    "MAX_RETRY_AFTER",
    "RetryCallback",
    "async_retrying",
    "backoff",
    "retrying",
    "should_retry",
    "without_sdk_retries",
]

DEFAULT_MAX_ATTEMPTS = 4
"""Attempts in all, the first one included."""
INITIAL_BACKOFF = 0.5
"""Seconds before the first retry when the provider gave no Retry-After."""
MAX_BACKOFF = 8.0
"""The exponential backoff stops growing here."""
MAX_RETRY_AFTER = 60.0
"""A longer Retry-After is cut to this: a guided generation should not hang for minutes."""

RetryCallback = Callable[[int, BaseException], None]
"""`on_retry(retry_number, exc)`, called before each wait; `retry_number` is 1 for the first."""


def without_sdk_retries(client: Any) -> Any:
    """`client` (openai or anthropic, sync or async) as a copy whose SDK does not retry: the
    SDK's default of 2 silent retries would send requests the trace never counts."""
    return client.with_options(max_retries=0)


def should_retry(exc: BaseException) -> bool:
    """True iff `exc` is a ProviderError that says a retry could help."""
    return isinstance(exc, ProviderError) and exc.retryable


def backoff(attempt: int, exc: BaseException | None) -> float:
    """Seconds to wait after failed attempt number `attempt` (1-based) ended with `exc`.

    The provider's Retry-After when it gave one (at most MAX_RETRY_AFTER), else exponential backoff
    from INITIAL_BACKOFF, at most MAX_BACKOFF, less up to 25 % jitter so that clients that failed
    together do not come back together. The module-level hook tests patch to zero.
    """
    if isinstance(exc, ProviderError) and exc.retry_after is not None:
        return min(max(exc.retry_after, 0.0), MAX_RETRY_AFTER)
    delay = min(INITIAL_BACKOFF * 2.0 ** max(attempt - 1, 0), MAX_BACKOFF)
    return delay * (1.0 - 0.25 * random.random())


def _wait(state: tenacity.RetryCallState) -> float:
    exc = state.outcome.exception() if state.outcome is not None else None
    # Looked up at call time, so that patching `providers.retry.backoff` takes effect.
    return backoff(state.attempt_number, exc)


def _policy(max_attempts: int, on_retry: RetryCallback | None) -> dict[str, Any]:
    if max_attempts < 1:
        raise ValueError(f"max_attempts must be at least 1, got {max_attempts}")

    def before_sleep(state: tenacity.RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome is not None else None
        if on_retry is not None and exc is not None:
            on_retry(state.attempt_number, exc)

    return {
        "stop": tenacity.stop_after_attempt(max_attempts),
        "wait": _wait,
        "retry": tenacity.retry_if_exception(should_retry),
        "before_sleep": before_sleep,
        "reraise": True,
    }


def retrying(
    *, max_attempts: int = DEFAULT_MAX_ATTEMPTS, on_retry: RetryCallback | None = None
) -> tenacity.Retrying:
    """A tenacity.Retrying with this policy; the last error is re-raised as itself."""
    return tenacity.Retrying(**_policy(max_attempts, on_retry))


def async_retrying(
    *, max_attempts: int = DEFAULT_MAX_ATTEMPTS, on_retry: RetryCallback | None = None
) -> tenacity.AsyncRetrying:
    """The async twin of `retrying()` (`async for attempt in async_retrying(): with attempt:`)."""
    return tenacity.AsyncRetrying(**_policy(max_attempts, on_retry))
