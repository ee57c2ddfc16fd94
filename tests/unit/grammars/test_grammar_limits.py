"""What a grammar may cost: limits checked before the engine compiles it, a work budget per check,
and grammars that can never be completed.

Inputs that used to kill the process (a stack overflow, an abort on a failed allocation) or run
for minutes run in a child process with a memory cap and a timeout, so that a regression fails the
test instead of killing pytest. Those that take seconds each (the engine's own limits, reached the
long way) are marked `slow`: `make test` runs them, the daily `pytest` does not.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import string
import subprocess
import sys
import textwrap
import tracemalloc
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from pydantic import BaseModel

from backtrack import aguide, guide
from grammars import checker as checker_module
from grammars.errors import GrammarError, TextError
from grammars.grammar import Grammar
from grammars.limits import GrammarLimits
from grammars.pieces import FIRST_PIECE, PIECE_SECONDS

ROOT = Path(__file__).resolve().parents[3]
JSON = Grammar.load("json")
AMBIGUOUS = 'start: e\ne: e "+" e | e "*" e | "(" e ")" | /[0-9]+/'
RIGHT_RECURSIVE = 'start: x\nx: "a" x | "a"'


def isolated(script: str, *, memory: int = 2 << 30, timeout: float = 120, **values: object) -> str:
    """Run `script` in a fresh interpreter whose address space is capped at `memory` bytes, with
    `values` (JSON) as the dict `args`; return what it printed. A crash, an abort or a timeout fails
    the calling test."""
    prelude = (
        "import json, resource, sys\n"
        f"resource.setrlimit(resource.RLIMIT_AS, ({memory}, {memory}))\n"
        "args = json.loads(sys.stdin.read())\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(script)],
        input=json.dumps(values),
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        check=False,
    )
    assert proc.returncode == 0, f"exit status {proc.returncode}\n{proc.stderr[-3000:]}"
    return proc.stdout


def chain(n: int) -> str:
    """`start: r0`, `r0: r1`, ..., `rn: "x"`: rules nested n + 1 deep."""
    return "start: r0\n" + "".join(f"r{i}: r{i + 1}\n" for i in range(n)) + f'r{n}: "x"\n'


def nested_arrays(depth: int) -> dict:
    schema: dict = {"type": "integer"}
    for _ in range(depth):
        schema = {"type": "array", "items": schema}
    return schema


def sums(size: int) -> str:
    """'1+23*4+...' of about `size` characters (digits and operators, deterministic)."""
    parts, i = [], 0
    while sum(map(len, parts)) < size:
        parts += [str(i % 97), "+*"[i % 2]]
        i += 1
    return "".join(parts[:-1])


# -- limits checked before compiling --------------------------------------------------------------


def test_3000_chained_rules_compile():
    """3,000 chained rules overflowed the stack of the engine's recursive compiler (SIGSEGV)."""
    script = """
        from grammars.grammar import Grammar
        print(Grammar.from_lark(args["text"]).matches("x"))
    """
    assert isolated(script, text=chain(3000)).split() == ["True"]


REFUSED = """
    from grammars.errors import GrammarError
    from grammars.grammar import Grammar
    try:
        Grammar.{make}(args["spec"])
    except GrammarError as exc:
        print(exc.message, exc.line, sep="|")
"""


@pytest.mark.slow
def test_rule_chain_past_max_depth_is_a_grammar_error():
    out = isolated(REFUSED.format(make="from_lark"), spec=chain(30_000))
    message, line = out.strip().split("|")
    assert "30002 deep" in message and "GrammarLimits.max_depth (5000)" in message
    assert line == "30002"  # the rule at the bottom of the chain


def test_raised_max_depth_allows_a_deeper_chain():
    script = """
        from grammars.grammar import Grammar
        from grammars.limits import GrammarLimits
        grammar = Grammar.from_lark(args["text"], limits=GrammarLimits(max_depth=7000))
        print(grammar.matches("x"))
    """
    assert isolated(script, text=chain(6000)).split() == ["True"]


@pytest.mark.parametrize("keyword", ["minItems", "maxItems"])
def test_huge_item_counts_are_refused_before_compiling(keyword):
    """minItems 10**9 made the engine abort on an 8 GiB allocation (one grammar node per item)."""
    schema = {"type": "array", "items": {"type": "integer"}, keyword: 10**9}
    out = isolated(REFUSED.format(make="from_json_schema"), spec=schema)
    assert f"{keyword} 1000000000 at '#'" in out and "GrammarLimits.max_repeat (100000)" in out


