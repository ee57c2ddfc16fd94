"""A reasoning model's `<think> ... </think>` block before its answer: skipped whole, however
long and however the reply is chunked, and shown in the trace as a drop with its reason."""

from __future__ import annotations

import pytest

import providers
from backtrack import guide
from backtrack.run.reasoning import ReasoningBlock
from tests.support.scripted import ScriptedAPI, ScriptedTarget

ANSWER = '{"a": 1, "b": [true, null]}'
THINKING = (
    "<think>\nThe user wants JSON. " + "Let me weigh {each} [option]. " * 140 + "\n</think>\n\n"
)


def fed(reply: str, chunk: int) -> tuple[str, ReasoningBlock]:
    block = ReasoningBlock()
    out = "".join(block.skip(reply[i : i + chunk]) for i in range(0, len(reply), chunk))
    return out + block.finish(), block


@pytest.mark.parametrize("chunk", [1, 3, 7, 64, 10**6])
@pytest.mark.parametrize(
    ("reply", "skipped"),
    [
        pytest.param(THINKING + ANSWER, THINKING, id="think"),
        pytest.param(
            "  <thinking>a</thinking> " + ANSWER, "  <thinking>a</thinking> ", id="thinking"
        ),
        pytest.param("<reasoning></reasoning>" + ANSWER, "<reasoning></reasoning>", id="empty"),
        pytest.param(ANSWER, "", id="none"),
        pytest.param("<p>hi</p>", "", id="another-tag"),
        pytest.param("<think>never closed " + ANSWER, "", id="unclosed"),
        pytest.param("<thi", "", id="a-start-only"),
    ],
)
def test_the_block_is_skipped_whole_however_the_reply_is_chunked(reply, skipped, chunk):
    out, block = fed(reply, chunk)
    assert (block.block, out) == (skipped, reply[len(skipped) :])


@pytest.mark.parametrize("chunk", [0, 5, 64])
def test_a_long_block_before_the_answer_costs_the_answer_nothing(chunk: int):
    api = ScriptedAPI(ANSWER, drafts=[THINKING + ANSWER], chunk=chunk)
    fn = api.stream if chunk else api
    result = guide(providers.FunctionDrafter(fn), "json", prompt="x", target=ScriptedTarget())
    assert len(THINKING) > 4000  # past the 2,000 characters a preamble is looked for in
    assert (result.text, result.stop_reason, result.api_calls) == (ANSWER, "complete", 1)
    assert [(d.reason, d.text) for d in result.drops] == [("reasoning", THINKING)]
    assert (result.corrections, result.lost_chars) == (0, 0)
