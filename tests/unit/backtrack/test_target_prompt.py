"""What the local target reads before the text (backtrack.run.target_prompt): where the grammar
refused the API's first reply whole (an answer in prose), the target reads that reply too, so
that what it writes carries the API's values instead of invented ones."""

from __future__ import annotations

from typing import Any

import pytest

from backtrack import guide
from backtrack.run.output import Output
from backtrack.run.target_prompt import ASK_AGAIN, MOST_CHARS, TargetPrompt, with_refused_answer
from backtrack.trace.record import Round
from grammars import Grammar
from local_target import LocalTarget
from local_target.prompt import prompt_ids
from providers import FunctionDrafter
from tests.support.local_targets import real_tokenizer
from tests.support.scripted import ScriptedAPI, ScriptedTarget

S = {"type": "string"}
COUNTRY = {
    "type": "object",
    "properties": {"name": S, "capital": S},
    "required": ["name", "capital"],
    "additionalProperties": False,
}
PROSE = "Country: Ethiopia, Capital: Addis Ababa."
LATER = "Sorry, I cannot help with that request."


class Reading(ScriptedTarget):
    """A ScriptedTarget that records the prompt of each session started on it, and counts
    tokens with SmolLM2's real tokenizer in a context of `context` tokens."""

    def __init__(self, *texts: str, context: int = 8192) -> None:
        super().__init__(*texts)
        self.prompts: list[Any] = []
        self.context = context
        self.tokenizer = real_tokenizer("smollm2")

    def session(self, prompt: Any) -> ScriptedTarget:
        self.prompts.append(prompt)
        return self

    def tokens_left(self, prompt: Any, text: str) -> int | None:
        ids = prompt_ids(self.tokenizer, prompt, self.tokenizer.eos_token_id)
        return self.context - len(ids) - len(self.tokenizer(text)["input_ids"])


def test_an_answer_in_prose_is_read_by_the_target() -> None:
    api = ScriptedAPI("", drafts=[PROSE, LATER])
    target = Reading("{", '"name": "Ethiopia", "capital": "Addis Ababa"}')
    result = guide(FunctionDrafter(api), COUNTRY, prompt="A country.", target=target)
    assert result.valid and result.api_calls == 2
    assert target.prompts == [
        [
            {"role": "user", "content": "A country."},
            {"role": "assistant", "content": PROSE},
            {"role": "user", "content": ASK_AGAIN},
        ]
    ]
    assert api.prefixes == ["", "{"]  # the API is asked as before


def test_chat_messages_keep_their_system_message() -> None:
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "A country."},
    ]
    assert with_refused_answer(messages, "x" * (MOST_CHARS + 50)) == [
        *messages,
        {"role": "assistant", "content": "x" * MOST_CHARS},
        {"role": "user", "content": ASK_AGAIN},
    ]


def test_a_first_reply_partly_kept_leaves_the_prompt_alone() -> None:
    """Where the API's answer was committed, the committed text carries its values."""
    answer = '{"name": "Ethiopia", "capital": "Addis Ababa"}'
    api = ScriptedAPI(answer, drafts=['{"name": "Ethiopia", "capital": I do not know.'])
    target = Reading('"Addis Ababa"')
    result = guide(FunctionDrafter(api), COUNTRY, prompt="A country.", target=target)
    assert result.text == answer
    assert target.prompts == ["A country."]


def test_a_target_without_room_for_the_reply_reads_the_prompt_alone() -> None:
    """A long refused reply in a small context: the reply would leave the text too little room,
    so the target reads the prompt alone."""
    prose = " ".join(f"word{i}" for i in range(200))  # what is read of it: 234 tokens
    api = ScriptedAPI("", drafts=[prose, LATER])
    target = Reading("{", '"name": "a", "capital": "b"}', context=400)
    result = guide(
        FunctionDrafter(api),
        COUNTRY,
        prompt="A country.",
        target=target,
        completion_tokens=32,
        correction_tokens=8,
    )
    assert result.valid
    assert target.prompts == ["A country."]


@pytest.mark.model
def test_smollm2_completes_with_the_values_of_an_answer_in_prose(smollm2: LocalTarget) -> None:
    """The real model, completing after an API that answered in prose and then went off: it
    writes the API's values, which it read in that answer; reading the prompt alone, it invents
    others."""
    schema = Grammar.coerce(COUNTRY)
    prompt = "Give a JSON object describing a country, with the keys name, capital."
    api = ScriptedAPI("", drafts=[PROSE, LATER, LATER])
    result = guide(FunctionDrafter(api), schema, prompt=prompt, target=smollm2)
    assert result.valid
    assert '"Ethiopia"' in result.text and '"Addis Ababa"' in result.text
    alone = smollm2.session(prompt).correct("{", schema, until="complete", max_tokens=40)
    assert "Ethiopia" not in alone.text and "Addis" not in alone.text


def test_a_session_shared_with_the_drafter_keeps_the_prompt() -> None:
    """A drafter on the target's own model drafts in the target's session: its prompt stays."""
    refused = [Round(0, "draft", "cut", 0.1, rejected_chars=len(PROSE), cut_at=0)]
    output = Output(Grammar.coerce(COUNTRY))
    output.add(PROSE, "rejected")  # round 0's
    free = TargetPrompt("A country.", lambda prompt, text: None, 0)
    assert free.now([], output) == "A country."  # the first reply is not over
    assert free.now(refused, output) == with_refused_answer("A country.", PROSE)
    shared = TargetPrompt("A country.", lambda prompt, text: None, 0, fixed=True)
    assert shared.now(refused, output) == "A country."
