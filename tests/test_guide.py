"""guide() and aguide() end to end: scripted black boxes as drafters, the real SmolLM2 target.

A scripted black box behaves like an API that means to write one document: given the committed
prefix it continues its document from where the prefix stops matching it, and it can slip (a
verbatim first reply with errors, or a persistent habit applied to every reply), stream in chunks,
and fail (ProviderError, retryable or not). The target is the real LocalTarget.default(); budgets
are kept small (SmolLM2 runs at tens of milliseconds a token on a CPU).

Every result is checked against the same invariants (`check_result`): the text parses when
`valid`, it is always a valid prefix, the spans in OUTPUT_ORIGINS concatenate to it, the counts
agree with the spans, every cut round says what the grammar expected there.
"""

from __future__ import annotations

import asyncio
import html
import random
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

import grammars
import providers
from backtrack import Grammar, GrammarError, GuideResult, ProviderError, aguide, guide
from backtrack.trace import OUTPUT_ORIGINS
from local_target import LocalTarget
from local_target.session import Correction

pytestmark = pytest.mark.e2e

HAVE_SQL = "sqlite" in grammars.names()
JSON = Grammar.load("json")
needs_sql = pytest.mark.skipif(not HAVE_SQL, reason="no grammars/sqlite.lark")

# What the black boxes mean to write. One prompt, showing them, serves every run in this module:
# the target, like the black box, knows where the text is going, and it keeps the KV cache of the
# last prompt, so each session after the first starts from a copy instead of a forward pass.
DOC_A = '{"a": [1, 2, 3], "b": null}'
DOC_NAME = '{"name": "Ann", "ok": true, "n": null}'
DOC_AB = '{"a": 1, "b": 2}'
DOC_SQL = "SELECT name FROM users WHERE name LIKE 'a%' LIMIT 5"
PROMPT = (
    "Reply with the requested JSON value or SQLite query only. Valid replies look like:\n"
    + "\n".join((DOC_A, DOC_NAME, DOC_AB, DOC_SQL))
)

SMALL = {"max_corrections": 2, "correction_tokens": 8, "completion_tokens": 24}


# -- the scripted black box ------------------------------------------------------------------------


def common_prefix(a: str, b: str) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def continuation(
    doc: str,
    prefix: str,
    grammar: Grammar | None = None,
    fallbacks: Sequence[str] = (),
    window: int = 20,
) -> str:
    """What an API that means to write `doc` writes after `prefix`.

    Where the prefix is a start of the document, the rest of it. Otherwise the candidates are the
    points after the longest suffixes of the prefix's last `window` characters found in the
    document past where the two part, and that parting point (or a character or two past it, for
    text a correction replaced). Given a grammar, it takes the first candidate whose text completes
    the prefix, else the first whose text fits after it (a competent API reads what it continues),
    else the first of `fallbacks` that fits (what it would write after a prefix it did not mean);
    else, or without a grammar, the longest suffix of at least 3 characters, else the parting
    point.
    """
    if doc.startswith(prefix):
        return doc[len(prefix) :]
    parted = common_prefix(doc, prefix)
    tail = prefix[-window:]

    def after_suffixes(sizes: range) -> list[int]:
        found = (doc.find(tail[-n:], max(parted - n + 1, 0)) for n in sizes)
        return [at + n for at, n in zip(found, sizes, strict=True) if at >= 0]

    long = after_suffixes(range(len(tail), 2, -1))
    skips = [parted, parted + 1, parted + 2]  # or the text a correction replaced, skipped
    if grammar is not None:
        candidates = [*long, *after_suffixes(range(min(2, len(tail)), 0, -1)), *skips]
        for start in candidates:  # what completes the text
            if grammar.matches(prefix + doc[start:]):
                return doc[start:]
        for start in candidates:  # else what fits and says something
            rest = doc[start:]
            if rest and grammar.check(prefix + rest).chars == len(prefix) + len(rest):
                return rest
        for rest in fallbacks:
            if grammar.check(prefix + rest).chars == len(prefix) + len(rest):
                return rest
    return doc[[*long, *skips][0] :]


Failure = Callable[[int], "tuple[int, BaseException] | None"]


