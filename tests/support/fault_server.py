"""A fault-injecting API server that continues known documents exactly, and the guided runs on it.

Shared by tests/unit/providers/test_faults.py (CI size) and benchmarks/reliability.py (at scale).

    FaultServer     POST /v1/chat/completions, /v1/completions (OpenAI) and /v1/messages
                    (Anthropic), always streamed: SSE over chunked HTTP. A run registers its
                    document under its own model name. Each request is answered with the exact
                    continuation of that document from the committed text the request shows, or,
                    at a seeded rate, with a fault. A committed text that is not a prefix of the
                    document is answered with HTTP 400: the run then fails and says so.
    Run             one guided generation: provider, caller (drafter or wrap(), sync or async),
                    fault kind, seed; its document, grammar and prompt derive from these alone.
    run_all()       runs a list of Runs through the real SDK clients and judges each (Outcome).
    table()         the Markdown table of outcomes, per provider and fault kind.

The faults (FAULTS), each at `rate` per request, deterministic per (run, request number):

    rate_limit       HTTP 429 with Retry-After: 0
    server_error     HTTP 500
    unavailable      HTTP 503
    drop             the connection drops mid-stream (between events, inside an event, or inside
                     an HTTP chunk): a truncated chunked body
    stall            no bytes for longer than the client's timeout (before the headers or
                     mid-stream), then the connection closes
    malformed        one text event mid-stream is cut short (its JSON does not parse); the stream
                     goes on after it
    empty            a 200 stream without text: OpenAI chunks with `choices: []`, Anthropic a
                     message with no content block
    unfinished       the text stops early and the stream ends cleanly without the end of the
                     protocol: no finish reason and no `[DONE]` (or `[DONE]` but no finish reason),
                     no `message_delta`/`message_stop` (or only `content_block_stop`), or right
                     after the high half of a surrogate pair
    split_surrogate  an astral character (emoji) travels as `\\ud83d` at the end of one event and
                     `\\ude00` at the start of the next (not a failure: the text must be joined)

Besides faults, every reply varies as real ones do, from the same seed: events of 2 to 16
characters, JSON with `\\u` escapes or raw UTF-8, events split across HTTP chunks (inside a UTF-8
character), replies cut at `max_tokens` (4 characters a token) with finish reason "length", and on
OpenAI chat (which gets the text so far in an instruction, providers.align) a reply that first
repeats the committed text from one of its line starts, or all of it, or all of it after a code
fence opening (an Anthropic reply with nothing committed yet may open a fence too). The repeats
are ones the Aligner's documented rule strips (at least MIN_REPEAT non-blank characters, from a
line start to the end, unambiguous), and documents hold no line-start repeat that an exact
continuation could be mistaken for (`line_repeat`): with both, a correct client reproduces every
document exactly, and never needs a correction.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import random
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cached_property
from http.server import ThreadingHTTPServer
from typing import Any, Literal

from providers.align import CONTINUE_INSTRUCTION, MIN_REPEAT
from tests.support.servers import ClientGone, Handler

FAULTS = (
    "rate_limit",
    "server_error",
    "unavailable",
    "drop",
    "stall",
    "malformed",
    "empty",
    "unfinished",
    "split_surrogate",
)
MIXED = "mixed"  # any of FAULTS, drawn per request
NONE = "none"  # no faults at all

PROVIDERS = ("openai-chat", "openai-completions", "anthropic")
# The ways a run calls the API. wrap() exists for chat completions and Anthropic messages only.
CALLERS: dict[str, tuple[str, ...]] = {
    "openai-chat": ("drafter", "drafter-async", "wrap", "wrap-async"),
    "openai-completions": ("drafter", "drafter-async"),
    "anthropic": ("drafter", "drafter-async", "wrap", "wrap-async"),
}

TIMEOUT = 0.5
"""The SDK clients' read timeout (seconds): a stall outlasts it."""
SEND_TIMEOUT = 5.0
"""The clients' timeout (seconds) to connect, send and get a pooled connection. A stall is in
the reply, so only reading waits TIMEOUT. On a loaded machine the event loop can come back to a
request's connect or write after TIMEOUT: a request that times out before it is sent is one the
server never sees, and the run's count of requests would not match the server's."""
STALL = TIMEOUT + 0.25
"""How long a stalled reply sends nothing before the server hangs up."""
CHARS_PER_TOKEN = 4
"""The server writes at most max_tokens * this many new characters, then finishes with "length"."""
MAX_REQUESTS = 64
"""Requests one run may send; beyond, HTTP 400 (bounds a run that would never end)."""
API_KEY = "sk-test-not-a-real-key"

# -- documents -------------------------------------------------------------------------------------

_KEYS = (
    "name",
    "mississippi",
    "count",
    "ratio",
    "tags",
    "nested",
    "émoji",
    "東京",
    "items",
    "id",
    "note",
    "flag",
    "nothing",
    "big",
    "😀",
    "🔑 key",
)
_STRINGS = (
    "mississippi",
    "missi",
    "naïve café",
    "Zürich",
    "東京タワー",
    "grin 😀",
    "🎉🎉🎉",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 text",
    "tab\there",
    "line\nbreak",
    'say "hi"',
    "back\\slash",
    "",
    "1000",
    "a b  c",
    "👍🏽 ok",
    "rocket 🚀 1000",
    "𝔪𝔦𝔰𝔰𝔦𝔰𝔰𝔦𝔭𝔭𝔦",
)
_NUMBERS = (0, 7, 1000, 10000, 1000000, -42, 3.5, -0.25, 1e21, 6.02e23)
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


