"""The shipped SQLite grammar against sqlite3 itself.

The oracle is Python's own `sqlite3`: `EXPLAIN <text>` on an empty in-memory database. It fails with
"no such table/column/function" (or another semantic error: wrong number of arguments, misuse of
an aggregate...) where the text parsed, and with "syntax error", "incomplete input", "unrecognized
token" (or an error the parser itself raises about the statement's shape: "unknown join type",
"ORDER BY clause should come after UNION", "unsupported frame specification"...) where it did not.
Texts that are not one query (INSERT, a second statement after ";") do not parse. Where sqlite3
stops at a semantic error while still parsing (a duplicate WITH name, ?0), it never read the rest:
the oracle cannot tell, and such texts are left out (`undecided`). A message the oracle does not
know fails the test, to be sorted into one of those lists.

Written and checked against sqlite3 3.40.1, the library of this project's Python. Texts that use
syntax the installed library does not have (->> before 3.38, IS DISTINCT FROM and RIGHT/FULL JOIN
before 3.39), or has and this grammar does not (ORDER BY in an aggregate's arguments, 3.44; digit
separators, 3.46), are skipped, naming the feature.

For complete texts the grammar (`Grammar.matches`, llguidance) and sqlite3 agree, both ways, on
(a) sentences sampled from the grammar's rules (tests/support/sampler.py): whole statements, and
    expressions, FROM clauses, result columns and windows set in a statement;
(b) mutations of (a) and (c): byte-level (sampler.mutate) and token-level (drop a token, duplicate
    a comma, swap or insert a keyword, swap neighbours, glue two tokens, cut the text short);
(c) tests/data/sqlite_llm_queries.sql: realistic LLM-written queries and the slips LLMs make;
(d) every sqlite3 keyword in every place a name may stand.
Every prefix of a text that parses is a valid prefix for the streaming check. Sizes are bounded
and seeded: the same cases on every run. The daily run takes the first DAILY cases of each drawn
kind (`sample`, `expr`, ..., `byte`, `token`) and every fourth keyword in (d); the rest are marked
`slow` (`make test` runs all).
"""

from __future__ import annotations

import functools
import random
import re
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import grammars
from backtrack import Grammar
from tests.support.sampler import Sampler, alphabet_of, mutate

SQLITE = sqlite3.sqlite_version_info
CORPUS = Path(__file__).parents[2] / "data" / "sqlite_llm_queries.sql"

SAMPLES = 300  # whole statements sampled from the grammar
PART_SAMPLES = 100  # ... and for each part set in a statement (PARTS)
BYTE_MUTATIONS = 600
TOKEN_MUTATIONS = 900
PREFIX_CUTS = 4  # prefixes checked per sampled or mutated text that parses (corpus: every one)
DAILY = 15  # drawn cases of each kind in the daily run; and every 4th keyword in (d)

# -- sqlite3's keywords and names ----------------------------------------------------------------


def _words(text: str) -> list[str]:
    return text.split()


# sqlite3_keyword_name(0..146) in 3.40; test_keywords_are_sqlites checks it where ctypes reaches it.
KEYWORDS = _words(
    """ABORT ACTION ADD AFTER ALL ALTER ALWAYS ANALYZE AND AS ASC ATTACH AUTOINCREMENT BEFORE BEGIN
    BETWEEN BY CASCADE CASE CAST CHECK COLLATE COLUMN COMMIT CONFLICT CONSTRAINT CREATE CROSS
    CURRENT CURRENT_DATE CURRENT_TIME CURRENT_TIMESTAMP DATABASE DEFAULT DEFERRABLE DEFERRED
    DELETE DESC DETACH DISTINCT DO DROP EACH ELSE END ESCAPE EXCEPT EXCLUDE EXCLUSIVE EXISTS
    EXPLAIN FAIL FILTER FIRST FOLLOWING FOR FOREIGN FROM FULL GENERATED GLOB GROUP GROUPS HAVING
    IF IGNORE IMMEDIATE IN INDEX INDEXED INITIALLY INNER INSERT INSTEAD INTERSECT INTO IS ISNULL
    JOIN KEY LAST LEFT LIKE LIMIT MATCH MATERIALIZED NATURAL NO NOT NOTHING NOTNULL NULL NULLS
    OF OFFSET ON OR ORDER OTHERS OUTER OVER PARTITION PLAN PRAGMA PRECEDING PRIMARY QUERY RAISE
    RANGE RECURSIVE REFERENCES REGEXP REINDEX RELEASE RENAME REPLACE RESTRICT RETURNING RIGHT
    ROLLBACK ROW ROWS SAVEPOINT SELECT SET TABLE TEMP TEMPORARY THEN TIES TO TRANSACTION TRIGGER
    UNBOUNDED UNION UNIQUE UPDATE USING VACUUM VALUES VIEW VIRTUAL WHEN WHERE WINDOW WITH
    WITHOUT"""
)

