"""Read timeouts for `backtrack serve`: uvicorn's HTTP/1.1 protocol (h11) with a deadline on what
the client sends.

uvicorn waits for a request's headers and body as long as the client keeps the connection open, so
a client that sends a header byte every few seconds (slowloris), or a body that trickles or
stalls, holds a connection and its buffers for ever. Here a request's headers must all arrive
within `header_seconds` of the connection opening (or of the first byte of the next request on a
kept-alive connection), and its body within `body_seconds` of the headers. Past either, the
connection gets `408 Request Timeout` (when no response has started) and is closed; a handler
still reading the body sees the client gone.

The close lingers (as nginx's and Apache's do): the 408 is followed by the end of what the server
writes (a FIN), and what the client still sends is read and dropped until it closes too, for
`LINGER_SECONDS` at most. A socket closed at once while a slow client's bytes wait unread in it
is reset, and the reset can take the 408 with it: the client saw a reset and no reply (one
slowloris client in 25 runs of this project's test, under load).
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol


def read_timeout_protocol(header_seconds: float, body_seconds: float) -> type[H11Protocol]:
    """uvicorn's h11 protocol with these read deadlines (uvicorn.Config's `http`)."""

    class ReadTimeoutProtocol(_ReadTimeoutProtocol):
        pass

    ReadTimeoutProtocol.header_seconds = header_seconds
    ReadTimeoutProtocol.body_seconds = body_seconds
    return ReadTimeoutProtocol


LINGER_SECONDS = 2.0  # how long a timed-out connection reads what its client still sends


class _ReadTimeoutProtocol(H11Protocol):
    header_seconds: float
    body_seconds: float

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None
        self._waiting_for: str | None = None  # "headers", "body" or None
        self._linger: asyncio.TimerHandle | None = None  # set once the 408 ended the writing

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._wait_for("headers")

    def connection_lost(self, exc: Exception | None) -> None:
        self._wait_for(None)
        if self._linger is not None:
            self._linger.cancel()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._linger is not None:
            return  # sent after the 408: read and dropped while the close lingers
        super().data_received(data)
        self._follow_state()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._follow_state()

    def _follow_state(self) -> None:
        """Arm the deadline of what the client is sending now: the next request's headers once
        any of it arrived (an idle kept-alive connection is uvicorn's keep-alive timeout's), the
        body while it is short; none once the request is in."""
        if self.transport.is_closing():
            self._wait_for(None)
        elif self.conn.their_state is h11.SEND_BODY:
            self._wait_for("body")
        elif self.conn.their_state is h11.IDLE and self.conn.trailing_data[0]:
            self._wait_for("headers")
        elif self._waiting_for != "headers" or self.conn.their_state is not h11.IDLE:
            self._wait_for(None)

    def _wait_for(self, part: str | None) -> None:
        if part == self._waiting_for:
            return  # a deadline runs from its start, whatever arrives meanwhile
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        self._waiting_for = part
        if part is not None:
            seconds = self.header_seconds if part == "headers" else self.body_seconds
            self._deadline = self.loop.call_later(seconds, self._timed_out, part, seconds)

    def _timed_out(self, part: str, seconds: float) -> None:
        self._deadline = None
        self._waiting_for = None
        if self.transport.is_closing():
            return
        cycle = self.cycle if part == "body" else None
        if cycle is None or not cycle.response_started:
            message = f"the request's {part} did not arrive within {seconds:g} seconds\n"
            self.transport.write(_timeout_response(message.encode()))
        if cycle is not None and not cycle.response_complete:
            cycle.disconnected = True  # the handler reading the body sees the client gone
            cycle.message_event.set()
        self._close_lingering()

    def _close_lingering(self) -> None:
        """End the writing after what was written (a FIN, not a reset) and close the connection
        once the client closes its side (uvicorn's `eof_received` lets the transport close), or
        `LINGER_SECONDS` on."""
        if not self.transport.can_write_eof():
            self.transport.close()
            return
        self.transport.write_eof()
        self._linger = self.loop.call_later(LINGER_SECONDS, self.transport.close)


def _timeout_response(body: bytes) -> bytes:
    # Written as bytes: h11 has no request to answer while the headers are incomplete, and the
    # connection closes after it either way.
    head = (
        "HTTP/1.1 408 Request Timeout\r\n"
        "content-type: text/plain; charset=utf-8\r\n"
        "connection: close\r\n"
        f"content-length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body