@dataclass
class BlackBox:
    """A scripted API meaning to write `doc`.

    `replies[i]`, when given (not None), is the verbatim reply to call i (a slip). `habit` is
    applied to every other reply (a persistent slip). `chunk` > 0 streams replies in pieces of
    that many characters (use `.stream` as the drafter). `fail(i)` may return (chunks, error):
    call i raises `error` after yielding that many chunks (0: at once).
    """

    doc: str
    replies: Sequence[str | None] = ()
    habit: Callable[[str], str] | None = None
    grammar: Grammar | None = None
    fallbacks: Sequence[str] = ()
    chunk: int = 0
    fail: Failure | None = None
    prefixes: list[str] = field(default_factory=list)
    yielded: list[int] = field(default_factory=list)  # chunks yielded, per call
    closed: list[bool] = field(default_factory=list)  # the generator was closed, per call

    def reply(self, prefix: str) -> str:
        call = len(self.prefixes)
        self.prefixes.append(prefix)
        if call < len(self.replies) and self.replies[call] is not None:
            return str(self.replies[call])
        text = continuation(self.doc, prefix, self.grammar, self.fallbacks)
        return self.habit(text) if self.habit else text

    def _failure(self, call: int) -> tuple[int, BaseException] | None:
        return self.fail(call) if self.fail else None

    def __call__(self, prompt: Any, prefix: str) -> str:
        failure = self._failure(len(self.prefixes))
        text = self.reply(prefix)
        if failure is not None:
            raise failure[1]
        return text

    def stream(self, prompt: Any, prefix: str) -> Iterator[str]:
        failure = self._failure(len(self.prefixes))
        text = self.reply(prefix)
        pieces = [text[i : i + self.chunk] for i in range(0, len(text), self.chunk)]
        self.yielded.append(0)
        self.closed.append(False)
        try:
            for index, piece in enumerate(pieces):
                if failure is not None and index >= failure[0]:
                    raise failure[1]
                self.yielded[-1] += 1
                yield piece
            if failure is not None:
                raise failure[1]
        except GeneratorExit:
            self.closed[-1] = True
            raise

    @property
    def calls(self) -> int:
        return len(self.prefixes)


# -- a scripted target, for loop decisions that must not depend on SmolLM2's choices ---------------


class ScriptedTarget:
    """Stands in for LocalTarget: each correction writes the next scripted text."""

    def __init__(self, *texts: str) -> None:
        self.texts = list(texts)
        self.calls: list[tuple[str, Any]] = []

    def session(self, prompt: Any) -> ScriptedTarget:
        return self

    def correct(self, text: str, grammar: Grammar, **options: Any) -> Correction:
        self.calls.append((text, options.get("until")))
        new = self.texts.pop(0)
        return Correction(
            text=new,
            tokens=tuple(range(len(new))),
            flags=("sampled",) * len(new),
            complete=grammar.matches(text + new),
            stop_reason="terminal",
            healed_bytes=0,
            seconds=0.0,
            forward_seconds=0.0,
            mask_seconds=0.0,
            forward_passes=1,
            runs=(("sampled", new),) if new else (),
        )


# -- invariants ------------------------------------------------------------------------------------


