"""Local HTTP servers that speak the OpenAI and Anthropic protocols, scripted per test.

One `MockServer` answers

    POST /v1/chat/completions    OpenAI chat completions, streamed (SSE) or not
    POST /v1/completions         OpenAI completions, streamed or not
    POST /v1/messages            Anthropic Messages: message_start, content_block_start,
                                 content_block_delta..., content_block_stop, message_delta (usage),
                                 message_stop; or one JSON message
    POST /v1/responses           OpenAI Responses: response.created, response.in_progress,
                                 response.output_item.added, response.content_part.added,
                                 response.output_text.delta..., the three `.done` events,
                                 response.completed (usage; response.incomplete for "length");
                                 or one JSON response

so the real SDKs can be pointed at it with `base_url`. Each request takes the next `Reply` from
the queue (`server.script(...)`), or asks `server.responder(request_json)` for one when the queue
is empty. A Reply is a text sent in chunks of `chunk_size` characters, an HTTP error, a stream
that drops after `disconnect_after` chunks, a stream that never stops (`endless`), an error event
mid-stream, or a malformed body.

Every request is recorded (`server.exchanges`: path, headers, JSON body), with how many text
chunks were written before the reply ended or the client hung up (`chunks_sent`,
`client_closed`), so a test can show that closing a stream early stops the server sending.
Streams go out with chunked transfer encoding, one HTTP chunk per SSE event, so a drop is a
truncated body the client notices.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """What the server sends for one request."""

    text: str = ""
    chunk_size: int = 4
    status: int = 200
    error_message: str = "scripted error"
    error_type: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    # Drop the connection (no end of body) after this many text chunks (or all, if fewer).
    disconnect_after: int | None = None
    # Send an error event of this type (Anthropic `event: error`, OpenAI `data: {"error":...}`)
    # after `disconnect_after` chunks (or after all of them), then end the stream.
    stream_error: str | None = None
    malformed: bool = False
    # Seconds to wait before each text chunk (gives a client time to hang up).
    delay: float = 0.0
    finish_reason: str = "stop"  # or "length"; Responses: "failed" (the run failed upstream)
    # End the stream cleanly right after the text: no finish reason, no [DONE] / message_stop.
    unfinished: bool = False
    # Cut the text into chunks of UTF-16 code units, so an astral character's surrogate pair may
    # be split across two events (each then carries a lone `\\udXXX` escape).
    utf16_chunks: bool = False
    # (input tokens, output tokens); by default 7 and the number of chunks.
    usage: tuple[int, int] | None = None
    # OpenAI: every chunk (or the one JSON reply) has `choices: []`, then [DONE]; Anthropic: no
    # content and no stop reason, then message_stop.
    no_choices: bool = False
    # After this many text chunks, one event that is not JSON; then the rest as usual.
    malformed_after: int | None = None
    # One JSON body even when a stream was asked for (a proxy that ignores `stream`).
    json_reply: bool = False
    # Tool calls after the text: (id, name, arguments JSON text), the arguments streamed in
    # chunks of `chunk_size` as the APIs do (OpenAI `delta.tool_calls`, Anthropic `tool_use`
    # blocks of `input_json_delta`); the finish reason then says so (tool_calls, tool_use).
    tool_calls: tuple[tuple[str, str, str], ...] = ()
    # Reasoning streamed before the text in its own field, in chunks of `chunk_size`: OpenAI chat
    # deltas of `reasoning_field` with null content (DeepSeek, vLLM, llama.cpp; vLLM's newer name
    # is "reasoning"), Anthropic a `thinking` block of `thinking_delta`s and its `signature_delta`
    # before the text block.
    reasoning: str = ""
    reasoning_field: str = "reasoning_content"
    # Send no usage, whatever `stream_options` asks (llama.cpp's server).
    no_usage: bool = False
    # After the text, stream this in chunks over and over: a reply that never stops (the client
    # must hang up).
    endless: str = ""

    def argument_pieces(self, arguments: str) -> list[str]:
        size = max(self.chunk_size, 1)
        return [arguments[i : i + size] for i in range(0, len(arguments), size)]

    def reasoning_pieces(self) -> list[str]:
        return self.argument_pieces(self.reasoning)

    def streamed(self) -> Iterator[str]:
        """The chunks a stream sends: the text's, then `endless`'s for ever."""
        yield from self.pieces()
        if self.endless:
            yield from itertools.cycle(self.argument_pieces(self.endless))

    def pieces(self) -> list[str]:
        size = max(self.chunk_size, 1)
        if not self.utf16_chunks:
            return [self.text[i : i + size] for i in range(0, len(self.text), size)]
        units = self.text.encode("utf-16-le", "surrogatepass")
        step = 2 * size
        return [
            units[i : i + step].decode("utf-16-le", "surrogatepass")
            for i in range(0, len(units), step)
        ]


def text(value: str, *, chunk_size: int = 4, **options: Any) -> Reply:
    """A reply that streams `value` in chunks of `chunk_size` characters."""
    return Reply(text=value, chunk_size=chunk_size, **options)


def tool_call(
    name: str, arguments: str, *, id: str = "call_1", chunk_size: int = 4, **options: Any
) -> Reply:
    """A reply that calls `name` with `arguments` (JSON text, streamed in chunks), after the
    `text=` given in `options` (none by default)."""
    return Reply(tool_calls=((id, name, arguments),), chunk_size=chunk_size, **options)


def error(
    status: int,
    message: str = "scripted error",
    *,
    type: str | None = None,
    headers: dict[str, str] | None = None,
) -> Reply:
    """An HTTP error with the protocol's JSON error body and the given headers (Retry-After...)."""
    return Reply(status=status, error_message=message, error_type=type, headers=headers or {})


