"""LocalTarget when things go wrong: interrupted updates, cancelled corrections, prompts past the
model's context, bad sampling parameters, many threads at once. Tiny random-weight models over
real tokenizers (as in test_local_target.py).

- An exception at any point of a state update (inside a cache copy, between two layers of a
  forward pass, between the grammar's and the cache's step of a token) loses nothing and mixes
  nothing: the next session of any prompt, and the next correction of the interrupted session,
  give the logits and tokens of a fresh session.
- Cancelling an aguide() task mid-correction stops the worker thread before its next forward pass;
  the session and the shared target stay usable.
- A prompt, or prompt + committed text + correction budget, past the model's context is refused
  with a TargetError before any forward pass.
- Sampling refuses NaN, infinite or negative temperatures and top_p outside (0, 1].
- 64 threads correcting on one target get what each gets alone.
"""

from __future__ import annotations

import asyncio
import copy
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import torch

import providers
import tests.support.tokenizer_fixtures as tf
from backtrack import aguide
from grammars.grammar import Grammar
from local_target import LocalTarget, Sampling, TargetSession
from local_target.errors import TargetError
from tests.support.local_targets import TARGETS, assert_same_logits, by_bytes

# Tiny models on real tokenizers (forward passes), on one torch thread.
pytestmark = [pytest.mark.model, pytest.mark.usefixtures("one_torch_thread")]

JSON = Grammar.load("json")
FELIX = "Write a JSON document about Felix the cat:"
TOM = "Write a JSON document about Tom, a dog who likes long walks:"
# A safety bound on waits for another thread (the tests count events, they do not time them).
WAIT_S = 120.0


@pytest.fixture(scope="module")
def tiny() -> Callable[[str], LocalTarget]:
    """tiny(name): a module-wide LocalTarget of test_local_target.TARGETS[name]."""
    made: dict[str, LocalTarget] = {}

    def get(name: str) -> LocalTarget:
        if name not in made:
            tok_name, arch, extra = TARGETS[name]
            try:
                tok = tf.load_tokenizer(tok_name)
            except tf.FixtureError as exc:
                pytest.fail(f"real tokenizer {tok_name!r} could not be built: {exc}", pytrace=False)
            made[name] = LocalTarget(tf.tiny_model(arch, tok, extra_rows=extra), tok)
        return made[name]

    return get


def last_layer(model: Any) -> torch.nn.Module:
    """The model's last decoder block: a hook on it runs after the earlier blocks have written
    their part of the KV cache and before it writes its own."""
    blocks = next(m for m in model.modules() if isinstance(m, torch.nn.ModuleList))
    layer: torch.nn.Module = blocks[-1]
    return layer


def correction(session: TargetSession, text: str, seed: int) -> tuple[int, ...]:
    return session.correct(text, JSON, max_tokens=5, sampling=Sampling(1.0, seed=seed)).tokens


# -- an exception at any point of a state update --------------------------------------------------


class Interrupt:
    """Raises `error` from the `at`-th call of whatever it is put in front of, once."""

    def __init__(self, at: int, error: type[BaseException]) -> None:
        self.at = at
        self.error = error
        self.calls = 0
        self.fired = False

    def tick(self) -> None:
        self.calls += 1
        if self.calls == self.at:
            self.fired = True
            raise self.error(f"injected at call {self.at}")


def scenario(made: LocalTarget, sessions: list[TargetSession]) -> None:
    """Two requests on one target, each session appended to `sessions` once it exists."""
    sessions.append(made.session(FELIX))
    correction(sessions[0], '{"name": "Fe', 0)
    sessions.append(made.session(TOM))
    correction(sessions[1], '{"name": "To', 1)
    correction(sessions[0], '{"name": "Felix", "age": 1', 2)
    sessions[0].move_to(sessions[0].ids[: sessions[0].prompt_len] + made.vocab.encode('{"x'))
    list(sessions[1].generate('{"name": "Tom", "likes": "', max_tokens=3))


def check_recovered(made: LocalTarget, sessions: list[TargetSession]) -> None:
    """Fresh sessions of the scenario's prompts, and of prompts sharing a prefix with them, have
    the logits of a fresh forward pass; the scenario's sessions correct as fresh ones do."""
    for prompt in (TOM + " Go on.", FELIX + " Go on.", TOM, FELIX):
        assert_same_logits(made.session(prompt))
    texts = ['{"name": "Felix", "pet": tr', '{"name": "Tom", "age": 4']
    for session, prompt, text in zip(sessions, (FELIX, TOM), texts, strict=False):
        want = correction(made.session(prompt), text, 9)
        assert correction(session, text, 9) == want
        assert_same_logits(session)