def _value(rng: random.Random, depth: int) -> Any:
    kind = rng.choice(("str", "str", "num", "num", "lit", "list", "dict") if depth < 2 else "snl")
    if kind in ("str", "s"):
        return rng.choice(_STRINGS)
    if kind in ("num", "n"):
        return rng.choice(_NUMBERS)
    if kind in ("lit", "l"):
        return rng.choice((True, False, None))
    if kind == "list":
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return _object(rng, depth + 1, rng.randint(1, 3))


def _object(rng: random.Random, depth: int, size: int) -> dict[str, Any]:
    return {key: _value(rng, depth) for key in rng.sample(_KEYS, size)}


def _schema(value: Any) -> dict[str, Any]:
    """A JSON schema that `value` follows, its properties in `value`'s key order."""
    if isinstance(value, bool):
        return {"type": "boolean"}
    if value is None:
        return {"type": "null"}
    if isinstance(value, int):
        return {"type": "integer"}
    if isinstance(value, float):
        return {"type": "number"}
    if isinstance(value, str):
        return {"type": "string"}
    if isinstance(value, list):
        return {"type": "array"}
    return {
        "type": "object",
        "properties": {key: _schema(item) for key, item in value.items()},
        "required": list(value),
        "additionalProperties": False,
    }


def _non_blank(text: str) -> int:
    return sum(not c.isspace() for c in text)


def _line_starts(text: str, end: int) -> list[int]:
    return [i for i in range(end) if i == 0 or text[i - 1] == "\n"]


def line_repeat(text: str) -> tuple[int, int] | None:
    """(j, c) where `text[j:c]`, from a line start j, with at least MIN_REPEAT non-blank
    characters, comes again right at c; None if there is no such place.

    At such a place no aligner can tell an exact continuation of `text[:c]` from a reply that
    repeats its last lines: both read `text[j:c] + ...`. Documents avoid it."""
    non_blank = [0]  # non_blank[i]: non-blank characters in text[:i]
    for char in text:
        non_blank.append(non_blank[-1] + (not char.isspace()))
    for j in _line_starts(text, len(text)):
        for c in range(j + 1, len(text)):
            if text[c] != text[j] or non_blank[c] - non_blank[j] < MIN_REPEAT:
                continue
            if text.startswith(text[j:c], c):
                return j, c
    return None


@dataclass(frozen=True)
class Document:
    text: str
    grammar: Any  # "json" or a JSON schema (dict)


def make_document(rng: random.Random) -> Document:
    """A JSON document: nested values, numbers like 1000, words like "mississippi", non-ASCII and
    astral characters (two or more; raw, or as `\\ud83d\\ude00` escapes), compact or indented;
    its grammar is `json` or a schema it follows (llguidance's schemas take no `\\u` escapes: raw
    UTF-8 there)."""
    while True:
        value = _object(rng, 0, rng.randint(3, 6))
        schema = rng.random() < 0.3
        indent = rng.choice((None, None, 0, 2, 4, "\t"))
        separators = rng.choice(((", ", ": "), (",", ":"))) if indent is None else None
        escaped = not schema and rng.random() < 0.3
        text = json.dumps(value, indent=indent, separators=separators, ensure_ascii=escaped)
        astral = len(_ASTRAL.findall(json.dumps(value, ensure_ascii=False)))
        if astral >= 2 and len(text) <= 600 and line_repeat(text) is None:
            return Document(text, _schema(value) if schema else "json")


# -- the plan of each reply ------------------------------------------------------------------------

Repeat = Literal["none", "tail", "all", "fence"]


@dataclass(frozen=True)
class Plan:
    """How the server answers one request of one run: drawn from (run key, request number)."""

    fault: str | None
    variant: int  # which form of the fault
    where: float  # how far into the reply a mid-stream fault strikes (0..1)
    chunk: int  # characters per text event
    ascii: bool  # JSON with \u escapes (else raw UTF-8)
    split_writes: bool  # each event in two HTTP chunks
    repeat: Repeat  # what the reply writes before the continuation (see `_repeat`)

    @classmethod
    def draw(cls, key: str, number: int, faults: Sequence[str], rate: float) -> Plan:
        rng = random.Random(f"{key}#{number}")
        faulty = rng.random() < rate
        fault = rng.choice(tuple(faults)) if faults else None
        return cls(
            fault=fault if faulty else None,
            variant=rng.randrange(3),
            where=rng.random(),
            chunk=rng.randint(2, 16),
            ascii=rng.random() < 0.5,
            split_writes=rng.random() < 0.2,
            repeat=rng.choices(("none", "tail", "all", "fence"), (6, 2, 1, 1))[0],
        )


def fault_kinds(fault: str) -> tuple[str, ...]:
    """The faults a run of kind `fault` draws from."""
    if fault == MIXED:
        return FAULTS
    if fault == NONE:
        return ()
    if fault not in FAULTS:
        raise ValueError(f"unknown fault kind {fault!r}; known: {', '.join(FAULTS)}, mixed, none")
    return (fault,)


# -- the server ------------------------------------------------------------------------------------


@dataclass
class Request:
    """One request as the server saw it."""

    number: int
    committed: str | None  # None: the request did not show a committed text the server could read
    plan: Plan
    fault: str | None = None  # the fault injected (None also when the plan's could not apply)
    # Characters the reply wrote before the continuation: a repeat of the committed text (OpenAI
    # chat), a code fence opening (OpenAI chat, and Anthropic before anything is committed).
    repeated: int = 0
    refused: str | None = None  # why it was answered with HTTP 400


