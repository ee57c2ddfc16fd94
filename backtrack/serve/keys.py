"""What keeps keys from leaving `backtrack serve` where the library's `redact` does not reach: the
bodies it passes through, and uvicorn's access log.

A request without a grammar gets the upstream's reply as it came, but for the keys in play (the
server's `--upstream-key-env` key, the client's own): an upstream error that quotes the key it was
sent (a 401's "Incorrect API key provided: ...") must not hand the server's key to a client.
`KeyMask` replaces each key by `***` in the bytes as they stream: inside a JSON string or an SSE
`data:` line the result is still a JSON string and the same event, so the framing holds. Only keys
known by value are masked: shapes (`sk-...`, hex runs) are left alone, as a reply's text may hold
them in earnest.

The access log prints each request's path with its query: `QueryKeyFilter` masks the values of
key-like names (`?api_key=`, `?key=`, `?access_token=`...) and the server's key wherever it is.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable
from urllib.parse import unquote_plus

from providers.errors import redact

__all__ = ["ACCESS_LOGGER", "MASK", "KeyMask", "QueryKeyFilter", "masked_target"]

MASK = "***"
# As `providers.errors`: shorter values are not masked by value (they would mask ordinary words).
_MIN_KEY = 8
# Query names whose values are secrets: api_key, key, x-api-key, access_token, secret, sig...
_SECRET_NAME = re.compile(r"key|token|secret|password|auth|credential|sig", re.IGNORECASE)
ACCESS_LOGGER = "uvicorn.access"


def _spellings(keys: Iterable[str | None]) -> list[str]:
    """Each key as it may appear in a body: as it is, and escaped as a JSON string writes it."""
    found = {k for k in keys if k and len(k) >= _MIN_KEY}
    escaped = {json.dumps(k)[1:-1] for k in found} | {
        json.dumps(k, ensure_ascii=False)[1:-1] for k in found
    }
    return sorted(found | escaped, key=len, reverse=True)


class KeyMask:
    """Masks `keys` in a body that arrives in pieces. Invariant: the concatenation of what `feed`
    and `flush` return is the whole body with every key replaced by `***`, even when a key is split
    across pieces; what `feed` holds back is never longer than the longest key less one byte."""

    def __init__(self, keys: Iterable[str | None]) -> None:
        spellings = [k.encode() for k in _spellings(keys)]
        self._pattern = re.compile(b"|".join(map(re.escape, spellings))) if spellings else None
        self._hold = max(map(len, spellings), default=1) - 1
        self._tail = b""

    def feed(self, piece: bytes) -> bytes:
        """The masked bytes of `piece` (and of what was held back) that no key can reach into."""
        if self._pattern is None:
            return piece
        data = self._tail + piece
        # A key that starts before `safe` ends inside `data`; one that starts after may go on in
        # the next piece, so those bytes wait.
        safe = max(len(data) - self._hold, 0)
        out: list[bytes] = []
        done = 0
        for match in self._pattern.finditer(data):
            if match.start() >= safe:
                break
            out += (data[done : match.start()], MASK.encode())
            done = match.end()
        cut = max(done, safe)
        out.append(data[done:cut])
        self._tail = data[cut:]
        return b"".join(out)

    def flush(self) -> bytes:
        """What was held back, masked: the body's end."""
        data, self._tail = self._tail, b""
        if self._pattern is None:
            return data
        return self._pattern.sub(MASK.encode(), data)


def masked_target(target: str, keys: Iterable[str | None] = ()) -> str:
    """A request target (`/path?query`) fit for a log: the values of key-like query names masked,
    `keys` masked wherever they are, and other values through `redact` (key shapes)."""
    path, mark, query = target.partition("?")
    if not mark:
        return target
    spellings = _spellings(keys)
    pairs = []
    for pair in query.split("&"):
        name, equals, value = pair.partition("=")
        if _SECRET_NAME.search(unquote_plus(name)):
            value = MASK
        for key in spellings:
            value = value.replace(key, MASK)
        pairs.append(f"{name}{equals}{redact(value)}")
    return f"{path}?{'&'.join(pairs)}"


class QueryKeyFilter(logging.Filter):
    """On uvicorn's access logger: every argument of a record that is a request target is logged
    as `masked_target` writes it (uvicorn's access line passes the target as one argument)."""

    def __init__(self, keys: Iterable[str | None] = ()) -> None:
        super().__init__()
        self._keys = tuple(keys)

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(
                masked_target(arg, self._keys) if isinstance(arg, str) else arg
                for arg in record.args
            )
        return True