INTERRUPTIONS = {
    # (where, error, model, which calls): every case must fire inside the scenario
    "deepcopy": ("deepcopy", KeyboardInterrupt, "smollm2", list(range(1, 21))),
    "layer-smollm2": ("layer", MemoryError, "smollm2", list(range(1, 23))),
    "layer-gpt2": ("layer", KeyboardInterrupt, "gpt2", list(range(1, 24, 2))),
    "choose": ("choose", KeyboardInterrupt, "mistral-padded", list(range(1, 17))),
}
CASES = [
    pytest.param(case, at, id=f"{case}-{at}")
    for case, (_, _, _, calls) in INTERRUPTIONS.items()
    for at in calls
]


@pytest.mark.parametrize(("case", "at"), CASES)
def test_interrupted_update_loses_and_mixes_nothing(
    tiny: Any, monkeypatch: pytest.MonkeyPatch, case: str, at: int
) -> None:
    where, error, name, _ = INTERRUPTIONS[case]
    made = tiny(name)
    made.session(FELIX)  # the target's prompt cache holds another prompt than the first request's
    interrupt = Interrupt(at, error)
    handle = None
    if where == "deepcopy":
        real_deepcopy = copy.deepcopy

        def deepcopy(*args: Any, **kwargs: Any) -> Any:
            interrupt.tick()
            return real_deepcopy(*args, **kwargs)

        monkeypatch.setattr(copy, "deepcopy", deepcopy)
    elif where == "layer":
        handle = last_layer(made.model).register_forward_pre_hook(lambda *_: interrupt.tick())
    else:
        import local_target.decoding

        real_choose = local_target.decoding.choose

        def choose(*args: Any) -> Any:
            interrupt.tick()
            return real_choose(*args)

        monkeypatch.setattr(local_target.decoding, "choose", choose)
    sessions: list[TargetSession] = []
    try:
        with pytest.raises(error, match="injected"):
            scenario(made, sessions)
    finally:
        monkeypatch.undo()
        if handle is not None:
            handle.remove()
    assert interrupt.fired
    check_recovered(made, sessions)


# -- the model's context --------------------------------------------------------------------------


@pytest.fixture
def no_forward(tiny: Any) -> Iterator[Callable[[str], LocalTarget]]:
    """no_forward(name): tiny(name), whose model refuses any forward pass during the test (so a
    regression fails at once, instead of running a huge prompt through the model)."""
    handles: list[Any] = []

    def refuse(_module: Any, _args: Any) -> None:
        raise AssertionError("a forward pass ran")

    def get(name: str) -> LocalTarget:
        made = tiny(name)
        handles.append(made.model.base_model.register_forward_pre_hook(refuse))
        return made

    yield get
    for handle in handles:
        handle.remove()


def test_context_length_is_the_smaller_real_limit(tiny: Any) -> None:
    made = tiny("gpt2")
    assert made.model.config.max_position_embeddings == 2048
    assert made.tokenizer.model_max_length > 10**20  # transformers' placeholder for "not set"
    assert made.context_length == 2048
    tokenizer = copy.copy(made.tokenizer)
    tokenizer.model_max_length = 512
    assert LocalTarget(made.model, tokenizer).context_length == 512


@pytest.mark.parametrize("name", ["gpt2", "smollm2"])
def test_a_megabyte_prompt_is_refused_before_any_forward_pass(no_forward: Any, name: str) -> None:
    """Regression: a 1 MB prompt was fed whole (233k tokens against SmolLM2's 8192)."""
    made = no_forward(name)
    prompt = ("The quick brown fox jumps over the lazy dog. " * 23_000)[:1_000_000]
    with pytest.raises(TargetError, match=r"the prompt needs \d{6} tokens, .* context of 2048$"):
        made.session(prompt)
    with pytest.raises(TargetError, match="context of 2048"):
        made.correct(prompt, "{", JSON)


