"""ProviderError, the one error a drafter raises, and the masking that keeps keys out of its text.

Messages never carry API keys: `redact` masks every key this process knows by value (drafters'
clients, secret-named environment variables, the keys of the `scoped_keys` block the caller is in)
and anything shaped like one. Every ProviderError made from a foreign error goes through it where it
is made (providers.sdk_errors); one made elsewhere (by a drafter function, a custom Drafter) through
`masked` where it enters backtrack. Request headers are never quoted.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from grammars.errors import BacktrackError, PartialResult

__all__ = [
    "MaskedCause",
    "ProviderError",
    "masked",
    "masked_cause",
    "redact",
    "remember_keys",
    "scoped_keys",
]


class ProviderError(BacktrackError):
    """The drafter failed. `partial` is the GuideResult of the work committed before the failure.

    `retry_after` is the wait in seconds the provider asked for (Retry-After), None when it did not.
    """

    def __init__(
        self,
        message: str,
        *,
        retryable: bool = False,
        status: int | None = None,
        request_id: str | None = None,
        partial: PartialResult | None = None,
        retry_after: float | None = None,
    ) -> None:
        self.message = message
        self.retryable = retryable
        self.status = status
        self.request_id = request_id
        self.partial = partial
        self.retry_after = retry_after
        extra = [f"status {status}"] if status is not None else []
        if request_id:
            extra.append(f"request id {request_id}")
        super().__init__(f"{message} ({', '.join(extra)})" if extra else message)


# Keys by their shape: sk-..., sk-ant-..., sk-proj-..., gsk_..., xai-..., long hex runs; and the
# value after "api_key=", "api key:" or "API key provided:" (up to a blank, a quote, a comma or a
# sentence's final period). Without "=" or ":" the next word is prose ("your API key at ...").
# Request ids are no keys, and are what a provider's support asks for: an id-prefixed word
# (chatcmpl-..., req_...) or the value after "request id" / "x-request-id:" (llama.cpp's are 32
# hex digits) is kept as it is. Keys known by value are masked before, wherever they stand.
_KEY_PATTERN = re.compile(
    r"(?P<id>\b(?:chatcmpl|cmpl|req|msg|resp)[-_][A-Za-z0-9-]+"
    r"|(?i:request[\s_-]?id)[\"']?\s*[=:]?\s*[\"']?[A-Fa-f0-9-]{32,}\b)"
    r"|\b(?P<prefix>(?:sk-(?:ant-|proj-)?)|gsk_|xai-|hf_|AIza)[A-Za-z0-9_\-]{6,}"
    r"|(?i:(?P<name>api[_\s-]?key(?:\s+provided)?[\"']?\s*[=:]\s*[\"']?))[^\s\"',;]*[^\s\"',;.]"
    r"|\b[A-Fa-f0-9]{32,}\b"
)
# Environment variables whose values are secrets: *_API_KEY, *_TOKEN, *_SECRET, *PASSWORD...
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL", re.IGNORECASE)
# Shorter values are not masked by value (they would mask ordinary words); patterns still apply.
_MIN_SECRET = 8
_MAX_MESSAGE = 500
_known_keys: set[str] = set()
_known_lock = threading.Lock()
# The keys of the `scoped_keys` block the caller is in: masked while it lasts, never added to
# `_known_keys`.
_scoped: ContextVar[set[str] | None] = ContextVar("backtrack_scoped_keys", default=None)


# The attributes where SDK clients keep their secrets: openai and anthropic `api_key`, anthropic
# `auth_token` (a bearer token), AzureOpenAI `_azure_ad_token`.
_CLIENT_SECRETS = ("api_key", "auth_token", "_azure_ad_token")


def remember_keys(client: object) -> None:
    """Mask the keys `client` (an SDK client a drafter is built on) holds in every message from
    now on; inside a `scoped_keys` block, only until the block ends."""
    found = (getattr(client, name, None) for name in _CLIENT_SECRETS)
    keys = {v for v in found if isinstance(v, str) and len(v) >= _MIN_SECRET}
    scope = _scoped.get()
    with _known_lock:
        (_known_keys if scope is None else scope).update(keys)


@contextmanager
def scoped_keys(*keys: str | None) -> Iterator[None]:
    """Mask `keys`, and those of the clients drafters are built on inside the block, in every
    message made inside it (in its context: the tasks it starts, and the threads they hand work
    to with the context copied); forget them when it ends.

    For a process that meets a new key with each request (`backtrack serve` forwarding each
    client's own): `remember_keys` outside a block keeps a key as long as the process lives,
    one inside a block only as long as the request."""
    scope = {k for k in keys if k and len(k) >= _MIN_SECRET} | (_scoped.get() or set())
    token = _scoped.set(scope)
    try:
        yield
    finally:
        _scoped.reset(token)


def _secrets() -> list[str]:
    """Every key value known here, longest first (a key may contain a shorter one): the
    process's, and those of the scope the caller is in."""
    from_env = (
        value
        for name, value in os.environ.items()
        if _SECRET_NAME.search(name) and len(value) >= _MIN_SECRET
    )
    with _known_lock:
        found = _known_keys.union(from_env, _scoped.get() or ())
    return sorted(found, key=len, reverse=True)


def redact(text: str) -> str:
    """`text` with every known key value and anything shaped like a key masked, cut to a readable
    length. Known keys: those of the SDK clients drafters were built with (`remember_keys`) and the
    values of environment variables named like secrets. Everything that leaves the library as
    text about a failure goes through here."""
    for secret in _secrets():
        text = text.replace(secret, "***")
    text = _KEY_PATTERN.sub(_masked_match, text)
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 3] + "..."


def _masked_match(match: re.Match[str]) -> str:
    if match["id"]:
        return match[0]
    return f"{match['prefix'] or match['name'] or ''}***"


def masked(error: ProviderError) -> ProviderError:
    """`error` itself, with every key in its text and its chain masked: for a ProviderError made
    outside this module (by a drafter function, a custom Drafter), where it enters backtrack."""
    error.message = redact(error.message)
    error.args = tuple(redact(arg) if isinstance(arg, str) else arg for arg in error.args)
    if error.__cause__ is not None:
        error.__cause__ = masked_cause(error.__cause__)
    error.__context__ = None
    return error


class MaskedCause(Exception):
    """What a ProviderError was raised from, in place of the original exception: its type's name
    and its text with every key masked. The original is not kept, because an SDK's error may
    quote the key it was sent (an upstream's 401 body), and a traceback prints the whole chain."""


def masked_cause(exc: BaseException) -> BaseException:
    """`exc` as a ProviderError's cause: a ProviderError masked, anything else as a MaskedCause
    (its own cause followed the same way)."""
    if isinstance(exc, (ProviderError, MaskedCause)):
        return masked(exc) if isinstance(exc, ProviderError) else exc
    cause = MaskedCause(redact(f"{type(exc).__module__}.{type(exc).__qualname__}: {exc}"))
    if exc.__cause__ is not None:
        cause.__cause__ = masked_cause(exc.__cause__)
    return cause