# The keywords sqlite3 takes as a name in every place a SELECT has one (the grammar's NAME includes
# them); the other 84 are refused somewhere, and the grammar adds them back place by place.
NAMES_EVERYWHERE = _words(
    """ABORT ACTION AFTER ALWAYS ANALYZE ASC ATTACH BEFORE BEGIN BY CASCADE COLUMN CONFLICT
    DATABASE DEFERRED DESC DETACH DO EACH END EXCLUDE EXCLUSIVE EXPLAIN FAIL FIRST FOLLOWING FOR
    GENERATED IF IGNORE IMMEDIATE INITIALLY INSTEAD KEY LAST MATERIALIZED NO NULLS OF OFFSET
    OTHERS OVER PLAN PRAGMA PRECEDING QUERY REINDEX RELEASE RENAME REPLACE RESTRICT ROLLBACK ROW
    SAVEPOINT TEMP TEMPORARY TIES TRIGGER VACUUM VIEW VIRTUAL WINDOW WITHOUT"""
)

# ASCII characters that cannot be part of a word (sqlite3's IdChar: letters, digits, _, $, and
# every non-ASCII character)
_NOT_WORD = r"\x00-#%-\/:-@\[-^`{-\x7F"


def name_terminals(refused: list[str]) -> str:
    """The grammar's NAME terminals: any word but the `refused` keywords (in any letter case), as a
    trie of regexes, one terminal per first letter. Negated ASCII classes keep every non-ASCII
    character in, and keep Python's regex compiler fast (a class spanning U+0080..U+10FFFF is
    not)."""
    trie: dict[str, Any] = {}
    for word in refused:
        node = trie
        for c in word.lower():
            node = node.setdefault(c, {})
        node[""] = {}
    tail = f"[^{_NOT_WORD}]*"

    def letters(cs: list[str]) -> str:
        alpha = sorted({c.upper() for c in cs if c.isalpha()} | {c for c in cs if c.isalpha()})
        return "".join(alpha) + ("_" if "_" in cs else "")

    def regex(node: dict[str, Any]) -> str:
        kids = sorted(k for k in node if k)
        alts = [(f"[{c.upper()}{c}]" if c.isalpha() else c) + regex(node[c]) for c in kids]
        alts.append(f"[^{_NOT_WORD}{letters(kids)}]{tail}")  # leaves the keywords' path
        if "" not in node:
            alts.append("")  # a proper prefix of a keyword
        return "(?:" + "|".join(alts) + ")"

    firsts = sorted(trie)
    lines = ["NAME: " + " | ".join(f"_NAME_{c.upper()}" for c in firsts) + " | _NAME_OTHER"]
    lines += [f"_NAME_{c.upper()}: /[{c.upper()}{c}]{regex(trie[c])}/" for c in firsts]
    lines.append(f"_NAME_OTHER: /[^{_NOT_WORD}0-9${letters(firsts)}]{tail}/")
    return "\n".join(lines) + "\n"


REFUSED = sorted(set(KEYWORDS) - set(NAMES_EVERYWHERE))