def disconnect(value: str, after: int, *, chunk_size: int = 4, **options: Any) -> Reply:
    """A stream of `value` that drops the connection after `after` chunks."""
    return Reply(text=value, chunk_size=chunk_size, disconnect_after=after, **options)


def malformed() -> Reply:
    """A 200 reply whose body (or first stream event) is not JSON."""
    return Reply(malformed=True)


@dataclass
class Exchange:
    """One request the server received and what became of its reply."""

    path: str
    headers: dict[str, str]
    body: Any
    reply: Reply | None = None
    chunks_sent: int = 0
    client_closed: bool = False
    done: threading.Event = field(default_factory=threading.Event)


Responder = Callable[[Any], "str | Reply"]

_STOP_REASONS = {"stop": "end_turn", "length": "max_tokens"}
_RESPONSES = "/v1/responses"


def _finish(reply: Reply, tools: str) -> str:
    """The reply's finish reason, `tools` (the protocol's word) where it ends by calling tools."""
    return tools if reply.tool_calls and reply.finish_reason == "stop" else reply.finish_reason


class ClientGone(Exception):
    """The client closed the connection while the server was writing."""


class Handler(BaseHTTPRequestHandler):
    """What the test API servers share (this one and tests/support/fault_server.py): HTTP/1.1 kept
    alive, no log, quiet hang-ups, JSON replies and chunked writes."""

    protocol_version = "HTTP/1.1"
    # Each write goes out at once. With Nagle's algorithm a write that follows another (a body
    # after its headers, an event after an event) waits for the client's delayed ACK: 40 ms a reply.
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        pass  # tests read what the servers record, not a log

    def handle(self) -> None:
        # A client may close a kept-alive connection while the server waits on it for more.
        with contextlib.suppress(ConnectionResetError, BrokenPipeError, ConnectionAbortedError):
            super().handle()

    def read_json(self, not_json: Callable[[bytes], Any]) -> Any:
        """The request's JSON body (None when empty); `not_json(raw)` when it does not parse."""
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            return not_json(raw)

    def write(self, data: bytes) -> None:
        try:
            self.wfile.write(data)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError) as exc:
            raise ClientGone from exc

    def send_json(self, status: int, payload: Any, headers: dict[str, str]) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.write(data)

    def start_stream(self, headers: dict[str, str]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.write(b"")

    def chunk(self, data: bytes) -> None:
        """One HTTP chunk of a chunked body."""
        self.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")

    def hang_up(self) -> None:
        """Close mid-body: the client sees a truncated chunked stream."""
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)