def check_result(result: GuideResult, grammar: Grammar) -> None:
    """What holds of every GuideResult, finished or partial."""
    text = result.text
    spans = result.trace.spans
    rounds = result.trace.rounds
    assert "".join(s.text for s in spans if s.origin in OUTPUT_ORIGINS) == text
    assert all(s.text for s in spans), "empty span"
    prefix_check = grammar.check(text)
    assert prefix_check.valid and prefix_check.chars == len(text), "committed text left the grammar"
    assert result.valid == grammar.matches(text)
    assert result.valid == result.complete
    if result.valid:
        assert grammar.matches(result.text)
    assert [r.index for r in rounds] == list(range(len(rounds)))
    assert all(0 <= s.round <= len(rounds) for s in spans)
    assert result.accepted_chars == sum(
        len(s.text) for s in spans if s.origin in ("draft", "reused")
    )
    assert result.rejected_chars == sum(
        len(s.text) for s in spans if s.origin in ("rejected", "dropped")
    )
    for r in rounds:
        own = [s for s in spans if s.round == r.index]
        if r.kind == "draft":
            drafted = sum(len(s.text) for s in own if s.origin == "draft")
            if r.retries:  # see test_round_counts_what_a_dropped_attempt_committed
                assert r.accepted_chars <= drafted, r
            else:
                assert r.accepted_chars == drafted, r
            rejected = sum(len(s.text) for s in own if s.origin == "rejected")
            if r.ended == "trailing":
                rejected += len(own[-1].text)
                assert own[-1].origin == "dropped"
            assert r.rejected_chars == rejected, r
            if r.ended in ("cut", "trailing"):
                assert r.cut_at == sum(
                    len(s.text) for s in spans if s.origin in OUTPUT_ORIGINS and s.round <= r.index
                )
            if r.ended == "cut":
                assert r.expected, f"round {r.index} was cut with nothing expected"
            assert r.local_tokens == 0
        else:
            assert not any(s.origin in ("draft", "rejected", "dropped") for s in own)
            assert r.accepted_chars == sum(len(s.text) for s in own if s.origin == "reused")
            assert r.retries == 0 and r.input_tokens == 0 and r.output_tokens == 0
    assert result.api_calls == sum(1 + r.retries for r in rounds if r.kind == "draft")
    assert result.corrections == sum(1 for r in rounds if r.kind != "draft")
    finished = {"complete", "trailing_dropped", "target_completed"}
    if result.stop_reason in finished:
        assert result.valid, result.stop_reason
    if result.stop_reason == "incomplete":
        assert not result.valid


def good_prefix(answer: str, grammar: Grammar) -> str:
    """The longest start of `answer` the grammar can continue: what must be kept verbatim."""
    return answer[: grammar.check(answer).chars]


def leading_dropped(result: GuideResult) -> str:
    """The preamble: the dropped spans before any output."""
    out = []
    for span in result.trace.spans:
        if span.origin != "dropped":
            break
        out.append(span.text)
    return "".join(out)


@pytest.fixture
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    import providers.retry

    monkeypatch.setattr(providers.retry, "backoff", lambda attempt, exc: 0.0)


def run(
    box: BlackBox, grammar: Any, target: Any, *, stream: bool = False, **options: Any
) -> GuideResult:
    fn = box.stream if stream else box
    settings = {**SMALL, **options}
    return guide(providers.FunctionDrafter(fn), grammar, prompt=PROMPT, target=target, **settings)


# -- repairs ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    grammar: str
    doc: str  # what the black box means to write
    draft: str  # its first reply, with the slip
    preamble: str = ""  # what must be dropped before the answer
    habit: Callable[[str], str] | None = None
    fallbacks: tuple[str, ...] = ()


def _python(text: str) -> str:
    return text.replace("true", "True").replace("null", "None")


CASES = {
    "json-trailing-comma": Case("json", DOC_A, '{"a": [1, 2,], "b": null}'),
    "json-single-quotes": Case("json", DOC_NAME, "{'name': 'Ann', 'ok': true, 'n': null}"),
    "json-python-literals": Case("json", DOC_NAME, '{"name": "Ann", "ok": True, "n": None}'),
    "json-python-literals-habit": Case(
        "json", DOC_NAME, '{"name": "Ann", "ok": True, "n": None}', habit=_python
    ),
    "json-fenced-with-prose": Case(
        "json",
        '{"a": 1}',
        'Here is the JSON:\n```json\n{"a": 1}\n```\nHope this helps!',
        preamble="Here is the JSON:\n```json\n",
    ),
    "json-prose-before": Case("json", DOC_A, f"Sure! {DOC_A}\nAs requested.", preamble="Sure!"),
    "json-unclosed-bracket": Case("json", DOC_A, '{"a": [1, 2, 3}, "b": null}'),
    "json-extra-bracket": Case("json", DOC_A, '{"a": [1, 2, 3]], "b": null}'),
    "json-truncated": Case("json", DOC_A, '{"a": [1, 2'),
    # An API that stops early and then has nothing more to say: the target finishes the text.
    "json-truncated-then-silent": Case("json", DOC_A, '{"a": [1, 2', habit=lambda _: ""),
    "sql-ilike": Case(
        "sqlite",
        "SELECT name FROM users WHERE name LIKE 'a%' LIMIT 5",
        "SELECT name FROM users WHERE name ILIKE 'a%' LIMIT 5",
        # The cut leaves "... WHERE name I": the target goes on with IN or IS.
        fallbacks=("'a%') LIMIT 5", " 'a%') LIMIT 5", "('a%') LIMIT 5", " NULL LIMIT 5"),
    ),
    "sql-top": Case("sqlite", "SELECT name FROM users LIMIT 5", "SELECT TOP 5 name FROM users"),
    "sql-similar-to": Case(
        "sqlite",
        "SELECT name FROM users WHERE name LIKE 'a%'",
        "SELECT name FROM users WHERE name SIMILAR TO 'a%'",
    ),
}