@dataclass
class Record:
    """What the server knows of one run."""

    key: str
    document: str
    prompt: str
    faults: tuple[str, ...]
    rate: float
    requests: list[Request] = field(default_factory=list)

    @property
    def injected(self) -> Counter[str]:
        return Counter(r.fault for r in self.requests if r.fault is not None)

    @property
    def repeats(self) -> int:
        """Replies that wrote something before the continuation (a repeat, a fence opening)."""
        return sum(1 for r in self.requests if r.repeated)

    @property
    def refused(self) -> list[str]:
        return [r.refused for r in self.requests if r.refused is not None]

    @property
    def last_committed(self) -> str:
        """The longest committed text any request showed (nothing of it may be lost)."""
        shown = [r.committed for r in self.requests if r.committed is not None]
        return max(shown, key=len, default="")


class _Refused(Exception):
    """The request cannot be answered with a continuation: HTTP 400 with this message."""


_HIGH = re.compile("[\ud800-\udbff]")


def _utf16(char: str) -> tuple[str, str]:
    """An astral character as its two surrogates (each a lone surrogate str)."""
    units = char.encode("utf-16-le")
    return units[:2].decode("utf-16-le", "surrogatepass"), units[2:].decode(
        "utf-16-le", "surrogatepass"
    )


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def _split_pair(pieces: list[str], where: float) -> list[str] | None:
    """`pieces` with one astral character (the first at or after `where` of the text, else the
    last before it) cut into its surrogates, the high one ending an event, the low one starting
    the next; None when the text has no astral character."""
    text = "".join(pieces)
    found = [m.start() for m in _ASTRAL.finditer(text)]
    if not found:
        return None
    at = next((i for i in found if i >= where * len(text)), found[-1])
    high, low = _utf16(text[at])
    # Events end at the pair's middle; the rest keeps the reply's event size.
    size = max(len(pieces[0]), 1)
    return [
        *_pieces(text[:at], size),
        high,
        low + text[at + 1 : at + size],
        *_pieces(text[at + size :], size),
    ]


@dataclass
class _Answer:
    """What to send: an HTTP error, or SSE frames and how the stream ends."""

    status: int = 200
    error: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    frames: list[bytes] = field(default_factory=list)
    end: Literal["clean", "drop", "cut_chunk", "stall", "stall_before"] = "clean"
    split_writes: bool = False


