"""Pydantic models as grammars: guide(fn, Model) and its `parsed` object, and OpenAI's
chat.completions.parse() through wrap, the real SDK against the local protocol server
(tests/support/servers.py), which replays scripted text and never reads the grammar."""

from __future__ import annotations

from typing import Any

import pytest
from openai import LengthFinishReasonError
from openai.types.chat import ParsedChatCompletion
from pydantic import BaseModel

from backtrack import GuideResult, guide, wrap
from tests.support.servers import text

MESSAGES = [{"role": "user", "content": "Ada Lovelace as JSON, please."}]
# The comma before } is a slip an edit mends; parsed unguided, pydantic refuses it.
SLIP = '{"name": "Ada Lovelace", "age": 36,}'


class Person(BaseModel):
    name: str
    age: int


ADA = Person(name="Ada Lovelace", age=36)


def test_a_pydantic_model_is_the_grammar_and_the_result_parses_into_it():
    result = guide(lambda prompt, prefix: "Here you are: " + SLIP, Person, prompt="Ada?")
    assert result.valid and result.text == '{"name": "Ada Lovelace", "age": 36}'
    assert isinstance(result.parsed, Person) and result.parsed == ADA
    assert result.parsed is result.parsed  # validated once
    assert guide(lambda prompt, prefix: SLIP, Person.model_json_schema()).parsed is None
    assert guide(lambda prompt, prefix: SLIP, "json").parsed is None


def test_parse_with_a_model_as_response_format_is_guided(openai_server: Any, openai_client: Any):
    openai_server.script(text(SLIP))
    reply = wrap(openai_client()).chat.completions.parse(
        model="m", messages=MESSAGES, response_format=Person
    )
    assert isinstance(reply, ParsedChatCompletion)
    message = reply.choices[0].message
    assert isinstance(message.parsed, Person) and message.parsed == ADA
    assert message.content == '{"name": "Ada Lovelace", "age": 36}'
    assert isinstance(reply.guide_result, GuideResult) and reply.guide_result.repairs == 1
    body = openai_server.bodies[0]
    assert "response_format" not in body and "grammar" not in body


def test_parse_takes_grammar(openai_server: Any, openai_client: Any):
    openai_server.script(text(SLIP), text(SLIP), text(SLIP))
    parse = wrap(openai_client()).chat.completions.parse
    by_model = parse(model="m", messages=MESSAGES, grammar=Person)
    assert by_model.choices[0].message.parsed == ADA
    by_name = parse(model="m", messages=MESSAGES, grammar="json")
    assert by_name.choices[0].message.content == '{"name": "Ada Lovelace", "age": 36}'
    assert by_name.choices[0].message.parsed is None  # no model to parse into
    plain = parse(model="m", messages=MESSAGES)  # no grammar: the SDK's own parse()
    assert plain.choices[0].message.content == SLIP and not hasattr(plain, "guide_result")
    with pytest.raises(TypeError, match="not both"):
        parse(model="m", messages=MESSAGES, response_format=Person, grammar="json")
    with pytest.raises(TypeError, match="does not stream"):
        parse(model="m", messages=MESSAGES, response_format=Person, stream=True)
    assert len(openai_server.bodies) == 3


def test_parse_of_a_run_that_is_not_valid_raises_as_the_sdk_does(
    openai_server: Any, openai_client: Any
):
    """The SDK's parse() raises LengthFinishReasonError for a reply cut short; so does a guided
    one whose run ends not valid (here: one draft, no completion), carrying the run."""
    openai_server.script(text('{"name": "Ada'))
    client = wrap(openai_client(), max_rounds=1, complete_on_budget=False)
    with pytest.raises(LengthFinishReasonError) as cut:
        client.chat.completions.parse(model="m", messages=MESSAGES, response_format=Person)
    result = cut.value.completion.guide_result  # type: ignore[attr-defined]
    assert isinstance(result, GuideResult) and not result.valid


@pytest.mark.anyio
async def test_async_parse(openai_server: Any, openai_client: Any):
    openai_server.script(text(SLIP))
    async with openai_client(asynchronous=True) as raw:
        reply = await wrap(raw).chat.completions.parse(
            model="m", messages=MESSAGES, response_format=Person
        )
    assert reply.choices[0].message.parsed == ADA
