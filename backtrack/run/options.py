"""GuideOptions: every budget and policy of a guided run, in one typed place.

`guide`, `aguide`, `wrap` and the CLI take the same options. Keyword arguments are a
convenience: `guide(fn, "json", max_corrections=4)` is the same as
`guide(fn, "json", options=GuideOptions(max_corrections=4))`, and a name that is not an option
is a TypeError naming the valid ones and the closest match.

Each option is declared once, with its field (`option(default, Option(...))`): what values it
takes and one line of help. GuideOptions' checks, the option list in its docstring and the CLI's
flags (backtrack.cli.parser) are all read from those declarations.
"""

from __future__ import annotations

import difflib
import inspect
import math
import textwrap
from dataclasses import Field, dataclass, field, fields, replace
from typing import TYPE_CHECKING, Literal, TypeVar

from local_target import Sampling
from providers.retry import DEFAULT_MAX_ATTEMPTS

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

GREEDY = Sampling()

# Names people reach for that mean the target's sampling, which is its own option.
_SAMPLING_WORDS = frozenset({"temperature", "top_p", "seed"})

# The kinds of value an option takes: a whole number with a lower bound, a number of seconds
# (> 0), True or False, the local target's Sampling.
OptionKind = Literal["count", "seconds", "switch", "sampling"]

_DECLARED = "option"  # the key of an option's declaration in its field's metadata

T = TypeVar("T")
D = TypeVar("D", bound="DataclassInstance")


@dataclass(frozen=True)
class Option:
    """The declaration of one option: the kind of value it takes (for "count", the smallest
    allowed), whether None (no limit) is allowed, one line of help (the CLI flag's), what the
    docstring adds to it, and whether it is a budget (more of it is more work and memory: a
    server holds its clients' to its own, `capped`)."""

    kind: OptionKind
    help: str
    minimum: int = 0
    none_allowed: bool = False
    more: str = ""
    budget: bool = False

    def wanted(self) -> str:
        """What a value must be, as an error about a bad one says it."""
        none = "None or " if self.none_allowed else ""
        if self.kind == "count":
            return f"{none}a whole number >= {self.minimum}"
        if self.kind == "seconds":
            return f"{none}a number > 0"
        if self.kind == "switch":
            return "True or False"
        return "a Sampling"

    def accepts(self, value: object) -> bool:
        if value is None:
            return self.none_allowed
        if self.kind == "switch":
            return isinstance(value, bool)
        if self.kind == "sampling":
            return isinstance(value, Sampling)
        if isinstance(value, bool):
            return False  # True is an int to Python, not a number to us
        if self.kind == "count":
            return isinstance(value, int) and value >= self.minimum
        return isinstance(value, (int, float)) and math.isfinite(value) and value > 0

    def check(self, name: str, value: object) -> None:
        """A ValueError naming the option when it does not accept `value`."""
        if not self.accepts(value):
            raise ValueError(f"{name} must be {self.wanted()}, got {value!r}")


def option(default: T, declared: Option) -> T:
    """A GuideOptions field: its default and its declaration."""
    return field(default=default, metadata={_DECLARED: declared})


def declaration(option_field: Field[object]) -> Option:
    """The declaration of one of GuideOptions' fields; a field declared without one is a
    TypeError, so that every option is checked, listed and given a flag."""
    declared = option_field.metadata.get(_DECLARED)
    if not isinstance(declared, Option):
        raise TypeError(f"GuideOptions.{option_field.name} is not declared with option()")
    return declared


def _listed(cls: type[D]) -> type[D]:
    """`cls` with the list of its options, read from their declarations, ending its docstring."""
    entries = []
    for option_field in fields(cls):
        declared = declaration(option_field)
        default = option_field.default
        head = f"{option_field.name}: {option_field.type} = {default!r} ({declared.wanted()})"
        text = f"{declared.help}; {declared.more}" if declared.more else declared.help
        if declared.budget:
            text += " (a budget: `backtrack serve` holds a client's to its own)"
        indent = " " * 4
        entries.append(
            f"{head}\n{textwrap.fill(text, 96, initial_indent=indent, subsequent_indent=indent)}"
        )
    cls.__doc__ = f"{inspect.cleandoc(cls.__doc__ or '')}\n\nOptions:\n\n" + "\n".join(entries)
    return cls