class FaultServer:
    """The OpenAI + Anthropic fault server on 127.0.0.1 (a free port), in a background thread.

    `register(key, document, prompt, faults, rate)` before a run sends its first request (the
    run's model name is `key`); `record(key)` after, for what the server saw and did."""

    def __init__(self) -> None:
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._lock = threading.Lock()
        self._runs: dict[str, Record] = {}
        self._busy = 0
        self._idle = threading.Condition(self._lock)
        self._ids = 0

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> FaultServer:
        self._thread.start()
        return self

    def stop(self, timeout: float = 2 * STALL) -> None:
        """Stop serving, after waiting (boundedly) for replies still being written."""
        self.wait_idle(timeout)
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()

    def __enter__(self) -> FaultServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no handler is writing (stalled replies finish); False on timeout."""
        with self._idle:
            return self._idle.wait_for(lambda: self._busy == 0, timeout)

    def register(
        self, key: str, document: str, prompt: str, faults: Sequence[str], rate: float
    ) -> Record:
        record = Record(key, document, prompt, tuple(faults), rate)
        with self._lock:
            if key in self._runs:
                raise ValueError(f"run {key!r} is registered already")
            self._runs[key] = record
        return record

    def record(self, key: str) -> Record:
        with self._lock:
            return self._runs[key]

    # -- deciding (no I/O)

    def _begin(self, body: Any) -> tuple[Record, Request] | None:
        model = body.get("model") if isinstance(body, dict) else None
        with self._lock:
            self._busy += 1
            self._ids += 1
            record = self._runs.get(model) if isinstance(model, str) else None
            if record is None:
                return None
            number = len(record.requests)
            plan = Plan.draw(record.key, number, record.faults, record.rate)
            request = Request(number, None, plan)
            record.requests.append(request)
            return record, request

    def _end(self) -> None:
        with self._idle:
            self._busy -= 1
            self._idle.notify_all()

    def answer(self, path: str, body: Any) -> tuple[_Answer, Request | None]:
        """The answer to one request (records it on its run)."""
        begun = self._begin(body)
        anthropic = path == "/v1/messages"
        if begun is None:
            return _error(404, "no run is registered under this model", anthropic), None
        record, request = begun
        try:
            if request.number >= MAX_REQUESTS:
                raise _Refused(f"more than {MAX_REQUESTS} requests in one run")
            committed = _committed(path, body, record)
            request.committed = committed
            if not record.document.startswith(committed):
                raise _Refused("the committed text is not a prefix of the document")
        except _Refused as exc:
            request.refused = str(exc)
            return _error(400, str(exc), anthropic), request
        return _respond(path, body, record, request, committed), request


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # The listen backlog. With the default (5), runs that connect at once overflow it, and a
    # dropped SYN is sent again only after a second: a client timeout for a request the server
    # never sees, which would read as a miscounted retry.
    request_queue_size = 256
    owner: FaultServer


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict))
    raise _Refused(f"unreadable message content: {type(content).__name__}")


def _committed(path: str, body: Any, record: Record) -> str:
    """The committed text a request shows, read the way each drafter sends it:

    /v1/completions     prompt = the run's prompt + committed text
    /v1/chat/completions  [prompt]; or [prompt, assistant: committed, user: CONTINUE_INSTRUCTION...]
    /v1/messages        [prompt]; or [prompt, assistant: committed] (a prefill, trailing blanks cut)
    """
    if not isinstance(body, dict):
        raise _Refused("the body is not a JSON object")
    if path == "/v1/completions":
        prompt = body.get("prompt")
        if not isinstance(prompt, str) or not prompt.startswith(record.prompt):
            raise _Refused("the prompt does not start with the run's prompt")
        return prompt[len(record.prompt) :]
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise _Refused("no messages")
    head = [{"role": "user", "content": record.prompt}]
    if [{"role": m.get("role"), "content": m.get("content")} for m in messages[:1]] != head:
        raise _Refused("the conversation does not start with the run's prompt")
    if len(messages) == 1:
        return ""
    if path == "/v1/chat/completions":
        ask = messages[-1]
        continues = (
            len(messages) == 3
            and ask.get("role") == "user"
            and _text_of(ask.get("content")).startswith(CONTINUE_INSTRUCTION)
            and messages[1].get("role") == "assistant"
        )
        if not continues:
            raise _Refused("a chat request that is neither the prompt nor a continuation")
        return _text_of(messages[1].get("content"))
    if len(messages) != 2 or messages[1].get("role") != "assistant":
        raise _Refused("an Anthropic request that is neither the prompt nor a prefill")
    return _text_of(messages[1].get("content"))


def _error(
    status: int, message: str, anthropic: bool, headers: dict[str, str] | None = None
) -> _Answer:
    kinds = {
        400: ("invalid_request_error", "invalid_request_error"),
        404: ("not_found_error", "not_found"),
        429: ("rate_limit_error", "rate_limit_exceeded"),
        500: ("api_error", "server_error"),
        503: ("overloaded_error", "server_error"),
    }
    anthropic_type, openai_type = kinds[status]
    if anthropic:
        body: Any = {"type": "error", "error": {"type": anthropic_type, "message": message}}
    else:
        body = {"error": {"message": message, "type": openai_type, "param": None, "code": None}}
    return _Answer(status=status, error=body, headers=headers or {})


def _max_tokens(body: dict[str, Any]) -> int:
    for name in ("max_completion_tokens", "max_tokens"):
        value = body.get(name)
        if isinstance(value, int) and value > 0:
            return value
    return 4096


def _repeat(plan: Plan, committed: str, rest: str) -> str:
    """What an OpenAI chat reply repeats of `committed` before `rest`: all of it after a fence
    opening, all of it, or its end from a line start ("tail"). "" when that repeat is too short
    for the documented rule to strip (MIN_REPEAT non-blank characters), or ambiguous (a longer
    repeat from an earlier line start would fit the same reply)."""
    if plan.repeat == "fence":
        return "```json\n" + committed
    if not committed or plan.repeat == "none":
        return ""
    starts = _line_starts(committed, len(committed))
    total = _non_blank(committed)
    eligible = [i for i in starts if total - _non_blank(committed[:i]) >= MIN_REPEAT]
    if not eligible or (plan.repeat == "all" and eligible[0] != 0):
        return ""
    start = eligible[0] if plan.repeat == "all" else eligible[-1]
    reply = committed[start:] + rest
    if any(reply.startswith(committed[j:]) for j in eligible if j < start):
        return ""
    return committed[start:]


def _respond(
    path: str, body: dict[str, Any], record: Record, request: Request, committed: str
) -> _Answer:
    plan = request.plan
    anthropic = path == "/v1/messages"
    fault = plan.fault
    if fault in ("rate_limit", "server_error", "unavailable"):
        request.fault = fault
        status = {"rate_limit": 429, "server_error": 500, "unavailable": 503}[fault]
        headers = {"retry-after": "0"} if status == 429 else {}
        return _error(status, f"injected {fault}", anthropic, headers)
    if fault == "stall" and plan.variant == 0:
        request.fault = fault
        return _Answer(end="stall_before")

    rest = record.document[len(committed) :]
    limit = _max_tokens(body) * CHARS_PER_TOKEN
    finish = "length" if len(rest) > limit else "stop"
    rest = rest[:limit]
    chat = path == "/v1/chat/completions"
    if chat:
        repeated = _repeat(plan, committed, rest)
    elif anthropic and not committed and plan.repeat == "fence":
        repeated = "```json\n"  # no prefill yet: the answer may open a code fence
    else:
        repeated = ""
    request.repeated = len(repeated)
    reply = repeated + rest
    pieces = _pieces(reply, plan.chunk)
    protocol = _Anthropic(body) if anthropic else _OpenAI(body, chat=chat)
    dumps = _dumper(plan.ascii)
    answer = _Answer(split_writes=plan.split_writes)
    frames = answer.frames

    if fault == "empty":
        request.fault = fault
        frames.extend(protocol.empty(plan.variant, dumps))
        return answer
    if fault == "split_surrogate":
        split = _split_pair(pieces, plan.where)
        if split is not None:
            request.fault = fault
            pieces = split

    at = min(int(plan.where * (len(pieces) + 1)), len(pieces))  # where a mid-stream fault strikes
    frames.extend(protocol.head(dumps))
    if fault == "drop":
        request.fault = fault
        frames.extend(protocol.delta(p, dumps) for p in pieces[:at])
        if plan.variant == 0 or at == len(pieces):
            answer.end = "drop"
        else:
            inside = protocol.delta(pieces[at], dumps)
            frames.append(inside[: len(inside) // 2])
            answer.end = "drop" if plan.variant == 1 else "cut_chunk"
        return answer
    if fault == "stall":
        request.fault = fault
        frames.extend(protocol.delta(p, dumps) for p in pieces[:at])
        answer.end = "stall"
        return answer
    if fault == "unfinished":
        request.fault = fault
        if plan.variant == 2:
            split = _split_pair(pieces, plan.where)
            if split is not None:
                high = next(i for i, p in enumerate(split) if _HIGH.fullmatch(p))
                frames.extend(protocol.delta(p, dumps) for p in split[: high + 1])
                return answer  # ends cleanly right after the high surrogate
        frames.extend(protocol.delta(p, dumps) for p in pieces[:at])
        frames.extend(protocol.unfinished_tail(plan.variant, dumps))
        return answer
    for index, piece in enumerate(pieces):
        if fault == "malformed" and index == at:
            request.fault = fault
            frames.append(_truncated(protocol.delta(piece, dumps)))
            continue  # the piece is lost with its event: the client must not go on without it
        frames.append(protocol.delta(piece, dumps))
    if fault == "malformed" and at == len(pieces):
        request.fault = fault
        frames.append(_truncated(protocol.delta("x", dumps)))
    frames.extend(protocol.tail(finish, len(pieces), dumps))
    return answer


def _dumper(ascii: bool) -> Callable[[Any], str]:
    def dumps(data: Any) -> str:
        text = json.dumps(data, separators=(",", ":"), ensure_ascii=ascii)
        if not ascii and re.search("[\ud800-\udfff]", text):
            return json.dumps(data, separators=(",", ":"))  # lone surrogates travel escaped
        return text

    return dumps


def _frame(data: str, event: str | None = None) -> bytes:
    return ((f"event: {event}\n" if event else "") + f"data: {data}\n\n").encode()


def _truncated(frame: bytes) -> bytes:
    """An event whose JSON stops short (cut inside its data line), still ended as an event."""
    data_at = frame.index(b"data: ") + len(b"data: ")
    body = frame[data_at:].rstrip(b"\n")
    cut = data_at + max(len(body) // 2, 1)
    while cut > data_at and (frame[cut] & 0xC0) == 0x80:
        cut -= 1  # not inside a UTF-8 character: the event stays text, only its JSON is broken
    return frame[:cut] + b"\n\n"


class _OpenAI:
    def __init__(self, body: dict[str, Any], *, chat: bool) -> None:
        self.chat = chat
        self.usage = bool((body.get("stream_options") or {}).get("include_usage"))
        self.base = {
            "id": "chatcmpl-fault" if chat else "cmpl-fault",
            "object": "chat.completion.chunk" if chat else "text_completion",
            "created": 0,
            "model": body.get("model"),
        }

    def _choice(self, text: str | None, finish: str | None) -> dict[str, Any]:
        if self.chat:
            delta = {} if text is None else {"content": text}
            return {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
        return {"index": 0, "text": text or "", "finish_reason": finish, "logprobs": None}

    def head(self, dumps: Callable[[Any], str]) -> list[bytes]:
        if not self.chat:
            return []
        first = self._choice("", None)
        first["delta"]["role"] = "assistant"
        return [_frame(dumps({**self.base, "choices": [first]}))]

    def delta(self, text: str, dumps: Callable[[Any], str]) -> bytes:
        return _frame(dumps({**self.base, "choices": [self._choice(text, None)]}))

    def _usage(self, output: int, dumps: Callable[[Any], str]) -> list[bytes]:
        if not self.usage:
            return []
        usage = {"prompt_tokens": 7, "completion_tokens": output, "total_tokens": 7 + output}
        return [_frame(dumps({**self.base, "choices": [], "usage": usage}))]

    def tail(self, finish: str, output: int, dumps: Callable[[Any], str]) -> list[bytes]:
        last = _frame(dumps({**self.base, "choices": [self._choice(None, finish)]}))
        return [last, *self._usage(output, dumps), _frame("[DONE]")]

    def unfinished_tail(self, variant: int, dumps: Callable[[Any], str]) -> list[bytes]:
        # Variant 1: [DONE] with no finish reason before it; else the stream just ends.
        return [*self._usage(1, dumps), _frame("[DONE]")] if variant == 1 else []

    def empty(self, variant: int, dumps: Callable[[Any], str]) -> list[bytes]:
        nothing = _frame(dumps({**self.base, "choices": []}))
        if variant == 0:
            return [nothing, *self._usage(0, dumps), _frame("[DONE]")]
        return [nothing, nothing, _frame("[DONE]")]


class _Anthropic:
    def __init__(self, body: dict[str, Any]) -> None:
        self.message: dict[str, Any] = {
            "id": "msg_fault",
            "type": "message",
            "role": "assistant",
            "model": body.get("model"),
            "stop_sequence": None,
            "stop_reason": None,
            "content": [],
            "usage": {"input_tokens": 7, "output_tokens": 1},
        }

    def _start(self, dumps: Callable[[Any], str]) -> bytes:
        return _frame(dumps({"type": "message_start", "message": self.message}), "message_start")

    def head(self, dumps: Callable[[Any], str]) -> list[bytes]:
        block = {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "text", "text": ""},
        }
        return [
            self._start(dumps),
            _frame(dumps(block), "content_block_start"),
            _frame(dumps({"type": "ping"}), "ping"),
        ]

    def delta(self, text: str, dumps: Callable[[Any], str]) -> bytes:
        event = {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": text},
        }
        return _frame(dumps(event), "content_block_delta")

    def _stop(self, reason: str, output: int, dumps: Callable[[Any], str]) -> list[bytes]:
        delta = {
            "type": "message_delta",
            "delta": {"stop_reason": reason, "stop_sequence": None},
            "usage": {"output_tokens": output},
        }
        return [
            _frame(dumps(delta), "message_delta"),
            _frame(dumps({"type": "message_stop"}), "message_stop"),
        ]

    def _block_stop(self, dumps: Callable[[Any], str]) -> bytes:
        return _frame(dumps({"type": "content_block_stop", "index": 0}), "content_block_stop")

    def tail(self, finish: str, output: int, dumps: Callable[[Any], str]) -> list[bytes]:
        reason = "max_tokens" if finish == "length" else "end_turn"
        return [self._block_stop(dumps), *self._stop(reason, output, dumps)]

    def unfinished_tail(self, variant: int, dumps: Callable[[Any], str]) -> list[bytes]:
        # Variant 1: the block is closed, then nothing (no message_delta, no message_stop).
        return [self._block_stop(dumps)] if variant == 1 else []

    def empty(self, variant: int, dumps: Callable[[Any], str]) -> list[bytes]:
        # A message with no content block: ended as a finished turn, or not ended at all.
        if variant == 0:
            return [self._start(dumps), *self._stop("end_turn", 0, dumps)]
        return [self._start(dumps), _frame(dumps({"type": "message_stop"}), "message_stop")]


class _Handler(Handler):
    server: _Server

    def do_POST(self) -> None:
        body = self.read_json(lambda raw: None)
        owner = self.server.owner
        path = self.path.split("?")[0]
        try:
            if path not in ("/v1/chat/completions", "/v1/completions", "/v1/messages"):
                self.send_json(404, {"error": {"message": f"no route {path}"}}, {})
                return
            answer, request = owner.answer(path, body)
            self._send(answer, request.number if request else 0)
        except (ClientGone, BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            self.close_connection = True
        finally:
            if path in ("/v1/chat/completions", "/v1/completions", "/v1/messages"):
                owner._end()

    def _send(self, answer: _Answer, number: int) -> None:
        ids = {"x-request-id": f"req_fault_{number}", "request-id": f"req_fault_{number}"}
        if answer.end == "stall_before":
            time.sleep(STALL)
            self.hang_up()
            return
        if answer.status != 200:
            self.send_json(answer.status, answer.error, {**ids, **answer.headers})
            return
        self.start_stream(ids)
        frames = answer.frames
        last = frames[-1] if answer.end == "cut_chunk" and frames else None
        for frame in frames if last is None else frames[:-1]:
            if answer.split_writes and len(frame) > 1:
                self.chunk(frame[: len(frame) // 2])  # may split a UTF-8 character
                self.chunk(frame[len(frame) // 2 :])
            else:
                self.chunk(frame)
        if last is not None:
            # An HTTP chunk announced whole (twice this size) but cut off in its middle.
            self.write(f"{2 * len(last):x}\r\n".encode() + last)
            self.hang_up()
        elif answer.end == "clean":
            self.write(b"0\r\n\r\n")
        elif answer.end == "stall":
            time.sleep(STALL)
            self.hang_up()
        else:
            self.hang_up()


# -- the runs --------------------------------------------------------------------------------------


class NoTarget:
    """A local target that must never be needed: with exact continuations every fault is retried,
    none corrected."""

    def session(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the local target was asked for a correction")


NO_TARGET = NoTarget()
_MAX_DRAFT_TOKENS = (8, 16, 32, 512)


@dataclass(frozen=True)
class Run:
    """One guided generation; everything about it derives from these fields."""

    provider: str
    fault: str  # one of FAULTS, MIXED or NONE
    seed: int
    index: int
    rate: float = 0.3
    max_attempts: int = 8

    @property
    def key(self) -> str:
        """The model name its requests carry (how the server knows the run)."""
        return (
            f"{self.provider}.{self.fault}.s{self.seed}.i{self.index}"
            f".r{self.rate}.a{self.max_attempts}"
        )

    @property
    def caller(self) -> str:
        callers = CALLERS[self.provider]
        return callers[self.index % len(callers)]

    @property
    def asynchronous(self) -> bool:
        return self.caller.endswith("-async")

    @cached_property
    def document(self) -> Document:
        return make_document(random.Random(f"document {self.key}"))

    @property
    def prompt(self) -> str:
        return f"Write document {self.index} of seed {self.seed}, exactly."

    @property
    def max_draft_tokens(self) -> int:
        return random.Random(f"tokens {self.key}").choice(_MAX_DRAFT_TOKENS)

    def reproduce(self) -> str:
        """The command that runs this run alone, verbosely."""
        return (
            f"python -m benchmarks.reliability --provider {self.provider} --fault {self.fault} "
            f"--seed {self.seed} --index {self.index} --rate {self.rate} "
            f"--max-attempts {self.max_attempts} --verbose"
        )


Status = Literal["exact", "typed", "altered", "lost", "failed"]


@dataclass(frozen=True)
class Outcome:
    """How one run ended, judged against what the server saw.

    exact    the result is the document, no correction, every request counted in the trace
    typed    ProviderError after the attempts ran out; its .partial is a prefix of the document
             holding everything any request showed as committed, and counted every request
    altered  the output (or a committed text the server was shown) is not the document's prefix
    lost     the partial result lacks committed text a request had shown
    failed   anything else: a correction was asked for, requests miscounted, a non-retryable or
             untyped error
    """

    run: Run
    status: Status
    requests: int
    faults: Counter[str]
    retries: int
    detail: str = ""
    reasons: tuple[str, ...] = ()  # why each retry was made, as the client saw it
    repeats: int = 0  # replies that repeated committed text first


def _client(provider: str, asynchronous: bool, url: str, timeout: float = TIMEOUT) -> Any:
    """A real SDK client on the fault server, with the SDK's default retries left on (the
    drafters must turn them off for themselves, or requests go uncounted)."""
    if provider == "anthropic":
        import anthropic

        cls: Any = anthropic.AsyncAnthropic if asynchronous else anthropic.Anthropic
        return cls(base_url=url, api_key=API_KEY, timeout=_limits(anthropic.Timeout, timeout))
    import openai

    cls = openai.AsyncOpenAI if asynchronous else openai.OpenAI
    return cls(base_url=f"{url}/v1", api_key=API_KEY, timeout=_limits(openai.Timeout, timeout))


def _limits(timeouts: Any, read: float) -> Any:
    """The SDK's Timeout (`timeouts`) that reads for `read` seconds, sends for SEND_TIMEOUT."""
    send = max(read, SEND_TIMEOUT)
    return timeouts(read, connect=send, write=send, pool=send)


