"""LocalTarget on the real SmolLM2-135M-Instruct (end to end; CPU is fine, about a minute).

- Minimal invasiveness (DESIGN 5): where SmolLM2's unconstrained greedy answer is already valid
  under a grammar, the constrained greedy answer is the same, token for token (forced bytes and
  opportunistic masks included).
- From a chat prompt alone, a JSON object with three string keys: valid and sensible.
- A 1 MB prompt (over 200k tokens against a context of 8192) is refused before any forward pass.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import torch

from grammars.grammar import Grammar
from local_target import LocalTarget
from local_target.errors import TargetError

pytestmark = pytest.mark.e2e

SENTENCES = Grammar.from_lark(
    r"""
start: sentence (" " sentence)*
sentence: WORD (SEP WORD)* END
SEP: " " | ", " | ": "
END: "." | "!" | "?"
WORD: /[A-Za-z0-9']+/
"""
)
ARITHMETIC = Grammar.from_regex(r"[0-9]+( [-+*/=] [0-9]+)*")
FENCED_JSON = Grammar.from_lark(
    r"""
start: "```json" value "```"
?value: object | array | STRING | NUMBER | "true" | "false" | "null"
object: "{" [pair ("," pair)*] "}"
pair: STRING ":" value
array: "[" [value ("," value)*] "]"
STRING: /"([^"\\\x00-\x1f]|\\["\\\/bfnrt]|\\u[0-9a-fA-F]{4})*"/
NUMBER: /-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/
WS: /[ \t\n\r]+/
%ignore WS
"""
)
SELECT = Grammar.from_lark(
    r"""
start: select ";"
select: "SELECT" columns "FROM" NAME [where]
columns: "*" | NAME ("," NAME)*
where: "WHERE" condition
condition: NAME "IS" ["NOT"] "NULL" | NAME "=" value
value: NUMBER | STRING
NAME: /[A-Za-z_][A-Za-z0-9_]*/
NUMBER: /[0-9]+/
STRING: /'[^']*'/
WS: /[ \t\n]+/
%ignore WS
"""
)

# prompt, a grammar SmolLM2's greedy answer satisfies (its answer, as seen: in the comment)
UNCHANGED = {
    # The capital of France is Paris.
    "capital": ("What is the capital of France? Answer in one sentence.", SENTENCES),
    # 2 + 2 = 4
    "arithmetic": ("What is 2 + 2? Answer with a number only.", ARITHMETIC),
    # The primary colors are: Red, Blue, and Yellow.
    "colors": ("Name three primary colors.", SENTENCES),
    # ```json\n{\n    "name": "Felix",\n    "age": 12, ...}\n```  (the fence is forced)
    "fenced-json": (
        "Give me a JSON object describing a cat with keys name and age. Output only JSON.",
        FENCED_JSON,
    ),
    # SELECT * FROM users WHERE username IS NULL;  ("SELECT" is forced)
    "sql": ("Write a SQL query that selects all rows from the table users.", SELECT),
}

THREE_STRINGS_SCHEMA = {
    "type": "object",
    "properties": {k: {"type": "string"} for k in ("title", "author", "genre")},
    "required": ["title", "author", "genre"],
    "additionalProperties": False,
}
BOOK = "Describe a book as a JSON object with the keys title, author and genre."


def greedy_unconstrained(target: LocalTarget, prompt: str, max_new_tokens: int) -> list[int]:
    """model.generate's greedy tokens after the same prompt ids, without the final EOS."""
    ids = torch.tensor([target.prompt_ids(prompt)])
    with torch.inference_mode():
        out = target.model.generate(
            ids,
            attention_mask=torch.ones_like(ids),
            max_new_tokens=max_new_tokens,
            do_sample=False,
        )
    new: list[int] = out[0, ids.shape[1] :].tolist()
    assert new and new[-1] == target.vocab.eos, "the answer did not end within the budget"
    return new[:-1]


# correct() adds a closing bonus to the logits in the last quarter of an until="complete" budget
# (at most 32 tokens), so the comparison holds for answers shorter than that.
BUDGET = 120


@pytest.mark.parametrize("case", list(UNCHANGED))
def test_valid_greedy_answer_is_unchanged(smollm2: LocalTarget, case: str) -> None:
    prompt, grammar = UNCHANGED[case]
    free = greedy_unconstrained(smollm2, prompt, max_new_tokens=BUDGET // 2)
    free_text = smollm2.vocab.decode(free).decode("utf-8")
    if not grammar.matches(free_text):
        pytest.fail(
            f"SmolLM2's greedy answer is no longer valid under the test grammar, so this case "
            f"tests nothing: {free_text!r}; pick another prompt or grammar",
            pytrace=False,
        )
    c = smollm2.correct(prompt, "", grammar, until="complete", max_tokens=BUDGET)
    assert list(c.tokens) == free, (c.text, free_text, c.flags)
    assert c.text == free_text
    assert c.complete
    assert c.stop_reason in ("eos", "grammar_end")


@pytest.mark.parametrize(
    "grammar",
    [Grammar.load("json_keys", n=3), Grammar.from_json_schema(THREE_STRINGS_SCHEMA)],
    ids=["json_keys-3", "schema-3-strings"],
)
def test_json_with_three_string_keys(smollm2: LocalTarget, grammar: Grammar) -> None:
    c = smollm2.correct(BOOK, "", grammar, until="complete", max_tokens=80)
    assert c.complete and grammar.matches(c.text), c.text
    value: Any = json.loads(c.text)
    assert isinstance(value, dict) and len(value) == 3, value
    for key, item in value.items():
        assert re.fullmatch(r"[A-Za-z][A-Za-z _]*", key), key
        assert isinstance(item, str) and re.search(r"[A-Za-z]{2}", item), (key, item)
    # a book has these (the prompt names them; the schema forces them)
    assert set(value) == {"title", "author", "genre"}


def test_completion_ends_where_the_model_goes_past_the_grammar(
    smollm2: LocalTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: after a raw prompt that opens a ```json fence, SmolLM2 wants to close the fence
    once the object is done; the mask refused the backticks and the completion padded the budget
    with newlines. At a complete point a refused choice now ends the text."""
    monkeypatch.setattr(smollm2.tokenizer, "chat_template", None)
    prompt = "Here is a JSON object, with 3 keys, using only string values:\n\n```json\n"
    grammar = Grammar.load("json_keys", n=3)
    c = smollm2.correct(prompt, "", grammar, until="complete", max_tokens=120)
    assert c.complete and c.stop_reason == "eos", (c.stop_reason, c.text)
    assert c.text.rstrip().endswith("}")
    assert len(c.text) - len(c.text.rstrip()) <= 2


def test_megabyte_prompt_is_refused_before_any_forward_pass(smollm2: LocalTarget) -> None:
    """Regression: a 1 MB prompt was fed whole (over a minute and 3 GB)."""

    def refuse(_module: Any, _args: Any) -> None:
        raise AssertionError("a forward pass ran")

    assert smollm2.context_length == 8192
    prompt = ("The quick brown fox jumps over the lazy dog. " * 23_000)[:1_000_000]
    handle = smollm2.model.base_model.register_forward_pre_hook(refuse)
    try:
        with pytest.raises(TargetError, match=r"prompt needs \d{6} tokens, .* context of 8192$"):
            smollm2.session(prompt)
    finally:
        handle.remove()
