"""LocalTarget on tiny random-weight models over real tokenizers (GPT-2, SmolLM2, Mistral).

Random weights write junk, which is the point: nearly every choice is refused by the grammar, so
the masks, healing, forced bytes and rollbacks are all exercised. Properties checked:
- every correction keeps the text a valid prefix; `complete` agrees with the grammar;
- the KV cache invariant: after any series of moves, logits equal a fresh forward pass;
- token healing re-chooses the last token and can bridge the old boundary;
- sampling is reproducible and `choose` samples exactly from p restricted to the allowed set;
- sessions do not leak into each other; prompt-prefix reuse is exact;
- misuse raises the documented errors.
"""

from __future__ import annotations

import logging
import random
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import pytest
import torch

import tests.support.tokenizer_fixtures as tf
from grammars.grammar import Grammar
from local_target import DecodingPolicy, LocalTarget, Sampling
from local_target import session as session_module
from local_target.errors import TargetError
from local_target.model import common_prefix
from local_target.sampling import choose
from tests.support.local_targets import (
    TARGET_IDS,
    TARGETS,
    assert_same_logits,
    by_bytes,
    cut_points,
    fresh_logits,
    real_tokenizer,
)

# Tiny models on real tokenizers (forward passes), on one torch thread.
pytestmark = [pytest.mark.model, pytest.mark.usefixtures("one_torch_thread")]

JSON = Grammar.load("json")
KEYS3 = Grammar.load("json_keys", n=3)
GRAMMARS = {"json": JSON, "json_keys": KEYS3}

# Valid documents with accents, CJK, emoji (multi-codepoint ones too) and, for Mistral, characters
# only its byte fallback can write (ꙮ, 𝔘).
DOCUMENTS = {
    "json-person": (
        "json",
        '{"name": "Zoë Ångström", "city": "東京", "mood": "😀🎉", "tags": ["naïve", "café"],'
        ' "n": [1, 2.5, -3e4], "ok": true, "x": null}',
    ),
    "json-list": (
        "json",
        '[{"emoji": "👩\u200d💻 codes"}, "日本語のテキスト", {"rare": "ꙮ𝔘"}, false, 0.125]',
    ),
    "keys-ascii": ("json_keys", '{"name": "Tom", "colour": "blue", "pet": "cat"}'),
    "keys-unicode": ("json_keys", '{"城市": "北京", "word": "ꙮ ok", "thumb": "👍🏽 fine"}'),
}
DOC_IDS = list(DOCUMENTS)
PROMPT = "Write a JSON document:"


@pytest.fixture(scope="session")
def tokenizer() -> Callable[[str], Any]:
    cache: dict[str, Any] = {}

    def get(name: str) -> Any:
        if name not in cache:
            cache[name] = real_tokenizer(name)
        return cache[name]

    return get


@pytest.fixture(scope="session")
def target(tokenizer: Callable[[str], Any]) -> Callable[[str], LocalTarget]:
    """target(name): the shared LocalTarget of TARGETS[name] (unbiased random weights)."""
    cache: dict[str, LocalTarget] = {}

    def get(name: str) -> LocalTarget:
        if name not in cache:
            tok_name, arch, extra = TARGETS[name]
            tok = tokenizer(tok_name)
            cache[name] = LocalTarget(tf.tiny_model(arch, tok, extra_rows=extra), tok)
        return cache[name]

    return get


@pytest.fixture(scope="session")
def closing_target(tokenizer: Callable[[str], Any]) -> Callable[[str], LocalTarget]:
    """target(name) whose logits favour EOS, then '"', closing brackets, ':', ',' and '{' (in
    that order): it finishes JSON soon, though junk still gets sampled inside strings."""
    cache: dict[str, LocalTarget] = {}

    def get(name: str) -> LocalTarget:
        if name not in cache:
            tok_name, arch, extra = TARGETS[name]
            tok = tokenizer(tok_name)
            model = tf.tiny_model(arch, tok, extra_rows=extra, seed=1)
            made = LocalTarget(model, tok)
            bias = {made.vocab.eos: 14.0, by_bytes(made, b'"'): 12.0}
            bias |= {by_bytes(made, p): 11.0 for p in (b"}", b"]")}
            bias |= {by_bytes(made, b":"): 10.0, by_bytes(made, b","): 9.0}
            bias[by_bytes(made, b"{")] = 8.0
            tf.add_logit_bias(model, bias)
            cache[name] = made
        return cache[name]

    return get


def assert_sound(target: LocalTarget, grammar: Grammar, text: str, c: Any) -> None:
    """What holds for every correction."""
    whole = text + c.text
    assert grammar.check(whole).valid, (text, c.text)
    assert c.complete == grammar.matches(whole)
    assert len(c.tokens) == len(c.flags)
    assert all(t < len(target.tokenizer) for t in c.tokens), "a padding row was emitted"
    assert "".join(run for _, run in c.runs) == c.text
    healed = [f == "healed" for f in c.flags]
    assert healed == sorted(healed, reverse=True), "healed tokens come first"


# -- the documents themselves ---------------------------------------------------------------------


@pytest.mark.parametrize("doc_id", DOC_IDS)
def test_documents_are_sentences(doc_id: str) -> None:
    grammar, doc = DOCUMENTS[doc_id]
    assert GRAMMARS[grammar].matches(doc)


