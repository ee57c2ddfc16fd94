"""What a run may still spend (backtrack.run.budget): the target completes once the drafts or
the corrections are spent, or once the API is stuck on one slip."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from backtrack import GuideOptions, guide
from backtrack.run.budget import Budget
from backtrack.run.output import Output
from backtrack.trace.record import Origin, Round
from grammars import Grammar
from local_target import LocalTarget
from providers import FunctionDrafter
from tests.support.scripted import ScriptedAPI, ScriptedTarget

S = {"type": "string"}
JSON = Grammar.load("json")
NONE = Output(JSON)  # no draft's text: only the rounds tell


def draft(index: int, accepted: int, cut_at: int | None = 10, rejected: int = 0) -> Round:
    ended = "cut" if cut_at is not None else "complete"
    return Round(index, "draft", ended, 0.1, accepted, rejected, cut_at)


def correction(index: int) -> Round:
    return Round(index, "correction", "complete", 0.1)


def test_an_api_that_returns_to_the_same_slip_twice_gets_no_third_call() -> None:
    budget = Budget(GuideOptions(max_corrections=8, max_rounds=16))
    rounds = [draft(0, 12), correction(1), draft(2, 0)]
    assert not budget.target_completes(rounds, NONE)  # once may be chance
    assert budget.target_completes([*rounds, correction(3), draft(4, 0)], NONE)


def test_an_api_that_restarts_its_answer_in_another_shape_gets_no_third_call() -> None:
    """A weak model asked to go on restarts its answer (`"hotel": {"name": ...` where a string
    goes): each draft is cut with less than a third of it fitting. Real SmolLM2 drafts through
    llama.cpp took 9 calls and 1,036 local tokens; before, only drafts of which nothing fitted
    counted."""
    budget = Budget(GuideOptions(max_corrections=8, max_rounds=16))
    rounds = [draft(0, 52), correction(1), draft(2, 9, rejected=54)]
    assert not budget.target_completes(rounds, NONE)
    assert budget.target_completes([*rounds, correction(3), draft(4, 9, rejected=50)], NONE)
    assert not budget.target_completes([*rounds, correction(3), draft(4, 30, rejected=50)], NONE)


def test_a_draft_that_fits_a_character_is_progress() -> None:
    budget = Budget(GuideOptions(max_corrections=8, max_rounds=16))
    rounds = [draft(0, 12), correction(1), draft(2, 0), correction(3), draft(4, 1)]
    assert not budget.target_completes(rounds, NONE)
    assert not budget.target_completes([draft(0, 3, cut_at=None), draft(1, 2, cut_at=None)], NONE)


def test_an_api_that_adds_nothing_twice_gets_no_third_call() -> None:
    """Empty replies after a correction (an API with nothing more to say, or a filter that
    blanks its replies): before, each one was followed by a correction of a few tokens and
    another call, 9 calls for one document with a scripted API."""
    budget = Budget(GuideOptions(max_corrections=8, max_rounds=16))
    rounds = [draft(0, 40, cut_at=None), correction(1), draft(2, 0, cut_at=None)]
    assert not budget.target_completes(rounds, NONE)
    assert budget.target_completes([*rounds, correction(3), draft(4, 0, cut_at=None)], NONE)


def test_a_settled_keys_value_is_a_correction_even_where_the_api_is_stuck() -> None:
    """Where a JSON schema's settling inserted a key with the run's own text after it, the value
    is a correction and that text is reused: no API call follows, so a stuck API does not make
    it a completion (which wrote the text after the key again: a playlist, 85 local tokens)."""
    budget = Budget(GuideOptions(max_corrections=8, max_rounds=16))
    stuck = [draft(0, 12), correction(1), draft(2, 0), correction(3), draft(4, 0)]
    assert budget.target_completes(stuck, NONE)
    assert not budget.target_completes(stuck, NONE, settling=True)
    spent = Budget(GuideOptions(max_corrections=2))
    assert spent.target_completes(stuck, NONE, settling=True)  # the caller's budget holds


def test_spent_corrections_or_rounds_end_with_the_target() -> None:
    assert Budget(GuideOptions(max_corrections=1)).target_completes(
        [draft(0, 5), correction(1)], NONE
    )
    assert Budget(GuideOptions(max_rounds=2)).target_completes([draft(0, 5), correction(1)], NONE)


def test_an_api_that_writes_its_answer_again_and_stops_where_it_stopped_gets_no_third_call():
    """A weak model asked to go on writes the answer again (dropped as a repeat) and ends where
    its first reply ended, without the key it never writes: SmolLM2 through llama.cpp took 8
    calls so. A repeat followed by as much new text again is headway."""
    budget = Budget(GuideOptions(max_corrections=8, max_rounds=16))
    again = Round(2, "draft", "drafter_ended", 0.1, accepted_chars=1, repeated_chars=60)
    rounds = [draft(0, 41, cut_at=None), correction(1), again]
    assert not budget.target_completes(rounds, NONE)
    assert budget.target_completes([*rounds, correction(3), replace(again, index=4)], NONE)
    headway = replace(again, index=4, accepted_chars=40)
    assert not budget.target_completes([*rounds, correction(3), headway], NONE)


def test_an_api_that_stops_short_after_going_on_has_said_all() -> None:
    budget = Budget(GuideOptions(max_corrections=8, max_rounds=16))
    first = [draft(0, 5, cut_at=None)]
    assert not budget.goes_on("stop", wrote=False, rounds=[])  # an empty reply: not continued
    assert not budget.said_all and not budget.target_completes(first, NONE)
    assert budget.goes_on("stop", wrote=True, rounds=[])
    assert budget.goes_on("length", wrote=True, rounds=first)  # out of tokens is no statement
    assert not budget.said_all
    assert not budget.goes_on("stop", wrote=True, rounds=first)
    assert budget.said_all and budget.target_completes(first, NONE)


def test_an_api_that_stops_short_after_a_correction_has_said_all() -> None:
    """A reply that continued the target's correction and stopped short is not continued: the
    API has said all it means to. Where it wrote nothing, it has said nothing: the target
    corrects, and the API is asked again."""
    rounds = [draft(0, 12), correction(1)]
    budget = Budget(GuideOptions(max_corrections=8, max_rounds=16))
    assert not budget.goes_on("stop", wrote=False, rounds=rounds)
    assert not budget.said_all
    assert not budget.goes_on("stop", wrote=True, rounds=rounds)
    assert budget.said_all and budget.target_completes(rounds, NONE)
    budget = Budget(GuideOptions(max_corrections=8, max_rounds=16))
    assert budget.goes_on("length", wrote=True, rounds=rounds)  # truncated: it goes on
    assert not budget.said_all


def test_an_api_that_only_writes_its_answer_again_gets_no_second_call() -> None:
    """Asked to go on, a weak model writes the committed answer again and stops there, nothing
    added: another call after the next correction did the same (SmolLM2 through llama.cpp)."""
    budget = Budget(GuideOptions(max_corrections=8, max_rounds=16))
    again = Round(2, "draft", "drafter_ended", 0.1, repeated_chars=60)
    assert budget.target_completes([draft(0, 41, cut_at=None), correction(1), again], NONE)
    for more in (replace(again, accepted_chars=1), replace(again, rejected_chars=5)):
        assert not budget.target_completes([draft(0, 41, cut_at=None), correction(1), more], NONE)


def test_a_continuation_its_repairs_mostly_threw_away_gets_no_second_call() -> None:
    """Asked to go on, a weak model writes its answer again in another shape, and the repairs
    skip or delete most of it: SmolLM2 through llama.cpp (`{"theme": {"en-US": ...` where the
    correction had gone on) was asked again and did the same, a call more each time. Blanks
    kept are no headway; the rejected rest of a cut draft does not count as thrown away (the
    correction may reuse it)."""
    budget = Budget(GuideOptions(max_corrections=8, max_rounds=16))
    again = Round(2, "draft", "drafter_ended", 0.1, accepted_chars=30)
    rounds = [draft(0, 41, cut_at=None), correction(1), again]
    thrown = [("{\n   ", "draft"), ('"theme": {', "skipped"), ("}", "deleted")]
    assert budget.target_completes(rounds, written(2, thrown))
    kept = [*thrown, ('"dark", "language": "en"', "draft")]
    assert not budget.target_completes(rounds, written(2, kept))
    rejected = [('"theme": ', "draft"), ('{"en-US": "x"}, "lang": 3', "rejected")]
    assert not budget.target_completes(rounds, written(2, rejected))
    # A first draft is no continuation: its repairs may throw away what a weak model wrapped.
    assert not budget.target_completes([replace(again, index=0)], written(0, thrown))
    # Nor is such a continuation that stopped short asked to go on: the target completes.
    assert budget.no_more_drafts(rounds, written(2, thrown))
    assert not budget.no_more_drafts(rounds, written(2, kept))


def written(round_: int, spans: list[tuple[str, Origin]]) -> Output:
    """An output whose round `round_` shows `spans` (text, origin)."""
    output = Output(JSON)
    output.round = round_
    for text, origin in spans:
        output.add(text, origin)
    return output


def test_a_restart_in_another_shape_is_not_asked_for_again() -> None:
    """A weak model's settings object (real SmolLM2 drafts through llama.cpp, shortened): its
    first reply nests `"theme"`, the repairs keep `"dark"`, and the target adds the language;
    asked to go on, it starts its answer over, nested again, and never gets back to where it
    stopped: a rewrite, dropped whole. The target finishes the text, closing (`close`: the API
    is done, `Budget.api_done`): a third call would have brought the same again."""
    schema = {
        "type": "object",
        "properties": {"theme": S, "language": S, "volume": {"type": "integer"}},
        "required": ["theme", "language", "volume"],
        "additionalProperties": False,
    }
    first = '{\n    "theme": {\n        "en-US": "dark",\n        "fr-CA": "sombre"\n    },\n}'
    again = '{\n    "theme": {\n        "en-US": "dark"\n    },\n    "volume": 3\n}'
    api = ScriptedAPI("", drafts=[first, again, again])
    target = ScriptedTarget('language": "en",', ' "volume": 3}')
    result = guide(FunctionDrafter(api), schema, prompt="settings", target=target)
    assert (result.api_calls, result.valid) == (2, True)
    assert result.text == '{\n    "theme": "dark",\n        "language": "en", "volume": 3}'
    assert [d.reason for d in result.drops if d.round == 2] == ["rewrite"]
    assert [until for _, until in target.calls] == ["terminal", "close"]


def test_a_continuation_that_added_nothing_is_not_asked_for_again() -> None:
    """Asked to go on after a correction, a weak model writes prose, or its answer in another
    shape, and not one character fits; the correction after it reuses none of it. Asked again,
    it did the same in five of six cases (SmolLM2's sampled drafts through llama.cpp): the
    target completes the text after that correction. A first draft is no continuation, a
    correction that reused the rest made headway, and an empty reply said nothing."""
    budget = Budget(GuideOptions(max_corrections=8, max_rounds=16))
    rounds = [draft(0, 40), correction(1), draft(2, 0, rejected=50)]
    assert not budget.no_more_drafts(rounds, NONE)
    assert not budget.target_completes(rounds, NONE)  # its own correction comes first
    after = [*rounds, correction(3)]
    assert budget.no_more_drafts(after, NONE) and budget.target_completes(after, NONE)
    reused = Round(3, "correction", "target_stopped", 0.1, accepted_chars=12)
    assert not budget.no_more_drafts([*rounds, reused], NONE)
    first = [draft(0, 0, rejected=30), correction(1)]
    assert not budget.no_more_drafts(first, NONE) and not budget.target_completes(first, NONE)
    # An empty reply says nothing (test_provider_faults: the API goes on after the correction).
    empty = Round(2, "draft", "empty", 0.1)
    assert not budget.no_more_drafts([draft(0, 40), correction(1), empty, correction(3)], NONE)


def test_prose_after_a_correction_brings_no_third_call() -> None:
    """End to end with a scripted API: its first reply goes prose after a member, and so does
    its continuation. Before, the same prose was asked for a third time; now the target
    finishes the text after the continuation's correction, closing."""
    schema = {
        "type": "object",
        "properties": {"name": S, "port": {"type": "integer"}},
        "required": ["name", "port"],
        "additionalProperties": False,
    }
    prose = "Sorry, I cannot help with that request."
    api = ScriptedAPI("", drafts=['{"name": "web",\nThat is all I know.', prose, prose])
    target = ScriptedTarget(' "port": ', "80", "}")
    result = guide(FunctionDrafter(api), schema, prompt="a server", target=target)
    assert (result.api_calls, result.valid) == (2, True)
    assert result.text == '{"name": "web",\n "port": 80}'
    assert [until for _, until in target.calls] == ["terminal", "terminal", "close"]


@pytest.mark.model
def test_smollm2_finishes_a_stuck_apis_list_without_items_of_its_own(smollm2: LocalTarget) -> None:
    """An API that goes prose after two players and again when asked to go on: the real model
    finishes the text, closing from its first token (`Budget.api_done`). Completing freely, it
    wrote two players of its own (`Björn`, 40 local tokens); now one, which the API's comma
    after the second asks for (19)."""
    player = {
        "type": "object",
        "properties": {"name": S, "number": {"type": "integer"}},
        "required": ["name", "number"],
        "additionalProperties": False,
    }
    schema = {
        "type": "object",
        "properties": {"team": S, "players": {"type": "array", "items": player}},
        "required": ["team", "players"],
        "additionalProperties": False,
    }
    first = '{"team": "Oslo FC", "players": [\n  {"name": "Ann", "number": 10},\n'
    first += '  {"name": "Bo", "number": 7},\nThat is all I know.'
    prose = "Sorry, I cannot help with that request."
    api = ScriptedAPI("", drafts=[first, prose, prose])
    prompt = "Give a JSON object describing a football team, with the keys team, players."
    result = guide(FunctionDrafter(api), schema, prompt=prompt, target=smollm2)
    assert (result.valid, result.api_calls) == (True, 2)
    players = json.loads(result.text)["players"]
    assert players[:2] == [{"name": "Ann", "number": 10}, {"name": "Bo", "number": 7}]
    assert len(players) <= 3 and result.local_tokens < 30