# -- the oracle ----------------------------------------------------------------------------------

# messages of texts that do not parse
SYNTAX = (
    "syntax error",
    "incomplete input",
    "unrecognized token",
    "the query contains a null character",  # Python's own check
    "You can only execute one statement at a time",  # Python's own check
    "unknown join type",  # the rest: raised by the parser about the statement's shape
    "clause should come after",
    "clause is required before",
    "unsupported frame specification",
    "DISTINCT is not supported for window functions",
)
# semantic errors raised while parsing: sqlite3 did not read what follows
UNDECIDED = (
    "duplicate WITH table name",
    "variable number must be between",
    "too many",
    "Expression tree is too large",
    "parser stack overflow",
)
# semantic errors raised once the text parsed
SEMANTIC = (
    "no such ",
    "no tables specified",
    "wrong number of arguments",
    "misuse of ",
    "row value misused",
    "sub-select returns",
    "ambiguous column name",
    "values for",
    "must have the same number of",
    "do not have the same number of result columns",
    "DISTINCT aggregates must have exactly one argument",
    "FILTER may not be used with non-aggregate",
    "may not be used as a window function",
    "RANGE with offset PRECEDING/FOLLOWING requires",
    "frame starting offset",
    "frame ending offset",
    "HAVING clause on a non-aggregate query",
    "RAISE() may only be used",
    "hex literal too big",
    "Incorrect number of bindings",  # Python's, once sqlite3 prepared the statement
    "You did not supply a value for binding",
)
# An example of each message, for test_oracle_messages (appending a syntax error to the SEMANTIC
# ones must give "syntax error": they come after parsing).
MESSAGE_EXAMPLES = {
    "syntax error": "SELECT a, FROM t",
    "incomplete input": "SELECT * FROM t WHERE",
    "unrecognized token": "SELECT 1abc",
    "unknown join type": "SELECT * FROM a LEFT INNER JOIN b",
    "clause should come after": "SELECT 1 ORDER BY 1 UNION SELECT 2",
    "clause is required before": "SELECT * FROM a ON 1",
    "unsupported frame specification": "SELECT count(*) OVER (ROWS 1 FOLLOWING)",
    "DISTINCT is not supported for window functions": "SELECT count(DISTINCT a) OVER ()",
    "duplicate WITH table name": "WITH x AS (SELECT 1), x AS (SELECT 2) SELECT 1",
    "variable number must be between": "SELECT ?0",
    "no such ": "SELECT a FROM t",
    "no tables specified": "SELECT *",
    "wrong number of arguments": "SELECT max()",
    "misuse of ": "SELECT sum(sum(1))",
    "row value misused": "SELECT (1, 2)",
    "sub-select returns": "SELECT (SELECT 1, 2)",
    "must have the same number of": "VALUES (1), (1, 2)",
    "do not have the same number of result columns": "SELECT 1 UNION SELECT 1, 2",
    "FILTER may not be used with non-aggregate": "SELECT abs(1) FILTER (WHERE 1)",
    "RANGE with offset PRECEDING/FOLLOWING requires": "SELECT count(*) OVER (RANGE 1 PRECEDING)",
    "HAVING clause on a non-aggregate query": "SELECT 1 FROM (SELECT 1) HAVING 1",
    "RAISE() may only be used": "SELECT RAISE(IGNORE)",
    "hex literal too big": "SELECT 0xFFFFFFFFFFFFFFFFFF",
    "Incorrect number of bindings": "SELECT ?",
}

_BLANKS = r"(?:[ \t\n\f\r]+|--[^\n]*(?:\n|$)|/\*(?:[^*]|\*+[^*/])*(?:\*+/|\**$))*"
_FIRST_WORD = re.compile(_BLANKS + r"([A-Za-z_\x80-\U0010FFFF][0-9A-Za-z_$\x80-\U0010FFFF]*)")
# what Python's sqlite3 lets follow a statement: blanks and comments, a block comment left open
_TAIL = re.compile(_BLANKS + r"\Z")
_DML = re.compile(r"\b(?:INSERT|UPDATE|DELETE|REPLACE\s+INTO)\b", re.IGNORECASE)


