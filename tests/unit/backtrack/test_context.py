"""A run holds its drafts to what the target's context can read (backtrack.run.context; issue 24).

An API that never stops, with budgets that let the drafts pass the context: before, every draft
was committed and the final completion raised TargetError (the prompt + committed text "... more
than the model's context"), or `backtrack serve` answered 500 target_error. Now drafting stops
where the prompt, the text, the completion's budget and a correction's would pass the context, the
target completes, and the result says why (`stop_reason == "context_full"`); where not even the
completion fits, the run ends with what was committed, not an exception.

The daily tests run the loop with a scripted target that counts tokens with SmolLM2's real
tokenizer; the `model` tests run the real SmolLM2 target with a smaller context (the attribute its
checks read, so the real path is exercised: counting, `check_length`, the KV cache), in the library
and through the openai SDK against `backtrack serve` at the server's default budgets.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from backtrack import Grammar, guide
from backtrack.run.context import SLACK_TOKENS, UNLOADED_FREE_BYTES
from backtrack.run.options import GuideOptions
from backtrack.serve.app import ServeConfig, ServeLimits
from local_target import Correction, LocalTarget
from local_target.prompt import prompt_ids
from tests.support.local_targets import real_tokenizer
from tests.support.scripted import ScriptedTarget
from tests.support.serve_server import running
from tests.support.servers import MockServer, text

JSON = Grammar.load("json")
PROMPT = "A JSON list of words."
SMALL = {"max_draft_tokens": 64, "completion_tokens": 16, "correction_tokens": 8}


def endless(prompt: str, prefix: str) -> Iterator[str]:
    """A drafter that never stops: a JSON list of words, continued for ever."""
    if not prefix:
        yield "["
    for i in itertools.count():
        yield f'"w{i}", '


def closing(text: str) -> str:
    """What closes `endless`'s list after `text`, wherever it was cut."""
    return next(end for end in ("]", '"]', '"w"]', ' "w"]', "[]") if JSON.matches(text + end))


class Closing(ScriptedTarget):
    """A ScriptedTarget that closes the list (no context known: it has no `tokens_left`)."""

    def correct(self, text: str, grammar: Grammar, **options: Any) -> Correction:
        self.texts = [closing(text)]
        return super().correct(text, grammar, **options)


class CountingTarget(Closing):
    """A target whose context holds `context` tokens of SmolLM2's tokenizer: it counts as
    LocalTarget does, and fails the test where a correction would not fit."""

    def __init__(self, context: int) -> None:
        super().__init__()
        self.context = context
        self.tokenizer = real_tokenizer("smollm2")
        self.counted: list[int] = []  # the length of each text counted

    def tokens(self, prompt: Any, text: str) -> int:
        ids = prompt_ids(self.tokenizer, prompt, self.tokenizer.eos_token_id)
        return len(ids) + len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def tokens_left(self, prompt: Any, text: str) -> int | None:
        self.counted.append(len(text))
        return self.context - self.tokens(prompt, text)

    def correct(self, text: str, grammar: Grammar, **options: Any) -> Correction:
        used = self.tokens(PROMPT, text) + options["max_tokens"]
        assert used <= self.context, f"a correction of {used} tokens in a context of {self.context}"
        return super().correct(text, grammar, **options)


def test_an_endless_api_stops_drafting_where_the_context_would_be_passed() -> None:
    target = CountingTarget(600)
    result = guide(endless, JSON, prompt=PROMPT, target=target, **SMALL)
    assert (result.valid, result.stop_reason) == (True, "context_full")
    assert [r.kind for r in result.trace.rounds] == ["draft", "completion"]
    (last,) = target.calls
    assert last == (result.text[: -len(closing(last[0]))], "complete")
    # The text and the completion's budget fit, and little of the context is left unused.
    left = 600 - target.tokens(PROMPT, last[0])
    assert SMALL["completion_tokens"] + SMALL["correction_tokens"] + SLACK_TOKENS <= left < 350
    # Counted a few times, not per chunk (each draft chunk is a word).
    assert len(target.counted) <= 5 < len(result.text) // 8


def test_a_completion_is_held_to_the_room_left() -> None:
    """A prompt that leaves less than the completion's budget: the target writes what fits."""
    target = CountingTarget(64)
    options = {**SMALL, "completion_tokens": 512, "max_rounds": 1}
    result = guide(lambda prompt, prefix: '["w0", ', JSON, prompt=PROMPT, target=target, **options)
    assert (result.valid, result.stop_reason) == (True, "target_completed")
    assert [r.kind for r in result.trace.rounds] == ["draft", "completion"]


