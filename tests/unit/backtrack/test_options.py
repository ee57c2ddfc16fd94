"""One typed options object: guide, aguide, wrap and the CLI take the same GuideOptions, with one
place for the defaults, and a misspelt option is a TypeError that says what would be right.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import pytest

from backtrack import GuideOptions, Sampling, aguide, guide, wrap
from backtrack.cli.main import _options, parser
from backtrack.run.options import option_names

CALLS: list[Any] = []


def drafter(prompt: Any, prefix: str) -> str:
    CALLS.append((prompt, prefix))
    return "{}"


@pytest.fixture(autouse=True)
def no_calls_yet() -> None:
    CALLS.clear()


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("promt", r"unknown option 'promt'; did you mean 'prompt'\?"),
        ("max_correction", r"did you mean 'max_corrections'\?"),
        ("max_tokens", r"did you mean 'max_draft_tokens'\?"),
        (
            "temperature",
            r"the local target's temperature is sampling=Sampling\(temperature=\.\.\.\)",
        ),
        ("seed", r"sampling=Sampling\(seed=\.\.\.\)"),
        ("zzz", r"unknown option 'zzz' \(valid: complete_on_budget, completion_tokens, "),
    ],
)
def test_an_unknown_option_names_the_valid_ones_before_any_call(name: str, message: str) -> None:
    with pytest.raises(TypeError, match=message) as caught:
        guide(drafter, "json", **{name: 1})
    assert "max_corrections" in str(caught.value) and "sampling" in str(caught.value)
    assert CALLS == []


@pytest.mark.anyio
async def test_aguide_refuses_unknown_options_the_same_way() -> None:
    with pytest.raises(TypeError, match=r"aguide\(\) got an unknown option 'max_correction'"):
        await aguide(drafter, "json", max_correction=1)
    assert CALLS == []


def test_wrap_and_its_calls_refuse_unknown_options(openai_client: Any) -> None:
    with pytest.raises(TypeError, match=r"wrap\(\) got an unknown option 'max_correctons'"):
        wrap(openai_client(), max_correctons=2)
    with pytest.raises(TypeError, match="did you mean 'target'"):
        wrap(openai_client(), targt=None)
    with pytest.raises(TypeError, match=r"guide_options=\) takes a GuideOptions|options="):
        wrap(openai_client(), options={"max_corrections": 2})


@pytest.mark.parametrize(
    "changes",
    [
        {"max_corrections": -1},
        {"max_draft_tokens": 0},
        {"max_attempts": 0},
        {"max_rounds": True},
        {"correction_tokens": 1.5},
        {"complete_on_budget": "yes"},
        {"sampling": 0.7},
        {"max_lost_chars": -1},
        {"max_lost_chars": True},
        {"max_seconds": 0},
        {"max_seconds": float("inf")},
        {"max_seconds": "5"},
    ],
)
def test_bad_values_are_value_errors_that_name_the_option(changes: dict[str, Any]) -> None:
    (name,) = changes
    with pytest.raises(ValueError, match=name):
        GuideOptions(**changes)
    with pytest.raises(ValueError, match=name):
        guide(drafter, "json", **changes)
    assert CALLS == []


def test_options_and_keywords_combine_keywords_winning() -> None:
    options = GuideOptions(max_corrections=1, max_rounds=3)
    result = guide(drafter, "json", options=options, max_rounds=5)
    assert result.text == "{}" and result.api_calls == 1
    with pytest.raises(TypeError, match=r"options=\) takes a GuideOptions"):
        guide(drafter, "json", options={"max_corrections": 1})  # type: ignore[arg-type]


def test_the_defaults_live_in_guide_options_alone() -> None:
    # guide() and aguide() declare no option of their own: every option has one default, there.
    for function in (guide, aguide, wrap):
        declared = set(inspect.signature(function).parameters) & set(option_names())
        assert declared == set(), function
    # The command line's flags default to GuideOptions' values, not to copies of them.
    for command in ("run", "demo"):
        args = parser().parse_args([command] if command == "demo" else [command, "hi"])
        built = _options(args)
        demo_budgets = {"max_corrections", "max_draft_tokens", "completion_tokens"}
        for field in dataclasses.fields(GuideOptions):
            if command == "demo" and field.name in demo_budgets:
                continue  # the demo's own small budgets, set for a quick first run
            assert getattr(built, field.name) == getattr(GuideOptions(), field.name), field.name


def test_the_cli_sets_every_option_and_the_targets_sampling() -> None:
    args = parser().parse_args(
        [
            "run",
            "hi",
            "--max-corrections=2",
            "--max-rounds=9",
            "--max-attempts=1",
            "--max-lost-chars=0",
            "--max-seconds=2.5",
            "--no-complete-on-budget",
            "--target-temperature=0.5",
            "--target-seed=3",
        ]
    )
    assert _options(args) == GuideOptions(
        max_corrections=2,
        max_rounds=9,
        max_attempts=1,
        max_lost_chars=0,
        max_seconds=2.5,
        complete_on_budget=False,
        sampling=Sampling(temperature=0.5, seed=3),
    )