# -- every correction keeps the text a valid prefix ----------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("cut", ["char", "in-token"])
@pytest.mark.parametrize("doc_id", DOC_IDS)
@pytest.mark.parametrize("name", TARGET_IDS)
def test_correction_is_valid_prefix(
    target: Any, name: str, doc_id: str, cut: str, seed: int
) -> None:
    # (mistral-padded, json-person, char, 2) once crashed: see the byte-fallback twins test
    made = target(name)
    grammar_name, doc = DOCUMENTS[doc_id]
    grammar = GRAMMARS[grammar_name]
    text = doc[: cut_points(made, doc, cut, seed)]
    c = made.correct(
        PROMPT, text, grammar, max_tokens=10, until="terminal", temperature=1.0, seed=seed
    )
    assert_sound(made, grammar, text, c)
    assert c.tokens, "a correction writes at least one token"
    assert c.flags[0] == "healed"  # the committed text is never empty here


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("doc_id", DOC_IDS)
@pytest.mark.parametrize("name", TARGET_IDS)
def test_until_complete_finishes_sentence(
    closing_target: Any, name: str, doc_id: str, seed: int
) -> None:
    made = closing_target(name)
    grammar_name, doc = DOCUMENTS[doc_id]
    grammar = GRAMMARS[grammar_name]
    text = doc[: cut_points(made, doc, "char", seed + 10)]
    c = made.correct(
        PROMPT, text, grammar, max_tokens=150, until="complete", temperature=1.0, seed=seed
    )
    assert_sound(made, grammar, text, c)
    assert c.complete, (text, c.text, c.stop_reason)
    assert c.stop_reason in ("eos", "grammar_end")
    assert grammar.matches(text + c.text)


@pytest.mark.parametrize("name", TARGET_IDS)
def test_until_complete_from_nothing(closing_target: Any, name: str) -> None:
    made = closing_target(name)
    c = made.correct(PROMPT, "", KEYS3, max_tokens=150, until="complete")
    assert_sound(made, KEYS3, "", c)
    assert c.complete and KEYS3.matches(c.text)
    assert "healed" not in c.flags  # nothing to heal


@pytest.mark.parametrize("heal", [True, False], ids=["heal", "no-heal"])
@pytest.mark.parametrize("name", TARGET_IDS)
def test_budget_ends_early(closing_target: Any, name: str, heal: bool) -> None:
    made = closing_target(name)
    text = '{"a": [[[[{"b": "xyz'  # needs at least '"}]]]]}' (8 bytes) and several tokens
    c = made.correct(PROMPT, text, JSON, max_tokens=2, until="complete", heal=heal)
    assert_sound(made, JSON, text, c)
    assert not c.complete
    assert c.stop_reason == "max_tokens"
    # past the budget only while the backed-off bytes are not yet covered again
    assert len(c.tokens) >= 2
    assert all(f == "healed" for f in c.flags[2:])


@pytest.mark.parametrize("until", [1, 3])
@pytest.mark.parametrize("name", ["gpt2", "mistral-padded"])
def test_until_a_number_of_tokens(target: Any, name: str, until: int) -> None:
    made = target(name)
    text = '{"a": "'
    c = made.correct(PROMPT, text, JSON, max_tokens=10, until=until, temperature=1.0, seed=3)
    assert_sound(made, JSON, text, c)
    # past `until` only to finish a character (at most 3 more byte tokens)
    assert until <= len(c.tokens) <= until + 3


@pytest.mark.parametrize("name", ["gpt2-padded", "mistral-padded"])
@pytest.mark.parametrize("temperature", [0.0, 1.0], ids=["greedy", "sampled"])
def test_padding_rows_never_chosen(biased: Any, name: str, temperature: float) -> None:
    """The embedding rows past the tokenizer win every argmax; they must still be refused."""
    _, _, extra = TARGETS[name]
    rows = len(biased(name, {}).tokenizer)
    made = biased(name, {rows + i: 50.0 for i in range(extra)})
    assert made.vocab.n_logits == rows + extra
    text = '{"key": "val'
    c = made.correct(PROMPT, text, JSON, max_tokens=6, temperature=temperature, seed=0)
    assert_sound(made, JSON, text, c)
    assert "sampled" not in c.flags  # the model's own choice (a padding row) was always refused


# -- the KV cache invariant ---------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("name", TARGET_IDS)
def test_kv_invariant_under_random_moves(target: Any, name: str, seed: int) -> None:
    made = target(name)
    rng = random.Random(seed)
    session = made.session(f"Random moves {seed}:")
    prompt = session.ids[: session.prompt_len]
    n = len(made.tokenizer)
    text: list[int] = []

    def fresh(k: int) -> list[int]:
        return [rng.randrange(n) for _ in range(k)]

    moves = ["grow", "shrink", "replace", "grow", "to-prompt", "grow", "same", "replace"]
    moves += [rng.choice(["grow", "shrink", "replace", "same"]) for _ in range(16)]
    for move in moves:
        if move == "grow":
            text = text + fresh(rng.randint(1, 12))
        elif move == "shrink":
            text = text[: rng.randint(0, len(text))]
        elif move == "replace":
            text = text[: rng.randint(0, len(text))] + fresh(rng.randint(1, 8))
        elif move == "to-prompt":
            text = []
        session.move_to(prompt + text)
        assert session.ids == prompt + text, move
        assert_same_logits(session)