class UnknownMessage(Exception):
    """sqlite3 answered with a message the oracle has not sorted yet."""


@functools.cache
def _connection() -> sqlite3.Connection:
    return sqlite3.connect(":memory:")


def sqlite_parses(text: str) -> bool | None:
    """Whether sqlite3 reads `text` as one SELECT statement (WITH, VALUES, compound selects; one
    ";" and blanks or comments after it); None where it cannot tell. Raises UnknownMessage."""
    if "\x00" in text:
        return False  # Python refuses it (and sqlite3 would stop there)
    first = _FIRST_WORD.match(text)
    if first and first[1].upper() not in ("SELECT", "VALUES", "WITH"):
        return False  # INSERT, PRAGMA...: not a query (or nothing sqlite3 takes)
    if first and first[1].upper() == "WITH" and _DML.search(text):
        return None  # WITH ... INSERT/UPDATE/DELETE parses, and is not a query
    # Only blanks and comments may follow the first statement: checked here, as Python checks it
    # only once the first statement compiled (not after "no such table"). The first statement
    # ends at a ";" that sqlite3_complete takes as an end (not in a string or a comment) and that
    # ends a statement (not one inside a Tcl-style parameter such as $a(;)).
    for i, c in enumerate(text):
        if c == ";" and sqlite3.complete_statement(text[: i + 1]):
            first = _explain(text[: i + 1])
            if first is not False:
                if first is True and not _TAIL.match(text, i + 1):
                    return False
                break
    return _explain(text)


def _explain(text: str) -> bool | None:
    try:
        _connection().execute("EXPLAIN " + text)
    except (sqlite3.Error, ValueError) as exc:
        message = str(exc)
        for markers, verdict in ((SYNTAX, False), (UNDECIDED, None), (SEMANTIC, True)):
            if any(m in message for m in markers):
                return verdict
        raise UnknownMessage(f"{message!r} for {text!r}") from exc
    return True


# -- syntax that depends on the library's version ------------------------------------------------

# Syntax added after some sqlite3 versions the tests may meet: (pattern, version, what). OLDER:
# this grammar has it; texts that use it are skipped where the library is older. NEWER: this
# grammar (3.40) lacks it; where the library has it, disagreements on texts that match are
# skipped (the patterns are broad: they only excuse, they never pick cases).
OLDER = [
    (re.compile(r"->"), (3, 38, 0), "-> and ->>"),
    (re.compile(r"\bDISTINCT\s+FROM\b", re.IGNORECASE), (3, 39, 0), "IS [NOT] DISTINCT FROM"),
    (re.compile(r"\b(?:RIGHT|FULL)\b", re.IGNORECASE), (3, 39, 0), "RIGHT and FULL JOIN"),
]
NEWER = [
    (re.compile(r"\bORDER\s+BY\b", re.IGNORECASE), (3, 44, 0), "ORDER BY in aggregate arguments"),
    (re.compile(r"[0-9]_[0-9]"), (3, 46, 0), "digit separators"),
]


def too_new(text: str) -> str | None:
    """Why the installed sqlite3 cannot judge `text` (it lacks syntax the text uses), or None."""
    for pattern, version, what in OLDER:
        if version > SQLITE and pattern.search(text):
            return f"sqlite3 {sqlite3.sqlite_version} lacks {what} ({'.'.join(map(str, version))})"
    return None


def excused(text: str) -> str | None:
    """Why a disagreement on `text` may come from syntax newer than this grammar, or None."""
    for pattern, version, what in NEWER:
        if version <= SQLITE and pattern.search(text):
            return f"sqlite3 {sqlite3.sqlite_version} has {what}, this grammar follows 3.40"
    return None


# -- the texts -----------------------------------------------------------------------------------