def test_max_repeat_is_a_limit_the_caller_may_raise():
    schema = {"type": "array", "items": {"type": "integer"}, "minItems": 200_000}
    with pytest.raises(GrammarError, match=r"minItems 200000 at '#'"):
        Grammar.from_json_schema(schema)
    grammar = Grammar.from_json_schema(schema, limits=GrammarLimits(max_repeat=200_000))
    assert grammar.check("[" + "1," * 10).valid


def wide_object(optional: int, required: int = 0) -> dict[str, object]:
    names = [f"p{i}" for i in range(optional + required)]
    return {
        "type": "object",
        "properties": {n: {"type": "integer"} for n in names},
        "required": names[:required],
    }


def test_an_object_with_too_many_optional_properties_is_refused_where_it_is():
    """600 optional properties: a 3.7 KB draft naming half of them took 21 s to check, holding
    the GIL 0.2 s at a time (a server's /health stalled); refused before compiling."""
    schema = {
        "type": "object",
        "properties": {"inner": {"type": "array", "items": wide_object(600)}},
    }
    with pytest.raises(GrammarError) as refused:
        Grammar.from_json_schema(schema)
    message = str(refused.value)
    assert "the object at '#/properties/inner/items' has 600 optional properties" in message
    assert "GrammarLimits.max_optional_properties (256)" in message


def test_required_properties_do_not_count_toward_the_optional_limit():
    grammar = Grammar.from_json_schema(wide_object(256, required=400))
    assert not grammar.matches('{"p0": 1}')  # p256... are required
    limits = GrammarLimits(max_optional_properties=600)
    assert Grammar.from_json_schema(wide_object(600), limits=limits).matches('{"p0": 1}')


def patterned(count: int) -> dict[str, Any]:
    patterns = {f"^prefix_{i}_[a-z0-9]{{2,8}}$": {"type": "string"} for i in range(count)}
    return {"type": "object", "patternProperties": patterns}


def test_an_object_with_too_many_pattern_properties_is_refused_before_compiling():
    """300 patternProperties (15 KB) took 30 s to compile; refused at once, saying where."""
    schema = {"type": "array", "items": patterned(300)}
    with pytest.raises(GrammarError) as refused:
        Grammar.from_json_schema(schema)
    message = str(refused.value)
    assert "the object at '#/items' has 300 patternProperties" in message
    assert "GrammarLimits.max_pattern_properties (128)" in message
    assert Grammar.from_json_schema(patterned(20)).matches('{"prefix_3_ab": "x"}')


class CostlyKeys:
    """A matcher whose calls are charged to a simulated clock as the engine spends time under a
    schema of 1,000 optional properties: about 3 ms a byte of a key, microseconds elsewhere
    (grammars.pieces). The real engine still decides what fits; only the time is simulated, so
    the pieces the checker chooses do not depend on this machine's load (timed for real, a busy
    machine's stalls failed this test: `benchmarks.bench_freeze` measures the real holds)."""

    KEY_BYTE, OTHER_BYTE = 0.003, 0.000005

    def __init__(self, matcher: Any, draft: str) -> None:
        self._matcher = matcher
        self._costly = [False] * len(draft)
        for key in re.finditer(r'"[^"]*"', draft):
            self._costly[key.start() : key.end()] = [True] * len(key.group())
        self.now = 0.0
        self.at = 0  # bytes committed
        self.calls: list[tuple[int, float]] = []  # (bytes, simulated seconds)

    def _charge(self, size: int) -> float:
        costly = sum(self._costly[self.at : self.at + size])
        seconds = costly * self.KEY_BYTE + (size - costly) * self.OTHER_BYTE
        self.now += seconds
        return seconds

    def validate_tokens(self, tokens: list[int]) -> int:
        self.calls.append((len(tokens), self._charge(len(tokens))))
        return self._matcher.validate_tokens(tokens)

    def consume_tokens(self, tokens: list[int]) -> bool:
        size, seconds = self.calls[-1]
        self.calls[-1] = (size, seconds + self._charge(len(tokens)))
        self.at += len(tokens)
        return self._matcher.consume_tokens(tokens)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._matcher, name)