@pytest.mark.parametrize("name", TARGET_IDS)
def test_kv_invariant_after_corrections(target: Any, name: str) -> None:
    made = target(name)
    _, doc = DOCUMENTS["json-person"]
    session = made.session("Corrections:")
    rng = random.Random(7)
    cuts = [20, 35, 12, 60, 61, 5, 40, 40, len(doc) - 1]
    for step, cut in enumerate(cuts):
        grammar = JSON if step != 6 else Grammar.load("json")  # a new Grammar object too
        text = doc[:cut]
        c = session.correct(
            text, grammar, max_tokens=rng.randint(1, 8), sampling=Sampling(1.0, seed=step)
        )
        assert grammar.check(text + c.text).valid
        # the sequence is prompt + tokens of exactly text + correction
        written = made.vocab.decode(session.ids[session.prompt_len :])
        assert written == (text + c.text).encode("utf-8")
        assert_same_logits(session)
        session.move_to(session.ids[: session.prompt_len] + made.vocab.encode(text))
        assert_same_logits(session)


LIKELIEST = [
    ['{"name": "Ann", "age": 31}', '{"name": "Ann", "age": 3!}', '{"name": "Ann"}}}'],
    # More than the finalists (session._FINALISTS): the likeliest by the first token only are
    # scored whole.
    [f"2{op}(x + 4) + 1" for op in ("*", "+", "-", "/", "%", "^")],
]


@pytest.mark.parametrize("texts", LIKELIEST, ids=["three", "six"])
@pytest.mark.parametrize("name", TARGET_IDS)
def test_likeliest_scores_each_text_and_keeps_the_kv_invariant(
    target: Any, name: str, texts: list[str]
) -> None:
    """Each finalist's tokens after the shared ones, scored on the session's cache and cropped
    back: the choice equals scoring each text from scratch, and the cache still matches its
    ids."""
    made = target(name)
    session = made.session("Likeliest:")
    session.move_to(session.ids[: session.prompt_len] + made.vocab.encode('{"other": 1'))
    chosen = session.likeliest(texts)
    assert_same_logits(session)
    prompt = session.ids[: session.prompt_len]
    encoded = [made.vocab.encode(t) for t in texts]
    shared = min(common_prefix(encoded[0], ids) for ids in encoded)
    scores, firsts = [], []
    for ids in encoded:
        whole = prompt + ids
        with torch.inference_mode():
            logits = made.model(torch.tensor([whole], device=made.device)).logits[0]
        logp = logits.float().log_softmax(-1)
        start = len(prompt) + shared
        scores.append(sum(float(logp[i - 1, whole[i]]) for i in range(start, len(whole))))
        firsts.append(float(logp[start - 1, whole[start]]))
    finalists = sorted(range(len(texts)), key=lambda i: -firsts[i])[: session_module._FINALISTS]
    assert chosen == max(finalists, key=scores.__getitem__)
    assert session.likeliest(texts[:1]) == 0


# -- token healing --------------------------------------------------------------------------------

# committed text, the token the (biased) model wants first, the first bytes naive masking writes
HEALING = {
    "true": ("[tr", b"true", b"ue"),
    "null": ('{"a": nul', b"ull", b"l"),
    "key-word": ('{"name": "Tom", "col', b"color", b"color"),
}


@pytest.fixture
def biased(target: Any) -> Iterator[Callable[[str, dict[Any, float]], LocalTarget]]:
    """biased(name, {token bytes or id: bias}): the shared target `name` with crafted logit
    preferences, for deterministic choices; the bias is removed after the test (the KV cache
    does not depend on the output layer, so cached prompts stay valid)."""
    handles: list[Any] = []

    def apply(name: str, bias: dict[Any, float]) -> LocalTarget:
        made = target(name)
        ids = {k if isinstance(k, int) else by_bytes(made, k): v for k, v in bias.items()}
        handles.append(tf.add_logit_bias(made.model, ids))
        return made

    yield apply
    for handle in handles:
        handle.remove()


@pytest.mark.parametrize("case", list(HEALING))
def test_healing_bridges_the_boundary(biased: Any, case: str) -> None:
    text, want, naive_start = HEALING[case]
    made = biased("smollm2", {want: 40.0})
    backed_off = made.vocab.token_bytes[made.vocab.encode(text)[-1]]
    assert want.startswith(backed_off) and want != backed_off, "not a bridging case"

    healed = made.correct(PROMPT, text, JSON, max_tokens=4)
    assert healed.flags[0] == "healed"
    assert made.vocab.token_bytes[healed.tokens[0]] == want
    assert healed.healed_bytes == len(backed_off)
    assert healed.text.encode("utf-8").startswith(want[len(backed_off) :])
    assert JSON.check(text + healed.text).valid

    naive = made.correct(PROMPT, text, JSON, max_tokens=4, heal=False)
    assert "healed" not in naive.flags and naive.healed_bytes == 0
    assert JSON.check(text + naive.text).valid
    # without healing the first token starts at the old boundary: it cannot finish the last word
    assert made.vocab.token_bytes[naive.tokens[0]] == naive_start
    assert naive.text.encode("utf-8").startswith(naive_start)
    assert (naive.tokens[0], naive.text) != (healed.tokens[0], healed.text)