def load_corpus(path: Path = CORPUS) -> dict[str, str]:
    """id -> query: each query is the text after a "-- # <id>: <what>" line, up to the next one,
    without trailing blank lines."""
    queries: dict[str, str] = {}
    key, lines = None, []
    for line in [*path.read_text(encoding="utf-8").split("\n"), "-- # end: "]:
        header = re.match(r"-- # ([\w-]+): ", line)
        if header:
            if key is not None:
                queries[key] = "\n".join(lines).rstrip("\n ")
            key, lines = header[1], []
        elif key is not None:
            lines.append(line)
    return queries


# A token of SQL text, for token-level mutations (close to sqlite3's tokenizer, not exact).
_TOKEN = re.compile(
    r"""(?P<blank>[ \t\n\f\r]+|--[^\n]*|/\*(?:[^*]|\*+[^*/])*\*+/)
      | (?P<quoted>'(?:[^']|'')*'|"(?:[^"]|"")*"|`(?:[^`]|``)*`|\[[^\]]*\])
      | (?P<number>0[xX][0-9a-fA-F]+|[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?|\.[0-9]+)
      | (?P<word>[A-Za-z_\x80-\U0010FFFF][0-9A-Za-z_$\x80-\U0010FFFF]*)
      | (?P<param>\?[0-9]*|[:@$\#][0-9A-Za-z_$]+)
      | (?P<op>->>|->|\|\||<<|>>|<=|>=|==|!=|<>|.)""",
    re.VERBOSE | re.DOTALL,
)
# keywords a mutation swaps in: a SELECT's own, and a few that are names in some places only
MUTATION_KEYWORDS = _words(
    """SELECT FROM WHERE GROUP BY HAVING ORDER LIMIT OFFSET AND OR NOT IN IS NULL LIKE GLOB BETWEEN
    CASE WHEN THEN ELSE END AS ON JOIN LEFT RIGHT INNER CROSS NATURAL OUTER USING UNION ALL
    INTERSECT EXCEPT DISTINCT EXISTS CAST OVER PARTITION ROWS RANGE PRECEDING FOLLOWING CURRENT
    ROW UNBOUNDED FILTER WINDOW WITH RECURSIVE VALUES ASC DESC NULLS FIRST LAST COLLATE ESCAPE
    ISNULL NOTNULL INDEXED MATERIALIZED EXCLUDE TRUE TABLE INDEX KEY"""
)
TOKEN_MUTATION_KINDS = (
    "drop",
    "duplicate-comma",
    "swap-keyword",
    "insert-keyword",
    "swap-neighbours",
    "glue",
    "comma-before-keyword",
    "cut-short",
    "keyword-for-name",
)


def token_mutation(text: str, rng: random.Random) -> tuple[str, str]:
    """(what was done, the mutated text): one token-level edit of `text`, the kind LLMs make."""
    tokens = [(m.lastgroup or "", m.group()) for m in _TOKEN.finditer(text)]
    solid = [i for i, (kind, _) in enumerate(tokens) if kind != "blank"]
    keywords = [i for i, (k, v) in enumerate(tokens) if k == "word" and v.upper() in KEYWORDS]
    names = [i for i, (k, v) in enumerate(tokens) if k == "word" and v.upper() not in KEYWORDS]
    blanks = [i for i, (k, v) in enumerate(tokens) if k == "blank" and v[:2] not in ("--", "/*")]
    commas = [i for i, (_, v) in enumerate(tokens) if v == ","]
    for _ in range(50):
        kind = rng.choice(TOKEN_MUTATION_KINDS)
        out = [v for _, v in tokens]
        keyword = rng.choice(MUTATION_KEYWORDS)
        if kind == "drop" and solid:
            del out[rng.choice(solid)]
        elif kind == "duplicate-comma" and commas:
            out.insert(rng.choice(commas), ",")
        elif kind == "swap-keyword" and keywords:
            out[rng.choice(keywords)] = keyword
        elif kind == "insert-keyword":
            out.insert(rng.randint(0, len(out)), f" {keyword} ")
        elif kind == "swap-neighbours" and len(solid) > 1:
            j = rng.randrange(len(solid) - 1)
            a, b = solid[j], solid[j + 1]
            out[a], out[b] = out[b], out[a]
        elif kind == "glue" and blanks:
            del out[rng.choice(blanks)]
        elif kind == "comma-before-keyword" and keywords:
            out.insert(rng.choice(keywords), ", ")
        elif kind == "cut-short" and solid:
            out = out[: rng.choice(solid)]
        elif kind == "keyword-for-name" and names:
            out[rng.choice(names)] = keyword.lower()
        else:
            continue
        if "".join(out) != text:
            return kind, "".join(out)
    return "none", text


