"""Values a draft gives in another shape than its JSON schema's (backtrack.repair.json_shapes: a
wrapped value, a key the schema lacks, an object closed early, a quoted number, `null` for a
string). The wrapped values and keys are what a real weak model wrote (SmolLM2 through
llama.cpp: benchmarks/bench_real_drafts.py); the wrapped answers, quoted values and `null` are
slips strong models make under a schema. The API's values are kept where they stand, no key
takes another's value, and the local model is not asked."""

from __future__ import annotations

import json

import pytest

import providers
from backtrack import Grammar, guide
from backtrack.repair.json_shapes import renames_key, unwrapped_whole, wrapped_values
from tests.support.scripted import ScriptedAPI, ScriptedTarget

S, INT, NUM = {"type": "string"}, {"type": "integer"}, {"type": "number"}


def _object(**properties: dict[str, str]) -> Grammar:
    return Grammar.from_json_schema(
        {
            "type": "object",
            "properties": properties,
            "required": list(properties),
            "additionalProperties": False,
        }
    )


CONCERT = _object(artist=S, venue=S, date=S, tickets_left=INT)
MEANT = {"artist": "The Bigger Picture", "venue": "Oslo", "date": "2025-05-01", "tickets_left": 120}


def _repaired(grammar: Grammar, draft: str) -> object:
    """The document the draft became, with one API call and no correction by the target (which
    fails the test if asked)."""
    api = ScriptedAPI(draft)
    result = guide(providers.FunctionDrafter(api), grammar, prompt="p", target=ScriptedTarget())
    assert (result.valid, result.api_calls, result.local_tokens) == (True, 1, 0)
    return json.loads(result.text)


@pytest.mark.parametrize(
    "artist",
    [
        pytest.param('{\n    "name": "The Bigger Picture",\n    "genre": "rock"\n  }', id="object"),
        pytest.param('{"name": "The Bigger Picture"}', id="object-one-member"),
        pytest.param('["The Bigger Picture"]', id="array"),
    ],
)
def test_a_value_wrapped_in_an_object_or_array_is_read_in_its_place(artist: str) -> None:
    """Before, the object's first key was kept as the value (`"artist": "genre"`), its own value
    dropped, and the rest cut as trailing text for the target to write again."""
    draft = (
        f'{{\n  "artist": {artist},\n  "venue": "Oslo",\n  "date": "2025-05-01",\n'
        '  "tickets_left": 120\n}'
    )
    assert _repaired(CONCERT, draft) == MEANT


def test_a_number_wrapped_with_its_unit_is_read_in_its_place() -> None:
    price = _object(name=S, price=NUM)
    draft = '{"name": "Lamp", "price": {"amount": 19.99, "unit": "EUR"}}'
    assert _repaired(price, draft) == {"name": "Lamp", "price": 19.99}


def test_an_object_closed_before_its_required_keys_reads_on() -> None:
    """Before, the text after the early `}` was dropped as trailing, and the target wrote the
    date and the tickets the API had given."""
    draft = '{"artist": "The Bigger Picture", "venue": "Oslo"}, "date": "2025-05-01", '
    assert _repaired(CONCERT, draft + '"tickets_left": 120}') == MEANT


def test_a_second_record_after_an_object_closed_early_is_not_read_into_it() -> None:
    """Where the draft goes on after the early `}` with a key the object has (the answer again,
    or another record), that is no more of it: it goes as trailing text, and the target writes
    the missing value. Read into it, the repeated keys were cut one by one, with a second call
    (and a real draft's event took 3 calls and 8.9 s where it now takes 1)."""
    draft = '{"artist": "A", "venue": "Oslo", "date": "2025"}\n\n{"artist": "B", "venue": "Bergen"}'
    api = ScriptedAPI(draft)
    target = ScriptedTarget("7")
    result = guide(providers.FunctionDrafter(api), CONCERT, prompt="p", target=target)
    assert json.loads(result.text) == {
        "artist": "A",
        "venue": "Oslo",
        "date": "2025",
        "tickets_left": 7,
    }
    assert (result.api_calls, [d.reason for d in result.trace.drops]) == (1, ["trailing"])