def test_healing_with_a_shorter_token(biased: Any) -> None:
    """The model prefers a token that is a prefix of the backed-off one: healing continues over
    several tokens until the backed-off bytes are covered, writing no byte twice."""
    made = biased("smollm2", {b"tra": 40.0})
    text = '["tracking'
    assert made.vocab.token_bytes[made.vocab.encode(text)[-1]] == b"tracking"
    c = made.correct(PROMPT, text, JSON, max_tokens=6)
    assert c.flags[:2] == ("healed", "healed")
    assert made.vocab.token_bytes[c.tokens[0]] == b"tra"
    assert c.healed_bytes == len(b"tracking")
    assert JSON.check(text + c.text).valid
    covered = b"".join(made.vocab.token_bytes[t] for t in c.tokens)
    assert covered.startswith(b"tracking")
    assert covered[len(b"tracking") :] == c.text.encode("utf-8")


BLANKS = (b" ", b"\t", b"\r", b"\n")


@pytest.mark.parametrize("pending", [b"rue", b" true", b"col", b"\xe6\x97"], ids=repr)
@pytest.mark.parametrize("name", ["gpt2", "smollm2", "mistral-padded"])
def test_healing_mask_is_every_covering_token(target: Any, name: str, pending: bytes) -> None:
    """healing_mask(p) = the ordinary tokens that start with p or are a non-empty prefix of it,
    all of them where several share bytes (Mistral: 'r' and its byte-fallback twin <0x72>);
    blank_after(p) = those that are p and then a blank."""
    vocab = target(name).vocab
    want = {
        i
        for i, b in enumerate(vocab.token_bytes)
        if b and i not in vocab.special and (b.startswith(pending) or pending.startswith(b))
    }
    got = set(torch.nonzero(vocab.healing_mask(pending)).flatten().tolist())
    assert got == want, sorted((vocab.token_bytes[i], i) for i in got ^ want)
    for before in (pending, b""):
        blank = {
            i
            for i, b in enumerate(vocab.token_bytes)
            if i not in vocab.special and b.startswith(before) and b[len(before) :][:1] in BLANKS
        }
        got = set(torch.nonzero(vocab.blank_after(before)).flatten().tolist())
        assert got == blank, sorted((vocab.token_bytes[i], i) for i in got ^ blank)


@pytest.mark.parametrize("temperature", [0.0, 1.0], ids=["greedy", "sampled"])
def test_healing_through_a_prefix_token_with_byte_fallback_twins(
    biased: Any, temperature: float
) -> None:
    """Regression: after ' t' the grammar forces 'rue' and llguidance's mask allows only the
    canonical 'r'; the healing mask once held only its twin <0x72>, so nothing was allowed
    (RuntimeError from torch.multinomial when sampling, 'refused token 0' when greedy)."""
    made = biased("mistral-padded", {b" t": 40.0})  # heal ' true' through ' t', then 'rue'
    text = '{"ok": true'
    assert made.vocab.token_bytes[made.vocab.encode(text)[-1]] == b" true"
    c = made.correct(PROMPT, text, JSON, max_tokens=4, temperature=temperature, seed=0)
    assert made.vocab.token_bytes[c.tokens[0]] == b" t"
    assert JSON.check(text + c.text).valid


@pytest.mark.parametrize("name", ["gpt2", "smollm2", "mistral-padded"])
def test_healing_full_mask_equals_the_opportunistic_test(target: Any, name: str) -> None:
    """While healing in a state where the grammar forces bytes ('ue' of 'true'), the full mask
    allows exactly the tokens the opportunistic path accepts: those covering the backed-off bytes
    that `validate_tokens` takes. llguidance's bitmask there holds only the canonical token."""
    from local_target.decoding import full_mask, healing_allows

    vocab = target(name).vocab
    for text in ('{"ok": tru', '{"ok": tr', "[fals", "[nul", '{"x": [tru'):
        ids = vocab.encode(text)
        pending = vocab.token_bytes[ids[-1]]
        matcher = JSON.matcher(vocab.ll)
        assert matcher.consume_tokens(ids[:-1])
        if matcher.compute_ff_tokens():
            break
    else:
        pytest.fail("no text here puts the healing base in a state where the grammar forces bytes")
    want = {
        t
        for t in range(vocab.n_logits)
        if healing_allows(vocab.token_bytes[t], pending, t == vocab.eos)
        and t not in vocab.special
        and matcher.validate_tokens([t]) == 1
    }
    got = set(full_mask(vocab, matcher, pending).nonzero().flatten().tolist())
    assert got == want
    bitmask = vocab.grammar_mask(matcher) & vocab.healing_mask(pending)
    assert set(bitmask.nonzero().flatten().tolist()) < want


@pytest.mark.parametrize("name", TARGET_IDS)
def test_closing_bias_only_at_the_end_of_a_completion_and_flagged(target: Any, name: str) -> None:
    """until="complete": the closing bias starts in the last quarter of the budget (at most 32
    tokens), and every token chosen under it is flagged "closing"; none before."""
    made = target(name)
    c = made.correct(PROMPT, '{"a": ["', JSON, max_tokens=12, until="complete", seed=0)
    window = 3 + 1  # min(32, max(4, 12 // 4))
    start = 12 - window
    assert "closing" not in c.flags[:start]
    assert all(f in ("closing", "forced") for f in c.flags[start:]), c.flags
    assert "closing" in c.flags or len(c.tokens) <= start