# Names, parameters and comments as people write them; most draws of a comment write a blank
# (comments may go between any two tokens: drawn evenly, they would crowd out the SQL).
SAMPLER_EXAMPLES = {
    "NAME": _words("""id name users orders o c t1 customer_id total_amount created_at price qty dept
salary e d emp first_name year region product category total cnt café x key desc"""),
    "PARAM": ["?", "?1", "?2", ":name", "@p", "$v", ":a::b"],
    "_LINE_COMMENT": ["-- note\n"] + ["\n"] * 9,
    "_BLOCK_COMMENT": ["/* c */"] + [" "] * 9,
}
# parts of a statement sampled on their own (rule name), set in a statement (before, after)
PARTS = {
    "expr": ("SELECT ", ""),
    "tables": ("SELECT * FROM ", ""),
    "columns": ("SELECT ", " FROM t"),
    "window": ("SELECT count(*) OVER (", ")"),
}


@functools.cache
def sampled() -> dict[str, str]:
    """id -> text: whole statements, then each part set in a statement."""
    # one Sampler (building one costs a lark parser), started from each rule in turn
    sampler = Sampler(
        grammars.source("sqlite"), max_tokens=40, empty=0.1, examples=SAMPLER_EXAMPLES
    )
    texts = {f"sample-{i:03d}": t for i, t in enumerate(sampler.sentences(SAMPLES, seed=1))}
    sampler.max_tokens = 25
    for seed, (part, (before, after)) in enumerate(PARTS.items(), start=2):
        sampler.start = part
        for i, t in enumerate(sampler.sentences(PART_SAMPLES, seed=seed)):
            texts[f"{part}-{i:03d}"] = before + t + after
    return texts


@functools.cache
def corpus() -> dict[str, str]:
    return {f"corpus-{key}": text for key, text in load_corpus().items()}


@functools.cache
def mutated() -> dict[str, str]:
    """id -> text: byte-level and token-level mutations of the corpus and the samples."""
    sources = [*corpus().values(), *sampled().values()]
    alphabet = alphabet_of(sources)
    rng = random.Random(7)
    texts = {}
    for i in range(BYTE_MUTATIONS):
        m = mutate(rng.choice(sources), rng, alphabet)
        texts[f"byte-{i:03d}-{m.kind}"] = m.text
    for i in range(TOKEN_MUTATIONS):
        kind, text = token_mutation(rng.choice(sources), rng)
        texts[f"token-{i:03d}-{kind}"] = text
    return texts