def test_a_costly_grammar_is_checked_in_pieces_that_hold_the_gil_briefly(monkeypatch):
    """1,000 optional properties (allowed here) cost the engine about 3 ms a byte of their keys,
    and it holds the GIL through each call: 256-byte pieces held it near a second each. Pieces now
    follow the engine's time a byte: they grow through cheap stretches (at most doubling) and
    shrink at the keys after them, so that no call holds it 10 times PIECE_SECONDS (256-byte
    pieces here: 0.7 s each)."""
    limits = GrammarLimits(max_optional_properties=1000)
    grammar = Grammar.from_json_schema(wide_object(1000), limits=limits)
    draft = "{" + ", ".join(f'"p{i}": {i}' for i in range(0, 1000, 2))
    checker = grammar.checker()
    engine = checker._matcher = CostlyKeys(checker._matcher, draft)
    monkeypatch.setattr(checker_module, "time", SimpleNamespace(perf_counter=lambda: engine.now))
    assert checker.feed(draft[:3000]) == 3000
    assert engine.calls[0][0] == FIRST_PIECE and len(engine.calls) > 100
    assert max(seconds for _, seconds in engine.calls) < 10 * PIECE_SECONDS, engine.calls


def test_item_counts_inside_definitions_are_found():
    schema = {
        "$defs": {"big": {"type": "array", "maxItems": 10**6}},
        "type": "object",
        "properties": {"x": {"$ref": "#/$defs/big"}},
    }
    with pytest.raises(GrammarError, match=r"maxItems 1000000 at '#/\$defs/big'"):
        Grammar.from_json_schema(schema)


def test_deep_json_schema_is_a_grammar_error_not_recursion_error():
    with pytest.raises(GrammarError, match=r"nested more than 124 levels deep at '#/items/items/"):
        Grammar.from_json_schema(nested_arrays(2000))


def test_json_schema_depth_up_to_the_engine_limit():
    assert Grammar.from_json_schema(nested_arrays(123)).matches("[" * 123 + "1" + "]" * 123)
    with pytest.raises(GrammarError, match="nested more than 124 levels deep"):
        Grammar.from_json_schema(nested_arrays(124))
    with pytest.raises(GrammarError, match="nested more than 124 levels deep"):
        Grammar.from_json_schema(json.dumps(nested_arrays(124)))


def test_deep_schema_inside_lark_is_a_grammar_error():
    with pytest.raises(GrammarError, match="nested more than 124 levels deep"):
        Grammar.from_lark("start: %json " + json.dumps(nested_arrays(300)))


def test_grammar_over_max_source_bytes_is_refused_before_compiling():
    """1.8 MB of alternatives took the engine minutes; it is refused by its size."""
    text = "start: " + " | ".join(f'"w{i}"' for i in range(160_000)) + "\n"
    out = isolated(REFUSED.format(make="from_lark"), timeout=60, spec=text)
    assert "grammar is 1,808,895 bytes" in out and "max_source_bytes (1,048,576)" in out


@pytest.mark.slow
def test_too_many_symbols_is_refused_when_built():
    """Past 65,525 symbols the engine panics; that showed only at the first check."""
    first, rest = string.ascii_lowercase, string.ascii_lowercase + string.digits
    names = [
        "".join(p) for p in itertools.islice(itertools.product(first, rest, rest, rest), 66_000)
    ]
    text = "start: " + "|".join(names) + "\n" + "".join(f'{n}:"x"\n' for n in names)
    with pytest.raises(GrammarError, match=r"more than 65,525 symbols") as info:
        Grammar.from_lark(text)
    assert "panic" not in str(info.value)


# -- the work budget of a check -------------------------------------------------------------------


@pytest.mark.slow
def test_ambiguous_grammar_stops_at_the_work_budget():
    """3 KB under an ambiguous grammar took over two minutes; now a TextError where the budget of
    Earley items per position runs out, long before the end of the text."""
    script = """
        from grammars.errors import TextError
        from grammars.grammar import Grammar
        grammar, text = Grammar.from_lark(args["grammar"]), args["text"]
        def streamed():
            checker = grammar.checker()
            for i in range(0, len(text), 4):
                checker.feed(text[i : i + 4])
        for run in (lambda: grammar.check(text), streamed):
            try:
                run()
            except TextError as exc:
                print(exc.char_offset, exc.byte_offset, exc.message, sep="|")
    """
    out = isolated(script, timeout=60, grammar=AMBIGUOUS, text=sums(3000))
    whole, streamed = out.strip().splitlines()
    assert streamed == whole  # the same spot, fed whole or in 4-character chunks
    chars, nbytes, message = whole.split("|")
    assert chars == nbytes and 100 < int(chars) < 1000
    assert "too ambiguous" in message and "GrammarLimits.row_items" in message


