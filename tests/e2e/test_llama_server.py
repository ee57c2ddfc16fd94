"""Against a server nobody here wrote: llama.cpp's OpenAI-compatible server with
SmolLM2-135M-Instruct (tests/support/llama_server.py), through the real openai SDK, the local
SmolLM2 as target.

llama-cpp-python compiles llama.cpp when installed (about 9 CPU-minutes here), so it is not in
the locks: these tests skip, saying so, unless `$BACKTRACK_LLAMA_PYTHON` names a Python that has
it (or it is installed beside backtrack). What they pin down is what a real weak model does that
the project's own protocol servers do not: it answers an odd continuation with nothing, again
and again; it restarts its answer when asked to go on; its usage is absent from the stream.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.llama_server import llama_python, running_llama

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

PYTHON = llama_python()


@pytest.fixture(scope="module")
def llama_url() -> Iterator[str]:
    if PYTHON is None:
        pytest.skip(
            "llama.cpp's server is not installed: set BACKTRACK_LLAMA_PYTHON to a Python with "
            "llama-cpp-python[server] (see tests/support/llama_server.py)"
        )
    with running_llama(PYTHON) as url:
        yield url


def _person(*keys: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {key: {"type": "string"} for key in keys},
        "required": list(keys),
        "additionalProperties": False,
    }


@pytest.mark.parametrize(
    ("what", "keys"),
    [
        ("a person", ("name", "city", "occupation")),
        ("a flight", ("flight_number", "origin", "destination", "departure_time")),
        ("a song", ("title", "artist", "genre")),
    ],
)
def test_a_real_weak_model_gets_valid_output_in_few_calls(
    llama_url: str, smollm2: Any, what: str, keys: tuple[str, ...]
) -> None:
    """Each run ends valid, without a ProviderError for a model that stopped early, in at most
    two API calls, and with no schema key written as a value (`"city": "occupation"`: what an
    API asked again after a correction wrote, restarting its answer)."""
    from openai import OpenAI

    from backtrack import guide
    from providers import OpenAIChatDrafter

    client = OpenAI(base_url=llama_url, api_key="none", max_retries=0)
    drafter = OpenAIChatDrafter(client, "smollm2", temperature=0)
    prompt = f"Give a JSON object describing {what}, with the keys {', '.join(keys)}."
    result = guide(drafter, _person(*keys), prompt=prompt, target=smollm2, max_draft_tokens=256)
    assert result.valid, result.text
    assert result.api_calls <= 2
    value = json.loads(result.text)
    assert not [k for k, v in value.items() if v in keys], result.text
    assert not result.usage.known  # the server streams no usage: not read as 0/0