@pytest.mark.parametrize("name", TARGET_IDS)
def test_inside_a_string_the_closing_bonus_goes_to_its_quote(tokenizer: Any, name: str) -> None:
    """In a string a bracket is the string's text and closes nothing: the bonus goes to tokens
    that begin with a quote. A bonus for every closer had SmolLM2, completing a trip's stops,
    write `'');' '}]}}}}...` inside a place's name to its whole budget, the text incomplete.
    Here the model favours brackets by 8 over the quote, and the bonus is 10."""
    tok_name, arch, extra = TARGETS[name]
    tok = tokenizer(tok_name)
    model = tf.tiny_model(arch, tok, extra_rows=extra, seed=2)
    made = LocalTarget(model, tok)
    tf.add_logit_bias(model, {by_bytes(made, closer): 8.0 for closer in (b"}", b"]", b")")})
    policy = DecodingPolicy(closing_min=8, closing_max=8)
    c = made.session(PROMPT).correct('{"a": "', JSON, max_tokens=8, until="complete", policy=policy)
    assert_sound(made, JSON, '{"a": "', c)
    assert c.complete, c.text  # the string, and the object, closed within the budget
    assert made.vocab.in_free_text(_matcher_after(made, JSON, '{"a": "x'))
    assert not made.vocab.in_free_text(_matcher_after(made, JSON, '{"a": "x"'))


@pytest.mark.parametrize("name", TARGET_IDS)
def test_a_strings_closers_are_its_quote_and_eos(target: Any, name: str) -> None:
    """In a JSON string: the tokens that begin with `"` and EOS, not `'` nor a bracket; in a
    CSV field's text, which no quote ends: EOS alone (it ends the text where that is complete)."""
    made = target(name)
    vocab = made.vocab
    closers = vocab.string_closers(_matcher_after(made, JSON, '{"a": "x'))
    assert closers[by_bytes(made, b'"')] and closers[vocab.eos]
    assert not any(closers[by_bytes(made, b)] for b in (b"'", b"}", b"]", b")"))
    assert all(
        vocab.token_bytes[t].strip()[:1] == b'"'
        for t in closers.nonzero().flatten().tolist()
        if t != vocab.eos
    )
    field = vocab.string_closers(_matcher_after(made, Grammar.load("csv"), "a,b\n1,x"))
    assert field.nonzero().flatten().tolist() == [vocab.eos]


def _matcher_after(made: LocalTarget, grammar: Grammar, text: str) -> Any:
    matcher = grammar.matcher(made.vocab.ll)
    assert matcher.consume_tokens(made.vocab.encode(text))
    return matcher


@pytest.mark.parametrize("name", TARGET_IDS)
def test_a_long_completion_closes_after_its_first_tokens(target: Any, name: str) -> None:
    """Past `closing_after` tokens a completion is in its closing window whatever its budget: a
    small model finishing a list counted on for 498 tokens before its last 32 closed it."""
    made = target(name)
    policy = DecodingPolicy(closing_after=6)
    session = made.session(PROMPT)
    c = session.correct('{"a": ["', JSON, max_tokens=96, until="complete", policy=policy)
    assert_sound(made, JSON, '{"a": ["', c)
    assert "closing" not in c.flags[:6]
    assert all(f in ("closing", "forced") for f in c.flags[6:]), c.flags
    assert len(c.tokens) < 48, c.text


@pytest.mark.parametrize("name", TARGET_IDS)
def test_a_finish_closes_from_its_first_token(target: Any, name: str) -> None:
    """until="close" (what an ended reply left, finished): every token after the healed ones is
    chosen under the closing bias, where "complete" with the same budget has none in its first
    three quarters."""
    made = target(name)
    session = made.session(PROMPT)
    c = session.correct('{"a": ["', JSON, max_tokens=48, until="close")
    assert_sound(made, JSON, '{"a": ["', c)
    chosen = [f for f in c.flags if f != "healed"]
    assert chosen and all(f in ("closing", "forced") for f in chosen), c.flags
    assert c.complete, c.text
    free = session.correct('{"a": ["', JSON, max_tokens=48, until="complete")
    assert "closing" not in free.flags[:36], free.flags


@pytest.mark.parametrize(
    ("max_tokens", "quarter", "window"),
    [(1, 4, 4), (12, 4, 4), (20, 5, 5), (80, 20, 20), (96, 24, 32), (128, 32, 64), (512, 32, 448)],
)
def test_closing_window_is_a_quarter_of_the_budget_within_4_to_32_or_all_after_64_tokens(
    max_tokens: int, quarter: int, window: int
) -> None:
    assert DecodingPolicy().closing_window(max_tokens) == window
    assert DecodingPolicy(closing_after=max_tokens).closing_window(max_tokens) == quarter


@pytest.mark.parametrize(
    "fields",
    [
        {"closing_share": 0},
        {"closing_min": -1},
        {"closing_after": -1},
        {"closing_min": 9, "closing_max": 8},
        {"speculate": -1},
        {"selective_share": 1.5},
        {"min_novelty": -0.1},
        {"min_novelty": float("nan")},
        {"max_repeats": 1},
    ],
    ids=str,
)
def test_bad_policy_parameters_are_named(fields: dict[str, float]) -> None:
    with pytest.raises(ValueError, match=next(iter(fields))):
        DecodingPolicy(**fields)


