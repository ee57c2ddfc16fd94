"""Shipped grammars: llguidance and the lark library read each one alike, and prefix checks cut
where they should.

For every shipped grammar (json_keys with 1, 3 and 10 keys) there are hand-written realistic
sentences (some invalid, marked so) and sentences sampled from the grammar's own rules
(tests/support/sampler.py), and from those, corrupted ones:

(a) llguidance (`Grammar.matches`) and lark (`Grammar.parse`, or lark's Earley parser directly
    where llguidance already refused) accept or reject each sentence alike;
(b) every prefix of a valid sentence is a valid prefix;
(c) a character inserted at offset k never moves the cut before k, and where the character cannot
    follow the first k characters at all, the cut is exactly k;
(d) both engines agree on sentences corrupted at one offset (GRAMMARS.md, point 7).

Every case is its own test id: `sqlite-sample-017`, `json-hand-emoji`, `csv-corrupt-042`. The daily
run takes every hand-written sentence and the first DAILY drawn cases of each kind per grammar; the
rest are marked `slow` (`make test` runs them all).
"""

from __future__ import annotations

import functools
import json
import random
from typing import Any

import lark
import pytest

import grammars
from backtrack import Grammar
from tests.support.sampler import Sampler, alphabet_of, insert, mutate

SAMPLES = 200  # sampled sentences per grammar
CORRUPTIONS = 120  # corrupted sentences per grammar, for (d)
INSERTIONS = 40  # inserted characters per grammar, for (c)
PREFIX_CUTS_SAMPLED = 6  # prefixes checked per sampled sentence, for (b)
PREFIX_CUTS_HAND = 40  # ... per hand-written sentence (plus around every non-ASCII character)
DAILY = 5  # drawn cases of each kind per grammar in the daily run (sampled, inserted, corrupted)

# Parametric grammars and the parameters they are tested with.
PARAMS: dict[str, list[dict[str, int]]] = {"json_keys": [{"n": 1}, {"n": 3}, {"n": 10}]}

# Sampler settings (see Sampler): lark's Earley parser is slow on long SQL and Python sentences.
SAMPLING: dict[str, dict[str, Any]] = {
    "json": {"grow": 0.8},
    "csv": {"grow": 0.8, "max_tokens": 100},
    # fewer blanks left out (fewer glued keywords); names, parameters and comments as people write
    # them (most draws of a comment write a blank instead: comments may go between any two tokens)
    "sqlite": {
        "max_tokens": 30,
        "empty": 0.1,
        "examples": {
            "NAME": ["id", "name", "users", "o", "t1", "total_amount", "created_at", "café", "x"],
            "PARAM": ["?", "?1", ":name", "@p"],
            "_LINE_COMMENT": ["-- note\n"] + ["\n"] * 9,
            "_BLOCK_COMMENT": ["/* c */"] + [" "] * 9,
        },
    },
    "python_expr": {"max_tokens": 30},
    "arithmetic": {"max_tokens": 30},
}


def _variants() -> dict[str, tuple[str, dict[str, int]]]:
    """Test id -> (grammar name, parameters), for every shipped grammar."""
    out: dict[str, tuple[str, dict[str, int]]] = {}
    for name in grammars.names():
        for params in PARAMS.get(name, [{}]):
            label = "-".join([name, *(str(v) for v in params.values())])
            out[label] = (name, params)
    return out


VARIANTS = _variants()


@functools.cache
def grammar(variant: str) -> Grammar:
    name, params = VARIANTS[variant]
    return Grammar.load(name, **params)


@functools.cache
def sampler(variant: str) -> Sampler:
    name, params = VARIANTS[variant]
    return Sampler(grammars.source(name, **params), **SAMPLING.get(name, {}))


def parser(variant: str) -> lark.Lark:
    """lark's parser of the variant, as `Grammar.parse` configures it (`sampler.lark_parser`): the
    sampler's own, built once (a second one would cost a fifth of a second per grammar)."""
    return sampler(variant).parser