@_listed
@dataclass(frozen=True)
class GuideOptions:
    """Budgets and policies of one guided run. Each field is declared with `option()`: its
    checks, this list and the CLI's flags are read from there."""

    max_corrections: int = option(
        8,
        Option(
            "count",
            "local corrections at most",
            minimum=0,
            more="then the target completes the text itself (with complete_on_budget=False, "
            "the run stops)",
            budget=True,
        ),
    )
    max_draft_tokens: int = option(
        512,
        Option(
            "count",
            "tokens per draft request",
            minimum=1,
            more="the loop also reads at most 32 characters per token of a round, whatever the "
            "drafter",
            budget=True,
        ),
    )
    max_rounds: int = option(
        32, Option("count", "drafts and corrections in all", minimum=1, budget=True)
    )
    correction_tokens: int = option(
        16,
        Option(
            "count",
            "tokens per correction",
            minimum=1,
            more="the target's budget for one",
            budget=True,
        ),
    )
    completion_tokens: int = option(
        512,
        Option(
            "count",
            "tokens the target may finish with",
            minimum=1,
            more="its budget for the final completion",
            budget=True,
        ),
    )
    complete_on_budget: bool = option(
        True,
        Option(
            "switch",
            "when the corrections run out, the target finishes the text",
            more="False: the run stops there",
        ),
    )
    min_reuse_chars: int = option(
        12,
        Option(
            "count",
            "a draft's rest that fits after a correction is kept from this length",
            minimum=0,
            more="or when it completes the text, whatever its length",
        ),
    )
    max_preamble_chars: int | None = option(
        None,
        Option(
            "count",
            "how much of a first draft may be skipped as preamble",
            minimum=0,
            none_allowed=True,
            more='such as "Here is the JSON:" or pages of reasoning, read before anything is '
            "committed; None: all of it (the search is linear: about 0.3 s for 200 KB)",
            budget=True,
        ),
    )
    max_attempts: int = option(
        DEFAULT_MAX_ATTEMPTS,
        Option(
            "count",
            "attempts per draft request, retries included",
            minimum=1,
            more="a retry resumes from the committed text",
            budget=True,
        ),
    )
    repair_window: int = option(
        64,
        Option(
            "count",
            "characters read past a cut to find an edit (0: no repairs)",
            minimum=0,
            more="an edit after which the draft fits again (backtrack.repair.search), read on "
            "from the same stream; with 0 every cut is a correction and a new call",
            budget=True,
        ),
    )
    read_after_cut: int = option(
        512,
        Option(
            "count",
            "characters read past a cut that no edit repairs, for the correction to hand back to",
            minimum=0,
            more="the draft's rest after the target's correction is reused up to its next slip "
            "(backtrack.run.hand_back); 0 closes the stream at the cut, as does a "
            "`repair_window` of 0, and the API is asked again for what it had been writing "
            "(seen: SmolLM2's reply, closed a line after a string where a number goes, written "
            "again whole by a second call)",
            budget=True,
        ),
    )
    max_repairs: int = option(
        32,
        Option("count", "edits per run, each read on from the same stream", minimum=0, budget=True),
    )
    max_lost_chars: int | None = option(
        None,
        Option(
            "count",
            "more of the API's answer text left out than this is an error",
            minimum=0,
            none_allowed=True,
            more="the run raises TextLostError, carrying the result, instead of returning it "
            "(GuideResult.lost_chars: trailing text dropped, text a repair skipped or took back, "
            "a cut draft's rest never asked for again); None: no limit",
        ),
    )
    max_seconds: float | None = option(
        None,
        Option(
            "seconds",
            "the run's time bound: past it no API call, the target completes",
            none_allowed=True,
            more="the draft being read is closed, and the target completes the text from what "
            "is committed (at most completion_tokens; with complete_on_budget=False the run "
            "stops there), so a run ends about one completion after the bound. It holds while the "
            "drafter is called: a call not back 1 s past the bound is cancelled (async) or left "
            "in its thread (sync: a blocked thread cannot be stopped; backtrack.run.deadline); an "
            "SDK's own read timeout still makes a stalled request a retried ProviderError before "
            "it. None: no bound",
            budget=True,
        ),
    )
    # RUF009: option() is dataclasses.field, which ruff does not know; the Sampling is frozen.
    sampling: Sampling = option(  # noqa: RUF009
        GREEDY,
        Option(
            "sampling",
            "the local target's sampling, greedy by default",
            more="the API's own temperature is the API call's business (wrap's create kwargs, "
            "a drafter's create_kwargs)",
        ),
    )

    def __post_init__(self) -> None:
        for option_field in fields(self):
            declaration(option_field).check(option_field.name, getattr(self, option_field.name))


def resolve(
    caller: str,
    options: GuideOptions | None,
    changes: dict[str, object],
    also: tuple[str, ...] = (),
) -> GuideOptions:
    """`options` (default: GuideOptions()) with `changes` from `caller`'s keyword arguments. A name
    that is no option is a TypeError naming the valid ones (with `also`, the caller's other
    keywords) and the closest match."""
    if options is not None and not isinstance(options, GuideOptions):
        raise TypeError(f"{caller}(options=) takes a GuideOptions, not {type(options).__name__}")
    known = option_names()
    for name in changes:
        if name not in known:
            raise unknown_option(caller, name, also)
    base = options or GuideOptions()
    return replace(base, **changes) if changes else base  # type: ignore[arg-type]


def capped(options: GuideOptions, ceiling: GuideOptions) -> GuideOptions:
    """`options` with each budget held to `ceiling`'s (None is no limit): how `backtrack serve`
    keeps what a client asks for (its max_tokens, its `backtrack` options) within the server's
    own options, so that no request costs more work, memory or time than they allow."""
    changes: dict[str, object] = {}
    for option_field in fields(GuideOptions):
        if not declaration(option_field).budget:
            continue
        asked, most = getattr(options, option_field.name), getattr(ceiling, option_field.name)
        if most is not None and (asked is None or asked > most):
            changes[option_field.name] = most
    return replace(options, **changes) if changes else options  # type: ignore[arg-type]


def option_names() -> tuple[str, ...]:
    return tuple(f.name for f in fields(GuideOptions))


def unknown_option(caller: str, name: str, also: tuple[str, ...] = ()) -> TypeError:
    """The error for `caller(name=...)` where `name` is no option: the valid names and the
    closest one."""
    valid = sorted((*option_names(), *also))
    if name in _SAMPLING_WORDS:
        hint = (
            f"; the local target's {name} is sampling=Sampling({name}=...) "
            "(the API's own goes with the API call)"
        )
    else:
        close = difflib.get_close_matches(name, valid, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
    return TypeError(f"{caller}() got an unknown option {name!r}{hint} (valid: {', '.join(valid)})")
