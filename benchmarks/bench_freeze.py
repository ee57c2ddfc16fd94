"""Does one costly request hold up `backtrack serve`? /health and an ordinary request while
guided requests with a large JSON schema run.

    .venv/bin/python -m benchmarks.bench_freeze [--heavy N] [--properties N] [--mix]

The server (backtrack.serve.app under uvicorn, with its own settings) and its upstream
(tests/support/servers.py's MockServer) run on 127.0.0.1 in this process. A heavy request asks
for a JSON schema of `--properties` (600) optional integer properties (17 KB) and its upstream
draft is a 3.7 KB object of every other one of them, in the schema's order (valid: one API call, no
local model; a schema past GrammarLimits.max_optional_properties is answered 400 at once).
Meanwhile one client asks GET /health every 50 ms, and another sends the ordinary
guided request of benchmarks.bench_serve (a small schema, a slip mended by an edit) one after
another. Before, the same two clients run alone, for the baseline. Latencies are to the whole
reply; a request that takes 120 s counts as 120 s.

`--mix` runs the worst request of each kind at once instead: the wide schema at the limit of
optional properties (256) with its draft, a schema of eight objects of 128 patternProperties (the
compile's worst within the limits: about 2 s of CPU, twice: in a worker process, then in the
server), and a `max_tokens` of 10**9 against an upstream that never stops (held to the server's
512 tokens a draft, 32 drafts; the text left incomplete, since the local model's context could not
hold it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from typing import Any

import httpx2

from backtrack.serve.app import ServeConfig
from benchmarks.bench_serve import FORMAT as ORDINARY_FORMAT
from tests.support.serve_server import running
from tests.support.servers import MockServer, Reply, text

ORDINARY_DRAFT = '{"name": "Tom, a cat who lives by the river", "age": 7,}'
HEALTH_EVERY = 0.05
TIMEOUT = 120.0


def heavy_schema(properties: int) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {f"p{i}": {"type": "integer"} for i in range(properties)},
    }


def heavy_draft(properties: int) -> str:
    pairs = [f'"p{i}": {i}' for i in range(0, properties, 2)]
    return "{" + ", ".join(pairs) + "}"


def _body(kind: str, response_format: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {
        "model": "m",
        "messages": [{"role": "user", "content": f"a {kind} request"}],
        "response_format": response_format,
        **more,
    }


def _schema_format(schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": "costly", "schema": schema}}


def patterned_schema(objects: int = 8, patterns: int = 128) -> dict[str, Any]:
    def patterned(j: int) -> dict[str, Any]:
        keys = {f"^p{j}_{i}_[a-z0-9]{{2,8}}$": {"type": "integer"} for i in range(patterns)}
        return {"type": "object", "patternProperties": keys}

    return {"type": "object", "properties": {f"o{j}": patterned(j) for j in range(objects)}}


# The worst request of each kind (--mix): its body, by kind.
MIX = {
    "wide": lambda: _body("wide", _schema_format(heavy_schema(256))),
    "patterns": lambda: _body("patterns", _schema_format(patterned_schema())),
    # The target never runs (complete_on_budget off): 31,202 characters of drafts pass its context.
    "endless": lambda: _body(
        "endless",
        _schema_format({"type": "string"}),
        max_tokens=10**9,
        backtrack={"complete_on_budget": False},
    ),
}


def mix_reply(body: Any) -> Reply:
    """The upstream's reply to a request of the mix (or an ordinary one)."""
    said = json.dumps(body.get("messages"))
    if "endless" in said:  # a JSON string that never ends, continued as such
        going_on = any(m.get("role") == "assistant" for m in body["messages"])
        return text("" if going_on else '"', endless="a", chunk_size=64)
    if "wide" in said:
        return text(heavy_draft(256), chunk_size=64)
    return text("{}" if "patterns" in said else ORDINARY_DRAFT, chunk_size=64)


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(int(q * len(ordered)), len(ordered) - 1)] if ordered else float("nan")


async def _timed(http: httpx2.AsyncClient, method: str, url: str, **kwargs: Any) -> float:
    """Seconds to the whole reply (TIMEOUT when it times out); a reply other than 200 or a 400
    for a grammar too costly fails the benchmark."""
    started = time.perf_counter()
    try:
        reply = await http.request(method, url, timeout=TIMEOUT, **kwargs)
        refused = reply.status_code == 400 and "optional properties" in reply.text
        if reply.status_code != 200 and not refused:
            raise RuntimeError(f"{method} {url}: {reply.status_code} {reply.text[:300]}")
    except httpx2.TimeoutException:
        return TIMEOUT
    return time.perf_counter() - started