def _grammar(document: Document) -> Any:
    from backtrack import Grammar

    if document.grammar == "json":
        return _json_grammar()
    return Grammar.coerce(document.grammar)


_json_cache: list[Any] = []


def _json_grammar() -> Any:
    if not _json_cache:
        from backtrack import Grammar

        _json_cache.append(Grammar.coerce("json"))
    return _json_cache[0]


def _call(run: Run, client: Any) -> tuple[str, Any]:
    """(how, thing to run): a GuideResult, or a coroutine of one, for `run` on `client`."""
    from backtrack import aguide, guide, wrap
    from providers import AnthropicDrafter, OpenAIChatDrafter, OpenAICompletionsDrafter

    grammar = _grammar(run.document)
    options: dict[str, Any] = {"target": NO_TARGET, "max_attempts": run.max_attempts}
    messages = [{"role": "user", "content": run.prompt}]
    if run.caller.startswith("wrap"):
        wrapped = wrap(client, **options)
        if run.provider == "anthropic":
            create = wrapped.messages.create
        else:
            create = wrapped.chat.completions.create
        return "wrap", create(
            model=run.key, messages=messages, grammar=grammar, max_tokens=run.max_draft_tokens
        )
    drafter: Any
    prompt: Any = messages
    if run.provider == "anthropic":
        drafter = AnthropicDrafter(client, run.key)
    elif run.provider == "openai-chat":
        drafter = OpenAIChatDrafter(client, run.key)
    else:
        drafter = OpenAICompletionsDrafter(client, run.key)
        prompt = run.prompt
    run_guide = aguide if run.asynchronous else guide
    return "drafter", run_guide(
        drafter, grammar, prompt=prompt, max_draft_tokens=run.max_draft_tokens, **options
    )


