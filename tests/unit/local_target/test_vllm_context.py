"""VllmTarget counts what its server's context has left (issue 24): vLLM lists each model with
its `max_model_len`, which the target reads at its start, and a guided run on it is held to that
context as on a LocalTarget (backtrack.run.context). Against the OpenAI-protocol test server on
127.0.0.1 (its `GET /v1/models`), with SmolLM2's real tokenizer."""

from __future__ import annotations

import pytest

from local_target.loading import converted_smollm2
from local_target.prompt import prompt_ids
from local_target.vllm_target import VllmTarget
from tests.support.servers import MockServer

PROMPT = [{"role": "user", "content": "A JSON list."}]
TEXT = '["w0", "w1", '


def test_the_context_is_the_max_model_len_the_server_lists(openai_server: MockServer) -> None:
    openai_server.models = [{"id": "smol", "object": "model", "max_model_len": 2048}]
    target = VllmTarget(f"{openai_server.url}/v1", converted_smollm2())
    assert (target.model, target.context_length) == ("smol", 2048)
    prompt = len(prompt_ids(target.tokenizer, PROMPT, target.vocab.eos))
    assert target.tokens_left(PROMPT, TEXT) == 2048 - prompt - len(target.vocab.encode(TEXT))


@pytest.mark.parametrize(
    ("listed", "model"),
    [
        pytest.param([{"id": "smol", "object": "model"}], None, id="no max_model_len"),
        pytest.param([], "smol", id="named, not listed"),
    ],
)
def test_a_context_not_listed_is_not_known(
    openai_server: MockServer, listed: list[dict[str, object]], model: str | None
) -> None:
    openai_server.models = listed
    target = VllmTarget(f"{openai_server.url}/v1", converted_smollm2(), model=model)
    assert (target.model, target.tokens_left(PROMPT, TEXT)) == ("smol", None)
