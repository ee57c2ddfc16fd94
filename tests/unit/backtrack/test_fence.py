"""A fenced answer ends at its closing fence (backtrack.run.fence): the fence line and what follows
are dropped as trailing, whatever the grammar would take of them, and wherever the reply was split
into chunks. The line break before the fence goes with it where the grammar takes an empty line
there (Python); where it takes none (CSV: an empty line is no record), it ends the last row and
stays. A fence is closing only in a reply that opened one, and only at a line start or glued to
the end of a line."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import providers
from backtrack import Grammar, GuideResult, guide
from backtrack.run.fence import ClosingFence
from backtrack.run.loop import GuideLoop
from backtrack.run.options import GuideOptions
from tests.support.scripted import ScriptedAPI, ScriptedTarget

CSV = Grammar.load("csv")
PYTHON = Grammar.load("python_expr")
JSON = Grammar.load("json")

TABLE = "name,city,age\nAnn,Oslo,31\n"
ASSIGN = "result = [x * 2 for x in range(10)]"

# name: (grammar, the API's reply, the output)
FENCED = {
    "csv-preamble": (CSV, f'Here is the "people" table:\n```csv\n{TABLE}```\n', TABLE),
    "csv-prose-after": (CSV, f"```csv\n{TABLE}```\nHope this helps!", TABLE),
    "csv-crlf": (CSV, "```csv\r\na,b\r\n1,2\r\n```\r\nDone.", "a,b\r\n1,2\r\n"),
    "python": (PYTHON, f"```python\n{ASSIGN}\n```", ASSIGN + "\n"),  # CommonMark: the content
    "python-prose-after": (PYTHON, f"Sure:\n```python\n{ASSIGN}\n```\nDone.", ASSIGN + "\n"),
    "json-backticks-in-a-string": (JSON, '```json\n{"a": "```"}\n```\nok', '{"a": "```"}'),
    # a weak model's fence, glued to the last line (SmolLM2: `...even_numbers))})````)
    "python-glued": (PYTHON, f"```python\n{ASSIGN}```", ASSIGN),
    "python-glued-prose-after": (PYTHON, f"```python\n{ASSIGN}```\nIt doubles each.", ASSIGN),
}
CHUNKS = [1, 2, 3, 0]  # 0: the reply whole, not streamed


def _fenced_params() -> list[Any]:
    """Each case in each chunk size; a reply with prose before its fence whole only: streamed in
    small chunks, its first chunk, valid under the grammar (any line is a CSV row), starts the
    answer before the fence arrives (backtrack.run.answer_start, rule 2)."""
    return [
        pytest.param(case, chunk, id=f"{case}-{f'chunk{chunk}' if chunk else 'whole'}")
        for case, (_, reply, _) in FENCED.items()
        for chunk in (CHUNKS if reply.startswith("```") else [0])
    ]


def run(grammar: Grammar, reply: str, chunk: int, **options: Any) -> GuideResult:
    api = ScriptedAPI(reply, chunk=chunk)
    drafter = providers.FunctionDrafter(api.stream if chunk else api)
    settings = {"max_corrections": 0, "complete_on_budget": False, **options}
    return guide(drafter, grammar, prompt="p", target=ScriptedTarget(), **settings)


@pytest.mark.parametrize(("case", "chunk"), _fenced_params())
def test_a_closing_fence_and_what_follows_are_dropped(case: str, chunk: int) -> None:
    grammar, reply, output = FENCED[case]
    result = run(grammar, reply, chunk)
    assert (result.text, result.valid, result.stop_reason) == (output, True, "trailing_dropped")
    assert (result.api_calls, result.corrections) == (1, 0)
    assert result.trace.rounds[0].ended == "trailing"
    origins = [s.origin for s in result.trace.spans]
    assert origins[-2:] == ["draft", "dropped"] and set(origins) == {"draft", "dropped"}
    assert result.trace.spans[-1].text.lstrip("\r\n").startswith("```")
    if not chunk:  # streamed, the reply is read only up to the chunk with the closing fence
        shown = "".join(s.text for s in result.trace.spans)
        assert shown == reply


@pytest.mark.parametrize("chunk", CHUNKS, ids=lambda n: f"chunk{n}" if n else "whole")
def test_backticks_ending_a_reply_that_opened_no_fence_are_csv_text(chunk: int) -> None:
    reply = f"{TABLE}```\n"
    result = run(CSV, reply, chunk)
    assert (result.text, result.stop_reason) == (reply, "complete")


@pytest.mark.parametrize("chunk", CHUNKS, ids=lambda n: f"chunk{n}" if n else "whole")
def test_a_fenced_reply_that_ends_without_its_closing_fence_keeps_all_its_text(chunk: int) -> None:
    # The final line break (and a lone "``", no fence) is kept back while it may start a fence.
    for reply, output in [(f"```csv\n{TABLE}", TABLE), (f"```csv\n{TABLE}``", f"{TABLE}``")]:
        result = run(CSV, reply, chunk)
        assert (result.text, result.stop_reason) == (output, "complete")


def test_an_answer_not_complete_at_its_closing_fence_is_continued_by_the_api() -> None:
    # The fence ends the answer as if the API had stopped there: the API is asked to go on, and
    # the fence and the prose after it are not offered again (CSV would take them as rows).
    api = ScriptedAPI('{"a": 1, "b": 2}', drafts=['```json\n{"a": 1, \n```\nHope this helps!'])
    result = guide(
        providers.FunctionDrafter(api), JSON, prompt="p", target=ScriptedTarget(), max_corrections=0
    )
    assert (result.text, result.valid, result.api_calls, result.corrections) == (
        '{"a": 1, \n"b": 2}',
        True,
        2,
        0,
    )
    assert [r.ended for r in result.trace.rounds] == ["drafter_ended", "drafter_ended"]
    assert [(s.origin, s.text) for s in result.trace.spans if s.round == 0] == [
        ("dropped", "```json\n"),
        ("draft", '{"a": 1, \n'),
        ("dropped", "```\nHope this helps!"),
    ]


@pytest.mark.parametrize("chunk", CHUNKS, ids=lambda n: f"chunk{n}" if n else "whole")
def test_a_fence_glued_to_an_open_string_ends_the_answer_there(chunk: int) -> None:
    """SmolLM2 left a string open and glued its closing fence to it (`...even_numbers))})````).
    Before, the fence was read into the string, and the API's continuation followed it there.
    The reply closed its fence, so its answer is over: what the text lacks is closed at its end,
    with no call more (before, the API was asked to go on and wrote `")`)."""
    api = ScriptedAPI('print("evens', drafts=['```python\nprint("evens```', '")'], chunk=chunk)
    drafter = providers.FunctionDrafter(api.stream if chunk else api)
    result = guide(drafter, PYTHON, prompt="p", target=ScriptedTarget(), max_corrections=0)
    assert (result.text, result.valid, result.api_calls) == ('print("evens")', True, 1)


@pytest.mark.parametrize("size", [1, 2, 3, 100])
def test_a_fence_the_drafters_alignment_stripped_opens_the_answer(size: int) -> None:
    loop = GuideLoop(CSV, "p", GuideOptions())
    loop.draft_request()
    opening, reply = "```csv\n", f"{TABLE}```\nHope this helps!"
    for i in range(0, len(reply), size):
        if not loop.receive(reply[i : i + size], stripped=opening):
            break
    loop.end_draft(finish_reason="closed", stripped=opening)
    result = loop.result()
    assert (result.text, result.stop_reason) == (TABLE, "trailing_dropped")
    assert [s.origin for s in result.trace.spans] == ["dropped", "draft", "dropped"]


@pytest.mark.parametrize("size", [1, 2, 3])
@pytest.mark.parametrize("case", ["csv-prose-after", "python"])
def test_nothing_passed_on_as_final_is_dropped_at_a_closing_fence(case: str, size: int) -> None:
    grammar, reply, output = FENCED[case]
    pieces: list[str] = []

    def drafter(prompt: str, prefix: str) -> Iterator[str]:
        for i in range(0, len(reply), size):
            yield reply[i : i + size]

    result = guide(drafter, grammar, prompt="p", target=ScriptedTarget(), on_text=pieces.append)
    assert result.text == output
    assert "".join(pieces) == result.text
    assert len(pieces) > 3, "pieces come while the draft streams"


def test_final_chars_grow_and_hold_through_a_closing_fence() -> None:
    grammar, reply, output = FENCED["python"]
    loop = GuideLoop(grammar, "p", GuideOptions())
    loop.draft_request()
    finals = []
    for char in reply:
        loop.receive(char)
        finals.append(loop.final_chars())
        assert output.startswith(loop.text[: finals[-1]])
    loop.end_draft(finish_reason="stop")
    assert loop.text == output
    assert finals == sorted(finals) and finals[-1] <= len(output)


SPLITS = [
    "a\n```\nrest",
    "```\nrest",
    "a\n``b\n`\n``",
    "a\r\n```",
    'x = "```"\n',
    "\n\n``",
    "print(x)```",
    "print(x)``` \nIt prints x.",
    "a = `b`\nc = 1``",
]


@pytest.mark.parametrize("text", SPLITS)
@pytest.mark.parametrize("size", [1, 2, 3, 4])
def test_where_a_reply_is_split_does_not_move_its_closing_fence(text: str, size: int) -> None:
    whole = ClosingFence(line_start=True)
    answer, closing = whole.split(text)
    if closing is None:
        held, closing = whole.flush()
        answer += held
    fence = ClosingFence(line_start=True)
    parts: list[str] = []
    found: str | None = None
    for i in range(0, len(text), size):
        piece, found = fence.split(text[i : i + size])
        parts.append(piece)
        if found is not None:
            found += text[i + size :]
            break
    else:
        held, found = fence.flush()
        parts.append(held)
    assert ("".join(parts), found) == (answer, closing)
    assert answer + (closing or "") == text