@pytest.mark.parametrize("name", TARGET_IDS)
def test_the_policy_closing_bonus_decides_the_closing_choices(target: Any, name: str) -> None:
    """With the whole budget in the closing window, the session's policy sets the bias: a bonus of
    0 chooses what the unbiased model chooses (only the flags say "closing"), a huge one chooses
    only closing tokens (inside a string the grammar always allows one)."""
    made = target(name)
    everywhere = DecodingPolicy(closing_min=8, closing_max=8)
    nowhere = DecodingPolicy(closing_min=0, closing_max=0)

    def run(policy: DecodingPolicy) -> Any:
        session = made.session(PROMPT)
        c = session.correct('{"a": "', JSON, max_tokens=8, until="complete", policy=policy)
        assert_sound(made, JSON, '{"a": "', c)
        return c

    plain, none, strong = (
        run(nowhere),
        run(replace(everywhere, closing_bonus=0.0)),
        run(replace(everywhere, closing_bonus=1000.0)),
    )
    assert "closing" not in plain.flags
    assert none.tokens == plain.tokens
    assert set(none.flags) <= {"healed", "closing", "forced"}, none.flags
    chosen = [t for t, f in zip(strong.tokens, strong.flags, strict=True) if f == "closing"]
    assert chosen, strong.flags
    assert all(made.vocab.closers[t] for t in chosen), [made.vocab.token_bytes[t] for t in chosen]
    assert strong.tokens != none.tokens


