"""The API `backtrack serve` forwards to: requests without a grammar go there as they came (bytes
in, bytes out, streams included), guided ones through the provider SDK's async client.

The key sent upstream is the server's own when it has one (`--upstream-key-env`), else the
client's (`Authorization: Bearer ...` or `x-api-key`). Keys are never logged or echoed: the server
handles each request inside `providers.errors.scoped_keys(*upstream.keys(headers))`, so that every
error message made for it masks them, and forgets them after it; a reply passed through has them
masked in its body (`backtrack.serve.keys.KeyMask`), an upstream 401 that quotes its key included.

Headers go upstream with the request, guided ones too (`anthropic-beta`, `openai-organization`,
a gateway's own), except hop-by-hop ones (RFC 9110, 7.6.1: those named by `Connection` too) and,
on a guided request, those the SDK writes for the requests it makes itself.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

import anyio
import httpx2
from starlette.responses import Response, StreamingResponse

from backtrack.serve.errors import ServeError
from backtrack.serve.keys import KeyMask
from backtrack.wire.shape import UpstreamKind

# Hop-by-hop headers (RFC 9110, 7.6.1) and those the HTTP clients set themselves.
_NOT_FORWARDED = frozenset(
    {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer"}
    | {"transfer-encoding", "upgrade", "host", "content-length"}
)
_KEY_HEADERS = frozenset({"authorization", "x-api-key"})
# What the SDK writes for each request of a guided run (its body's type, the encodings it reads,
# its own name and telemetry), and a key that must not repeat across the run's several requests.
_SDK_SETS = frozenset(
    {"content-type", "accept", "accept-encoding", "user-agent", "idempotency-key"}
)
_SDK_PREFIX = "x-stainless-"
# What the SDK is given when no key is known (it refuses none); an upstream that needs a key
# answers 401, which the client then sees.
_NO_KEY = "no-key"


class Upstream:
    """The upstream API at `url` (its root: `/v1/...` paths are appended), speaking `kind`."""

    def __init__(self, url: str, kind: UpstreamKind, *, key: str | None, timeout: float) -> None:
        self.url = url.rstrip("/").removesuffix("/v1")
        self.kind = kind
        self._key = key
        self._timeout = timeout
        self._http = httpx2.AsyncClient(timeout=timeout)
        self._sdk = self._sdk_client()

    def __repr__(self) -> str:  # the key stays out of it
        return f"Upstream({self.url!r}, {self.kind!r})"

    def _sdk_client(self) -> Any:
        if self.kind == "anthropic":
            import anthropic

            return anthropic.AsyncAnthropic(
                base_url=self.url, api_key=_NO_KEY, max_retries=0, timeout=self._timeout
            )
        import openai

        return openai.AsyncOpenAI(
            base_url=f"{self.url}/v1", api_key=_NO_KEY, max_retries=0, timeout=self._timeout
        )

    async def aclose(self) -> None:
        await self._http.aclose()
        await self._sdk.close()

    def key(self, headers: Mapping[str, str]) -> str | None:
        """The key to send upstream: the server's, else the request's."""
        if self._key:
            return self._key
        bearer = headers.get("authorization", "")
        if bearer[:7].lower() == "bearer ":
            return bearer[7:].strip() or None
        return headers.get("x-api-key") or None

    def keys(self, headers: Mapping[str, str]) -> tuple[str | None, ...]:
        """Every key a request brings into play: the server's and the client's."""
        bearer = headers.get("authorization", "")
        client = bearer[7:].strip() if bearer[:7].lower() == "bearer " else None
        return self._key, client, headers.get("x-api-key")

    def client(self, headers: Mapping[str, str]) -> Any:
        """The SDK's async client with the request's key and forwarded headers (sharing one
        connection pool)."""
        key = self.key(headers) or _NO_KEY
        # Spelled as the SDK spells its own defaults, which they replace: its `OpenAI-Project`
        # placeholder (Omit) would remove a client's `openai-project` otherwise.
        spelling = {name.lower(): name for name in self._sdk.default_headers}
        forwarded = {
            spelling.get(k.lower(), k): v
            for k, v in _forwarded(headers).items()
            if k.lower() not in _KEY_HEADERS | _SDK_SETS and not k.lower().startswith(_SDK_PREFIX)
        }
        return self._sdk.with_options(api_key=key, default_headers=forwarded)

    def _headers(self, headers: Mapping[str, str]) -> dict[str, str]:
        out = _forwarded(headers)
        if self._key:
            out = {k: v for k, v in out.items() if k.lower() not in _KEY_HEADERS}
            if self.kind == "anthropic":
                out["x-api-key"] = self._key
            else:
                out["authorization"] = f"Bearer {self._key}"
        return out

    async def forward(
        self, method: str, path: str, headers: Mapping[str, str], body: bytes, query: str = ""
    ) -> Response:
        """The request sent upstream as it came; the reply streamed back as it comes, decoded,
        with the request's keys masked (backtrack.serve.keys). A client that hangs up closes the
        upstream request."""
        url = f"{self.url}{path}" + (f"?{query}" if query else "")
        request = self._http.build_request(
            method, url, headers=self._headers(headers), content=body
        )
        try:
            reply = await self._http.send(request, stream=True)
        except httpx2.TimeoutException as exc:
            raise ServeError(504, "upstream: the request timed out", code="upstream_error") from exc
        except httpx2.TransportError as exc:
            raise ServeError(
                502, f"upstream: {type(exc).__name__}: {exc}", code="upstream_error"
            ) from exc
        # Decoded and masked, the body has neither its encoding nor its length.
        kept = {
            k: v for k, v in _forwarded(reply.headers).items() if k.lower() != "content-encoding"
        }
        mask = KeyMask(self.keys(headers))

        async def body_bytes() -> AsyncIterator[bytes]:
            try:
                async for chunk in reply.aiter_bytes():
                    yield mask.feed(chunk)
                yield mask.flush()
            finally:
                with anyio.CancelScope(shield=True):
                    await reply.aclose()

        return StreamingResponse(body_bytes(), status_code=reply.status_code, headers=kept)


def _forwarded(headers: Mapping[str, str]) -> dict[str, str]:
    """`headers` without the hop-by-hop ones (and those their `Connection` names)."""
    named = {h.strip().lower() for h in headers.get("connection", "").split(",")}
    return {k: v for k, v in headers.items() if k.lower() not in _NOT_FORWARDED | named}
