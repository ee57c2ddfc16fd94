"""The vLLM server the e2e tests share (tests/support/vllm_server.py: about a minute to start on
2 cores), started on first use and stopped after the session; its tests skip, saying why, where
vLLM's environment is missing."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.support.vllm_server import Unavailable, vllm_python, vllm_server


@pytest.fixture(scope="session")
def vllm_url() -> Iterator[str]:
    """The base URL (…/v1) of a vLLM server with backtrack's logits processor, serving SmolLM2:
    $BACKTRACK_VLLM_URL where set (one already running, started with scripts/vllm_serve.py and
    tests/support/vllm_server.py's CHUNKED arguments), else one started here."""
    running = os.environ.get("BACKTRACK_VLLM_URL")
    if running:
        yield running
        return
    try:
        python = vllm_python()
    except Unavailable as exc:
        pytest.skip(str(exc))
    with vllm_server(python) as url:
        yield url