def test_no_room_at_all_ends_the_run_with_what_was_committed() -> None:
    target = CountingTarget(20)  # less than the prompt: no correction is asked for
    result = guide(endless, JSON, prompt=PROMPT, target=target, **SMALL, max_rounds=2)
    assert (result.valid, result.stop_reason) == (False, "context_full")
    assert result.text.startswith('["w0", "w1", ') and not target.calls


def test_a_prompt_that_leaves_the_target_no_room_holds_no_draft_back() -> None:
    """Only the API can write the answer: its complete reply is the result, as before."""
    target = CountingTarget(40)
    doc = '["w0", "w1"]'
    result = guide(lambda prompt, prefix: doc, JSON, prompt=PROMPT, target=target, **SMALL)
    assert (result.text, result.valid, result.stop_reason) == (doc, True, "complete")
    assert not target.calls


def test_without_completion_the_run_ends_where_the_drafts_fill_the_context() -> None:
    target = CountingTarget(600)
    result = guide(endless, JSON, prompt=PROMPT, target=target, **SMALL, complete_on_budget=False)
    assert (result.valid, result.stop_reason) == (False, "context_full")
    assert result.text.startswith('["w0", "w1", ') and not target.calls


def test_a_target_with_no_known_context_bounds_nothing() -> None:
    """ScriptedTarget has no `tokens_left`: the drafts run to their own budgets, as before."""
    options = {**SMALL, "max_rounds": 2}
    result = guide(endless, JSON, prompt=PROMPT, target=Closing(), **options)
    assert (result.valid, result.stop_reason) == (True, "target_completed")
    assert len(result.text) > 64 * 32  # the first draft read its whole character budget


def test_a_run_whose_target_is_not_loaded_yet_counts_only_past_the_free_bytes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Counting would load the default target: the first UNLOADED_FREE_BYTES are read without."""
    import backtrack.run.driver as driver

    target = CountingTarget(8192)
    monkeypatch.setattr(driver, "_default_target", None)
    monkeypatch.setattr(driver, "default_target", lambda: target)
    options = {**SMALL, "max_draft_tokens": 512}
    result = guide(endless, JSON, prompt=PROMPT, **options)
    assert (result.valid, result.stop_reason, result.api_calls) == (True, "context_full", 1)
    assert target.counted[0] == 0  # the prompt alone: may the target finish a text at all?
    assert target.counted[1] >= UNLOADED_FREE_BYTES - len('"w1000", ')


# -- the real SmolLM2 target -----------------------------------------------------------------------


def smaller_context(target: LocalTarget, monkeypatch: pytest.MonkeyPatch, tokens: int) -> None:
    """SmolLM2 with a context of `tokens` (its own holds 8192): every check reads this."""
    monkeypatch.setattr(target, "context_length", tokens)


@pytest.mark.model
def test_guide_with_an_endless_api_returns_within_smollm2s_context(
    smollm2: LocalTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    smaller_context(smollm2, monkeypatch, 512)
    result = guide(endless, JSON, prompt=PROMPT, target=smollm2, **SMALL)
    assert (result.valid, result.stop_reason, result.api_calls) == (True, "context_full", 1)
    assert result.text.startswith('["w0", "w1", "w2", ')
    used = len(smollm2.prompt_ids(PROMPT)) + len(smollm2.vocab.encode(result.text))
    assert used <= 512


@pytest.mark.model
def test_serve_with_an_endless_upstream_answers_200(
    smollm2: LocalTarget, monkeypatch: pytest.MonkeyPatch, openai_server: MockServer
) -> None:
    """At the server's default budgets (GuideOptions(): the drafts may read 0.5 MB), on a context
    of 1024 tokens: the drafts fill what the completion's 512 tokens and a correction leave."""
    smaller_context(smollm2, monkeypatch, 1024)
    openai_server.responder = lambda body: text("[", endless='"w", ')
    config = ServeConfig(openai_server.url, "openai", None, ServeLimits(timeout=300.0))
    assert config.options == GuideOptions()
    messages: Any = [{"role": "user", "content": PROMPT}]
    with running(config, smollm2) as url:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="sk-client", max_retries=0)
        with client:
            reply = client.chat.completions.create(
                model="m", messages=messages, extra_body={"guided_json": {"type": "array"}}
            )
    summary = reply.model_extra["backtrack"]  # type: ignore[index]
    assert (summary["valid"], summary["stop_reason"], summary["api_calls"]) == (
        True,
        "context_full",
        1,
    )
    assert (reply.choices[0].message.content or "").startswith('["w", "w", "w", ')