def _case_params() -> list[Any]:
    return [
        pytest.param(case, id=name, marks=needs_sql if case.grammar == "sqlite" else ())
        for name, case in CASES.items()
    ]


@pytest.mark.parametrize("case", _case_params())
def test_repairs_slip(case: Case, target: LocalTarget) -> None:
    grammar = Grammar.load(case.grammar)
    box = BlackBox(
        case.doc, replies=[case.draft], habit=case.habit, grammar=grammar, fallbacks=case.fallbacks
    )
    result = run(box, grammar, target)
    check_result(result, grammar)
    assert result.valid, (result.stop_reason, result.text)
    assert grammar.matches(result.text)
    assert leading_dropped(result) == case.preamble
    assert result.text.startswith(good_prefix(case.draft[len(case.preamble) :], grammar))
    assert result.api_calls == box.calls <= SMALL["max_corrections"] + 2
    assert result.stop_reason in ("complete", "trailing_dropped", "target_completed")


def test_keeps_a_good_start_that_a_later_offset_would_continue_longer() -> None:
    """Seeking the answer's start must not jump inside a good start: `{"ok": True...` is an
    answer cut after 7 characters, not a preamble `{"ok` before the string `": True, "`."""
    box = BlackBox('{"ok": true, "v": null}', replies=['{"ok": True, "v": None}'])
    result = run(box, JSON, ScriptedTarget(), max_corrections=0, complete_on_budget=False)
    check_result(result, JSON)
    assert leading_dropped(result) == ""
    assert result.text == '{"ok": '


def test_clean_draft_needs_no_target() -> None:
    doc = '{"a": [1, 2, 3], "b": {"c": "d"}}'
    box = BlackBox(doc)
    result = run(box, JSON, ScriptedTarget())  # would fail if asked to correct
    check_result(result, JSON)
    assert (result.text, result.stop_reason, result.api_calls, result.corrections) == (
        doc,
        "complete",
        1,
        0,
    )
    assert [s.origin for s in result.trace.spans] == ["draft"]


# -- reuse -----------------------------------------------------------------------------------------


def test_missing_comma_reuses_the_rejected_rest(target: LocalTarget) -> None:
    draft = '{"a": 1 "b": 2}'
    box = BlackBox('{"a": 1, "b": 2}', replies=[draft], grammar=JSON)
    result = run(box, JSON, target)
    check_result(result, JSON)
    assert result.valid and result.stop_reason == "complete"
    assert result.text.startswith('{"a": 1 ')
    reused = [s for s in result.trace.spans if s.origin == "reused"]
    assert [s.text for s in reused] == ['"b": 2}']
    assert result.text.endswith('"b": 2}')
    assert result.reused_chars == len('"b": 2}')
    assert result.corrections == 1


def test_reused_remainder_that_completes_needs_no_second_call() -> None:
    box = BlackBox('{"a": 1, "b": 2}', replies=['{"a": 1 "b": 2}'], grammar=JSON)
    result = run(box, JSON, ScriptedTarget(","))
    check_result(result, JSON)
    assert result.text == '{"a": 1 ,"b": 2}'
    assert result.reused_chars == len('"b": 2}')
    assert result.api_calls == 1


def test_short_remainder_is_not_reused_unless_it_completes() -> None:
    """A rejected rest shorter than min_reuse_chars that does not complete the text is dropped
    from the output (kept as rejected) and the drafter is asked again."""
    box = BlackBox('{"a": 1, "b": 2, "c": 3}', replies=['{"a": 1 "b": 2, '], grammar=JSON)
    result = run(box, JSON, ScriptedTarget(","))
    check_result(result, JSON)
    assert result.reused_chars == 0
    assert box.prefixes[1] == '{"a": 1 ,'
    assert result.text == '{"a": 1 , "b": 2, "c": 3}'