def lark_accepts(variant: str, text: str) -> bool:
    """lark's verdict: through `Grammar.parse` where llguidance accepts (so the public path is
    the one tested), through lark's parser directly where llguidance would refuse first."""
    try:
        if grammar(variant).matches(text):
            grammar(variant).parse(text)
        else:
            parser(variant).parse(text)
    except lark.exceptions.UnexpectedInput:
        return False
    return True


def explain(variant: str, text: str) -> str:
    result = grammar(variant).check(text)
    return f"llguidance cuts at char {result.chars}:\n{result.context()}"


# -- hand-written sentences ------------------------------------------------------------------------

JSON_HAND = {
    "config": (
        '{"name": "backtrack", "version": "0.1.0", "private": false, "port": 8080,\n'
        ' "ratio": 0.75, "tags": ["llm", "grammar"], "owner": null}'
    ),
    "pretty": json.dumps(
        {"users": [{"id": 1, "name": "Ada", "roles": ["admin"]}, {"id": 2, "name": "Linus"}]},
        indent=2,
    ),
    "emoji": '{"reaction": "😀👍🏽", "flags": "🇯🇵🇫🇷", "family": "👩‍👩‍👧"}',
    "cjk": '{"日本語": "東京都", "中文": ["北京", "上海"], "한국어": "서울"}',
    "combining": '{"e\u0301": "n\u0303o\u0308\u0323", "zalgo": "Z\u0351\u036b\u0343a\u0304"}',
    "escapes": r'{"q": "she said \"hi\"", "path": "C:\\Users\\ada", "url": "http:\/\/x.org",'
    r' "ctl": "tab\tnl\ncr\rbs\bff\f", "u": "\u00e9\ud83d\ude00\u0000"}',
    "numbers": "[0, -0, 1.5, -2.25e-3, 6.02E23, 1e+10, 123456789012345678901234567890]",
    "nested-empty": '{"a": {}, "b": [], "c": [[], [{}]], "d": {"e": {"f": [null]}}}',
    "scalar-string": '"just a string with \\u2603 snowman"',
    "scalar-number": "  -12.5e2  ",
    "blanks-around": ' \r\n\t {"a" : [ 1 , 2 ] }\r\n ',
    "rtl": '{"ar": "مرحبا بالعالم", "he": "שלום", "mixed": "abc אבג 123"}',
}
JSON_HAND_INVALID = {
    "trailing-comma": '{"a": 1, "b": 2,}',
    "single-quotes": "{'a': 1}",
    "nan": '{"a": NaN}',
    "leading-zero": "[01]",
    "control-char": '{"a": "line\nbreak"}',
    "comment": '{"a": 1 // no comments\n}',
    "missing-colon": '{"a" 1}',
    "two-values": "[1] [2]",
    "bad-escape": r'"\x41"',
    "empty": "",
}

