"""VllmTarget counts what its server's context has left (issue 24): vLLM lists each model with
its `max_model_len`, which the target reads at its start, and a guided run on it is held to that
context as on a LocalTarget (backtrack.run.context). Against the OpenAI-protocol test server on
127.0.0.1 (its `GET /v1/models`), with SmolLM2's real tokenizer."""

from __future__ import annotations

import openai
import pytest

from local_target.errors import TargetError
from local_target.loading import converted_smollm2
from local_target.prompt import prompt_ids
from local_target.vllm_target import VllmTarget
from tests.support.servers import MockServer

PROMPT = [{"role": "user", "content": "A JSON list."}]
TEXT = '["w0", "w1", '


def test_the_context_is_the_max_model_len_the_server_lists(openai_server: MockServer) -> None:
    openai_server.models = [{"id": "smol", "object": "model", "max_model_len": 2048}]
    with VllmTarget(f"{openai_server.url}/v1", converted_smollm2()) as target:
        assert (target.model, target.context_length) == ("smol", 2048)
        prompt = len(prompt_ids(target.tokenizer, PROMPT, target.vocab.eos))
        assert target.tokens_left(PROMPT, TEXT) == 2048 - prompt - len(target.vocab.encode(TEXT))
    assert target.client.is_closed()


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
    with VllmTarget(f"{openai_server.url}/v1", converted_smollm2(), model=model) as target:
        assert (target.model, target.tokens_left(PROMPT, TEXT)) == ("smol", None)


def test_a_server_that_lists_no_model_is_a_target_error_and_leaves_no_connection(
    openai_server: MockServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A target that cannot start closes its client: an open connection per failed start would
    be a leak (pytest reports an unclosed socket as an error)."""
    clients = []
    original = openai.OpenAI.__init__

    def recorded(self: openai.OpenAI, *args: object, **kwargs: object) -> None:
        original(self, *args, **kwargs)
        clients.append(self)

    monkeypatch.setattr(openai.OpenAI, "__init__", recorded)
    openai_server.models = []
    with pytest.raises(TargetError, match="no model listed by the vLLM server"):
        VllmTarget(f"{openai_server.url}/v1", converted_smollm2())
    assert len(clients) == 1 and clients[0].is_closed()