def judge(
    run: Run,
    record: Record,
    result: Any = None,
    error: BaseException | None = None,
    reasons: Sequence[str] = (),
) -> Outcome:
    """The Outcome of `run`, from its result (or the error it raised) and the server's record."""
    from backtrack import ProviderError

    document = run.document.text
    requests = len(record.requests)
    faults = record.injected

    def outcome(status: Status, retries: int, detail: str = "") -> Outcome:
        return Outcome(
            run, status, requests, faults, retries, detail, tuple(reasons), record.repeats
        )

    if record.refused:
        return outcome("altered", 0, f"the server was shown a bad request: {record.refused[0]}")
    if error is not None and not isinstance(error, ProviderError):
        return outcome("failed", 0, f"{type(error).__name__}: {error}")
    partial = result if error is None else getattr(error, "partial", None)
    if partial is None:
        return outcome("failed", 0, f"ProviderError without a partial result: {error}")
    retries = sum(r.retries for r in partial.trace.rounds if r.kind == "draft")
    text = partial.text
    if error is None:
        if text != document:
            return outcome("altered", retries, f"result {text!r} != document {document!r}")
    elif not document.startswith(text):
        return outcome("altered", retries, f"partial {text!r} is not a prefix of {document!r}")
    if not text.startswith(record.last_committed):
        return outcome(
            "lost", retries, f"committed {record.last_committed!r}, then only {text!r} kept"
        )
    if partial.corrections:
        return outcome("failed", retries, f"{partial.corrections} correction round(s)")
    if partial.api_calls != requests:
        return outcome(
            "failed",
            retries,
            f"the trace counts {partial.api_calls} requests, the server saw {requests}",
        )
    if error is None:
        return outcome("exact", retries)
    last = partial.trace.rounds[-1] if partial.trace.rounds else None
    exhausted = (
        isinstance(error, ProviderError)
        and error.retryable
        and last is not None
        and last.retries == run.max_attempts - 1
    )
    if not exhausted:
        return outcome("failed", retries, f"gave up before the attempts ran out: {error}")
    return outcome("typed", retries, str(error))