SQL_HAND = {
    "simple": "SELECT id, name FROM users WHERE active = 1;",
    "lowercase": "select count(*) from orders where status in ('paid', 'shipped') limit 10",
    "join": (
        "SELECT c.name, o.total\nFROM customers AS c\n"
        "LEFT JOIN orders o ON o.customer_id = c.id\nWHERE o.id IS NULL\nORDER BY c.name ASC"
    ),
    "cte": (
        "WITH recent AS (\n  SELECT * FROM orders WHERE created_at > '2024-01-01'\n)\n"
        "SELECT customer_id, COUNT(*) AS n, SUM(total) AS spent\nFROM recent\n"
        "GROUP BY customer_id\nHAVING COUNT(*) > 2\nORDER BY spent DESC\nLIMIT 5 OFFSET 10;"
    ),
    "recursive-cte": (
        "WITH RECURSIVE cnt(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM cnt WHERE x < 10) "
        "SELECT x FROM cnt"
    ),
    "case": (
        "SELECT name, CASE WHEN score >= 90 THEN 'A' WHEN score >= 80 THEN 'B' ELSE 'C' END "
        "AS grade FROM students"
    ),
    "compound": (
        "SELECT a FROM t1 UNION SELECT b FROM t2 INTERSECT SELECT c FROM t3 EXCEPT SELECT d FROM t4"
    ),
    "functions": (
        "SELECT CAST(price AS REAL) * 1.1 AS gross, COUNT(DISTINCT category), "
        "COALESCE(note, '') || ' (' || upper(code) || ')' FROM products "
        "WHERE price BETWEEN 10 AND 20.5 AND name NOT LIKE '%test%'"
    ),
    "quoted-identifiers": (
        'SELECT "order"."id", `user name`, [weird column] FROM "order" '
        "JOIN `users` u USING (user_id) CROSS JOIN [audit log]"
    ),
    "exists-subquery": (
        "SELECT * FROM employees e WHERE NOT EXISTS (SELECT 1 FROM reviews r WHERE "
        "r.emp_id = e.id) AND e.salary > (SELECT AVG(salary) FROM employees)"
    ),
    "window": (
        "SELECT dept, name, ROW_NUMBER() OVER (PARTITION BY dept ORDER BY salary DESC) AS rn, "
        "SUM(salary) OVER (ORDER BY hired ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) "
        "FROM staff"
    ),
    "unicode-strings": (
        "SELECT * FROM cities WHERE name = '東京' OR name = 'Zürich' OR note = 'it''s 😀'"
    ),
    "parens-after-keywords": "SELECT*FROM t WHERE(a=1)OR NOT(b<>2)AND c IN(1,2)",
    "params-and-blanks": "  \n SELECT t.* FROM t WHERE t.a = ? AND t.b = :name ;  \n",
    "derived-table": (
        "SELECT s.dept, s.avg_salary FROM (SELECT dept, AVG(salary) AS avg_salary "
        "FROM staff GROUP BY dept) AS s WHERE s.avg_salary > 5000.0"
    ),
    "comments": "-- top customers\nSELECT id /* key */, name FROM users; -- done",
    "filter-and-arrows": (
        "SELECT COUNT(*) FILTER (WHERE data ->> '$.ok') AS n, 1.5E-3, 0x1F FROM t "
        "WHERE a IS NOT DISTINCT FROM b AND c NOTNULL"
    ),
}
SQL_HAND_INVALID = {
    "no-table": "SELECT * FROM",
    "double-comma": "SELECT a,, b FROM t",
    "order-without-by": "SELECT * FROM t ORDER a",
    "unterminated-string": "SELECT 'abc FROM t",
    "keyword-glued-to-name": "SELECT a FROM t WHEREx = 1",
    "limit-glued-to-number": "SELECT a FROM t LIMIT10 OFFSET 5",
    "unclosed-paren": "SELECT (1 + 2 FROM t",
    "insert": "INSERT INTO t VALUES (1)",
    "trailing-comma": "SELECT a, FROM t",
    "keyword-as-table": "SELECT * FROM order",
    "number-glued-to-keyword": "SELECT a FROM t WHERE b = 1AND c = 2",
}

CSV_HAND = {
    "simple": "id,name,email\n1,Ada,ada@example.com\n2,Linus,linus@example.org\n",
    "crlf": "a,b,c\r\n1,2,3\r\n4,5,6\r\n",
    "no-final-newline": "city,country\nParis,France\nTokyo,Japan",
    "quoted": 'name,quote\n"Lovelace, Ada","She wrote ""the first program"""\n',
    "newline-in-field": 'id,address\n1,"221B Baker Street\nLondon"\n2,"Main St\r\nSpringfield"\n',
    "empty-fields": "a,b,c\n,,\n1,,3\n,2,\n",
    "unicode": "名前,都市,emoji\n山田太郎,東京,😀\nJosé,São Paulo,👍🏽\ne\u0301,Zürich,🇨🇭\n",
    "single-column": 'value\n42\n""\n7\n',
    "spaces-kept": "a , b\n x ,y \n",
    "quoted-header": '"first name","last name"\n"Ada","Lovelace"\n',
    "mixed-line-ends": "h1,h2\r\nv1,v2\nv3,v4\r\n",
    "header-only": "just,a,header",
}
CSV_HAND_INVALID = {
    "quote-in-bare-field": 'a,b\n1,2"3\n',
    "space-after-quote": 'a,b\n"x" ,y\n',
    "unterminated-quote": 'a,b\n"x,y\n',
    "blank-line-inside": "a,b\n\n1,2\n",
    "empty-file": "",
    "lone-cr": "a,b\r1,2\n",
}

