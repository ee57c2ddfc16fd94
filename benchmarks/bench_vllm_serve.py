"""Guided requests/s and p95 latency: two `backtrack serve` replicas correcting on one vLLM
server against one `backtrack serve` with the target in process, at 1, 8 and 64 clients, side
by side in one run on loopback.

    python -m benchmarks.bench_vllm_serve [--quick] [--seconds 60]

Every process runs on 127.0.0.1: the upstream (tests/support/servers.py's MockServer in this
process: each reply streamed in 8-character chunks, 2 ms apart), `backtrack serve` started from
the command line as its own process (tests/support/serve_process.py), vLLM with backtrack's
logits processor on SmolLM2-135M-Instruct in float32 (tests/support/vllm_server.py, its start not
timed). Each client sends guided requests one after another: a JSON schema and a draft that puts
a string where the schema takes an integer, with `repair_window: 0`, so that every request needs
a correction by the target. The clients send to the replicas in turn (standing in for the load
balancer of deploy/compose.yaml). Each level stops after its request count or `--seconds`,
whichever comes first; every reply is checked to be its own client's, and valid. Not in
`python -m benchmarks`' list: it needs vLLM's environment.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import re
import time
from contextlib import ExitStack
from typing import Any

import httpx2

from benchmarks.bench_serve import SCHEMA
from tests.support.serve_process import serve_process
from tests.support.servers import MockServer, Reply, text
from tests.support.vllm_server import vllm_python, vllm_server

LEVELS = (1, 8, 64)
# vLLM's batch: every correction of 64 clients in one step.
VLLM_ARGS = ["--max-num-seqs", "128"]


def _reply(body: Any) -> Reply:
    if "Continue" in json.dumps(body["messages"][-1]):
        return text("}", chunk_size=8, delay=0.002)  # the API finishes what the target began
    found = re.search(r"client (\d+)", json.dumps(body["messages"]))
    slip = f'{{"name": "client {found[1] if found else "?"}", "age": "three"}}'
    return text(slip, chunk_size=8, delay=0.002)


def _p95(latencies: list[float]) -> float:
    ordered = sorted(latencies)
    return ordered[min(int(0.95 * len(ordered)), len(ordered) - 1)]


async def _level(urls: list[str], clients: int, requests: int, seconds: float) -> dict[str, float]:
    """Guided requests from `clients` clients, to `urls` in turn, until `requests` are sent or
    `seconds` pass: requests/s over the wall time, p95 latency in seconds, requests done."""
    latencies: list[float] = []
    sent = itertools.count()
    turn = itertools.cycle(urls)
    deadline = time.perf_counter() + seconds

    async def client(n: int, http: httpx2.AsyncClient) -> None:
        body = {
            "model": "m",
            "messages": [{"role": "user", "content": f"I am client {n}. Describe me as JSON."}],
            "guided_json": SCHEMA,
            "backtrack": {"repair_window": 0},
        }
        while next(sent) < requests and time.perf_counter() < deadline:
            started = time.perf_counter()
            reply = await http.post(f"{next(turn)}/v1/chat/completions", json=body)
            latencies.append(time.perf_counter() - started)
            answer = reply.json()
            content = answer["choices"][0]["message"]["content"] if "choices" in answer else ""
            if (
                not content.startswith(f'{{"name": "client {n}", "age": ')
                or not answer["backtrack"]["valid"]
            ):
                raise RuntimeError(f"client {n} got a wrong reply: {answer!r}")

    limits = httpx2.Limits(max_connections=clients * 2, max_keepalive_connections=clients * 2)
    async with httpx2.AsyncClient(timeout=600, limits=limits) as http:
        started = time.perf_counter()
        await asyncio.gather(*(client(n, http) for n in range(clients)))
        wall = time.perf_counter() - started
    return {"done": len(latencies), "rps": len(latencies) / wall, "p95": _p95(latencies)}


def _measure(name: str, urls: list[str], quick: bool, seconds: float) -> list[str]:
    rows = []
    for clients in LEVELS:
        requests = clients * (1 if quick else 2) + (4 if clients == 1 else 0)
        figures = asyncio.run(_level(urls, clients, requests, seconds))
        row = (
            f"| {name} | {clients} | {figures['done']:.0f} | {figures['rps']:.2f} |"
            f" {figures['p95']:.2f} |"
        )
        print(row, flush=True)
        rows.append(row)
    return rows


def run(quick: bool, seconds: float) -> str:
    upstream = MockServer().start()
    upstream.responder = _reply
    rows = []
    try:
        with serve_process(upstream.url) as url:
            rows += _measure("1 replica, target in process", [url], quick, seconds)
        with ExitStack() as stack:
            vllm = stack.enter_context(vllm_server(vllm_python(), VLLM_ARGS))
            replicas = [
                stack.enter_context(serve_process(upstream.url, "--target", f"vllm:{vllm}"))
                for _ in range(2)
            ]
            rows += _measure("2 replicas + vLLM", replicas, quick, seconds)
    finally:
        upstream.stop()
    header = "| setup | clients | requests | requests/s | p95 s |\n|---|---:|---:|---:|---:|"
    return "\n".join([header, *rows])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="1 request a client, not 2")
    parser.add_argument("--seconds", type=float, default=60.0, help="at most, each level")
    args = parser.parse_args()
    print(run(args.quick, args.seconds))


if __name__ == "__main__":
    main()