def test_remainder_is_not_reused_inside_a_string_the_correction_opened() -> None:
    box = BlackBox(
        '{"name": "Ann", "tags": ["x"]}', replies=["{'name': 'Ann', 'tags': ['x']}"], grammar=JSON
    )
    result = run(box, JSON, ScriptedTarget('"', "", "", ""))
    check_result(result, JSON)
    assert result.reused_chars == 0
    assert "'" not in result.text


# -- streaming -------------------------------------------------------------------------------------


@pytest.mark.parametrize("chunk", [1, 3, 7], ids=["chunk1", "chunk3", "chunk7"])
def test_stream_is_closed_at_the_first_bad_byte(chunk: int, target: LocalTarget) -> None:
    draft = '{"a": [1, 2, 3}, "b": [3, 4, 5, 6, 7, 8, 9]}'
    bad = draft.index("}")
    box = BlackBox(DOC_A, replies=[draft], chunk=chunk, grammar=JSON)
    result = run(box, JSON, target, stream=True)
    check_result(result, JSON)
    assert result.valid
    assert box.yielded[0] == bad // chunk + 1, "the generator was advanced past the bad byte"
    assert box.closed[0], "the generator was not closed"
    first = result.trace.rounds[0]
    assert (first.ended, first.closed_early, first.cut_at) == ("cut", True, bad)
    assert first.rejected_chars == (bad // chunk + 1) * chunk - bad
    assert result.text.startswith(draft[:bad])


@pytest.mark.anyio
async def test_async_stream_is_closed_at_the_first_bad_byte(target: LocalTarget) -> None:
    draft = '{"a": [1, 2, 3}, "b": [3, 4, 5, 6, 7, 8, 9]}'
    seen: list[int] = []
    closed: list[bool] = []

    async def drafter(prompt: Any, prefix: str):
        reply = draft if not prefix else continuation(DOC_A, prefix, JSON)
        seen.append(0)
        closed.append(False)
        try:
            for i in range(0, len(reply), 2):
                seen[-1] += 1
                yield reply[i : i + 2]
        except GeneratorExit:
            closed[-1] = True
            raise

    result = await aguide(
        providers.FunctionDrafter(drafter), JSON, prompt=PROMPT, target=target, **SMALL
    )
    check_result(result, JSON)
    assert result.valid
    assert seen[0] == draft.index("}") // 2 + 1
    assert closed[0]
    assert result.trace.rounds[0].closed_early


# -- stopping --------------------------------------------------------------------------------------

TRAILING = {
    "json-newline-prose": ("json", '{"a": 1}\nThis object has one key.', '{"a": 1}\n'),
    "json-fence": ("json", '{"a": 1} ```\n', '{"a": 1} '),
    "json-fence-newline": ("json", '{"a": [true]}\n```\nDone.', '{"a": [true]}\n'),
    "sql-newline-prose": ("sqlite", "SELECT a FROM t;\nThis returns a.", "SELECT a FROM t;\n"),
    # On the same line: the grammar could only go on with blanks.
    "json-same-line-prose": ("json", '{"a": 1} Hope this helps!', '{"a": 1} '),
    "sql-same-line-prose": ("sqlite", "SELECT a FROM t; Hope this helps!", "SELECT a FROM t; "),
}


def _trailing_params() -> list[Any]:
    return [
        pytest.param(gname, draft, kept, id=name, marks=[needs_sql] if gname == "sqlite" else [])
        for name, (gname, draft, kept) in TRAILING.items()
    ]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "chunks"])