PY_HAND = {
    "assign": "x = 1\ny = x + 2 * 3\n",
    "call": 'result = requests.get(url, params={"q": query}, timeout=5.0).json()["items"][0]\n',
    "lambda": "key = lambda item: (item.priority, -item.created)\n",
    "comprehension": "evens = [n * n for n in range(10) if n % 2 == 0]\n",
    "dict-literal": "config = {'host': 'localhost', 'port': 5432, **overrides}\n",
    "augassign": "total += price * qty\ncount -= 1\nmask |= 1 << bit\n",
    "return": "return a, b",
    "pass-and-comments": "# nothing to do\npass  # really\n\n",
    "logic": "ok = x is not None and not (y in seen or z <= 0)\n",
    "ternary": "sign = -1 if value < 0 else 1\n",
    "strings": "msg = f\"hello {name}!\" + r'\\d+' + b'\\x00'.decode() + '日本語 😀'\n",
    "annotated": "count: int = 0\nnames: list[str] = []\n",
    "slices": "head, tail = items[:3], items[-3:]\nrev = s[::-1]\ncell = grid[i, j]\n",
    "numbers": "n = 0x1F + 1_000_000 + 3.14e-2 + .5 + 2j\n",
    "chained": "in_range = 0 <= i < len(xs) != 0\nprint(*args, sep='', **kw)\n",
}
PY_HAND_INVALID = {
    "indented": "x = 1\n    y = 2\n",
    "double-equals-assign": "x = = 1\n",
    "unclosed": "print(1, 2\n",
    "two-names": "return x y\n",
    "def": "def f(): pass\n",
    "multi-line-bracket": "xs = [\n    1,\n]\n",
    "else-glued": "x = 1else 2\n",
    "not-glued": "y = notx y\n",
}

ARITH_HAND = {
    "basic": "1 + 2 * 3",
    "parens": "2 * (3 + 4) - sqrt(16) / 2",
    "power": "-x^2 + 3.5e-2 * y",
    "right-assoc": "2^3^2",
    "functions": "atan2(y, x) * 180 / pi",
    "nested": "(((1)))",
    "blanks": "  1+1  \n",
    "modulo": "max(a, b, c) % 7",
    "decimals": ".5 + 1. + 0.25",
    "unary-chain": "- -x - -(-y)",
    "no-args": "rand() * 10",
    "tight": "a*b+c/d-e%f^g",
}
ARITH_HAND_INVALID = {
    "dangling-op": "2 +",
    "unclosed": "(1 + 2",
    "juxtaposed": "2 3",
    "call-of-call": "sqrt()()",
    "double-dot": "1..2",
    "caret-end": "x^",
    "empty": "",
    "unary-plus": "+1",
}

_KEYS = [
    ("name", "Ada Lovelace"),
    ("city", "東京"),
    ("mood", "🎉 party 👍🏽"),
    ("note", r"line one\nline two"),
    ("accent", "e\u0301 café"),
    ("quote", r"she said \"hi\""),
    ("path", r"C:\\Users\\ada"),
    ("escaped", r"\u00e9\ud83d\ude00"),
    ("empty", ""),
    ("url", r"https:\/\/example.com\/?q=1&x=2"),
    ("greek", "αβγ"),
]