def _run_sync(run: Run, client: Any, server: FaultServer) -> Outcome:
    record = server.register(
        run.key, run.document.text, run.prompt, fault_kinds(run.fault), run.rate
    )
    reasons: list[str] = []
    token = _reasons.set(reasons)
    try:
        how, value = _call(run, client)
    except Exception as exc:  # judged, not raised: one failure must not hide the others
        return judge(run, record, error=exc, reasons=reasons)
    finally:
        _reasons.reset(token)
    result = value.guide_result if how == "wrap" else value
    return judge(run, record, result=result, reasons=reasons)


async def _run_async(run: Run, client: Any, server: FaultServer) -> Outcome:
    record = server.register(
        run.key, run.document.text, run.prompt, fault_kinds(run.fault), run.rate
    )
    reasons: list[str] = []
    _reasons.set(reasons)  # this task's own context
    try:
        how, pending = _call(run, client)
        value = await pending
    except Exception as exc:  # judged, not raised
        return judge(run, record, error=exc, reasons=reasons)
    result = value.guide_result if how == "wrap" else value
    return judge(run, record, result=result, reasons=reasons)


async def _run_all_async(
    runs: list[Run], server: FaultServer, workers: int, timeout: float
) -> list[Outcome]:
    limit = asyncio.Semaphore(workers)
    clients = {p: _client(p, True, server.url, timeout) for p in {r.provider for r in runs}}

    async def one(run: Run) -> Outcome:
        async with limit:
            return await _run_async(run, clients[run.provider], server)

    try:
        return list(await asyncio.gather(*(one(r) for r in runs)))
    finally:
        for client in clients.values():
            await client.close()


