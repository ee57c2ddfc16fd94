"""Valid documents in each shipped grammar, each with a corrupted version an API might write.

Every case is a clean document (valid under its grammar: `check_corpus()` verifies it) and a
corrupted one carrying one or two realistic slips: trailing commas, single quotes, Python
literals or comments in JSON, prose and markdown fences around the answer, unbalanced brackets,
SQL dialect slips (ILIKE, SIMILAR TO, TOP n, `::` casts), JavaScript operators in Python,
truncated output. The corrupted version is invalid (also verified). `prompt` is the task a
black-box API would have been given; the local target sees it too.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from grammars.grammar import Grammar

JSON_KEYS_N = 5


@dataclass(frozen=True)
class Case:
    name: str
    grammar: str  # a shipped grammar name ("json_keys" takes n=JSON_KEYS_N)
    prompt: str
    clean: str
    corrupted: str
    slips: str  # what is wrong with `corrupted`, in words


@cache
def load_grammar(name: str) -> Grammar:
    if name == "json_keys":
        return Grammar.load("json_keys", n=JSON_KEYS_N)
    return Grammar.load(name)


def _truncate(text: str, keep: int) -> str:
    return text[:keep]


_USERS = '{"users": [{"name": "Ann", "age": 31}, {"name": "Bob", "age": 27}], "count": 2}'
_ORDERS_SQL = (
    "SELECT c.name, SUM(o.total) AS spent FROM customers c JOIN orders o ON o.customer_id = c.id "
    "GROUP BY c.name ORDER BY spent DESC LIMIT 10"
)
_PEOPLE_CSV = 'name,city,age\nAnn,Oslo,31\nBob,"Paris, France",27\nChen,Beijing,45\n'
_PY_DATA = "data = {'a': [1, 2, 3], 'b': {'c': 4}}\ntotal = sum(data['a']) + data['b']['c']"

CASES: tuple[Case, ...] = (
    # -- JSON -----------------------------------------------------------------------------------
    Case(
        "json-trailing-commas",
        "json",
        "Return a JSON object for item 7 with its tags red, green, blue and active true.",
        '{"id": 7, "tags": ["red", "green", "blue"], "active": true}',
        '{"id": 7, "tags": ["red", "green", "blue",], "active": true,}',
        "trailing commas (2)",
    ),
    Case(
        "json-single-quotes",
        "json",
        "Describe Ada Lovelace as JSON: name, birth year, fields.",
        '{"name": "Ada Lovelace", "born": 1815, "fields": ["mathematics", "computing"]}',
        "{'name': 'Ada Lovelace', 'born': 1815, 'fields': ['mathematics', 'computing']}",
        "single quotes throughout",
    ),
    Case(
        "json-python-literals",
        "json",
        "Report the job status as JSON with the keys ok, error, retries and cached.",
        '{"ok": true, "error": null, "retries": 0, "cached": false}',
        '{"ok": True, "error": None, "retries": 0, "cached": False}',
        "Python True/None/False",
    ),
    Case(
        "json-fenced-prose",
        "json",
        "Give the city, population and capital flag of Paris as JSON.",
        '{"city": "Paris", "population": 2102650, "capital": true}',
        "Here is the JSON you asked for:\n```json\n"
        '{"city": "Paris", "population": 2102650, "capital": true}'
        "\n```\nLet me know if you need anything else.",
        "prose + markdown fence around",
    ),
    Case(
        "json-unbalanced",
        "json",
        "Give the 2x2 matrix [[1, 2], [3, 4]] and its size as JSON.",
        '{"matrix": [[1, 2], [3, 4]], "size": 2}',
        '{"matrix": [[1, 2], [3, 4], "size": 2}',
        "missing ]",
    ),
    Case(
        "json-truncated",
        "json",
        "List the users Ann (31) and Bob (27) and their count as JSON.",
        _USERS,
        _truncate(_USERS, 45),
        "truncated output",
    ),
    Case(
        "json-comment-nan",
        "json",
        "Give the server settings as JSON: port, host and score.",
        '{"port": 8080, "host": "localhost", "score": 0}',
        '{"port": 8080, // default port\n "host": "localhost", "score": NaN}',
        "// comment, NaN",
    ),
    # -- JSON with exactly 5 string keys --------------------------------------------------------
    Case(
        "keys-number-value",
        "json_keys",
        "Describe the user Ann as a JSON object with 5 string fields.",
        '{"name": "Ann", "city": "Oslo", "role": "admin", "team": "core", "age": "31"}',
        '{"name": "Ann", "city": "Oslo", "role": "admin", "team": "core", "age": 31}',
        "a number where a string is required",
    ),
    Case(
        "keys-extra-key",
        "json_keys",
        "Describe the book Dune as a JSON object with 5 string fields.",
        '{"title": "Dune", "author": "Frank Herbert", "year": "1965", "genre": "sci-fi", '
        '"lang": "en"}',
        '{"title": "Dune", "author": "Frank Herbert", "year": "1965", "genre": "sci-fi", '
        '"lang": "en", "pages": "412"}',
        "a sixth key",
    ),
    Case(
        "keys-single-quotes-comma",
        "json_keys",
        "Describe the server web-1 as a JSON object with 5 string fields.",
        '{"host": "web-1", "ip": "10.0.0.5", "os": "linux", "zone": "eu", "state": "up"}',
        "{'host': 'web-1', 'ip': '10.0.0.5', 'os': 'linux', 'zone': 'eu', 'state': 'up',}",
        "single quotes, trailing comma",
    ),
    Case(
        "keys-fenced",
        "json_keys",
        "Describe the cat Felix as a JSON object with 5 string fields.",
        '{"name": "Felix", "color": "black", "owner": "Ann", "breed": "tabby", "mood": "calm"}',
        "```json\n"
        '{"name": "Felix", "color": "black", "owner": "Ann", "breed": "tabby", "mood": "calm"}'
        "\n```",
        "markdown fence",
    ),
    Case(
        "keys-truncated",
        "json_keys",
        "Describe the city Lyon as a JSON object with 5 string fields.",
        '{"city": "Lyon", "country": "France", "region": "Rhone", "river": "Saone", '
        '"food": "quenelles"}',
        '{"city": "Lyon", "country": "France", "region": "Rh',
        "truncated output",
    ),
    # -- SQLite ---------------------------------------------------------------------------------
    Case(
        "sql-ilike",
        "sqlite",
        "SQLite query: names and emails of customers whose name starts with a, sorted, 10 rows.",
        "SELECT name, email FROM customers WHERE name LIKE 'a%' ORDER BY name LIMIT 10",
        "SELECT name, email FROM customers WHERE name ILIKE 'a%' ORDER BY name LIMIT 10",
        "ILIKE (PostgreSQL)",
    ),
    Case(
        "sql-top",
        "sqlite",
        "SQLite query: the 5 largest orders with name and total.",
        "SELECT name, total FROM orders ORDER BY total DESC LIMIT 5",
        "SELECT TOP 5 name, total FROM orders ORDER BY total DESC",
        "TOP 5 (SQL Server)",
    ),
    Case(
        "sql-similar-to",
        "sqlite",
        "SQLite query: ids of products whose code starts with AB.",
        "SELECT id FROM products WHERE code LIKE 'AB%'",
        "SELECT id FROM products WHERE code SIMILAR TO 'AB%'",
        "SIMILAR TO (PostgreSQL)",
    ),
    Case(
        "sql-cast-fenced",
        "sqlite",
        "SQLite query: the price of each item as an integer.",
        "SELECT name, CAST(price AS INTEGER) AS price FROM items",
        "```sql\nSELECT name, price::integer AS price FROM items;\n```",
        "fence, :: cast (PostgreSQL)",
    ),
    Case(
        "sql-unbalanced",
        "sqlite",
        "SQLite query: number of paid orders over 100.",
        "SELECT COUNT(*) FROM orders WHERE (status = 'paid' AND total > 100)",
        "SELECT COUNT(*) FROM orders WHERE (status = 'paid' AND total > 100",
        "missing )",
    ),
    Case(
        "sql-fetch-first",
        "sqlite",
        "SQLite query: the first 5 users by name, with their email.",
        "SELECT name, email FROM users ORDER BY name LIMIT 5",
        "SELECT name, email FROM users ORDER BY name FETCH FIRST 5 ROWS ONLY",
        "FETCH FIRST (ANSI/Oracle)",
    ),
    Case(
        "sql-truncated",
        "sqlite",
        "SQLite query: the 10 customers who spent most, with the amount.",
        _ORDERS_SQL,
        _truncate(_ORDERS_SQL, 70),
        "truncated output",
    ),
    # -- arithmetic -----------------------------------------------------------------------------
    Case(
        "arith-unbalanced",
        "arithmetic",
        "Write an arithmetic expression: two times the sum of 3 and 4, minus 5 halves.",
        "2 * (3 + 4) - 5 / 2",
        "2 * (3 + 4 - 5 / 2",
        "missing )",
    ),
    Case(
        "arith-python-pow",
        "arithmetic",
        "Write an arithmetic expression: 2 to the 10th plus 3 squared.",
        "2^10 + 3^2",
        "2**10 + 3**2",
        "Python ** for ^",
    ),
    Case(
        "arith-prose",
        "arithmetic",
        "Write an arithmetic expression: the square root of 16 plus 3 times 2.",
        "sqrt(16) + 3 * 2",
        "Sure: sqrt(16) + 3 * 2 = 10",
        "prose before, '= 10' after",
    ),
    Case(
        "arith-times-sign",
        "arithmetic",
        "Write an arithmetic expression: 3 times 4, plus 2, divided by 7.",
        "(3 * 4 + 2) / 7",
        "(3 × 4 + 2) ÷ 7",
        "× and ÷ signs",
    ),
    Case(
        "arith-implicit-mult",
        "arithmetic",
        "Write an arithmetic expression: 2 times the sum of x and 4, plus 1.",
        "2 * (x + 4) + 1",
        "2(x + 4) + 1",
        "implicit multiplication",
    ),
    Case(
        "arith-truncated",
        "arithmetic",
        "Write an arithmetic expression: the product of (1+2), (3+4) and (5+6).",
        "(1 + 2) * (3 + 4) * (5 + 6)",
        "(1 + 2) * (3 +",
        "truncated output",
    ),
    # -- CSV ------------------------------------------------------------------------------------
    Case(
        "csv-bare-quotes",
        "csv",
        "CSV with columns name and quote: Ann said hi, Bob said bye.",
        'name,quote\nAnn,"She said ""hi"""\nBob,"He said ""bye"""\n',
        'name,quote\nAnn,She said "hi"\nBob,He said "bye"\n',
        "unescaped quotes in fields",
    ),
    Case(
        "csv-fenced",
        "csv",
        "CSV of people with name, city and age: Ann, Bob, Chen.",
        _PEOPLE_CSV,
        'Here is the "people" table:\n```csv\n' + _PEOPLE_CSV + "```\n",
        "prose + markdown fence (prose lines are valid CSV unless they hold a quote)",
    ),
    Case(
        "csv-space-after-quote",
        "csv",
        "CSV with columns author and books: Smith, J. with 42 and Doe, A. with 7.",
        'author,books\n"Smith, J.",42\n"Doe, A.",7\n',
        'author,books\n"Smith, J." ,42\n"Doe, A." ,7\n',
        "blank between closing quote and comma",
    ),
    Case(
        "csv-blank-line",
        "csv",
        "CSV with columns x and y: rows (1, 2), (3, 4), (5, 6).",
        "x,y\n1,2\n3,4\n5,6\n",
        "x,y\n\n1,2\n3,4\n\n5,6\n",
        "blank lines",
    ),
    Case(
        "csv-truncated",
        "csv",
        "CSV with columns id and comment: two product reviews.",
        'id,comment\n1,"great product, would buy again"\n2,"too small, returned it"\n',
        'id,comment\n1,"great product, would buy again"\n2,"too sma',
        "truncated inside a quoted field",
    ),
    # -- Python subset --------------------------------------------------------------------------
    Case(
        "py-semicolons",
        "python_expr",
        "Python: set x to 1, y to 2 and z to their sum.",
        "x = 1\ny = 2\nz = x + y",
        "x = 1; y = 2; z = x + y",
        "; between statements",
    ),
    Case(
        "py-js-operators",
        "python_expr",
        "Python: ok is a and b, or not c.",
        "ok = a and b or not c",
        "ok = a && b || !c",
        "&&, ||, ! (JavaScript)",
    ),
    Case(
        "py-js-ternary",
        "python_expr",
        "Python: y is the absolute value of x, with a conditional expression.",
        "y = x if x > 0 else -x",
        "y = x > 0 ? x : -x",
        "?: ternary (JavaScript)",
    ),
    Case(
        "py-unbalanced",
        "python_expr",
        "Python: total length of the words, then the average.",
        "total = sum(len(w) for w in words)\navg = total / len(words)",
        "total = sum(len(w) for w in words\navg = total / len(words)",
        "missing )",
    ),
    Case(
        "py-fenced",
        "python_expr",
        "Python: the even doubles below 20, as a list comprehension.",
        "result = [x * 2 for x in range(10) if x % 2 == 0]",
        "```python\nresult = [x * 2 for x in range(10) if x % 2 == 0]\n```",
        "markdown fence",
    ),
    Case(
        "py-truncated",
        "python_expr",
        "Python: a dict with a list and a nested dict, then a total.",
        _PY_DATA,
        _truncate(_PY_DATA, 30),
        "truncated output",
    ),
)


def check_corpus() -> list[str]:
    """Problems with the corpus: a clean document that does not parse, a corrupted one that does,
    a duplicate name. Empty when all is well."""
    problems = []
    seen: set[str] = set()
    for case in CASES:
        grammar = load_grammar(case.grammar)
        if case.name in seen:
            problems.append(f"{case.name}: duplicate name")
        seen.add(case.name)
        if not grammar.matches(case.clean):
            at = grammar.check(case.clean).chars
            problems.append(
                f"{case.name}: clean document invalid at {at}: {case.clean[at:][:20]!r}"
            )
        if grammar.matches(case.corrupted):
            problems.append(f"{case.name}: corrupted document is valid")
    return problems


if __name__ == "__main__":
    found = check_corpus()
    print("\n".join(found) or f"{len(CASES)} cases, all clean documents valid, corrupted invalid")
