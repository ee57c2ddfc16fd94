"""An answer sent as a JSON string (`{"query": "..."}`): its content read decoded, however the
reply is chunked, the envelope shown as dropped; a reply whose grammar takes the envelope as its
own text, or whose string the grammar refuses, is read as it came."""

from __future__ import annotations

import json
from typing import Any

import pytest

from backtrack import Grammar, GuideResult, wrap
from backtrack.run.envelope import JsonEnvelope
from benchmarks.corpora.other import load_other_grammar
from tests.support.scripted import NO_CORRECTIONS, ScriptedTarget, repaired
from tests.support.servers import text

QUERY = "{\n  user(id: 4) {\n    id\n    name\n    pic: profilePic(size: 64)\n  }\n}\n"
SQL = "SELECT name FROM users WHERE city = \"Oslo\" AND note = 'café 😀';"


def guided(grammar: str | Grammar, reply: str, chunk: int) -> GuideResult:
    result = repaired(grammar, reply, chunk=chunk)
    assert result.api_calls == 1
    return result


@pytest.mark.parametrize("chunk", [0, 1, 3, 7])
@pytest.mark.parametrize(
    ("grammar", "answer", "name"),
    [("graphql", QUERY, "query"), ("sqlite", SQL, "sql")],
)
def test_an_answer_sent_as_a_json_string_is_its_content_decoded(
    grammar: str, answer: str, name: str, chunk: int
) -> None:
    """Escapes split between chunks too: `\\n`, `\\"`, `\\u00e9`, a surrogate pair."""
    loaded = load_other_grammar(grammar) if grammar == "graphql" else grammar
    body = json.dumps({name: answer})
    assert "\\u00e9" in body or "\\n" in body
    result = guided(loaded, body, chunk)
    assert (result.text, result.valid, result.corrections, result.repairs) == (answer, True, 0, 0)
    # The stream is closed at the string's end: what of the envelope's end came is shown.
    (opening, opened), (end, ended) = [(d.reason, d.text) for d in result.drops]
    assert (opening, opened, end) == ("preamble", f'{{"{name}": "', "fence")
    assert ended in ('"', '"}')
    assert (result.kept, result.lost_chars) == (1.0, 0)


def test_a_json_schema_reads_an_object_sent_as_a_string_in_another_object() -> None:
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
        "required": ["name", "age"],
        "additionalProperties": False,
    }
    inner = '{"name": "Ann", "age": 31}'
    result = guided(Grammar.from_json_schema(schema), json.dumps({"data": inner}), chunk=4)
    assert (result.text, result.valid, result.corrections) == (inner, True, 0)


@pytest.mark.parametrize(
    ("grammar", "reply"),
    [
        # The grammar's own text: JSON takes the object as it is.
        ("json", '{"query": "{ user { id } }"}'),
        # A string the grammar refuses from its first characters: no answer in it.
        ("sqlite", '{"explanation": "This lists users.", "sql": "SELECT 1;"}'),
        # Not an object's first member with a string value.
        ("sqlite", '{"rows": 5}'),
    ],
)
@pytest.mark.parametrize("chunk", [1, 5, 10**6])
def test_no_envelope_is_read_where_the_reply_is_none(grammar: str, reply: str, chunk: int) -> None:
    envelope = JsonEnvelope(Grammar.load(grammar))
    out = "".join(envelope.read(reply[i : i + chunk]) for i in range(0, len(reply), chunk))
    assert (out + envelope.finish(), envelope.opening, envelope.end) == (reply, "", None)


def test_an_answer_in_a_json_string_comes_decoded_through_the_openai_sdk(
    openai_server: Any, openai_client: Any
) -> None:
    openai_server.script(text(json.dumps({"sql": SQL}), chunk_size=4))
    client = wrap(openai_client(), target=ScriptedTarget(), **NO_CORRECTIONS)
    reply = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "SQL"}], grammar="sqlite"
    )
    assert reply.choices[0].message.content == SQL
    assert (reply.guide_result.api_calls, len(openai_server.bodies)) == (1, 1)


@pytest.mark.parametrize("chunk", [1, 4, 10**6])
def test_what_is_no_json_escape_stays_as_written(chunk: int) -> None:
    """A lone half of a surrogate pair and `\\x` are no character JSON can mean: written as they
    came, the rest decoded around them."""
    reply = "{\"sql\": \"SELECT '\\ud83d', '\\x41', '\\u00e9';\"}"
    result = guided("sqlite", reply, chunk)
    assert result.text == "SELECT '\\ud83d', '\\x41', 'é';"