def test_right_recursion_within_the_budget_and_past_it():
    grammar = Grammar.from_lark(RIGHT_RECURSIVE)
    assert grammar.matches("a" * 100)
    with pytest.raises(TextError, match="too ambiguous") as info:
        grammar.check("a" * 1000)
    assert 100 < info.value.char_offset < 1000
    roomy = Grammar.from_lark(RIGHT_RECURSIVE, limits=GrammarLimits(row_items=2000))
    assert roomy.matches("a" * 1000)


def test_a_check_stopped_at_the_budget_keeps_the_text_before_it():
    checker = Grammar.from_lark(RIGHT_RECURSIVE).checker()
    assert checker.feed("a" * 50) == 50
    with pytest.raises(TextError) as info:
        checker.feed("a" * 1000)
    stopped = info.value.char_offset
    assert 100 < stopped < 1000
    assert (checker.text, checker.cut) == ("a" * stopped, True)  # taken up to the limit, as a cut
    assert checker.feed("a") == 0


@pytest.mark.parametrize("asynchronous", [False, True], ids=["guide", "aguide"])
def test_a_draft_past_the_budget_ends_the_run_with_a_text_error_and_its_partial(asynchronous):
    """Not a drafter failure (it was a ProviderError, 'the drafter failed: TextError', with none of
    the draft kept): the check's own TextError, carrying the text up to where checking stopped."""

    def drafter(prompt, prefix):
        yield "a" * 20
        yield "a" * 980

    class NoTarget:
        def session(self, prompt):
            raise AssertionError("the local target was asked for a correction")

    grammar = Grammar.from_lark(RIGHT_RECURSIVE)
    call = aguide if asynchronous else guide
    with pytest.raises(TextError, match="too ambiguous") as info:
        result = call(drafter, grammar, prompt="p", target=NoTarget())
        if asynchronous:
            asyncio.run(result)
    partial = info.value.partial
    assert partial.text == "a" * info.value.char_offset and partial.stop_reason == "error"
    assert partial.trace.rounds[-1].ended == "error"


@pytest.mark.slow
def test_budget_grows_with_the_grammar():
    """A schema with many optional properties (250, within max_optional_properties) needs many
    items at one position: its budget is its own size plus row_items, so a large legitimate
    grammar is not taken for an ambiguous one."""
    schema = {"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(250)}}
    text = json.dumps({f"p{i}": i for i in range(0, 250, 3)})
    assert Grammar.from_json_schema(schema).matches(text)


def test_schema_properties_keep_their_order():
    """The engine takes properties in the order the schema lists them; sorting the schema's keys
    refused every text written in the declared order (as pydantic and models write it)."""
    schema = {"type": "object", "properties": {"name": {"type": "string"}, "age": {}}}
    grammar = Grammar.from_json_schema(schema)
    assert grammar.matches('{"name": "Ann", "age": 3}')
    assert Grammar.from_json_schema(json.dumps(schema)).matches('{"name": "Ann", "age": 3}')


NON_ASCII = ["émoji", "東京", "ключ", "😀", "a\U0001f600b"]


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda k: {"properties": {k: {}}, "required": [k]}, id="properties"),
        pytest.param(lambda k: {"additionalProperties": {"type": "string"}}, id="additional"),
        pytest.param(lambda k: {"patternProperties": {"^" + k[0]: {}}}, id="pattern"),
    ],
)
@pytest.mark.parametrize("key", NON_ASCII)
def test_non_ascii_keys_and_values_are_never_cut(make, key):
    grammar = Grammar.from_json_schema({"type": "object", **make(key)})
    for value in NON_ASCII:
        text = json.dumps({key: value}, ensure_ascii=False)
        assert grammar.matches(text), text
        checker = grammar.checker()
        assert sum(checker.feed(c) for c in text) == len(text) and checker.complete


@pytest.mark.slow
def test_lexer_limit_is_an_error_not_a_cut_and_leaves_the_grammar_usable():
    """The engine's lexer states are shared by every copy of a matcher: once a check reached their
    limit, every later check of the grammar was cut at its first byte."""
    grammar = Grammar.from_regex("a{1000000}")
    with pytest.raises(TextError, match="lexer") as info:
        grammar.check("a" * 300_000)
    assert 200_000 < info.value.byte_offset < 300_000
    assert grammar.check("a" * 1000).valid
    checker = grammar.checker()
    assert checker.feed("a" * 1000) == 1000