# Places a name may stand, as statements around "§" (sqlite3 decides keyword by keyword).
PLACES = """SELECT § FROM t | SELECT 1 + § | SELECT a FROM t WHERE § = 1 | SELECT f(§) | SELECT (§)
| SELECT a IN (§) | SELECT (1, §) | SELECT CASE WHEN 1 THEN § END | SELECT a FROM t ORDER BY §
| SELECT §.a FROM t | SELECT (§.a) | SELECT §.* FROM t | SELECT t.§ | SELECT s.t.§ | SELECT §()
| SELECT (§(1)) | SELECT a AS § | SELECT a § FROM t | SELECT 1 § | SELECT (a) § | SELECT * FROM §
| SELECT * FROM § WHERE 1 | SELECT * FROM a JOIN § | SELECT * FROM (§) | SELECT * FROM s.§
| SELECT * FROM §.t | SELECT * FROM t AS § | SELECT * FROM t § | SELECT * FROM t § WHERE 1
| SELECT * FROM t § JOIN u | SELECT * FROM (SELECT 1) § | SELECT * FROM §(1) | SELECT * FROM f(§)
| WITH § AS (SELECT 1) SELECT 1 | WITH a AS (SELECT 1), § AS (SELECT 1) SELECT 1
| WITH RECURSIVE § AS (SELECT 1) SELECT 1 | WITH c(§) AS (SELECT 1) SELECT 1
| SELECT * FROM a JOIN b USING (§) | SELECT a COLLATE § | SELECT CAST(a AS §)
| SELECT CAST(a AS x §) | SELECT 1 FROM t WINDOW § AS () | SELECT 1 WINDOW a AS (), § AS ()
| SELECT f() OVER § | SELECT f() OVER (§) | SELECT f() OVER (§ ORDER BY a)
| SELECT f() OVER (ROWS § PRECEDING) | SELECT f() OVER (ROWS BETWEEN 1 PRECEDING AND § FOLLOWING)
| SELECT * FROM t INDEXED BY § | SELECT a IN § | SELECT a IN s.§ | VALUES (§)
| SELECT f() FILTER (WHERE §) | SELECT RAISE(ABORT, §)""".replace("\n", " ").split(" | ")


# -- the tests -----------------------------------------------------------------------------------


@functools.cache
def grammar() -> Grammar:
    return Grammar.load("sqlite")


def compare(text: str, *, every_prefix: bool = False) -> None:
    """Skip `text` where sqlite3 cannot judge it; else assert that the grammar agrees with sqlite3
    and that prefixes of a text that parses are valid prefixes (all of them, or PREFIX_CUTS)."""
    reason = too_new(text)
    if reason:
        pytest.skip(reason)
    ours, theirs = grammar().matches(text), sqlite_parses(text)
    if theirs is None:
        pytest.skip("sqlite3 stopped at a semantic error while parsing (duplicate WITH name, ?0)")
    if ours != theirs:
        reason = excused(text)
        if reason:
            pytest.skip(reason)
        cut = grammar().check(text)
        pytest.fail(
            f"sqlite3 {'parses' if theirs else 'refuses'} {text!r}, the grammar "
            f"{'accepts' if ours else 'refuses'} it (cut at char {cut.chars}):\n{cut.context()}"
        )
    if theirs and every_prefix:
        # text streams in a character at a time: a cut would mean some prefix is refused
        checker = grammar().checker()
        fed = sum(checker.feed(c) for c in text)
        assert fed == len(text), f"fed character by character, {text!r} is cut at char {fed}"
    elif theirs:
        rng = random.Random(len(text))
        for k in sorted(rng.sample(range(len(text) + 1), k=min(PREFIX_CUTS, len(text) + 1))):
            assert grammar().check(text[:k]).chars == k, f"prefix {text[:k]!r} is cut"


def _cases(texts: dict[str, str], *, daily: int | None = None) -> list[Any]:
    """One case per text; past the first `daily` of a kind (the id up to its first "-"), slow."""
    cases, seen = [], Counter[str]()
    for key, text in texts.items():
        kind = key.split("-")[0]
        slow = daily is not None and seen[kind] >= daily
        seen[kind] += 1
        cases.append(pytest.param(text, id=key, marks=pytest.mark.slow if slow else ()))
    return cases


@pytest.mark.parametrize("text", _cases(corpus()))
def test_corpus(text):
    compare(text, every_prefix=True)


@pytest.mark.parametrize("text", _cases(sampled(), daily=DAILY))
def test_sampled(text):
    compare(text)


@pytest.mark.parametrize("text", _cases(mutated(), daily=DAILY))
def test_mutated(text):
    compare(text)