def test_prompt_text_and_budget_must_fit_the_context(tiny: Any) -> None:
    made = tiny("gpt2")
    session = made.session("word" * 2000)
    text = '{"a": "b'
    fits = 2048 - session.prompt_len - len(made.vocab.encode(text))
    assert 0 < fits < 100
    passes = session.forward_passes
    with pytest.raises(TargetError, match=rf"\({fits + 1}\) needs 2049 tokens, .* of 2048$"):
        session.correct(text, JSON, max_tokens=fits + 1)
    assert session.forward_passes == passes
    c = session.correct(text, JSON, max_tokens=fits, until="complete")
    assert JSON.check(text + c.text).valid
    assert_same_logits(session)


def test_a_draft_ends_where_the_context_does(tiny: Any) -> None:
    made = tiny("smollm2")
    session = made.session("word " * 2000)
    text = "A draft"
    room = 2048 - session.prompt_len - len(made.vocab.encode(text))
    assert 0 < room < 20
    drafted = "".join(session.generate(text, max_tokens=50))
    # No special token came first: the context ended it. The last token chosen is not fed (no
    # choice needs its logits), so the session holds one token less.
    assert len(session.ids) == 2047
    assert made.vocab.decode(session.ids[session.prompt_len :]).decode() in text + drafted


# -- cancellation ---------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_cancelling_aguide_stops_the_correction_at_the_next_token(
    tiny: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: the worker thread ran the rest of a cancelled correction (here up to 512
    tokens) on the shared target. The test pauses the model in the correction's fifth forward
    pass, cancels the task, lets the pass finish and counts the passes that follow: none."""
    made = tiny("smollm2")
    bias = tf.add_logit_bias(made.model, {by_bytes(made, b"a"): 40.0})  # 'a' after 'a', forever
    other = (TOM, '{"name": "To', 3)
    want = correction(made.session(other[0]), *other[1:])
    calls = 0
    reached, proceed, finished = threading.Event(), threading.Event(), threading.Event()

    def count(_module: Any, _args: Any) -> None:
        nonlocal calls
        calls += 1
        if calls == 1 + 5:  # the prompt's pass, then the correction's fifth
            reached.set()
            assert proceed.wait(WAIT_S)

    sessions: list[TargetSession] = []
    real_correct = TargetSession.correct

    def correct(self: TargetSession, *args: Any, **kwargs: Any) -> Any:
        sessions.append(self)
        try:
            return real_correct(self, *args, **kwargs)
        finally:
            finished.set()

    monkeypatch.setattr(TargetSession, "correct", correct)
    counter = made.model.base_model.register_forward_pre_hook(count)
    try:
        task = asyncio.create_task(
            aguide(
                providers.FunctionDrafter(lambda _prompt, _prefix: '{"k": "aaa\x01"}'),
                JSON,
                prompt=FELIX,
                target=made,
                max_corrections=0,  # the cut goes straight to a 512-token completion
                repair_window=0,  # (an edit would skip the control character instead)
            )
        )
        assert await asyncio.to_thread(reached.wait, WAIT_S)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        at_cancel = calls
        proceed.set()
        assert await asyncio.to_thread(finished.wait, WAIT_S)
    finally:
        proceed.set()
        counter.remove()
        monkeypatch.undo()
    try:
        # aguide set the cancel event before the task ended, so before the paused pass went on
        assert calls == at_cancel
        # the session holds its invariant, and the shared target serves other requests
        (session,) = sessions
        assert_same_logits(session)
        text = '{"k": "aaab", "j": "aa'
        assert correction(session, text, 4) == correction(made.session(FELIX), text, 4)
        assert correction(made.session(other[0]), *other[1:]) == want
    finally:
        bias.remove()


# -- many threads ----------------------------------------------------------------------------------

TEXTS = ['{"name": "', "[1, 2", '{"a": tr', '{"城市": "北', '[{"x": null}, "y', "{"]


def test_64_threads_on_one_target_get_what_each_gets_alone(tiny: Any) -> None:
    made = tiny("gpt2")
    jobs = [(f"Request {i} about item {i % 5}:", TEXTS[i % len(TEXTS)], i) for i in range(64)]

    def one(job: tuple[str, str, int]) -> tuple[int, ...]:
        prompt, text, seed = job
        return made.correct(prompt, text, JSON, max_tokens=6, temperature=1.0, seed=seed).tokens

    alone = [one(job) for job in jobs]
    start = threading.Barrier(len(jobs))

    def racing(job: tuple[str, str, int]) -> tuple[int, ...]:
        start.wait(WAIT_S)
        return one(job)

    with ThreadPoolExecutor(len(jobs)) as pool:
        together = list(pool.map(racing, jobs))
    assert together == alone