def test_a_key_unlike_the_schema_keys_goes_with_its_value() -> None:
    """`genre` is not renamed `venue` (two letters apart), which would give the venue the
    genre's value; a misspelt key still is renamed."""
    draft = '{"artist": "The Bigger Picture", "genre": "rock", "venue": "Oslo", '
    draft += '"date": "2025-05-01", "tickets_left": 120}'
    assert _repaired(CONCERT, draft) == MEANT
    misspelt = draft.replace('"venue"', '"vanue"').replace('"genre": "rock", ', "")
    assert _repaired(CONCERT, misspelt) == MEANT


@pytest.mark.parametrize("key", ["venue_name", "concert_venue", "venueName", "venue-name"])
def test_a_key_that_holds_the_schema_key_as_a_word_is_renamed(key: str) -> None:
    """The API's key is the schema's with a word more (`cuisine_type` for `cuisine`, SmolLM2
    through llama.cpp): the key is the schema's, and its value stays. Before, the member was
    deleted with its value, and the target wrote a value of its own."""
    draft = json.dumps(MEANT).replace('"venue"', f'"{key}"')
    assert _repaired(CONCERT, draft) == MEANT


STUDENT = _object(name=S, courses={"type": "array", "items": S}, gpa=NUM)


@pytest.mark.parametrize("other", ['"gpa": 3.9', '"classroom_level": 4'], ids=["key", "unlike"])
def test_objects_where_a_list_of_strings_goes_give_their_values(other: str) -> None:
    """Each item's first value stands in for the whole item, whose other members go with it,
    whatever their names: there is no object around an array's item to read them into (SmolLM2
    through llama.cpp, a student's courses). Before, the second member's key was kept as an
    item (`"Dune", "gpa"`), and the `:` after it was a cut for the target."""
    items = ",\n".join(
        f'    {{\n      "name": "{name}",\n      {other}\n    }}' for name in ("Dune", "Emma")
    )
    draft = f'{{\n  "name": "Ann",\n  "courses": [\n{items}\n  ],\n  "gpa": 3.2\n}}'
    assert _repaired(STUDENT, draft) == {"name": "Ann", "courses": ["Dune", "Emma"], "gpa": 3.2}


def test_a_value_read_out_of_its_wrapper_is_the_apis_own_text() -> None:
    """The trace shows the value as the API's (draft) between the wrapper's skipped parts, and
    `kept` counts it: it was moved, not written. Before, it was an edit, and `kept` fell to
    0.16 on a real draft whose to-do items were read out of objects."""
    draft = '{"name": "Ann", "courses": [{"name": "Dune", "gpa": 3.9}], "gpa": 3.2}'
    api = ScriptedAPI(draft)
    result = guide(providers.FunctionDrafter(api), STUDENT, prompt="p", target=ScriptedTarget())
    spans = [(s.origin, s.text) for s in result.trace.spans]
    assert spans[1:4] == [
        ("skipped", '{"name": '),
        ("draft", '"Dune"'),
        ("skipped", ', "gpa": 3.9}'),
    ]
    assert "edit" not in {origin for origin, _ in spans}
    wrapper = len('{"name":,"gpa":3.9}')
    assert result.kept == (len(draft) - draft.count(" ") - wrapper) / (
        len(draft) - draft.count(" ")
    )


PERSON = _object(name=S, age=INT, city=S)
ANN = {"name": "Ann", "age": 31, "city": "Oslo"}