def _json_keys_hand(n: int) -> tuple[dict[str, str], dict[str, str]]:
    """Realistic objects with exactly `n` string values, and near misses."""
    pairs = [f'"{k}": "{v}"' for k, v in _KEYS[:n]]
    compact = [f'"{k}":"{v}"' for k, v in _KEYS[:n]]
    valid = {
        "spaced": "{" + ", ".join(pairs) + "}",
        "compact": "{" + ",".join(compact) + "}",
        "pretty": "{\n  " + ",\n  ".join(pairs) + "\n}\n",
        "pretty-crlf": "{\r\n    " + ",\r\n    ".join(pairs) + "\r\n}",
        "tabs": "{\t" + ",\t".join(pairs) + "\t}",
        "blanks-around": "  \n" + "{ " + " , ".join(pairs) + " }" + " \n ",
        "reversed": "{" + ", ".join(reversed(pairs)) + "}",
        "same-key": "{" + ", ".join(['"k": "v"'] * n) + "}",
        "unicode-keys": "{" + ", ".join(f'"キー{i}": "値{i} 😀"' for i in range(n)) + "}",
        "spaced-colon": "{" + ", ".join(f'"{k}" :  "{v}"' for k, v in _KEYS[:n]) + "}",
    }
    invalid = {
        "one-too-many": "{" + ", ".join([f'"{k}": "{v}"' for k, v in _KEYS[: n + 1]]) + "}",
        "number-value": "{" + ", ".join([*pairs[:-1], '"n": 1']) + "}",
        "trailing-comma": "{" + ", ".join(pairs) + ",}",
        "array": "[" + ", ".join(f'"{v}"' for _, v in _KEYS[:n]) + "]",
    }
    if n > 1:
        invalid["one-too-few"] = "{" + ", ".join(pairs[:-1]) + "}"
    return valid, invalid


def hand_written(variant: str) -> tuple[dict[str, str], dict[str, str]]:
    """(valid, invalid) hand-written sentences of a variant, by id."""
    name, params = VARIANTS[variant]
    if name == "json_keys":
        return _json_keys_hand(params["n"])
    table = {
        "json": (JSON_HAND, JSON_HAND_INVALID),
        "sqlite": (SQL_HAND, SQL_HAND_INVALID),
        "csv": (CSV_HAND, CSV_HAND_INVALID),
        "python_expr": (PY_HAND, PY_HAND_INVALID),
        "arithmetic": (ARITH_HAND, ARITH_HAND_INVALID),
    }
    return table.get(name, ({}, {}))


# -- the cases, drawn once at collection (seeded: the same on every run) -------------------------


def _seed(variant: str) -> int:
    return sum(map(ord, variant))


def _daily(i: int) -> Any:
    """The marks of the i-th drawn case of a kind: the first DAILY run daily, the rest are slow."""
    return () if i < DAILY else pytest.mark.slow


@functools.cache
def sampled(variant: str) -> tuple[str, ...]:
    return tuple(sampler(variant).sentences(SAMPLES, seed=_seed(variant)))


@functools.cache
def valid_sentences(variant: str) -> tuple[tuple[str, str], ...]:
    """(id, text) of the hand-written valid sentences and of the sampled sentences llguidance
    accepts (whether lark agrees is test (a)'s business)."""
    valid, _ = hand_written(variant)
    out = [(f"hand-{key}", text) for key, text in valid.items()]
    out += [(f"sample-{i:03d}", t) for i, t in enumerate(sampled(variant))]
    return tuple((label, t) for label, t in out if grammar(variant).matches(t))


def _alphabet(variant: str) -> str:
    return alphabet_of([t for _, t in valid_sentences(variant)])


def _agreement_cases() -> list[Any]:
    cases = []
    for variant in VARIANTS:
        valid, invalid = hand_written(variant)
        for key, text in valid.items():
            cases.append(pytest.param(variant, text, True, id=f"{variant}-hand-{key}"))
        for key, text in invalid.items():
            cases.append(pytest.param(variant, text, False, id=f"{variant}-bad-{key}"))
        for i, text in enumerate(sampled(variant)):
            cases.append(
                pytest.param(variant, text, None, id=f"{variant}-sample-{i:03d}", marks=_daily(i))
            )
    return cases