class _Handler(Handler):
    server: _Server

    def do_GET(self) -> None:
        """`GET /v1/models`: the server's `models` (a vLLM server lists each with its
        `max_model_len`)."""
        if self.path != "/v1/models":
            self.send_json(404, {"error": {"message": f"no route {self.path}"}}, {})
            return
        self.send_json(200, {"object": "list", "data": self.server.owner.models}, {})

    def do_POST(self) -> None:
        body = self.read_json(lambda raw: raw.decode("utf-8", "replace"))
        exchange = Exchange(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
        owner = self.server.owner
        owner.record(exchange)
        try:
            exchange.reply = owner.next_reply(body)
            self._answer(exchange, exchange.reply)
        except (ClientGone, BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            exchange.client_closed = True
            self.close_connection = True
        finally:
            exchange.done.set()

    # -- plumbing

    def _request_ids(self) -> dict[str, str]:
        number = self.server.owner.next_id()
        return {"x-request-id": f"req_{number}", "request-id": f"req_{number}"}

    def _send_json(self, status: int, payload: Any, headers: dict[str, str]) -> None:
        self.send_json(status, payload, {**self._request_ids(), **headers})

    def _start_stream(self, headers: dict[str, str]) -> None:
        self.start_stream({**self._request_ids(), **headers})

    def _event(self, data: Any, event: str | None = None) -> None:
        payload = data if isinstance(data, str) else json.dumps(data)
        text = (f"event: {event}\n" if event else "") + f"data: {payload}\n\n"
        self.chunk(text.encode())

    def _malformed_event(self) -> None:
        # Named, or the Anthropic SDK would skip it unread.
        anthropic = self.path.startswith("/v1/messages")
        self._event("{this is not json", "content_block_delta" if anthropic else None)

    def _end_stream(self) -> None:
        self.write(b"0\r\n\r\n")

    def _text_chunks(self, exchange: Exchange, reply: Reply, send: Callable[[str], None]) -> bool:
        """Send the text chunks; False when the stream dropped as scripted."""
        for index, piece in enumerate(reply.streamed()):
            if reply.disconnect_after is not None and index >= reply.disconnect_after:
                if reply.stream_error is None:
                    self.hang_up()
                    return False
                return True
            if reply.delay:
                time.sleep(reply.delay)
            if index == reply.malformed_after:
                self._malformed_event()
            send(piece)
            exchange.chunks_sent += 1
        if reply.disconnect_after is not None and reply.stream_error is None:
            self.hang_up()  # scripted to drop: drop even when the text ran out first
            return False
        return True

    def _text_to_end(
        self,
        exchange: Exchange,
        reply: Reply,
        send: Callable[[str], None],
        error_event: Callable[[], None],
        tool_calls: Callable[[], None] = lambda: None,
    ) -> bool:
        """Send the text chunks, then (`tool_calls()`) the scripted calls; False when the stream
        ended there as scripted (dropped, `unfinished`, or `stream_error`: `error_event()` sent,
        then the end), True when it goes on to its proper end."""
        if not self._text_chunks(exchange, reply, send):
            return False
        tool_calls()
        if reply.unfinished:
            self._end_stream()
            return False
        if reply.stream_error is not None:
            error_event()
            self._end_stream()
            return False
        return True

    def _usage(self, exchange: Exchange, reply: Reply) -> tuple[int, int]:
        return reply.usage or (7, max(exchange.chunks_sent, 1))

    # -- protocols

    def _answer(self, exchange: Exchange, reply: Reply) -> None:
        path = self.path.split("?")[0]
        anthropic = path == "/v1/messages"
        if path not in ("/v1/chat/completions", "/v1/completions", "/v1/messages", _RESPONSES):
            self._send_json(404, {"error": {"message": f"no route {path}"}}, {})
            return
        if reply.status >= 400:
            self._send_json(reply.status, self._error_body(reply, anthropic), reply.headers)
            return
        streaming = isinstance(exchange.body, dict) and bool(exchange.body.get("stream"))
        streaming = streaming and not reply.json_reply
        if reply.malformed:
            if streaming:
                self._start_stream(reply.headers)
                self._malformed_event()
                self._end_stream()
            else:
                self._send_json(200, b"{this is not json", reply.headers)
            return
        if anthropic:
            self._anthropic(exchange, reply, streaming)
        elif path == _RESPONSES:
            self._responses(exchange, reply, streaming)
        else:
            self._openai(exchange, reply, streaming, chat=path == "/v1/chat/completions")

    @staticmethod
    def _error_body(reply: Reply, anthropic: bool) -> Any:
        if anthropic:
            kind = reply.error_type or "invalid_request_error"
            return {"type": "error", "error": {"type": kind, "message": reply.error_message}}
        kind = reply.error_type or "invalid_request_error"
        return {
            "error": {"message": reply.error_message, "type": kind, "param": None, "code": None}
        }

    def _openai(self, exchange: Exchange, reply: Reply, streaming: bool, *, chat: bool) -> None:
        body = exchange.body if isinstance(exchange.body, dict) else {}
        model = body.get("model", "model")
        base = {
            "id": "chatcmpl-1" if chat else "cmpl-1",
            "object": "chat.completion.chunk" if chat else "text_completion",
            "created": 0,
            "model": model,
        }
        if not streaming:
            exchange.chunks_sent = len(reply.pieces())
            prompt, completion = self._usage(exchange, reply)
            if chat:
                message: dict[str, Any] = {"role": "assistant", "content": reply.text}
                if reply.tool_calls:
                    message["content"] = reply.text or None
                    message["tool_calls"] = [
                        {"id": i, "type": "function", "function": {"name": n, "arguments": a}}
                        for i, n, a in reply.tool_calls
                    ]
                choice: dict[str, Any] = {
                    "index": 0,
                    "message": message,
                    "finish_reason": _finish(reply, "tool_calls"),
                }
            else:
                choice = {"index": 0, "text": reply.text, "finish_reason": reply.finish_reason}
            payload = {
                **base,
                "object": "chat.completion" if chat else "text_completion",
                "choices": [] if reply.no_choices else [choice],
                "usage": {
                    "prompt_tokens": prompt,
                    "completion_tokens": completion,
                    "total_tokens": prompt + completion,
                },
            }
            self._send_json(200, payload, reply.headers)
            return

        def choice_chunk(content: str | None, finish: str | None = None) -> dict[str, Any]:
            if chat:
                delta = {} if content is None else {"content": content}
                piece: dict[str, Any] = {"index": 0, "delta": delta, "finish_reason": finish}
            else:
                piece = {"index": 0, "text": content or "", "finish_reason": finish}
            return {**base, "choices": [] if reply.no_choices else [piece]}

        self._start_stream(reply.headers)
        if chat and not reply.no_choices:
            first = choice_chunk("")
            first["choices"][0]["delta"]["role"] = "assistant"
            self._event(first)
            for piece in reply.reasoning_pieces():
                chunk = choice_chunk(None)
                chunk["choices"][0]["delta"] = {"content": None, reply.reasoning_field: piece}
                self._event(chunk)

        def calls() -> None:
            for index, (call_id, name, arguments) in enumerate(reply.tool_calls):
                start = {"index": index, "id": call_id, "type": "function"}
                pieces = [{**start, "function": {"name": name, "arguments": ""}}]
                pieces += [
                    {"index": index, "function": {"arguments": piece}}
                    for piece in reply.argument_pieces(arguments)
                ]
                for call in pieces:
                    chunk = choice_chunk(None)
                    chunk["choices"][0]["delta"]["tool_calls"] = [call]
                    self._event(chunk)

        failure = {"error": {"message": "scripted stream error", "type": reply.stream_error}}
        if not self._text_to_end(
            exchange,
            reply,
            lambda piece: self._event(choice_chunk(piece)),
            lambda: self._event(failure),
            calls,
        ):
            return
        self._event(choice_chunk(None, _finish(reply, "tool_calls")))
        options = body.get("stream_options") or {}
        if options.get("include_usage") and not reply.no_usage:
            prompt, completion = self._usage(exchange, reply)
            usage = {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            }
            self._event({**base, "choices": [], "usage": usage})
        self._event("[DONE]")
        self._end_stream()

    def _anthropic(self, exchange: Exchange, reply: Reply, streaming: bool) -> None:
        body = exchange.body if isinstance(exchange.body, dict) else {}
        model = body.get("model", "model")
        stop_reason = _STOP_REASONS.get(reply.finish_reason, _finish(reply, "tool_use"))
        message = {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": model,
            "stop_sequence": None,
        }
        if not streaming:
            exchange.chunks_sent = len(reply.pieces())
            prompt, completion = self._usage(exchange, reply)
            text_block = reply.text or not reply.tool_calls
            content = [{"type": "text", "text": reply.text}] if text_block else []
            content += [
                {"type": "tool_use", "id": i, "name": n, "input": json.loads(a)}
                for i, n, a in reply.tool_calls
            ]
            payload = {
                **message,
                "content": [] if reply.no_choices else content,
                "stop_reason": None if reply.no_choices else stop_reason,
                "usage": {"input_tokens": prompt, "output_tokens": completion},
            }
            self._send_json(200, payload, reply.headers)
            return
        self._start_stream(reply.headers)
        prompt = (reply.usage or (7, 0))[0]
        start = {
            **message,
            "content": [],
            "stop_reason": None,
            "usage": {"input_tokens": prompt, "output_tokens": 1},
        }
        self._event({"type": "message_start", "message": start}, "message_start")
        if reply.no_choices:
            self._event({"type": "message_stop"}, "message_stop")
            self._end_stream()
            return
        thinking = 1 if reply.reasoning else 0
        if thinking:
            self._thinking(reply)
        # A reply that only calls tools starts with its first tool_use block, as Claude's do.
        first_tool = thinking + (1 if reply.text or not reply.tool_calls else 0)
        if first_tool > thinking:
            block = {
                "type": "content_block_start",
                "index": thinking,
                "content_block": {"type": "text", "text": ""},
            }
            self._event(block, "content_block_start")
        self._event({"type": "ping"}, "ping")

        def delta(piece: str) -> None:
            event = {
                "type": "content_block_delta",
                "index": thinking,
                "delta": {"type": "text_delta", "text": piece},
            }
            self._event(event, "content_block_delta")

        def calls() -> None:
            for index, (call_id, name, arguments) in enumerate(reply.tool_calls, start=first_tool):
                if index > thinking:
                    stop = {"type": "content_block_stop", "index": index - 1}
                    self._event(stop, "content_block_stop")
                use = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
                start = {"type": "content_block_start", "index": index, "content_block": use}
                self._event(start, "content_block_start")
                for piece in reply.argument_pieces(arguments):
                    json_delta = {"type": "input_json_delta", "partial_json": piece}
                    event = {"type": "content_block_delta", "index": index, "delta": json_delta}
                    self._event(event, "content_block_delta")

        failure = {"type": reply.stream_error, "message": "scripted stream error"}
        if not self._text_to_end(
            exchange,
            reply,
            delta,
            lambda: self._event({"type": "error", "error": failure}, "error"),
            calls,
        ):
            return
        last = first_tool + len(reply.tool_calls) - 1
        self._event({"type": "content_block_stop", "index": last}, "content_block_stop")
        _, completion = self._usage(exchange, reply)
        self._event(
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": completion},
            },
            "message_delta",
        )
        self._event({"type": "message_stop"}, "message_stop")
        self._end_stream()

    def _thinking(self, reply: Reply) -> None:
        """A `thinking` content block at index 0, as Claude streams one with extended thinking."""
        block = {"type": "thinking", "thinking": "", "signature": ""}
        self._event(
            {"type": "content_block_start", "index": 0, "content_block": block},
            "content_block_start",
        )
        deltas = [{"type": "thinking_delta", "thinking": p} for p in reply.reasoning_pieces()]
        for delta in [*deltas, {"type": "signature_delta", "signature": "EqQBCgIYAhIM"}]:
            event = {"type": "content_block_delta", "index": 0, "delta": delta}
            self._event(event, "content_block_delta")
        self._event({"type": "content_block_stop", "index": 0}, "content_block_stop")

    def _responses(self, exchange: Exchange, reply: Reply, streaming: bool) -> None:
        """The Responses API: typed events, each named by `event:` and numbered."""
        body = exchange.body if isinstance(exchange.body, dict) else {}
        model = body.get("model", "model")
        if not streaming:
            exchange.chunks_sent = len(reply.pieces())
            self._send_json(200, self._response(exchange, reply, model, reply.text), reply.headers)
            return
        numbers = iter(range(1 << 30))

        def event(kind: str, **fields: Any) -> None:
            self._event({"type": kind, "sequence_number": next(numbers), **fields}, kind)

        self._start_stream(reply.headers)
        started = {**self._response(exchange, reply, model, None), "status": "in_progress"}
        event("response.created", response=started)
        event("response.in_progress", response=started)
        where = {"item_id": "msg_1", "output_index": 0, "content_index": 0}
        if not reply.no_choices:
            item = {**_message_item(""), "status": "in_progress", "content": []}
            event("response.output_item.added", output_index=0, item=item)
            event("response.content_part.added", part=_output_text(""), **where)

        def delta(piece: str) -> None:
            event("response.output_text.delta", delta=piece, logprobs=[], **where)

        if not self._text_to_end(
            exchange,
            reply,
            delta,
            lambda: event("error", code=reply.stream_error, message="scripted stream error"),
        ):
            return
        sent = "".join(reply.pieces()[: exchange.chunks_sent])
        if not reply.no_choices:
            event("response.output_text.done", text=sent, logprobs=[], **where)
            event("response.content_part.done", part=_output_text(sent), **where)
            event("response.output_item.done", output_index=0, item=_message_item(sent))
        done = self._response(exchange, reply, model, sent)
        event(f"response.{done['status']}", response=done)
        self._end_stream()

    def _response(
        self, exchange: Exchange, reply: Reply, model: str, sent: str | None
    ) -> dict[str, Any]:
        """A Response object: `sent` its text (None: none yet, no usage)."""
        length = reply.finish_reason == "length"
        failed = reply.finish_reason == "failed"
        status = "incomplete" if length else "failed" if failed else "completed"
        response: dict[str, Any] = {
            "id": "resp_1",
            "object": "response",
            "created_at": 0,
            "status": status,
            "incomplete_details": {"reason": "max_output_tokens"} if length else None,
            "error": {"code": "server_error", "message": "scripted failure"} if failed else None,
            "model": model,
            "output": [] if sent is None or reply.no_choices else [_message_item(sent)],
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "usage": None,
        }
        if sent is not None:
            prompt, completion = self._usage(exchange, reply)
            response["usage"] = {
                "input_tokens": prompt,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": completion,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": prompt + completion,
            }
        return response


def responses_stream_text(events: list[Any]) -> str:
    """The text a Responses stream (the SDK's events) carries, once its events are seen to come
    as the API sends them: opened, the text's deltas, closed, numbered from 0."""
    kinds = [e.type for e in events]
    assert kinds[:4] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
    ]
    assert kinds[-4:] == [
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert [e.sequence_number for e in events] == list(range(len(events)))
    return "".join(e.delta for e in events if e.type == "response.output_text.delta")


def _output_text(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": []}


def _message_item(text: str) -> dict[str, Any]:
    content = [_output_text(text)]
    return {
        "id": "msg_1",
        "type": "message",
        "status": "completed",
        "role": "assistant",
        "content": content,
    }


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # many clients at once (benchmarks/bench_serve.py): not 5
    owner: MockServer


class MockServer:
    """A scripted OpenAI + Anthropic server on 127.0.0.1 (a free port), in a background thread."""

    def __init__(self) -> None:
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._lock = threading.Lock()
        self._replies: deque[Reply] = deque()
        self._ids = 0
        self.exchanges: list[Exchange] = []
        self.responder: Responder | None = None
        self.models: list[dict[str, Any]] = []  # what `GET /v1/models` lists

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> MockServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()

    def reset(self) -> None:
        """Forget the script, the responder, the models listed and the recorded exchanges."""
        with self._lock:
            self._replies.clear()
            self.exchanges.clear()
            self.responder = None
            self.models = []

    def script(self, *replies: Reply | str) -> MockServer:
        """Queue replies, answered in order (a str is `text(str)`)."""
        with self._lock:
            self._replies.extend(text(r) if isinstance(r, str) else r for r in replies)
        return self

    @property
    def bodies(self) -> list[Any]:
        """The JSON bodies of the requests received so far."""
        with self._lock:
            return [e.body for e in self.exchanges]

    def wait(self, timeout: float = 5.0) -> list[Exchange]:
        """Wait until every request received so far has been answered (or abandoned)."""
        deadline = time.monotonic() + timeout
        with self._lock:
            exchanges = list(self.exchanges)
        for exchange in exchanges:
            if not exchange.done.wait(max(deadline - time.monotonic(), 0.0)):
                raise TimeoutError(f"the reply to {exchange.path} did not finish")
        return exchanges

    # -- used by the handler threads

    def record(self, exchange: Exchange) -> None:
        with self._lock:
            self.exchanges.append(exchange)

    def next_id(self) -> int:
        with self._lock:
            self._ids += 1
            return self._ids

    def next_reply(self, body: Any) -> Reply:
        with self._lock:
            if self._replies:
                return self._replies.popleft()
            responder = self.responder
        if responder is None:
            return error(418, "unscripted request: the test scripted no reply for it")
        answer = responder(body)
        return text(answer) if isinstance(answer, str) else answer


def serving(target: Any) -> Responder:
    """A responder that serves a local model (a LocalTarget), unconstrained and greedy: a
    completions `prompt` is continued verbatim; chat and Anthropic `messages` go through the chat
    template, and a final assistant message (a prefill) is continued."""
    from local_target.session import TargetSession
    from providers.align import continued_text

    def respond(body: Any) -> str:
        limit = int(body.get("max_tokens") or body.get("max_completion_tokens") or 64)
        if "prompt" in body:  # completions: raw text, no template
            session = TargetSession(target, [], target.new_cache(), None)
            return "".join(session.generate(body["prompt"], max_tokens=limit))
        messages = [{"role": m["role"], "content": _plain(m["content"])} for m in body["messages"]]
        if body.get("system"):
            messages.insert(0, {"role": "system", "content": _plain(body["system"])})
        history, prefix = continued_text(messages, "")
        return "".join(target.session(history).generate(prefix, max_tokens=limit))

    return respond


def _plain(content: Any) -> str:
    """A message's text: a str, or the text of its content blocks."""
    if isinstance(content, str):
        return content
    return "".join(block.get("text", "") for block in content)
