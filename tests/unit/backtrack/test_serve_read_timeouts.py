"""`backtrack serve` (under uvicorn on 127.0.0.1, a MockServer upstream) against clients that send
slowly: headers a byte at a time (slowloris), a body that trickles or stalls, a connection that
sends nothing. Each is answered 408 and closed soon after its limit (ServeLimits.header_seconds,
body_seconds; --header-timeout, --body-timeout), while /health answers throughout. The loops are
bounded in count and time; the bounds are generous (15 s for a 1 s limit)."""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Iterator

import httpx2
import pytest

from backtrack.cli.parser import build_parser
from backtrack.serve.app import ServeConfig, ServeLimits, run_server
from tests.support.serve_server import running
from tests.support.servers import MockServer

LIMIT = 1.0
BOUND = 15.0  # seconds a slow client may stay open, at most, in these tests


@pytest.fixture
def url(openai_server: MockServer) -> Iterator[str]:
    limits = ServeLimits(header_seconds=LIMIT, body_seconds=LIMIT)
    with running(ServeConfig(openai_server.url, limits=limits)) as base:
        yield base


class SlowClient:
    """A connection that sends `head` at once, then `trickle` a byte per `drip()`; `closed` once
    the server closed it, `reply` what the server sent."""

    def __init__(self, base: str, head: bytes, trickle: bytes) -> None:
        host, port = base.removeprefix("http://").split(":")
        self.sock = socket.create_connection((host, int(port)), timeout=5)
        self.sock.sendall(head)
        self.sock.setblocking(False)
        self.trickle = trickle
        self.reply = b""
        self.closed = False
        self.reset: OSError | None = None  # how the connection ended, when not by the server's FIN

    def drip(self) -> None:
        if self.closed:
            return
        try:
            while chunk := self.sock.recv(65536):
                self.reply += chunk
            self.closed = True  # recv gave b"": the server closed the connection
        except BlockingIOError:
            pass
        except ConnectionError as error:
            self.closed, self.reset = True, error
        if self.closed:
            self.sock.close()
            return
        if self.trickle:
            try:
                self.sock.send(self.trickle[:1])
                self.trickle = self.trickle[1:]
            except (BlockingIOError, ConnectionError):
                pass

    def close(self) -> None:
        self.sock.close()


def hold(base: str, clients: list[SlowClient]) -> list[float]:
    """Drip every client every 0.2 s until all are closed or BOUND passes, asking /health each
    round; the seconds /health took, each round."""
    health: list[float] = []
    start = time.monotonic()
    try:
        with httpx2.Client() as http:
            while time.monotonic() - start < BOUND and not all(c.closed for c in clients):
                for client in clients:
                    client.drip()
                asked = time.monotonic()
                assert http.get(base + "/health", timeout=BOUND).status_code == 200
                health.append(time.monotonic() - asked)
                time.sleep(0.2)
    finally:
        for client in clients:
            client.close()
    return health


def unanswered(clients: list[SlowClient], status_line: bytes) -> list[tuple[int, bytes, str]]:
    """The clients whose reply does not start with `status_line`: index, the reply's start and
    how the connection ended (a reset, or the server's FIN)."""
    return [
        (i, c.reply[:80], repr(c.reset) if c.reset else "closed by the server")
        for i, c in enumerate(clients)
        if not c.reply.startswith(status_line)
    ]


REQUEST_HEAD = b"GET /health HTTP/1.1\r\nHost: x\r\nUser-Agent: slow\r\nX-Padding: " + b"a" * 200


def test_slow_headers_get_408_and_are_closed_while_health_answers(url: str):
    clients = [SlowClient(url, b"G", REQUEST_HEAD[1:]) for _ in range(30)]
    clients.append(SlowClient(url, b"", b""))  # connects and sends nothing
    health = hold(url, clients)
    assert all(c.closed for c in clients), f"{sum(not c.closed for c in clients)} still open"
    assert not unanswered(clients, b"HTTP/1.1 408 ")
    assert b"the request's headers did not arrive within 1 seconds" in clients[0].reply
    assert health  # /health answered (200) every round while they were held


def test_a_client_still_sending_at_its_limit_reads_the_408_and_a_clean_close(url: str):
    # Header bytes sent without pause past the limit: the server's close lingers, reading what
    # still comes, so its 408 ends with a FIN; a socket closed with bytes unread in it is reset
    # (the client's sends fail, its reads may lose the reply)
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=BOUND) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nX-Padding: ")
        sending = time.monotonic() + LIMIT * 1.5
        while time.monotonic() < sending:
            sock.sendall(b"a" * 8)  # 2.4 KB in all, within h11's limit on a request's head
            time.sleep(0.005)
        reply = b""
        while chunk := sock.recv(65536):  # a reset raises ConnectionResetError here
            reply += chunk
    assert reply.startswith(b"HTTP/1.1 408 ")


def post_head(path: str, length: int) -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\n"
        f"content-length: {length}\r\n\r\n"
    ).encode()


def test_slow_and_stalled_bodies_get_408_and_are_closed(url: str, caplog: pytest.LogCaptureFixture):
    body = b'{"model": "m", "messages": []}'.ljust(400)
    chat = "/v1/chat/completions"
    clients = [SlowClient(url, post_head(chat, len(body)), body) for _ in range(10)]
    clients += [SlowClient(url, post_head(chat, len(body)) + body[:10], b"") for _ in range(10)]
    hold(url, clients)
    assert all(c.closed for c in clients), f"{sum(not c.closed for c in clients)} still open"
    assert not unanswered(clients, b"HTTP/1.1 408 ")
    assert b"the request's body did not arrive within 1 seconds" in clients[0].reply
    # the handler that was reading the body saw the client gone: no "unexpected failure" (500)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_a_trickled_body_to_a_handler_that_does_not_read_it_is_closed(url: str):
    # /health answers at once (200); the body it never reads still may not hold the connection
    head = b"GET /health HTTP/1.1\r\nHost: x\r\ncontent-length: 400\r\n\r\n"
    clients = [SlowClient(url, head, b"x" * 400) for _ in range(5)]
    hold(url, clients)
    assert all(c.closed for c in clients)
    assert not unanswered(clients, b"HTTP/1.1 200 ")


def test_a_kept_alive_connection_may_idle_between_requests(url: str):
    # the header limit runs from a request's first byte, not from the last response
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        for _ in range(2):
            sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            reply = b""
            while not reply.endswith(b"}"):  # the head and the JSON body, written apart
                reply += sock.recv(65536)
            assert reply.startswith(b"HTTP/1.1 200 ")
            time.sleep(LIMIT * 1.5)  # past the header limit, within uvicorn's keep-alive (5 s)


def test_the_read_timeouts_are_server_options():
    args = build_parser().parse_args(["serve", "--upstream", "http://127.0.0.1:1"])
    assert (args.header_timeout, args.body_timeout) == (
        ServeLimits().header_seconds,
        ServeLimits().body_seconds,
    )
    args = build_parser().parse_args(
        ["serve", "--upstream", "http://u", "--header-timeout", "3", "--body-timeout", "4.5"]
    )
    assert (args.header_timeout, args.body_timeout) == (3.0, 4.5)


def test_the_server_exits_with_status_3_when_its_port_is_taken(openai_server: MockServer):
    # run_server starts uvicorn.Server with the read-timeout settings itself; a failed start is
    # still uvicorn.run's exit status 3, not a silent return
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(SystemExit) as exited:
            run_server(
                ServeConfig(openai_server.url),
                None,
                host="127.0.0.1",
                port=port,
                log_level="critical",
            )
    assert exited.value.code == 3
