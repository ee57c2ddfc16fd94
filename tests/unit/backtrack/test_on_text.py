"""guide(on_text=...): the output passed on piece by piece as it becomes final.

The pieces concatenated are the result's text, whatever happened on the way (repairs that take
committed text back, trailing prose dropped with the blanks before it, a preamble skipped, keys
out of a JSON schema's order); and they come while the draft streams, not all at the end.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from backtrack import aguide, guide
from tests.support.scripted import ScriptedAPI

SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
    "additionalProperties": False,
}

CASES = {
    "clean": ("json", '{"a": [1, 2, 3], "b": {"c": "a longer string value here"}}'),
    "repaired slip": ("json", '{"a": [1, 2, 3}, "b": null, "c": "and some more text after it"}'),
    "repair backs off": ("json", '{"a": [1, 2, 3,], "b": "some more text after the slip"}'),
    "trailing prose": ("json", '{"a": 1, "b": [true, false]}   \n\nHope this helps!'),
    "preamble": ("json", 'Here is the JSON:\n{"a": "value", "b": "another value"}'),
    "schema, any key order": (SCHEMA, '{"age": 3, "name": "Felix the cat of the house"}'),
    "schema order": (SCHEMA, '{"name": "Felix the cat of the house", "age": 3}'),
}


def chunked(text: str, size: int = 3) -> Iterator[str]:
    for i in range(0, len(text), size):
        yield text[i : i + size]


@pytest.mark.parametrize("case", CASES)
def test_pieces_concatenate_to_the_result(case: str) -> None:
    grammar, draft = CASES[case]
    pieces: list[str] = []

    def drafter(prompt: str, prefix: str) -> Iterator[str]:
        yield from chunked(draft)

    result = guide(drafter, grammar, prompt="p", on_text=pieces.append)
    assert result.valid
    assert "".join(pieces) == result.text
    assert all(pieces)
    if case != "schema, any key order":  # text out of the schema's order is final at the end
        assert len(pieces) > 3, "pieces come while the draft streams"


def test_the_async_twin_passes_the_same_pieces() -> None:
    grammar, draft = CASES["repaired slip"]

    async def drafter(prompt: str, prefix: str) -> str:
        return draft

    pieces: list[str] = []

    result = asyncio.run(aguide(drafter, grammar, on_text=pieces.append))
    assert "".join(pieces) == result.text == guide(lambda p, q: draft, grammar).text


def test_an_error_in_on_text_ends_the_run_as_it_is_and_closes_the_draft() -> None:
    """on_text is the caller's code, not the drafter's: what it raises is not retried as a
    failed draft nor wrapped as a ProviderError, and the stream it interrupted is closed."""
    grammar, draft = CASES["clean"]
    api = ScriptedAPI(draft, chunk=3)

    def refuse(piece: str) -> None:
        raise KeyError(piece)

    with pytest.raises(KeyError):
        guide(api.stream, grammar, prompt="p", on_text=refuse)
    assert api.calls == 1 and api.closed == [True]
