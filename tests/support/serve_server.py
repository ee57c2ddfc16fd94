"""`backtrack serve` under uvicorn (with the server's own settings) in a background thread on
127.0.0.1 (a free port), for tests and benchmarks: `with running(config, target) as url: ...`."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import uvicorn

from backtrack.serve.app import ServeConfig, uvicorn_config

if TYPE_CHECKING:
    from local_target import Target


@contextmanager
def running(config: ServeConfig, target: Target | None = None) -> Iterator[str]:
    """The server's base URL while it runs; stopped (and its lifespan closed) on exit."""
    settings = uvicorn_config(config, target, host="127.0.0.1", port=0, log_level="warning")
    server = uvicorn.Server(settings)
    thread = threading.Thread(target=server.run, name="backtrack-serve", daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the server did not start")
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