def run_all(
    runs: Sequence[Run], server: FaultServer, *, workers: int = 8, timeout: float = TIMEOUT
) -> list[Outcome]:
    """Run every run (sync ones on `workers` threads, async ones as as many concurrent tasks),
    each judged; in the order given. The retry backoff must be zero meanwhile (`zero_backoff`).
    `timeout` is the clients' read timeout (a stall outlasts the default)."""
    sync = [r for r in runs if not r.asynchronous]
    outcomes: dict[Run, Outcome] = {}
    clients = {p: _client(p, False, server.url, timeout) for p in {r.provider for r in sync}}
    try:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            done = pool.map(lambda r: _run_sync(r, clients[r.provider], server), sync)
            outcomes.update(zip(sync, done, strict=True))
    finally:
        for client in clients.values():
            client.close()
    asynchronous = [r for r in runs if r.asynchronous]
    if asynchronous:
        done_async = asyncio.run(_run_all_async(asynchronous, server, workers, timeout))
        outcomes.update(zip(asynchronous, done_async, strict=True))
    return [outcomes[r] for r in runs]


_reasons: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar(
    "fault_run_retry_reasons", default=None
)


def zero_wait(attempt: int, exc: BaseException | None) -> float:
    """A backoff hook (`providers.retry.backoff`) that never waits, and notes why the current run
    (if any) retried."""
    reasons = _reasons.get()
    if reasons is not None:
        reasons.append(f"{type(exc).__name__}: {exc}")
    return 0.0


@contextlib.contextmanager
def zero_backoff() -> Iterator[None]:
    """The retry policy's backoff hook patched to `zero_wait` meanwhile."""
    import providers.retry

    saved = providers.retry.backoff
    providers.retry.backoff = zero_wait
    try:
        yield
    finally:
        providers.retry.backoff = saved


def runs_for(
    provider: str,
    fault: str,
    count: int,
    *,
    seed: int = 0,
    rate: float = 0.3,
    max_attempts: int = 8,
) -> list[Run]:
    return [Run(provider, fault, seed, i, rate, max_attempts) for i in range(count)]


# -- the report ------------------------------------------------------------------------------------


def table(outcomes: Sequence[Outcome]) -> str:
    """Markdown: one table per provider, one row per fault kind (and attempt budget)."""
    lines: list[str] = []
    for provider in PROVIDERS:
        mine = [o for o in outcomes if o.run.provider == provider]
        if not mine:
            continue
        lines += [
            f"### {provider}",
            "",
            "| fault kind | attempts | runs | requests | faults injected | retries | exact "
            "| typed errors, exact partial | altered/lost | other failures |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        groups: dict[tuple[str, int], list[Outcome]] = {}
        for o in mine:
            groups.setdefault((o.run.fault, o.run.max_attempts), []).append(o)
        for (fault, attempts), group in groups.items():
            status = Counter(o.status for o in group)
            lines.append(
                f"| {fault} | {attempts} | {len(group)} | {sum(o.requests for o in group)} "
                f"| {sum(sum(o.faults.values()) for o in group)} | {sum(o.retries for o in group)} "
                f"| {status['exact']} | {status['typed']} "
                f"| {status['altered'] + status['lost']} | {status['failed']} |"
            )
        total = Counter(o.status for o in mine)
        lines.append(
            f"| **all** | | {len(mine)} | {sum(o.requests for o in mine)} "
            f"| {sum(sum(o.faults.values()) for o in mine)} | {sum(o.retries for o in mine)} "
            f"| {total['exact']} | {total['typed']} | {total['altered'] + total['lost']} "
            f"| {total['failed']} |"
        )
        lines.append("")
    return "\n".join(lines)


def failures(outcomes: Sequence[Outcome], limit: int = 20) -> str:
    """The runs that did not end as they must, each with its reproducer (at most `limit`)."""
    bad = [o for o in outcomes if o.status not in ("exact", "typed")]
    lines = []
    for o in bad[:limit]:
        lines.append(
            f"- {o.status}: {o.run.key} ({o.run.caller}; faults {dict(o.faults)}): {o.detail[:400]}"
        )
        lines += [f"  retried after: {reason[:200]}" for reason in o.reasons]
        lines.append(f"  reproduce: {o.run.reproduce()}")
    if len(bad) > limit:
        lines.append(f"- ... and {len(bad) - limit} more")
    return "\n".join(lines)