@pytest.mark.parametrize(
    "keyword",
    [pytest.param(k, marks=() if i % 4 == 0 else pytest.mark.slow) for i, k in enumerate(KEYWORDS)],
)
def test_keyword_as_name(keyword):
    """The grammar takes a keyword as a name exactly where sqlite3 does."""
    wrong = []
    for place in PLACES:
        text = place.replace("§", keyword.lower())
        theirs = sqlite_parses(text)
        if theirs is not None and not too_new(text) and grammar().matches(text) != theirs:
            wrong.append(f"{text!r}: sqlite3 {'parses' if theirs else 'refuses'} it")
    assert wrong == []


def test_name_terminals_are_generated():
    """NAME in the grammar is name_terminals(REFUSED): regenerate it when a keyword list changes."""
    assert name_terminals(REFUSED) in grammars.source("sqlite")


@functools.cache
def _name_patterns() -> list[re.Pattern[str]]:
    lines = name_terminals(REFUSED).splitlines()[1:]  # the regexes after "NAME: ..."
    return [re.compile(line.split(": /", 1)[1][:-1]) for line in lines]


@pytest.mark.parametrize("word", [*KEYWORDS, "café", "x1", "a$b", "_t", "selected", "from_"])
def test_name_excludes_the_refused_keywords(word):
    for text in (word, word.lower(), word.title()):
        taken = any(p.fullmatch(text) for p in _name_patterns())
        assert taken == (word not in REFUSED), text
    for prefix in (word[:i] for i in range(1, len(word)) if word[:i].upper() not in REFUSED):
        assert any(p.fullmatch(prefix) for p in _name_patterns()), prefix


def test_keywords_are_sqlites():
    """KEYWORDS is the library's own list (sqlite3_keyword_name), where ctypes can reach it."""
    import _sqlite3
    import ctypes

    try:
        lib = ctypes.CDLL(_sqlite3.__file__)
        count = lib.sqlite3_keyword_count()
    except (OSError, AttributeError):
        pytest.skip("the sqlite3 library's keyword list is out of ctypes' reach here")
    names = []
    for i in range(count):
        text, size = ctypes.c_char_p(), ctypes.c_int()
        lib.sqlite3_keyword_name(i, ctypes.byref(text), ctypes.byref(size))
        names.append(ctypes.string_at(text, size.value).decode())
    if SQLITE[:2] != (3, 40):
        pytest.skip(
            f"keywords differ by version; KEYWORDS is 3.40's, the library {sqlite3.sqlite_version}"
        )
    assert sorted(names) == sorted(KEYWORDS)


@pytest.mark.parametrize("marker", list(MESSAGE_EXAMPLES))
def test_oracle_messages(marker):
    """Each message the oracle sorts comes from its example, and is sorted right: a semantic
    error after parsing lets a later syntax error through, one raised while parsing does not."""
    text = MESSAGE_EXAMPLES[marker]
    try:
        _connection().execute("EXPLAIN " + text)
        pytest.fail(f"{text!r} ran")
    except sqlite3.Error as exc:
        assert marker in str(exc)
    expected = False if marker in SYNTAX else None if marker in UNDECIDED else True
    assert sqlite_parses(text) is expected
    if marker in SEMANTIC:
        assert sqlite_parses(text + " foo bar baz") is False


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("SELECT 1", True),
        ("SELECT 1; -- done", True),
        ("SELECT 1; /* open", True),
        ("SELECT 1;;", False),
        ("SELECT 1 -- a;b", True),
        ("SELECT $a(;b)", True),  # a Tcl-style parameter: its ";" ends nothing
        ("SELECT 1; SELECT 2", False),
        ("SELECT name FROM users; This returns all names.", False),  # not "no such table"
        ("INSERT INTO t VALUES (1)", False),
        ("PRAGMA table_info(t)", False),
        ("WITH c AS (SELECT 1) DELETE FROM t", None),
        ("SELECT 'a\x00'", False),
        ("", False),
    ],
)
def test_oracle_statements(text, expected):
    assert sqlite_parses(text) is expected