async def _measure(url: str, heavy: list[dict[str, Any]]) -> dict[str, Any]:
    """/health and ordinary latencies while the `heavy` bodies are sent at once (alone when
    none)."""
    health: list[float] = []
    ordinary: list[float] = []
    heavy_seconds: list[float] = []
    async with httpx2.AsyncClient(limits=httpx2.Limits(max_connections=len(heavy) + 4)) as http:
        stop = asyncio.Event()

        async def health_client() -> None:
            while not stop.is_set():
                health.append(await _timed(http, "GET", url + "/health"))
                await asyncio.sleep(HEALTH_EVERY)

        async def ordinary_client() -> None:
            body = _body("ordinary", ORDINARY_FORMAT)
            while not stop.is_set():
                path = url + "/v1/chat/completions"
                ordinary.append(await _timed(http, "POST", path, json=body))

        async def heavy_client(body: dict[str, Any]) -> None:
            path = url + "/v1/chat/completions"
            heavy_seconds.append(await _timed(http, "POST", path, json=body))

        clients = [asyncio.create_task(health_client()), asyncio.create_task(ordinary_client())]
        if heavy:
            await asyncio.gather(*(heavy_client(body) for body in heavy))
        else:
            await asyncio.sleep(3)
        stop.set()
        await asyncio.gather(*clients)
    return {"health": health, "ordinary": ordinary, "heavy": heavy_seconds}


def _measured(url: str, heavy: list[dict[str, Any]]) -> dict[str, Any]:
    return asyncio.run(_measure(url, heavy))


def _row(heavy: int | str, figures: dict[str, Any]) -> str:
    """A table row, printed as soon as it is measured."""
    h, o = figures["health"], figures["ordinary"]
    cells = [
        heavy,
        f"{max(figures['heavy'], default=0.0):.1f}",
        len(h),
        *(
            f"{ms * 1000:.0f}"
            for ms in (_percentile(h, 0.5), _percentile(h, 0.95), _percentile(h, 0.99), max(h))
        ),
        len(o),
        *(f"{ms * 1000:.0f}" for ms in (_percentile(o, 0.5), max(o))),
    ]
    row = "| " + " | ".join(map(str, cells)) + " |"
    print(row, flush=True)
    return row


def run(heavy_counts: tuple[int, ...], properties: int) -> str:
    draft = heavy_draft(properties)

    def reply(body: Any) -> Reply:
        heavy = "heavy" in json.dumps(body.get("messages"))
        return text(draft if heavy else ORDINARY_DRAFT, chunk_size=64)

    heavy_body = _body("heavy", _schema_format(heavy_schema(properties)))
    upstream = MockServer().start()
    upstream.responder = reply
    schema_bytes = len(json.dumps(heavy_schema(properties)))
    try:
        with running(ServeConfig(upstream.url)) as url:
            rows = [_row(n, _measured(url, [heavy_body] * n)) for n in (0, *heavy_counts)]
    finally:
        upstream.stop()
    return "\n".join(
        [
            "## Serving: one costly request beside /health and ordinary requests",
            "",
            f"Schema {schema_bytes:,} bytes ({properties} optional properties), "
            f"draft {len(draft):,} bytes. "
            f"Command: `python -m benchmarks.bench_freeze --properties {properties}`",
            "",
            HEADER,
            *rows,
        ]
    )


HEADER = (
    "| heavy requests | heavy s | /health n | p50 ms | p95 ms | p99 ms | max ms | ordinary n | "
    "p50 ms | max ms |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
)


def run_mix() -> str:
    """/health and ordinary requests alone, then beside the worst request of each kind at once."""
    upstream = MockServer().start()
    upstream.responder = mix_reply
    try:
        with running(ServeConfig(upstream.url)) as url:
            rows = [_row(0, _measured(url, []))]
            rows.append(_row(" + ".join(MIX), _measured(url, [body() for body in MIX.values()])))
    finally:
        upstream.stop()
    return "\n".join(
        [
            "## Serving: the worst request of each kind at once beside /health",
            "",
            "Command: `python -m benchmarks.bench_freeze --mix` (the kinds: its docstring)",
            "",
            HEADER,
            *rows,
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--heavy", type=int, nargs="*", default=[1, 3], help="heavy at once")
    parser.add_argument("--properties", type=int, default=600)
    parser.add_argument("--mix", action="store_true", help="the worst of each kind at once")
    args = parser.parse_args()
    print(run_mix() if args.mix else run(tuple(args.heavy), args.properties))


if __name__ == "__main__":
    main()