@pytest.mark.parametrize(
    "draft",
    [
        pytest.param('{"person": {"name": "Ann", "age": 31, "city": "Oslo"}}', id="under-a-key"),
        pytest.param(
            '{\n  "person": {\n    "name": "Ann",\n    "age": 31,\n    "city": "Oslo"\n  }\n}'
        ),
        pytest.param('{"data": [{"name": "Ann", "age": 31, "city": "Oslo"}]}', id="in-a-list"),
        pytest.param('[{"name": "Ann", "age": 31, "city": "Oslo"}]', id="in-an-array"),
    ],
)
def test_an_answer_wrapped_whole_is_read_in_its_place(draft: str) -> None:
    """Before, `{"data": [...]}` had `data` edited into `age` letter by letter, its value
    deleted, and the local model wrote a person of its own (`Liam`, 22, `New York`)."""
    assert _repaired(PERSON, draft) == ANN


@pytest.mark.parametrize(
    ("value", "meant"), [('"31"', 31), ('"3.1e1"', 31.0), ('"-2"', -2)], ids=["int", "exp", "neg"]
)
def test_a_quoted_number_where_a_number_goes_is_unquoted(value: str, meant: float) -> None:
    """Before, the member was deleted and the local model wrote an age of its own (25)."""
    number = _object(name=S, age=NUM, city=S)
    draft = f'{{"name": "Ann", "age": {value}, "city": "Oslo"}}'
    assert _repaired(number, draft) == {"name": "Ann", "age": meant, "city": "Oslo"}


@pytest.mark.parametrize(("value", "meant"), [('"yes"', True), ('"No"', False), ('"true"', True)])
def test_a_quoted_answer_where_a_boolean_goes_is_the_boolean(value: str, meant: bool) -> None:
    """Before, the member was deleted and the local model wrote a value of its own."""
    flag = _object(name=S, ok={"type": "boolean"})
    assert _repaired(flag, f'{{"name": "Ann", "ok": {value}}}') == {"name": "Ann", "ok": meant}


def test_null_where_only_a_string_goes_is_the_empty_string() -> None:
    """The API says it has no value: the empty string, not one the local model makes up.
    Before, `null` was edited into a key (`"name"`), and the local model wrote 488 tokens of a
    string before settling on `"city": "New York"`, two API calls."""
    city = _object(name=S, city=S)
    assert _repaired(city, '{"name": "Ann", "city": null}') == {"name": "Ann", "city": ""}
    nullable = _object(name=S, city={"type": ["string", "null"]})
    assert _repaired(nullable, '{"name": "Ann", "city": null}') == {"name": "Ann", "city": None}


def test_wrapped_values_are_the_first_values_of_an_object_or_array() -> None:
    text = '{"id": 1, "name": "Ann", "tags": ["a"], "x": 2}'
    starts = wrapped_values(text)
    assert [text[at : at + 5] for at in starts] == ['1, "n', '"Ann"', '["a"]', '"a"],']
    assert wrapped_values('[ "a", 2]') == [2, 7]
    assert wrapped_values('{"id": 1') == [7]  # its end has not arrived: the first value only
    assert wrapped_values('"a"') == wrapped_values("{}") == wrapped_values("{") == []
    assert wrapped_values('{"data": [{"a": 1}]}') == [9, 10]  # the list, then its first item


def test_unwrapped_whole_gives_the_plain_values_of_a_whole_wrapper() -> None:
    text = '{"id": 1, "tags": ["a"], "name": "Ann"}, 7'
    assert unwrapped_whole(text) == [("1", 39, 1), ('"a"', 39, 3)]  # the first three starts
    assert unwrapped_whole('{"id": 1, "name": "Ann"') == []  # its end has not arrived
    assert unwrapped_whole('"a"') == unwrapped_whole("{}") == []


def test_renames_key_only_for_a_key_unlike_the_schema_one() -> None:
    assert renames_key('{"', "genre", "venue", '": "rock"')
    assert not renames_key('{"', "venu", "venue", '": "Oslo"')
    assert not renames_key("SELECT ", "nmae", "name", " FROM t")  # not a JSON key