def _prefix_cases() -> list[Any]:
    cases = []
    for variant in VARIANTS:
        rng = random.Random(_seed(variant))
        for label, text in valid_sentences(variant):
            hand = label.startswith("hand-")
            cuts = set(rng.sample(range(len(text) + 1), k=min(len(text) + 1, PREFIX_CUTS_HAND)))
            if hand:  # every character boundary around non-ASCII characters
                cuts |= {k for i, c in enumerate(text) if ord(c) > 127 for k in (i, i + 1)}
            else:
                cuts = set(sorted(cuts)[:: max(1, len(cuts) // PREFIX_CUTS_SAMPLED)])
            marks = () if hand else _daily(int(label.removeprefix("sample-")))  # as in (a)
            cases.append(
                pytest.param(variant, text, sorted(cuts), id=f"{variant}-{label}", marks=marks)
            )
    return cases


def _insertion_cases() -> list[Any]:
    cases = []
    for variant in VARIANTS:
        rng = random.Random(_seed(variant) + 1)
        sentences = valid_sentences(variant)
        alphabet = _alphabet(variant)
        for i in range(INSERTIONS):
            _, text = sentences[rng.randrange(len(sentences))]
            k, c = rng.randint(0, len(text)), rng.choice(alphabet)
            cases.append(
                pytest.param(variant, text, k, c, id=f"{variant}-insert-{i:03d}", marks=_daily(i))
            )
    return cases


def _corruption_cases() -> list[Any]:
    cases = []
    for variant in VARIANTS:
        rng = random.Random(_seed(variant) + 2)
        sentences = valid_sentences(variant)
        alphabet = _alphabet(variant)
        for i in range(CORRUPTIONS):
            _, text = sentences[rng.randrange(len(sentences))]
            m = mutate(text, rng, alphabet)
            label = f"{variant}-corrupt-{i:03d}"
            cases.append(pytest.param(variant, m.text, m.describe(), id=label, marks=_daily(i)))
    return cases


# -- the tests -------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", grammars.names())
def test_grammar_is_described_and_has_hand_written_sentences(name):
    assert grammars.source(name, **PARAMS.get(name, [{}])[0]).startswith("// ")
    assert grammars.describe(name)
    for variant, (vname, _) in VARIANTS.items():
        if vname == name:
            valid, invalid = hand_written(variant)
            assert len(valid) >= 10, f"{variant}: write 10 or more realistic sentences"
            assert invalid, f"{variant}: write some near misses too"


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_compiles_without_warnings(variant):
    assert grammar(variant).warnings == ()
    parser(variant)  # the lark library reads it too


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_sampler_mostly_draws_sentences(variant):
    """Sampled sentences follow the rules; lexing may merge two drawn tokens into one, so not all
    of them are sentences, but most must be, or the differential tests below test little."""
    accepted = sum(grammar(variant).matches(t) for t in sampled(variant))
    assert accepted >= 0.75 * SAMPLES


# (a)
@pytest.mark.parametrize(("variant", "text", "expected"), _agreement_cases())
def test_engines_agree(variant, text, expected):
    ll, lk = grammar(variant).matches(text), lark_accepts(variant, text)
    assert ll == lk, f"llguidance {ll}, lark {lk}; " + explain(variant, text)
    if expected is not None:
        assert ll == expected, explain(variant, text)


# (b)
@pytest.mark.parametrize(("variant", "text", "cuts"), _prefix_cases())
def test_prefixes_of_sentences_are_valid(variant, text, cuts):
    g = grammar(variant)
    cut_short = [k for k in cuts if not g.check(text[:k]).valid]
    assert cut_short == [], f"prefixes of {text!r} reported invalid"


# (c)
@pytest.mark.parametrize(("variant", "text", "k", "c"), _insertion_cases())
def test_insertion_is_cut_at_or_after_it(variant, text, k, c):
    g = grammar(variant)
    bad = insert(text, k, c)
    result = g.check(bad)
    assert result.chars >= k, explain(variant, bad)
    if not g.check(text[:k] + c).valid:
        assert result.chars == k, explain(variant, bad)
        assert not result.valid


# (d)
@pytest.mark.parametrize(("variant", "text", "mutation"), _corruption_cases())
def test_engines_agree_on_corruptions(variant, text, mutation):
    ll, lk = grammar(variant).matches(text), lark_accepts(variant, text)
    assert ll == lk, f"{mutation}: llguidance {ll}, lark {lk}; " + explain(variant, text)
