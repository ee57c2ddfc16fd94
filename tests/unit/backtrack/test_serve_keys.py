"""No key leaves `backtrack serve` (issue 24, item 2): replies passed through (no grammar) have the
server's key and the client's masked, an upstream 401 that quotes the key it was sent included, in
plain and streamed POSTs, `GET /v1/models`, OpenAI `/v1/responses` and Anthropic `/v1/messages`;
the access log never shows a key from a query string.

The upstream here echoes the key it received, as a real API's 401 does ("Incorrect API key
provided: ..."); its streamed replies go out a few bytes per network chunk, so the key is split
across chunks. The server runs under uvicorn on 127.0.0.1 (tests/support/serve_server.py).
"""

from __future__ import annotations

import gzip
import json
import logging
import threading
from collections.abc import Callable, Iterator
from http.server import ThreadingHTTPServer
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from backtrack.serve.app import ServeConfig
from backtrack.serve.keys import ACCESS_LOGGER, KeyMask, masked_target
from backtrack.wire.shape import UpstreamKind
from tests.support.serve_server import running
from tests.support.servers import Handler

SERVER_KEY = "srv-Zq9xWv3LpR8kT2m-upstream"  # not shaped like a key: only its value masks it
CLIENT_KEY = "tenant-7-Qw8Rt5Yu2Io4Pa6"
MESSAGES = [{"role": "user", "content": "hi"}]
NETWORK_CHUNK = 5  # bytes per chunk of a streamed reply: every key is split across several


class _EchoHandler(Handler):
    """Answers 401 quoting the key it received (gzipped where the client takes it); a streamed
    chat completion gets one text event, then an error event quoting the key."""

    def _key(self) -> str:
        bearer = self.headers.get("Authorization", "").removeprefix("Bearer ")
        return self.headers.get("x-api-key") or bearer

    def do_GET(self) -> None:
        self._denied()

    def do_POST(self) -> None:
        body = self.read_json(lambda raw: None) or {}
        if body.get("stream") and self.path == "/v1/chat/completions":
            self._stream()
        else:
            self._denied()

    def _denied(self) -> None:
        message = f"Incorrect API key provided: {self._key()}"
        if self.path.startswith("/v1/messages"):
            error = {"type": "error", "error": {"type": "authentication_error", "message": message}}
        else:
            error = {"error": {"message": message, "type": "invalid_request_error", "code": None}}
        if "gzip" in self.headers.get("Accept-Encoding", ""):  # as a real API does
            self.send_json(
                401, gzip.compress(json.dumps(error).encode()), {"Content-Encoding": "gzip"}
            )
        else:
            self.send_json(401, error, {})

    def _stream(self) -> None:
        delta = {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "m"}
        delta["choices"] = [{"index": 0, "delta": {"content": "partial"}, "finish_reason": None}]
        failure = {"error": {"message": f"key {self._key()} was revoked", "type": "server_error"}}
        data = b"".join(f"data: {json.dumps(e)}\n\n".encode() for e in (delta, failure))
        self.start_stream({})
        for start in range(0, len(data), NETWORK_CHUNK):
            self.chunk(data[start : start + NETWORK_CHUNK])
        self.write(b"0\r\n\r\n")


@pytest.fixture(scope="module")
def echo_upstream() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _EchoHandler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()
    thread.join()


Serve = Callable[[UpstreamKind, "str | None"], str]


@pytest.fixture
def serve(echo_upstream: str) -> Iterator[Serve]:
    """`serve(kind, server_key)`: the URL of a server forwarding to the echoing upstream."""
    started: list[Any] = []

    def start(kind: UpstreamKind, key: str | None) -> str:
        started.append(running(ServeConfig(echo_upstream, kind, key)))
        url: str = started[-1].__enter__()
        return url

    yield start
    for context in reversed(started):
        context.__exit__(None, None, None)


# -- what each client sees ------------------------------------------------------------------------


