"""GuideOptions: every budget and policy of a guided run, in one typed place.

`guide`, `aguide`, `wrap` and the CLI take the same options. Keyword arguments are a
convenience: `guide(fn, "json", max_corrections=4)` is the same as
`guide(fn, "json", options=GuideOptions(max_corrections=4))`, and a name that is not an option
is a TypeError naming the valid ones and the closest match.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass, fields, replace

from local_target import Sampling
from providers.retry import DEFAULT_MAX_ATTEMPTS

GREEDY = Sampling()

# Names people reach for that mean the target's sampling, which is its own option.
_SAMPLING_WORDS = frozenset({"temperature", "top_p", "seed"})


@dataclass(frozen=True)
class GuideOptions:
    """Budgets and policies of one guided run.

    `max_corrections`: corrections by the local target before it completes the text itself (or,
    with `complete_on_budget=False`, the run stops). `max_draft_tokens`: the token budget of each
    draft request; the loop also reads at most 32 characters per token of a round, whatever the
    drafter. `max_rounds`: drafts and corrections in all. `correction_tokens` and
    `completion_tokens`: the target's budget for one correction and for the final completion.
    `min_reuse_chars`: a draft's rejected rest that fits after a correction is kept when it
    completes the text or is at least this long. `max_preamble_chars`: before anything is
    committed, how much of a draft may be read to skip a preamble ("Here is the JSON:").
    `max_attempts`: attempts per draft round, the first included (retries resume from the
    committed text). `repair_window`: at a cut, how much more of the draft is read to
    find an edit after which it fits again (backtrack.repair.search), read on from the same stream;
    0 turns repairs off (every cut is a correction and a new call). `max_repairs`: edits per run.
    `max_lost_chars`: when set, a run that leaves out more of the API's answer text than this
    (`GuideResult.lost_chars`: trailing text dropped, text a repair skipped or took back, a cut
    draft's rest never asked for again) raises TextLostError, carrying the result, instead of
    returning it. `max_seconds`: when set, the run's wall-clock bound: past it, the draft being
    read is closed and no API call is made; the target completes the text from what is committed
    (at most `completion_tokens`; with `complete_on_budget=False` the run stops there), so a run
    ends about one completion after the bound. `sampling`: the local target's sampling (default:
    greedy); the API's own temperature is the API call's business (wrap's create kwargs, a
    drafter's create_kwargs).
    """

    max_corrections: int = 8
    max_draft_tokens: int = 512
    max_rounds: int = 32
    correction_tokens: int = 16
    completion_tokens: int = 512
    complete_on_budget: bool = True
    min_reuse_chars: int = 12
    max_preamble_chars: int = 2000
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    repair_window: int = 64
    max_repairs: int = 32
    max_lost_chars: int | None = None
    max_seconds: float | None = None
    sampling: Sampling = GREEDY

    def __post_init__(self) -> None:
        at_least = {
            "max_corrections": 0,
            "max_draft_tokens": 1,
            "max_rounds": 1,
            "correction_tokens": 1,
            "completion_tokens": 1,
            "min_reuse_chars": 0,
            "max_preamble_chars": 0,
            "max_attempts": 1,
            "repair_window": 0,
            "max_repairs": 0,
            "max_lost_chars": 0,
        }
        optional = {"max_lost_chars"}  # None: no limit
        for name, low in at_least.items():
            value = getattr(self, name)
            if value is None and name in optional:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                none = "None or " if name in optional else ""
                raise ValueError(f"{name} must be {none}a whole number >= {low}, got {value!r}")
        seconds = self.max_seconds
        if seconds is not None and (
            isinstance(seconds, bool)
            or not isinstance(seconds, (int, float))
            or not math.isfinite(seconds)
            or seconds <= 0
        ):
            raise ValueError(f"max_seconds must be None or a number > 0, got {seconds!r}")
        if not isinstance(self.sampling, Sampling):
            raise ValueError(f"sampling must be a Sampling, got {self.sampling!r}")
        if not isinstance(self.complete_on_budget, bool):
            raise ValueError(
                f"complete_on_budget must be True or False, got {self.complete_on_budget!r}"
            )


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