@pytest.mark.parametrize(("gname", "draft", "kept"), _trailing_params())
def test_trailing_prose_is_dropped_not_corrected(
    gname: str, draft: str, kept: str, stream: bool, target: LocalTarget
) -> None:
    grammar = Grammar.load(gname)
    box = BlackBox(draft[: len(kept)], replies=[draft], grammar=grammar, chunk=3)
    result = run(box, grammar, target, stream=stream)
    check_result(result, grammar)
    assert result.stop_reason == "trailing_dropped"
    assert result.text == kept
    assert result.corrections == 0 and result.local_tokens == 0
    assert result.api_calls == 1
    last = result.trace.spans[-1]
    assert (last.origin, last.round) == ("dropped", 0)
    assert result.trace.rounds[-1].ended == "trailing"
    if stream:  # closed at the first chunk that went past the answer
        assert draft[len(kept) :].startswith(last.text)
        assert box.closed == [True] and box.yielded == [len(kept) // 3 + 1]
    else:
        assert last.text == draft[len(kept) :]


def test_zero_budget_lets_the_target_complete(target: LocalTarget) -> None:
    box = BlackBox(DOC_A, replies=['{"a": [1, 2, 3}, "b": null}'], grammar=JSON)
    result = run(box, JSON, target, max_corrections=0, completion_tokens=16)
    check_result(result, JSON)
    assert result.stop_reason in ("target_completed", "incomplete")
    if result.stop_reason == "target_completed":
        assert result.valid and JSON.matches(result.text)
    assert result.api_calls == 1
    assert [r.kind for r in result.trace.rounds] == ["draft", "completion"]
    assert result.text.startswith('{"a": [1, 2, 3')


def test_zero_budget_without_completion_stops_invalid() -> None:
    box = BlackBox(DOC_A, replies=['{"a": [1, 2, 3}, "b": null}'], grammar=JSON)
    result = run(box, JSON, ScriptedTarget(), max_corrections=0, complete_on_budget=False)
    check_result(result, JSON)
    assert (result.stop_reason, result.valid, result.text) == (
        "max_corrections",
        False,
        '{"a": [1, 2, 3',
    )
    assert result.local_tokens == 0 and result.corrections == 0


def test_budget_without_completion_after_corrections() -> None:
    """A black box that slips again after the only correction allowed: the run stops invalid."""
    box = BlackBox('{"a": [1, 2, 3]}', replies=['{"a": [1, 2}', ", 3}"], grammar=JSON)
    result = run(box, JSON, ScriptedTarget(","), max_corrections=1, complete_on_budget=False)
    check_result(result, JSON)
    assert (result.stop_reason, result.valid, result.text) == (
        "max_corrections",
        False,
        '{"a": [1, 2,',
    )
    assert (result.corrections, result.api_calls) == (1, 2)


# -- faults ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stream", "fail_call", "make_error"),
    [
        pytest.param(
            True, 0, lambda: ProviderError("bad", retryable=False), id="first-call-mid-stream"
        ),
        pytest.param(
            True, 1, lambda: ProviderError("bad", retryable=False), id="after-correction-mid-stream"
        ),
        pytest.param(
            False,
            1,
            lambda: ProviderError("bad", retryable=False, status=400),
            id="after-correction-at-once",
        ),
        pytest.param(True, 1, lambda: RuntimeError("drafter bug"), id="plain-exception"),
    ],
)
def test_fatal_error_carries_the_committed_text(
    stream: bool, fail_call: int, make_error: Callable[[], BaseException], target: LocalTarget
) -> None:
    doc = DOC_A
    box = BlackBox(doc, replies=['{"a": [1, 2'], chunk=3, grammar=JSON)
    box.fail = lambda i: (2 if stream else 0, make_error()) if i == fail_call else None
    with pytest.raises(ProviderError) as caught:
        run(box, JSON, target, stream=stream)
    partial = caught.value.partial
    assert isinstance(partial, GuideResult)
    check_result(partial, JSON)
    assert partial.stop_reason == "error"
    assert partial.trace.rounds[-1].ended == "error"
    assert partial.trace.rounds[-1].error
    before = box.prefixes[fail_call]
    reply = box.replies[0] if fail_call == 0 else continuation(doc, before, JSON)
    sent = reply[:6] if stream else ""  # two chunks of 3 characters came before the error
    assert partial.text == good_prefix(before + sent, JSON)
    assert partial.api_calls == box.calls == fail_call + 1


def test_retryable_errors_until_the_attempts_run_out(no_backoff: None) -> None:
    error = ProviderError("overloaded", retryable=True, status=529)
    box = BlackBox('{"a": 1}', fail=lambda i: (0, error))
    with pytest.raises(ProviderError) as caught:
        guide(providers.FunctionDrafter(box), JSON, target=ScriptedTarget(), max_attempts=3)
    partial = caught.value.partial
    check_result(partial, JSON)
    assert caught.value.retryable
    assert partial.text == "" and partial.api_calls == 3 == box.calls
    assert partial.trace.rounds[-1].retries == 2