def _oai(url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{url}/v1", api_key=CLIENT_KEY, max_retries=0)


def _plain_post(url: str) -> str:
    with _oai(url) as client, pytest.raises(openai.AuthenticationError) as denied:
        client.chat.completions.create(model="m", messages=MESSAGES)  # type: ignore[arg-type]
    assert "Incorrect API key provided: ***" in denied.value.message
    return denied.value.response.text


def _streamed_post(url: str) -> str:
    with _oai(url) as client:
        stream = client.chat.completions.create(model="m", messages=MESSAGES, stream=True)  # type: ignore[arg-type]
        with pytest.raises(openai.APIError, match=r"key \*\*\* was revoked"):
            for _ in stream:
                pass
    body = {"model": "m", "messages": MESSAGES, "stream": True}
    headers = {"authorization": f"Bearer {CLIENT_KEY}"}
    with httpx2.Client() as http:
        raw = http.post(f"{url}/v1/chat/completions", json=body, headers=headers).text
    events = [e for e in raw.split("\n\n") if e]
    assert len(events) == 2  # the SSE framing whole
    assert [json.loads(e.removeprefix("data: ")) for e in events][1]["error"]["message"] == (
        "key *** was revoked"
    )
    return raw


def _models(url: str) -> str:
    with _oai(url) as client, pytest.raises(openai.AuthenticationError) as denied:
        client.models.list()
    assert "Incorrect API key provided: ***" in denied.value.message
    return denied.value.response.text


def _anthropic_messages(url: str) -> str:
    client = anthropic.Anthropic(base_url=url, api_key=CLIENT_KEY, max_retries=0)
    with client, pytest.raises(anthropic.AuthenticationError) as denied:
        client.messages.create(model="m", max_tokens=8, messages=MESSAGES)  # type: ignore[arg-type]
    assert "Incorrect API key provided: ***" in denied.value.message
    return denied.value.response.text


def _responses(url: str) -> str:
    with _oai(url) as client, pytest.raises(openai.AuthenticationError) as denied:
        client.responses.create(model="m", input="hi")
    assert "Incorrect API key provided: ***" in denied.value.message
    return denied.value.response.text


PATHS = {
    "plain POST": ("openai", _plain_post),
    "streamed POST": ("openai", _streamed_post),
    "GET /v1/models": ("openai", _models),
    "anthropic /v1/messages": ("anthropic", _anthropic_messages),
    "responses /v1/responses": ("openai", _responses),
}


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("server_key", [SERVER_KEY, None], ids=["server key", "client key"])
def test_a_passed_through_reply_never_shows_a_key(serve: Serve, path: str, server_key: str | None):
    kind, seen_by_client = PATHS[path]
    text = seen_by_client(serve(kind, server_key))  # type: ignore[arg-type]
    assert SERVER_KEY not in text and CLIENT_KEY not in text
    assert "***" in text


# -- the access log -------------------------------------------------------------------------------


def test_the_access_log_never_shows_a_query_key(serve: Serve, caplog: pytest.LogCaptureFixture):
    url = serve("openai", SERVER_KEY)
    access = logging.getLogger(ACCESS_LOGGER)
    caplog.set_level(logging.INFO, logger=ACCESS_LOGGER)  # the server logs warnings only
    access.addHandler(caplog.handler)  # uvicorn's access logger does not propagate
    try:
        with httpx2.Client() as http:
            http.get(f"{url}/v1/models?api_key={CLIENT_KEY}&limit=5")
            http.get(f"{url}/health?key={CLIENT_KEY}&q={SERVER_KEY}")
            http.post(f"{url}/v1/chat/completions?access_token={CLIENT_KEY}", json={})
    finally:
        access.removeHandler(caplog.handler)
    lines = [r.getMessage() for r in caplog.records if r.name == ACCESS_LOGGER]
    assert len(lines) == 3
    assert CLIENT_KEY not in caplog.text and SERVER_KEY not in caplog.text
    assert '"GET /v1/models?api_key=***&limit=5 HTTP/1.1" 401' in lines[0]
    assert "/health?key=***&q=*** " in lines[1]


@pytest.mark.parametrize(
    ("sent", "logged"),
    [
        ("/v1/models", "/v1/models"),
        ("/v1/models?limit=5&after=m-1", "/v1/models?limit=5&after=m-1"),
        ("/v1/models?api_key=abcdefgh123", "/v1/models?api_key=***"),
        ("/v1/models?key=abcdefgh123&limit=5", "/v1/models?key=***&limit=5"),
        ("/x?X-Api-Key=abcdefgh123&token=t&sig=s", "/x?X-Api-Key=***&token=***&sig=***"),
        ("/x?api%5Fkey=abcdefgh123", "/x?api%5Fkey=***"),  # a name percent-encoded
        (f"/x?q={SERVER_KEY}", "/x?q=***"),  # the server's key under any name
        ("/x?q=sk-proj-abcdef123456", "/x?q=sk-proj-***"),  # shaped like a key
    ],
)
def test_a_logged_target_has_its_keys_masked(sent: str, logged: str):
    assert masked_target(sent, [SERVER_KEY]) == logged


# -- the mask on a stream -------------------------------------------------------------------------

BODY = json.dumps({"error": {"message": f"bad key {SERVER_KEY}; yours {CLIENT_KEY}."}}).encode()
MASKED = BODY.replace(SERVER_KEY.encode(), b"***").replace(CLIENT_KEY.encode(), b"***")


def _masked(pieces: list[bytes], keys: list[str | None]) -> bytes:
    mask = KeyMask(keys)
    return b"".join([*(mask.feed(p) for p in pieces), mask.flush()])


@pytest.mark.parametrize("cut", range(0, len(BODY) + 1, 3))
def test_a_key_split_across_pieces_is_masked(cut: int):
    assert _masked([BODY[:cut], BODY[cut:]], [SERVER_KEY, CLIENT_KEY]) == MASKED


def test_a_body_in_single_bytes_is_masked_and_stays_json():
    masked = _masked([BODY[i : i + 1] for i in range(len(BODY))], [SERVER_KEY, CLIENT_KEY, None])
    assert masked == MASKED
    assert json.loads(masked)["error"]["message"] == "bad key ***; yours ***."


def test_a_key_is_masked_as_json_escapes_it():
    key = 'k"quoted\\key-é-123'
    body = json.dumps({"message": f"no key {key}"}).encode()
    assert json.loads(_masked([body], [key])) == {"message": "no key ***"}


def test_without_keys_the_body_is_untouched_and_never_held_back():
    mask = KeyMask([None, "short"])  # under 8 characters: not masked by value
    assert mask.feed(b"a short") == b"a short"
    assert mask.flush() == b""
