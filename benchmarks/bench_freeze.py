"""Does one costly request hold up `backtrack serve`? /health and an ordinary request while
guided requests with a large JSON schema run.

    .venv/bin/python -m benchmarks.bench_freeze [--heavy N] [--properties N]

The server (backtrack.serve.app under uvicorn, with its own settings) and its upstream
(tests/support/servers.py's MockServer) run on 127.0.0.1 in this process. A heavy request asks
for a JSON schema of `--properties` (600) optional integer properties (17 KB) and its upstream
draft is a 3.7 KB object of every other one of them, in the schema's order (valid: one API call, no
local model; a schema past GrammarLimits.max_optional_properties is answered 400 at once).
Meanwhile one client asks GET /health every 50 ms, and another sends the ordinary
guided request of benchmarks.bench_serve (a small schema, a slip mended by an edit) one after
another. Before, the same two clients run alone, for the baseline. Latencies are to the whole
reply; a request that takes 120 s counts as 120 s.
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


def _body(kind: str, response_format: dict[str, Any]) -> dict[str, Any]:
    return {
        "model": "m",
        "messages": [{"role": "user", "content": f"a {kind} request"}],
        "response_format": response_format,
    }


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


async def _measure(url: str, heavy: int, properties: int) -> dict[str, Any]:
    """/health and ordinary latencies while `heavy` heavy requests run (alone when 0)."""
    health: list[float] = []
    ordinary: list[float] = []
    heavy_seconds: list[float] = []
    heavy_format = {
        "type": "json_schema",
        "json_schema": {"name": "wide", "schema": heavy_schema(properties)},
    }
    async with httpx2.AsyncClient(limits=httpx2.Limits(max_connections=heavy + 4)) as http:
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

        async def heavy_client() -> None:
            body = _body("heavy", heavy_format)
            path = url + "/v1/chat/completions"
            heavy_seconds.append(await _timed(http, "POST", path, json=body))

        clients = [asyncio.create_task(health_client()), asyncio.create_task(ordinary_client())]
        if heavy:
            await asyncio.gather(*(heavy_client() for _ in range(heavy)))
        else:
            await asyncio.sleep(3)
        stop.set()
        await asyncio.gather(*clients)
    return {"health": health, "ordinary": ordinary, "heavy": heavy_seconds}


def _measured(url: str, heavy: int, properties: int) -> dict[str, Any]:
    return asyncio.run(_measure(url, heavy, properties))


def _row(heavy: int, figures: dict[str, Any]) -> str:
    """A table row, printed as soon as it is measured."""
    h, o = figures["health"], figures["ordinary"]
    cells = [
        heavy,
        f"{max(figures['heavy'], default=0.0):.1f}",
        len(h),
        *(f"{ms * 1000:.0f}" for ms in (_percentile(h, 0.5), _percentile(h, 0.95), max(h))),
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

    upstream = MockServer().start()
    upstream.responder = reply
    schema_bytes = len(json.dumps(heavy_schema(properties)))
    try:
        with running(ServeConfig(upstream.url)) as url:
            rows = [_row(heavy, _measured(url, heavy, properties)) for heavy in (0, *heavy_counts)]
    finally:
        upstream.stop()
    header = (
        "| heavy requests | heavy s | /health n | p50 ms | p95 ms | max ms | ordinary n | "
        "p50 ms | max ms |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    )
    return "\n".join(
        [
            "## Serving: one costly request beside /health and ordinary requests",
            "",
            f"Schema {schema_bytes:,} bytes ({properties} optional properties), "
            f"draft {len(draft):,} bytes. "
            f"Command: `python -m benchmarks.bench_freeze --properties {properties}`",
            "",
            header,
            *rows,
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--heavy", type=int, nargs="*", default=[1, 3], help="heavy at once")
    parser.add_argument("--properties", type=int, default=600)
    args = parser.parse_args()
    print(run(tuple(args.heavy), args.properties))


if __name__ == "__main__":
    main()