def _flaky(seed: int, rate: float = 0.3) -> Failure:
    rng = random.Random(seed)

    def fail(call: int) -> tuple[int, BaseException] | None:
        if rng.random() >= rate:
            return None
        return rng.randrange(0, 4), ProviderError(f"flaky call {call}", retryable=True, status=503)

    return fail


@pytest.mark.usefixtures("no_backoff")
@pytest.mark.parametrize("attempts", [2, 4], ids=lambda n: f"attempts{n}")
def test_flaky_provider_never_loses_or_repeats_text(attempts: int) -> None:
    """40 seeded runs, 30 % of calls failing (at once or mid-stream): each ends with the whole
    document, or raises with a partial result that is a start of it."""
    doc = '{"id": 7, "tags": ["a", "b"], "ok": false, "n": null}'
    outcomes = {"complete": 0, "error": 0, "retried": 0, "resumed": 0}
    for seed in range(40):
        box = BlackBox(doc, chunk=5, fail=_flaky(seed))
        try:
            # A clean document needs no corrections: the scripted target has none to give.
            result = run(box, JSON, ScriptedTarget(), stream=True, max_attempts=attempts)
        except ProviderError as exc:
            result = exc.partial
            assert result.stop_reason == "error", seed
            assert exc.retryable, seed
        check_result(result, JSON)
        assert doc.startswith(result.text), f"seed {seed}: text lost or repeated"
        if result.stop_reason != "error":
            assert (result.text, result.valid, result.stop_reason) == (doc, True, "complete"), seed
        assert result.api_calls == box.calls, seed
        drafts = [r for r in result.trace.rounds if r.kind == "draft"]
        assert sum(r.retries for r in drafts) == box.calls - len(drafts), seed
        assert all(r.retries < attempts for r in drafts), seed
        outcomes["error" if result.stop_reason == "error" else "complete"] += 1
        outcomes["retried"] += any(r.retries for r in drafts)
        outcomes["resumed"] += any(
            n and p for n, p in zip(box.yielded, box.prefixes[1:], strict=False)
        )
    assert outcomes["complete"] and outcomes["retried"] and outcomes["resumed"], outcomes
    if attempts == 2:
        assert outcomes["error"], outcomes


@pytest.mark.usefixtures("no_backoff")
@pytest.mark.parametrize("seed", range(4), ids=lambda s: f"seed{s}")
def test_flaky_provider_with_slips(seed: int, target: LocalTarget) -> None:
    doc = DOC_A
    box = BlackBox(
        doc, replies=['{"a": [1, 2, 3}, "b": null}'], chunk=4, fail=_flaky(seed, 0.3), grammar=JSON
    )
    try:
        result = run(box, JSON, target, stream=True)
    except ProviderError as exc:
        result = exc.partial
    check_result(result, JSON)
    good = '{"a": [1, 2, 3'
    assert result.text.startswith(good) or good.startswith(result.text)
    assert result.api_calls == box.calls
    if result.stop_reason != "error":
        assert result.valid


@pytest.mark.usefixtures("no_backoff")
def test_round_counts_what_a_dropped_attempt_committed() -> None:
    doc = '{"id": 7, "tags": ["a", "b"]}'
    drop = ProviderError("connection lost", retryable=True)
    box = BlackBox(doc, chunk=5, fail=lambda i: (3, drop) if i == 0 else None)
    result = run(box, JSON, ScriptedTarget(), stream=True)
    assert (result.text, result.api_calls) == (doc, 2)
    (only,) = result.trace.rounds
    assert only.retries == 1
    assert only.accepted_chars == len(doc)


def test_retry_policy_module_imports_first() -> None:
    """Tests patch `providers.retry.backoff`; importing that module first must work."""
    code = "import providers.retry; providers.retry.backoff"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr.strip().splitlines()[-1:]


# -- the HTML view ---------------------------------------------------------------------------------

SCRIPT = "<script>alert(1)</script>"