def test_logs_count_and_time_but_hold_no_text(
    target: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """At DEBUG a correction logs its start and end (tokens, stop reason, seconds) and a rollback
    its kept and dropped tokens; never the prompt's text, the committed text or the output."""
    made = target("gpt2")
    prompt, text = "Write JSON about Wolfgang:", '{"zebra": "quagga'
    with caplog.at_level(logging.DEBUG, logger="local_target"):
        session = made.session(prompt)
        c = session.correct(text, JSON, max_tokens=6, sampling=Sampling(1.0, seed=0))
        session.correct('{"zebra": 1', JSON, max_tokens=2)
    messages = [r.getMessage() for r in caplog.records if r.name.startswith("local_target")]
    assert any(m.startswith("correction starts: ") for m in messages), messages
    ended = f"correction ends: {len(c.tokens)} tokens"
    assert any(m.startswith(ended) and c.stop_reason in m for m in messages), messages
    assert any(m.startswith("KV cache rolled back: ") for m in messages), messages
    words = ["Wolfgang", "zebra", "quagga", *(w for w in c.text.split() if len(w) > 3)]
    assert not [m for m in messages for w in words if w in m]


def test_terminal_does_not_stop_inside_word_after_a_grave(biased: Any) -> None:
    """Regression: a UTF-8 continuation byte was taken for whitespace (chr(0xA0).isspace()), so
    'à' (C3 A0) ended a 'terminal' correction mid-word."""
    made = biased("smollm2", {"à".encode(): 40.0})
    c = made.correct(PROMPT, '{"a": "vo', JSON, max_tokens=4, until="terminal", heal=False)
    assert c.text.startswith("à")
    assert c.stop_reason == "max_tokens", (c.text, c.stop_reason)


# -- sampling -------------------------------------------------------------------------------------


@pytest.mark.parametrize("top_p", [1.0, 0.9])
@pytest.mark.parametrize("name", ["gpt2", "smollm2"])
def test_sampling_is_reproducible(target: Any, name: str, top_p: float) -> None:
    made = target(name)
    text = '{"a": "'

    def run(seed: int) -> tuple[int, ...]:
        c = made.correct(PROMPT, text, JSON, max_tokens=6, temperature=1.0, top_p=top_p, seed=seed)
        return c.tokens

    assert run(11) == run(11)
    assert len({run(seed) for seed in range(4)}) > 1


@pytest.mark.parametrize("name", ["gpt2", "smollm2"])
def test_greedy_is_deterministic(target: Any, name: str) -> None:
    made = target(name)
    one = made.correct(PROMPT, '{"a": 1', JSON, max_tokens=6)
    two = made.correct(PROMPT, '{"a": 1', JSON, max_tokens=6)
    assert one.tokens == two.tokens and one.text == two.text


LOGITS = torch.tensor([2.0, 1.5, 1.0, 0.5, 0.0, -0.5, 3.0, -1.0])
ALLOWED = torch.tensor([False, True, True, False, True, True, False, True])  # refuses 0, 3, 6


def _expected(temperature: float, top_p: float) -> torch.Tensor:
    p = torch.softmax(LOGITS / temperature, -1) * ALLOWED
    p = p / p.sum()
    if top_p < 1:  # the nucleus of the restricted distribution
        order = torch.argsort(p, descending=True)
        keep = torch.cumsum(p[order], -1) - p[order] < top_p
        nucleus = torch.zeros_like(p)
        nucleus[order[keep]] = p[order[keep]]
        p = nucleus / nucleus.sum()
    return p


@pytest.mark.parametrize(
    ("temperature", "top_p"), [(1.0, 1.0), (0.7, 1.0), (1.0, 0.8)], ids=["t1", "t0.7", "top_p0.8"]
)
def test_choose_samples_restricted_distribution(temperature: float, top_p: float) -> None:
    sampling = Sampling(temperature, top_p, seed=1234)
    generator = sampling.generator()
    masks = 0

    def full_mask() -> torch.Tensor:
        nonlocal masks
        masks += 1
        return ALLOWED.clone()

    draws = 20_000
    counts: Counter[int] = Counter()
    for _ in range(draws):
        token, _masked = choose(LOGITS, lambda t: bool(ALLOWED[t]), full_mask, sampling, generator)
        counts[token] += 1
    empirical = torch.tensor([counts[i] / draws for i in range(len(LOGITS))])
    want = _expected(temperature, top_p)
    assert not any(counts[i] for i in range(len(LOGITS)) if not ALLOWED[i])
    assert (empirical - want).abs().max().item() < 0.01, (empirical, want)
    p_allowed = (torch.softmax(LOGITS / temperature, -1) * ALLOWED).sum().item()
    if top_p == 1:  # opportunistic: the mask only when the model's own draw is refused
        assert abs(masks / draws - (1 - p_allowed)) < 0.01
    else:
        assert masks == draws


def test_choose_greedy_masks_only_when_refused() -> None:
    calls = 0

    def full_mask() -> torch.Tensor:
        nonlocal calls
        calls += 1
        return ALLOWED.clone()

    token, masked = choose(LOGITS, lambda t: bool(ALLOWED[t]), full_mask, Sampling(), None)
    assert (token, masked, calls) == (1, True, 1)  # 6 and 0 are refused, 1 is next best
    token, masked = choose(LOGITS, lambda t: True, full_mask, Sampling(), None)
    assert (token, masked, calls) == (6, False, 1)


# -- sessions -------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["gpt2", "mistral-padded"])
def test_sessions_interleaved_match_alone(target: Any, name: str) -> None:
    made = target(name)
    plan_a = ("Prompt A: a person", JSON, ['{"name": "Zo', '{"name": "Zoë", "a', "[1, 2"])
    plan_b = ("Prompt B: three keys", KEYS3, ['{"x": "', '{"x": "1", "y": "日', '{"'])

    def run_alone(plan: Any) -> list[tuple[int, ...]]:
        prompt, grammar, texts = plan
        session = made.session(prompt)
        return [
            session.correct(t, grammar, max_tokens=5, sampling=Sampling(1.0, seed=i)).tokens
            for i, t in enumerate(texts)
        ]

    alone_a, alone_b = run_alone(plan_a), run_alone(plan_b)
    a, b = made.session(plan_a[0]), made.session(plan_b[0])
    got_a: list[tuple[int, ...]] = []
    got_b: list[tuple[int, ...]] = []
    for i in range(3):
        sampling = Sampling(1.0, seed=i)
        got_a.append(a.correct(plan_a[2][i], JSON, max_tokens=5, sampling=sampling).tokens)
        got_b.append(b.correct(plan_b[2][i], KEYS3, max_tokens=5, sampling=sampling).tokens)
        assert_same_logits(a)
        assert_same_logits(b)
    assert got_a == alone_a
    assert got_b == alone_b


@pytest.mark.parametrize("name", ["smollm2", "mistral-padded"])
def test_used_session_matches_fresh(target: Any, name: str) -> None:
    """A correction depends on the prompt and the committed text only, not on what the session
    did before (its cache, matcher and their rollbacks)."""
    made = target(name)
    rng = random.Random(5)
    used = made.session("History:")
    for step in range(12):
        grammar_name, doc = DOCUMENTS[DOC_IDS[step % len(DOC_IDS)]]
        grammar = GRAMMARS[grammar_name]
        text = doc[: rng.randrange(0, len(doc))]
        until = ["terminal", "complete", 3][step % 3]
        sampling = Sampling(1.0 if step % 2 else 0.0, seed=step)
        options: dict[str, Any] = {"max_tokens": 6, "until": until, "sampling": sampling}
        again = used.correct(text, grammar, **options)
        fresh = made.session("History:").correct(text, grammar, **options)
        assert again.tokens == fresh.tokens, (step, text)


PROMPT_PAIRS = {
    "shared-prefix": ("The quick brown fox jumps over the dog", "The quick brown fox sleeps"),
    "extends": ("The quick brown fox", "The quick brown fox sleeps all day long"),
    "same": ("The quick brown fox", "The quick brown fox"),
    "shorter": ("The quick brown fox sleeps all day long", "The quick brown"),
    "unrelated": ("Nothing alike", "Completely different words here"),
}


@pytest.mark.parametrize("pair", list(PROMPT_PAIRS))
@pytest.mark.parametrize("name", ["gpt2", "smollm2"])
def test_prompt_prefix_reuse_is_exact(target: Any, name: str, pair: str) -> None:
    made = target(name)
    first_prompt, second_prompt = PROMPT_PAIRS[pair]
    first = made.session(first_prompt)
    before = first.logits.clone()
    second = made.session(second_prompt)
    assert second.ids == made.prompt_ids(second_prompt)
    assert second.prompt_len == len(second.ids)
    assert_same_logits(second)
    assert torch.equal(first.logits, before)  # the first session is untouched
    assert_same_logits(first)
    # both keep working independently
    first.move_to([*first.ids, 11, 12])
    second.move_to([*second.ids, 13])
    assert_same_logits(first)
    assert_same_logits(second)


def test_session_prompt_cannot_change(target: Any) -> None:
    session = target("gpt2").session("One prompt")
    with pytest.raises(TargetError, match="prompt cannot change"):
        session.move_to([999, *session.ids])


# -- errors ---------------------------------------------------------------------------------------

INVALID = {"bad-byte": '{"a" x', "bad-start": "x", "after-end": '{"a": 1}}', "bad-close": '{"a"}'}


@pytest.mark.parametrize("text", list(INVALID))
def test_invalid_committed_text_is_refused(target: Any, text: str) -> None:
    with pytest.raises(TargetError, match="not a valid prefix"):
        target("gpt2").correct(PROMPT, INVALID[text], JSON)


@pytest.mark.parametrize("text", list(INVALID))
def test_session_invalid_committed_text_raises_target_error(target: Any, text: str) -> None:
    session = target("gpt2").session(PROMPT)
    with pytest.raises(TargetError):
        session.correct(INVALID[text], JSON)


@pytest.mark.parametrize("temperature", [0.0, 1.0], ids=["greedy", "sampled"])
def test_session_invalid_last_token_says_so(target: Any, temperature: float) -> None:
    """Regression: the last (healed) token was not checked; when it broke the grammar, greedy
    raised 'refused token 0 it had allowed' and sampling a RuntimeError from torch."""
    session = target("gpt2").session(PROMPT)
    with pytest.raises(TargetError, match="committed text"):
        session.correct('{"a"}', JSON, sampling=Sampling(temperature, seed=0))


@pytest.mark.parametrize("max_tokens", [0, -1])
def test_max_tokens_must_be_positive(target: Any, max_tokens: int) -> None:
    made = target("gpt2")
    with pytest.raises(ValueError, match="max_tokens"):
        made.correct(PROMPT, "{", JSON, max_tokens=max_tokens)
    with pytest.raises(ValueError, match="max_tokens"):
        made.session(PROMPT).correct("{", JSON, max_tokens=max_tokens)


BAD_SAMPLING = {
    "temperature": [-0.1, float("nan"), float("inf"), float("-inf")],
    "top_p": [0.0, 1.5, -0.5, float("nan"), float("inf")],
}


@pytest.mark.parametrize(
    ("field", "value"),
    [(field, value) for field, values in BAD_SAMPLING.items() for value in values],
    ids=str,
)
def test_bad_sampling_parameters_are_named(field: str, value: float) -> None:
    """Regression: temperature=nan passed (nan < 0 is False), and inf sampled uniformly."""
    with pytest.raises(ValueError, match=rf"^{field} must be .*, got {value}$"):
        Sampling(**{field: value})


def test_slow_tokenizer_is_refused(tokenizer: Any) -> None:
    try:
        slow = tf.load_slow_mistral()
    except tf.FixtureError as exc:
        pytest.fail(str(exc), pytrace=False)
    assert not slow.is_fast
    model = tf.tiny_model("llama", tokenizer("mistral"))
    with pytest.raises(TargetError, match="fast"):
        LocalTarget(model, slow)


# -- speculation (local_target.speculation) -------------------------------------------------------

# Texts that repeat themselves, so prompt look-up proposes; random weights refuse most proposals.
REPEATS = {
    "json": (
        JSON,
        '{"name": "Tom", "colour": "blue", "name2": "Tom", "colour2": "blue", "name3": "T',
    ),
    "sqlite": (
        Grammar.load("sqlite"),
        "SELECT name, age FROM users WHERE age > 3 AND name = 'x' ORDER BY name, age, ",
    ),
}


@pytest.mark.parametrize("doc", list(REPEATS))
@pytest.mark.parametrize("sampling", [Sampling(), Sampling(1.0, seed=3), Sampling(0.7, 0.9, 5)])
@pytest.mark.parametrize("name", TARGET_IDS)
def test_speculation_chooses_the_same_tokens_and_keeps_the_kv_invariant(
    target: Any, name: str, sampling: Sampling, doc: str
) -> None:
    """Speculation changes the number of forward passes, never the tokens: greedy or seeded
    sampling, the same draws in the same order, on two grammars and four tokenizers. The session
    holds exactly the text afterwards."""
    made = target(name)
    grammar, text = REPEATS[doc]
    runs = []
    for speculate in (0, 6):
        session = made.session(PROMPT + text)
        policy = DecodingPolicy(speculate=speculate)
        c = session.correct(text, grammar, max_tokens=24, sampling=sampling, policy=policy)
        assert made.vocab.decode(session.ids[session.prompt_len :]) == (text + c.text).encode()
        assert_same_logits(session)
        draft = session.generate(text, max_tokens=16, sampling=sampling, speculate=speculate)
        drafted = "".join(draft)
        assert_same_logits(session)
        runs.append((c.tokens, c.flags, drafted))
    assert runs[0] == runs[1]


# -- selective logits (local_target.head) ---------------------------------------------------------


@pytest.mark.parametrize("name", TARGET_IDS)
def test_the_allowed_rows_logits_equal_the_full_computation(target: Any, name: str) -> None:
    made = target(name)
    assert made.head is not None  # these models' logits are their head over their last state
    session = made.session(PROMPT)
    session.move_to([*session.ids, *made.vocab.encode('{"a": [1, ')])
    rows = torch.tensor([0, 5, made.vocab.eos, made.vocab.n_logits - 1])
    split = session.next.logits_for(rows)
    assert torch.allclose(split, fresh_logits(made, session.ids)[rows], atol=1e-4)


@pytest.mark.parametrize("share", [1.0, 0.0])  # allowed rows only, or all rows with the mask
@pytest.mark.parametrize("name", TARGET_IDS)
def test_mask_first_chooses_the_same_greedy_tokens(target: Any, name: str, share: float) -> None:
    """Computing the mask before the logits (and only the allowed rows' logits) changes the cost,
    not the greedy choice."""
    made = target(name)
    tokens = []
    for policy in (DecodingPolicy(), DecodingPolicy(selective_vocab=0, selective_share=share)):
        for text in ('{"a": [1, ', '{"name": "Zo', "[tr"):
            c = made.correct(PROMPT, text, JSON, max_tokens=12, policy=policy)
            tokens.append(c.tokens)
    assert tokens[:3] == tokens[3:]