# -- grammars that can never be completed ---------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "rule", "line"),
    [
        pytest.param('start: a\na: "x" a', "a", 2, id="no-base-case"),
        pytest.param('start: "x" start', "start", 1, id="start-itself"),
        pytest.param('start: a b\na: "x"\nb: "y" b | b "z"', "b", 3, id="second-rule"),
        pytest.param('start: a\na: "(" b ")"\nb: a | "[" a "]"', "a", 2, id="mutual"),
        pytest.param('start: A\nA: "x"\n%ignore b\nb: "y" b', "b", 4, id="ignored-rule"),
    ],
)
def test_grammar_that_can_never_end_is_refused(text, rule, line):
    with pytest.raises(GrammarError, match=f"rule '{rule}'") as info:
        Grammar.from_lark(text)
    assert "can never" in info.value.message
    assert info.value.line == line


@pytest.mark.parametrize(
    "text",
    [
        pytest.param('start: a\na: "x" a | "y"', id="base-case"),
        pytest.param('start: a*\na: "(" a* ")"', id="star"),
        pytest.param('start: [a]\na: a "x"', id="optional"),
        pytest.param('start: a ~ 0 .. 3\na: a "x"', id="tilde-zero"),
        pytest.param('start: a{0,3}\na: a "x"', id="braces-zero"),
        pytest.param('start: a\na: %json {"type": "integer"} a?', id="json-atom"),
        pytest.param('start: a\n?a: "x" a\n   | "y"', id="continued-alternative"),
    ],
)
def test_recursive_grammars_with_a_base_case_are_kept(text):
    assert Grammar.from_lark(text).warnings == ()


def test_dead_end_rule_is_a_warning():
    grammar = Grammar.from_lark('start: "y" | "x" a\na: "x" a')
    assert grammar.matches("y")
    assert any("rule 'a'" in w and "can never" in w for w in grammar.warnings)


class Tree(BaseModel):
    name: str
    children: list[Tree]


@pytest.mark.parametrize(
    ("schema", "where"),
    [
        pytest.param(
            {"type": "object", "properties": {"self": {"$ref": "#"}}, "required": ["self"]},
            "'#' requires property 'self'",
            id="required-self",
        ),
        pytest.param({"$ref": "#"}, "'#' refers to '#'", id="ref-loop"),
        pytest.param(
            {
                "$defs": {
                    "n": {
                        "type": "object",
                        "properties": {"next": {"$ref": "#/$defs/n"}},
                        "required": ["next"],
                    }
                },
                "$ref": "#/$defs/n",
            },
            "'#/$defs/n' requires property 'next'",
            id="defs",
        ),
        pytest.param(
            {"type": "array", "items": {"$ref": "#"}, "minItems": 1},
            "'#' needs at least 1 item",
            id="array",
        ),
    ],
)
def test_schema_that_can_never_end_is_refused(schema, where):
    with pytest.raises(GrammarError, match="can never be completed") as info:
        Grammar.from_json_schema(schema)
    assert where in info.value.message


@pytest.mark.parametrize(
    "schema",
    [
        pytest.param({"type": "object", "properties": {"next": {"$ref": "#"}}}, id="optional-next"),
        pytest.param(
            {"type": ["object", "null"], "properties": {"s": {"$ref": "#"}}, "required": ["s"]},
            id="or-null",
        ),
        pytest.param({"properties": {"s": {"$ref": "#"}}, "required": ["s"]}, id="untyped"),
        pytest.param({"type": "array", "items": {"$ref": "#"}}, id="empty-array"),
        pytest.param(
            {
                "anyOf": [
                    {"type": "object", "properties": {"s": {"$ref": "#"}}, "required": ["s"]},
                    {"type": "string"},
                ]
            },
            id="any-of",
        ),
        pytest.param(Tree, id="pydantic-tree"),
    ],
)
def test_recursive_schemas_with_a_base_case_are_kept(schema):
    Grammar.from_json_schema(schema)


# -- memory ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "items",
    [pytest.param(1000, id="53KB"), pytest.param(9000, id="512KB", marks=pytest.mark.slow)],
)
def test_checker_memory_is_a_small_multiple_of_the_text(items):
    """Python memory held by a checker fed 53 KB or 512 KB in 4-character chunks (the engine's own
    state, outside tracemalloc's view, is not counted here)."""
    doc = json.dumps([{"id": i, "name": f"item {i}", "tags": ["a", "b"]} for i in range(items)])
    checker = JSON.checker()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        for i in range(0, len(doc), 4):
            checker.feed(doc[i : i + 4])
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert checker.complete
    assert peak < 3 * len(doc)
