"""The retry policy, in one place: which failures to retry, how long to wait, how many times.

The guide driver (backtrack.run.driver) retries each whole draft round, not each HTTP request: a
connection dropped mid-stream must resume from the text committed so far, which only the loop
knows. Drafters therefore never retry by themselves, and the SDK clients they are given do not
either: each drafter calls its client through `without_sdk_retries(client)` (a copy with
`max_retries=0`; the user's client is not changed), so every request sent is one the loop counts.

The policy has no I/O: `next_wait(attempt, exc, max_attempts)` says how long to wait before the
next attempt, or None to give up; the driver's sync and async shells do the waiting.

    attempt = 1
    while True:
        try:
            return run_round()
        except Exception as exc:
            wait = next_wait(attempt, exc, max_attempts)
            if wait is None:
                raise
            time.sleep(wait)
            attempt += 1

Tests set the wait to zero by patching `providers.retry.backoff`.
"""

from __future__ import annotations

import random
from typing import Any

import tenacity

from providers.errors import ProviderError

__all__ = [
    "DEFAULT_MAX_ATTEMPTS",
    "INITIAL_BACKOFF",
    "MAX_BACKOFF",
    "MAX_RETRY_AFTER",
    "backoff",
    "next_wait",
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
"""A longer Retry-After is not waited for: the error, with its Retry-After, goes back at once (a
guided generation should not hang for minutes, nor retry early against the provider's word)."""


def without_sdk_retries(client: Any) -> Any:
    """`client` (openai or anthropic, sync or async) as a copy whose SDK does not retry: the
    SDK's default of 2 silent retries would send requests the trace never counts."""
    return client.with_options(max_retries=0)


def should_retry(exc: BaseException) -> bool:
    """True iff `exc` is a ProviderError that says a retry could help."""
    return isinstance(exc, ProviderError) and exc.retryable


def backoff(attempt: int, exc: BaseException | None) -> float:
    """Seconds to wait after failed attempt number `attempt` (1-based) ended with `exc`.

    The provider's Retry-After when it gave one, else exponential backoff from INITIAL_BACKOFF, at
    most MAX_BACKOFF, less up to 25 % jitter so that clients that failed together do not come back
    together. The module-level hook tests patch to zero.
    """
    if isinstance(exc, ProviderError) and exc.retry_after is not None:
        return max(exc.retry_after, 0.0)
    delay = min(INITIAL_BACKOFF * 2.0 ** max(attempt - 1, 0), MAX_BACKOFF)
    return delay * (1.0 - 0.25 * random.random())


# The object tenacity's strategies are asked about; its own loop is never run.
_POLICY = tenacity.Retrying()


def next_wait(attempt: int, exc: BaseException, max_attempts: int) -> float | None:
    """After failed attempt number `attempt` (1-based) ended with `exc`: the seconds to wait before
    the next attempt, or None to give up (`exc` is not retryable, its Retry-After is longer than
    MAX_RETRY_AFTER, or `max_attempts` are spent).

    tenacity's strategies decide (stop after `max_attempts`, retry if `should_retry`), with
    `backoff` as the wait; no sleeping happens here."""
    if max_attempts < 1:
        raise ValueError(f"max_attempts must be at least 1, got {max_attempts}")
    state = tenacity.RetryCallState(_POLICY, None, (), {})
    state.attempt_number = attempt
    state.set_exception((type(exc), exc, exc.__traceback__))
    if not tenacity.retry_if_exception(should_retry)(state) or _asks_too_long(exc):
        return None
    if tenacity.stop_after_attempt(max_attempts)(state):
        return None
    # Looked up at call time, so that patching `providers.retry.backoff` takes effect.
    return backoff(attempt, exc)


def _asks_too_long(exc: BaseException) -> bool:
    return isinstance(exc, ProviderError) and (exc.retry_after or 0.0) > MAX_RETRY_AFTER
