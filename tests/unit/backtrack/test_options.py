"""One typed options object: guide, aguide, wrap and the CLI take the same GuideOptions, with one
place for the defaults, and a misspelt option is a TypeError that says what would be right.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from typing import Any

import pytest

from backtrack import GuideOptions, Sampling, aguide, guide, wrap
from backtrack.cli.parser import build_parser, guide_options
from backtrack.run.options import capped, declaration, option_names

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
        args = build_parser().parse_args([command] if command == "demo" else [command, "hi"])
        built = guide_options(args)
        demo_budgets = {"max_corrections", "max_draft_tokens", "completion_tokens"}
        for field in dataclasses.fields(GuideOptions):
            if command == "demo" and field.name in demo_budgets:
                continue  # the demo's own small budgets, set for a quick first run
            assert getattr(built, field.name) == getattr(GuideOptions(), field.name), field.name


def test_the_cli_sets_every_option_and_the_targets_sampling() -> None:
    args = build_parser().parse_args(
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
    assert guide_options(args) == GuideOptions(
        max_corrections=2,
        max_rounds=9,
        max_attempts=1,
        max_lost_chars=0,
        max_seconds=2.5,
        complete_on_budget=False,
        sampling=Sampling(temperature=0.5, seed=3),
    )


# -- one declaration for each option ---------------------------------------------------------------


def run_help(capsys: pytest.CaptureFixture[str]) -> str:
    """`backtrack run --help`, its whitespace made single spaces (argparse wraps lines)."""
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "--help"])
    return " ".join(capsys.readouterr().out.split())


OPTION_FIELDS = dataclasses.fields(GuideOptions)
BOUNDED = [f for f in OPTION_FIELDS if declaration(f).kind in ("count", "seconds")]


@pytest.mark.parametrize("option_field", OPTION_FIELDS, ids=lambda f: f.name)
def test_each_option_has_a_flag_with_its_declared_help(
    option_field: dataclasses.Field[Any], capsys: pytest.CaptureFixture[str]
) -> None:
    declared = declaration(option_field)  # a field declared without option() is a TypeError
    assert declared.help in " ".join((GuideOptions.__doc__ or "").split())
    shown = run_help(capsys)
    if declared.kind == "sampling":  # the target's Sampling: a flag for each of its parts
        for part in ("--target-temperature T", "--target-top-p P", "--target-seed N"):
            assert part in shown
        return
    flag = "--" + option_field.name.replace("_", "-")
    written = {
        "count": f"{flag} N",
        "seconds": f"{flag} SECONDS",
        "switch": f"{flag}, --no-{flag[2:]}",
    }
    default = getattr(GuideOptions(), option_field.name)
    default_shown = "none" if default is None else default
    assert f"{written[declared.kind]} {declared.help} (default: {default_shown})" in shown


@pytest.mark.parametrize("option_field", BOUNDED, ids=lambda f: f.name)
def test_each_bound_is_the_declared_one_on_the_flag_and_in_the_checks(
    option_field: dataclasses.Field[Any], capsys: pytest.CaptureFixture[str]
) -> None:
    declared, name = declaration(option_field), option_field.name
    flag = "--" + name.replace("_", "-")
    smallest = declared.minimum if declared.kind == "count" else 0.5
    too_small = declared.minimum - 1 if declared.kind == "count" else 0
    args = build_parser().parse_args(["run", "hi", f"{flag}={smallest}"])
    assert getattr(guide_options(args), name) == smallest
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "hi", f"{flag}={too_small}"])
    assert flag in capsys.readouterr().err
    with pytest.raises(ValueError, match=re.escape(f"{name} must be {declared.wanted()}, got")):
        GuideOptions(**{name: too_small})


def test_an_option_without_a_declaration_is_refused() -> None:
    @dataclasses.dataclass(frozen=True)
    class MoreOptions(GuideOptions):
        undeclared: int = 1

    with pytest.raises(
        TypeError, match=r"GuideOptions\.undeclared is not declared with option\(\)"
    ):
        MoreOptions()


BUDGETS = {
    "max_corrections",
    "max_draft_tokens",
    "max_rounds",
    "correction_tokens",
    "completion_tokens",
    "max_preamble_chars",
    "max_attempts",
    "repair_window",
    "read_after_cut",
    "max_repairs",
    "max_seconds",
}


def test_the_budgets_are_the_options_that_cost_work_memory_or_time() -> None:
    declared = {f.name for f in dataclasses.fields(GuideOptions) if declaration(f).budget}
    assert declared == BUDGETS
    assert "a budget: `backtrack serve` holds a client's to its own" in (GuideOptions.__doc__ or "")


def test_capped_holds_each_budget_to_the_ceilings_and_leaves_the_rest() -> None:
    ceiling = GuideOptions(max_draft_tokens=64, max_preamble_chars=1000, max_seconds=30.0)
    huge = {name: 10**9 for name in BUDGETS}
    asked = GuideOptions(**huge, min_reuse_chars=10**6, complete_on_budget=False)
    got = capped(asked, ceiling)
    assert {name: getattr(got, name) for name in BUDGETS} == {
        name: getattr(ceiling, name) for name in BUDGETS
    }
    assert got.min_reuse_chars == 10**6 and got.complete_on_budget is False  # no budgets
    # Less than the ceiling stays; None (no limit) is held to a ceiling that has one.
    assert capped(GuideOptions(max_draft_tokens=8), ceiling).max_draft_tokens == 8
    unbounded = GuideOptions(max_preamble_chars=None, max_seconds=None)
    assert capped(unbounded, ceiling).max_seconds == 30.0
    assert capped(unbounded, ceiling).max_preamble_chars == 1000
    assert capped(ceiling, unbounded).max_seconds == 30.0  # a ceiling of None holds nothing
