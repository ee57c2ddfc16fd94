"""Throughput and latency of `backtrack serve` at 1, 8 and 64 concurrent clients.

    .venv/bin/python -m benchmarks.bench_serve [--quick]

The server (backtrack.serve.app under uvicorn) and its upstream (tests/support/servers.py's
MockServer, simulating an OpenAI-compatible API: each reply streamed in 8-character chunks, 2 ms
apart) run
on 127.0.0.1 in this process, and the clients are httpx2 async clients on one event loop beside
them, so all three share the machine's cores. Each client sends POST /v1/chat/completions one
request after another: `pass-through` without a grammar, `guided` with an OpenAI
`response_format` JSON schema whose every draft has a slip the server mends by an edit (one API
call, no local model: corrections would take the target's lock one at a time). Replies are keyed
by the client, and each is checked. Latency is the time to the whole reply; requests/s is requests
over the level's wall time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import time
from typing import Any

import httpx2

from backtrack.serve.app import ServeConfig
from tests.support.serve_server import running
from tests.support.servers import MockServer, Reply, text

LEVELS = (1, 8, 64)
SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
    "additionalProperties": False,
}
FORMAT = {"type": "json_schema", "json_schema": {"name": "cat", "schema": SCHEMA}}


def _reply(body: Any) -> Reply:
    found = re.search(r"client (\d+)", json.dumps(body.get("messages")))
    n = int(found[1]) if found else -1
    slip = f'{{"name": "client {n}, a cat who lives by the river", "age": {n},}}'
    return text(slip, chunk_size=8, delay=0.002)


async def _level(url: str, clients: int, requests: int, guided: bool) -> dict[str, float]:
    latencies: list[float] = []
    per_client = max(requests // clients, 1)

    async def client(n: int, http: httpx2.AsyncClient) -> None:
        body: dict[str, Any] = {
            "model": "m",
            "messages": [{"role": "user", "content": f"I am client {n}."}],
        }
        if guided:
            body["response_format"] = FORMAT
        for _ in range(per_client):
            started = time.perf_counter()
            reply = await http.post(f"{url}/v1/chat/completions", json=body)
            latencies.append(time.perf_counter() - started)
            answer = reply.json()
            content = answer["choices"][0]["message"]["content"] if "choices" in answer else ""
            if f"client {n}," not in content or (guided and content.endswith(",}")):
                raise RuntimeError(f"client {n} got a wrong reply: {answer!r}")

    limits = httpx2.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx2.AsyncClient(timeout=120, limits=limits) as http:
        started = time.perf_counter()
        await asyncio.gather(*(client(n, http) for n in range(clients)))
        wall = time.perf_counter() - started
    latencies.sort()
    return {
        "requests": len(latencies),
        "rps": len(latencies) / wall,
        "p50": statistics.median(latencies) * 1000,
        "p95": latencies[min(int(0.95 * len(latencies)), len(latencies) - 1)] * 1000,
    }


def run(quick: bool = False) -> str:
    upstream = MockServer().start()
    upstream.responder = _reply
    rows = []
    try:
        with running(ServeConfig(upstream.url)) as url:
            for guided in (False, True):
                for clients in LEVELS:
                    requests = clients * (4 if quick else 16)
                    figures = asyncio.run(_level(url, clients, requests, guided))
                    mode = "guided" if guided else "pass-through"
                    row = (
                        f"| {mode} | {clients} | {figures['requests']:.0f} | "
                        f"{figures['rps']:.1f} | {figures['p50']:.0f} | {figures['p95']:.0f} |"
                    )
                    print(row, flush=True)
                    rows.append(row)
    finally:
        upstream.stop()
    header = (
        "| request | clients | requests | requests/s | p50 ms | p95 ms |\n"
        "|---|---:|---:|---:|---:|---:|"
    )
    return "\n".join(
        [
            "## Serving: `backtrack serve` under concurrent clients",
            "",
            __doc__.split("\n\n", 2)[2].strip() if __doc__ else "",
            "",
            f"Command: `python -m benchmarks.bench_serve{' --quick' if quick else ''}`",
            "",
            header,
            *rows,
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="4 requests a client, not 16")
    print(run(parser.parse_args().quick))


if __name__ == "__main__":
    main()