def test_html_escapes_model_text() -> None:
    draft = f'{SCRIPT}\n{{"s": "{SCRIPT}", "a": 1 {SCRIPT}'
    box = BlackBox("", replies=[draft])
    result = guide(
        providers.FunctionDrafter(box),
        JSON,
        prompt=f'{SCRIPT} & "quotes"',
        target=ScriptedTarget(),
        max_corrections=0,
        complete_on_budget=False,
    )
    check_result(result, JSON)
    assert result.text == f'\n{{"s": "{SCRIPT}", "a": 1 '
    origins = {s.origin for s in result.trace.spans}
    assert {"dropped", "draft", "rejected"} <= origins
    page = result.to_html()
    assert "<script" not in page.lower()
    assert html.escape(SCRIPT) in page
    for span in result.trace.spans:
        assert html.escape(span.text, quote=True) in page
    assert html.escape(f'{SCRIPT} & "quotes"', quote=True) in page


def test_html_of_a_corrected_run(target: LocalTarget) -> None:
    box = BlackBox(DOC_A, replies=['{"a": [1, 2, 3}, "b": null}'], grammar=JSON)
    result = run(box, JSON, target)
    page = result.to_html()
    assert page.lstrip().lower().startswith("<!doctype html")
    for span in result.trace.spans:
        assert html.escape(span.text, quote=True) in page
    assert "<script" not in page.lower()


# -- concurrency -----------------------------------------------------------------------------------

SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"],
    "additionalProperties": False,
}


def _concurrent_box(i: int) -> tuple[BlackBox, Grammar]:
    if i % 2:
        doc = f'{{"a": [{i}, {i + 1}, {i + 2}], "b": null}}'
        return BlackBox(doc, replies=[doc.replace("]", "}")], grammar=JSON), JSON
    doc = f'{{"a": {i}, "b": {i * 3}}}'
    return BlackBox(doc, replies=[doc.replace(",", "")], grammar=SCHEMA_GRAMMAR), SCHEMA_GRAMMAR


SCHEMA_GRAMMAR = Grammar.from_json_schema(SCHEMA)


def _shape(result: GuideResult) -> tuple[Any, ...]:
    return (
        result.text,
        result.stop_reason,
        tuple((s.text, s.origin) for s in result.trace.spans),
        result.api_calls,
    )


@pytest.mark.anyio
async def test_concurrent_aguide_matches_sequential_guide(target: LocalTarget) -> None:
    n = 16
    sequential = []
    for i in range(n):
        box, grammar = _concurrent_box(i)
        sequential.append(run(box, grammar, target, max_corrections=1, completion_tokens=12))

    async def one(i: int) -> GuideResult:
        box, grammar = _concurrent_box(i)
        return await aguide(
            providers.FunctionDrafter(box),
            grammar,
            prompt=PROMPT,
            target=target,
            **{**SMALL, "max_corrections": 1, "completion_tokens": 12},
        )

    concurrent = await asyncio.gather(*(one(i) for i in range(n)))
    for i, (seq, conc) in enumerate(zip(sequential, concurrent, strict=True)):
        grammar = _concurrent_box(i)[1]
        check_result(conc, grammar)
        assert _shape(conc) == _shape(seq), i
    assert all(r.corrections >= 1 for r in concurrent)


# -- grammar coercion ------------------------------------------------------------------------------

ARRAY_SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "array", "items": {"type": "integer"}}, "b": {"type": "null"}},
    "required": ["a", "b"],
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param("json", id="shipped-name"),
        pytest.param(grammars.source("json"), id="lark-text"),
        pytest.param(ARRAY_SCHEMA, id="json-schema"),
        pytest.param(JSON, id="grammar-object"),
    ],
)
def test_grammar_forms(spec: Any, target: LocalTarget) -> None:
    box = BlackBox(DOC_A, replies=['{"a": [1, 2, 3}, "b": null}'])
    result = run(box, spec, target)
    grammar = Grammar.coerce(spec)
    check_result(result, grammar)
    assert result.valid and grammar.matches(result.text)
    assert result.grammar is not None and result.grammar.matches(result.text)
    assert result.text.startswith('{"a": [1, 2, 3')
    if isinstance(spec, Grammar):
        assert result.grammar is spec


def test_unusable_grammar_is_refused_before_any_call() -> None:
    box = BlackBox('{"a": 1}')
    with pytest.raises(GrammarError):
        guide(providers.FunctionDrafter(box), 42, target=ScriptedTarget())
    with pytest.raises(GrammarError):
        guide(providers.FunctionDrafter(box), "start: (", target=ScriptedTarget())
    assert box.calls == 0
