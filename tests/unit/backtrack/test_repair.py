"""Repairs as edits: a slip is deleted, replaced or filled in, and the draft is read on from the
same stream, with no new call and no local model.

The APIs here replay fixed text and never read the grammar (tests/support/scripted.py); the target
is a ScriptedTarget with nothing to say, so a test fails if a correction is asked for.
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest

import providers
from backtrack import Grammar, GuideResult, guide, wrap
from backtrack.repair import candidates as candidates_module
from backtrack.repair.candidates import RepairLimits
from backtrack.repair.fields import MAX_FIELD, quoted_pieces
from backtrack.repair.notations import CONTEXT
from backtrack.repair.restart import MAX_INK, Restart
from backtrack.repair.search import search
from backtrack.trace.record import OUTPUT_ORIGINS
from benchmarks.corpora.unseen import load_unseen_grammar
from grammars import Checker
from tests.support.scripted import NO_CORRECTIONS, ScriptedAPI, ScriptedTarget, repaired
from tests.support.servers import text


def spans(result: GuideResult) -> list[tuple[str, str]]:
    return [(s.origin, s.text) for s in result.trace.spans]


# -- the two examples of the issue -----------------------------------------------------------------


def test_a_trailing_comma_is_deleted_through_the_openai_sdk(
    openai_server: Any, openai_client: Any
) -> None:
    openai_server.script(text('{"city": "Oslo", "pop": 709000,}', chunk_size=4))
    client = wrap(openai_client(), target=ScriptedTarget(), **NO_CORRECTIONS)
    reply = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "Oslo"}], grammar="json"
    )
    assert reply.choices[0].message.content == '{"city": "Oslo", "pop": 709000}'
    result = reply.guide_result
    assert (result.api_calls, result.corrections, result.repairs) == (1, 0, 1)
    assert len(openai_server.bodies) == 1
    assert spans(result) == [
        ("draft", '{"city": "Oslo", "pop": 709000'),
        ("deleted", ","),
        ("draft", "}"),
    ]


def test_wrong_quotes_and_trailing_commas_keep_every_field() -> None:
    result = repaired("json", """{'name': 'Bob', "age": 42, "tags": ["a", "b",],}""")
    assert result.text == '{"name": "Bob", "age": 42, "tags": ["a", "b"]}'
    assert (result.valid, result.api_calls, result.corrections) == (True, 1, 0)
    assert spans(result) == [
        ("draft", "{"),
        ("skipped", "'name'"),
        ("edit", '"name"'),
        ("draft", ": "),
        ("skipped", "'Bob'"),
        ("edit", '"Bob"'),
        ("draft", ', "age": 42, "tags": ["a", "b"'),
        ("deleted", ","),
        ("draft", "]"),
        ("deleted", ","),
        ("draft", "}"),
    ]
    edits = [(e.deleted, e.skipped, e.inserted) for e in result.trace.rounds[0].repairs]
    assert edits == [("", "'name'", '"name"'), ("", "'Bob'", '"Bob"'), (",", "", ""), (",", "", "")]


# -- per slip kind, over the shipped grammars ------------------------------------------------------

SLIPS = [
    # (grammar, draft, the one-edit repair)
    ("json", '{"a": [1, 2, 3,], "b": null}', '{"a": [1, 2, 3], "b": null}'),  # trailing separator
    ("json", '{"a": 1, "b": 2,}', '{"a": 1, "b": 2}'),
    ("json", "{'a': 1, 'b': 'x y'}", '{"a": 1, "b": "x y"}'),  # wrong quotes
    ("json", '{"ok": True, "no": False, "v": None}', '{"ok": true, "no": false, "v": null}'),
    ("json", '{"a": [1, 2, 3}, "b": null}', '{"a": [1, 2, 3], "b": null}'),  # wrong bracket
    ("json", '{"a": [1, 2, 3]]}', '{"a": [1, 2, 3]}'),  # extra closing bracket
    # A separator left out: right after the word it ends, at a line's end too (before, after
    # the blanks: `1 ,"b"`, `\n  ,"b"`).
    ("json", '{"a": 1 "b": 2}', '{"a": 1, "b": 2}'),
    ("json", '{\n  "a": [1, 2]\n\n  "b": 2\n}', '{\n  "a": [1, 2],\n\n  "b": 2\n}'),
    ("json", '{"a": 1, "b": 2;}', '{"a": 1, "b": 2}'),  # stray character
    ("json", '{"name": "Ann", "age": 3O}', '{"name": "Ann", "age": 3}'),
    (
        "sqlite",
        "SELECT name FROM users WHERE name ILIKE 'a%' LIMIT 5;",
        "SELECT name FROM users WHERE name LIKE 'a%' LIMIT 5;",
    ),
    ("sqlite", "SELECT a, b, FROM t WHERE x = 1;", "SELECT a, b FROM t WHERE x = 1;"),
    ("sqlite", "SELECT name FROM users WHERE id = 1;;", "SELECT name FROM users WHERE id = 1;"),
    ("sqlite", "SELECT name FROM users WHERE age > 3);", "SELECT name FROM users WHERE age > 3;"),
    ("arithmetic", "1 + 2 * (3 + 4))", "1 + 2 * (3 + 4)"),
    ("arithmetic", "1 + + 2", "1 +  2"),
    # A closing bracket forgotten further back: inserted there, the text after it read again.
    ("json", '{"a": [[1, 2], [3, 4], "b": 2}', '{"a": [[1, 2], [3, 4]], "b": 2}'),
    ("python_expr", "x = f(a, b\ny = 2", "x = f(a, b)\ny = 2"),
    # Operators of another notation, by what they mean where the grammar has it.
    ("arithmetic", "2**10 + 3**2", "2^10 + 3^2"),
    ("arithmetic", "(3 × 4 + 2) ÷ 7", "(3 * 4 + 2) / 7"),
    ("python_expr", "ok = a && b", "ok = a and b"),
    ("python_expr", "ok = a || !c", "ok = a or not c"),  # a meaning with its blank: `not `
    # A string without its quotes that starts like a number.
    ("json", '{"ip": 10.0.0.2, "n": 1}', '{"ip": "10.0.0.2", "n": 1}'),
    # The one keyword the grammar allows, left out.
    ("sqlite", "SELECT a FROM t ORDER a DESC;", "SELECT a FROM t ORDER BY a DESC;"),
    # A quotation in a string, its quotes not escaped.
    ("json", '{"q": "She said "hi" to me", "n": 1}', '{"q": "She said \\"hi\\" to me", "n": 1}'),
    # Phrases of other SQL dialects, as SQLite writes them.
    ("sqlite", "SELECT a FROM t WHERE b SIMILAR TO 'x%';", "SELECT a FROM t WHERE b LIKE 'x%';"),
    (
        "sqlite",
        "SELECT a FROM t ORDER BY a FETCH FIRST 5 ROWS ONLY;",
        "SELECT a FROM t ORDER BY a LIMIT 5;",
    ),
    ("sqlite", "SELECT price::integer AS p FROM t;", "SELECT CAST(price AS integer) AS p FROM t;"),
    # A phrase of another dialect that SQLite writes elsewhere: `TOP 5` is `LIMIT 5`, at the end.
    (
        "sqlite",
        "SELECT TOP 5 name, total\nFROM orders\nORDER BY total DESC;",
        "SELECT name, total\nFROM orders\nORDER BY total DESC LIMIT 5;",
    ),
    # Another notation's conditional (`c ? a : b`), in the grammar's form.
    ("python_expr", "y = x > 0 ? x : -x\nz = 1", "y = x if x > 0 else -x\nz = 1"),
    ("python_expr", "f(a, n % 2 == 0 ? a[0] : b)", "f(a, a[0] if n % 2 == 0 else b)"),
    (
        "sqlite",
        "SELECT score > 50 ? 'pass' : 'fail' AS r FROM t;",
        "SELECT CASE WHEN score > 50 THEN 'pass' ELSE 'fail' END AS r FROM t;",
    ),
    # A slip early in the answer, not a preamble: the answer starts at the reply's start.
    ("python_expr", "x = 1; y = 2; z = x + y", "x = 1\ny = 2\nz = x + y"),
    ("sqlite", "-- all\n# rows\nSELECT a FROM t;", "-- all\n-- rows\nSELECT a FROM t;"),
    # A comment where the grammar has none: deleted as one edit, its line's end kept, and with
    # it the blanks before it, which would end the line or stand before others.
    ("json", '{"port": 8080, // the default\n "host": "a"}', '{"port": 8080,\n "host": "a"}'),
    ("json", '{"port": 8080,\t// the default\n "host": "a"}', '{"port": 8080,\n "host": "a"}'),
    ("json", '{"port": 8080, /* the default */ "host": "a"}', '{"port": 8080, "host": "a"}'),
    ("sqlite", "SELECT a FROM t # rows\nWHERE b = 1;", "SELECT a FROM t -- rows\nWHERE b = 1;"),
    # A bracketed remark where the grammar takes no bracket: deleted whole, with the blanks
    # before it where a mark follows (before, the local model wrote a value's end and the API
    # was asked again).
    ("json", '{"pop": 709000 (approx.), "city": "Oslo"}', '{"pop": 709000, "city": "Oslo"}'),
    ("json", '{"n": 3 (three) }', '{"n": 3 }'),
    ("json", "[1, 2 (two) , 3]", "[1, 2 , 3]"),
    # A bracket left open closes where its content ends, before the line's end (before, `\n]}`).
    ("json", '{\n  "a": [1, 2\n}', '{\n  "a": [1, 2]\n}'),
]


@pytest.mark.parametrize(("grammar", "draft", "expected"), SLIPS)
@pytest.mark.parametrize("chunk", [0, 3], ids=["whole", "streamed"])
def test_a_slip_is_repaired_with_one_call(
    grammar: str, draft: str, expected: str, chunk: int
) -> None:
    result = repaired(grammar, draft, chunk=chunk)
    assert result.text == expected
    assert (result.valid, result.api_calls, result.corrections) == (True, 1, 0)
    assert result.repairs >= 1
    assert "".join(s.text for s in result.trace.spans if s.origin in OUTPUT_ORIGINS) == expected


def test_a_bracket_where_the_grammar_takes_another_is_no_remark_to_delete() -> None:
    """Where a bracket fits at the slip, what the draft's bracket holds is the API's: an
    operator goes before `(x + 4)`, and a list's `[x 1]` keeps `x 1`."""
    assert "(x + 4) + 1" in repaired("arithmetic", "2(x + 4) + 1").text
    assert "x 1" in repaired(load_unseen_grammar("sexp"), "(define [x 1])\n(a b)\n").text


@pytest.mark.parametrize("chunk", [0, 3], ids=["whole", "streamed"])
def test_a_phrase_written_elsewhere_goes_to_the_first_place_that_completes_its_own_query(
    chunk: int,
) -> None:
    """Each `TOP n` goes where its own query ends (a subquery's in the subquery, not past its
    `)`; not in a quote), once the reply is over; after the answer, not after prose dropped."""
    draft = "SELECT TOP 5 a FROM t WHERE s = ')' AND b IN (SELECT TOP 2 b FROM u) ORDER BY a;"
    result = repaired("sqlite", draft, chunk=chunk)
    assert result.text == (
        "SELECT a FROM t WHERE s = ')' AND b IN (SELECT b FROM u LIMIT 2) ORDER BY a LIMIT 5;"
    )
    assert [s.text for s in result.trace.spans if s.origin == "edit"] == [" LIMIT 2", " LIMIT 5"]
    assert (result.api_calls, result.corrections, result.repairs) == (1, 0, 4)
    result = repaired("sqlite", "SELECT TOP 3 a FROM t\n\nThis lists three.", chunk=chunk)
    assert (result.text, result.stop_reason) == ("SELECT a FROM t LIMIT 3\n", "trailing_dropped")


def test_a_phrase_is_not_moved_where_the_grammar_takes_its_meaning_in_its_place() -> None:
    """There the grammar is no dialect that writes it elsewhere (`LIMIT 5` is an item anywhere
    here, as free text would be): `TOP 5` is deleted, and `LIMIT 5` not put after the next word."""
    grammar = Grammar.from_lark(
        'start: "SELECT " item (" " item)*\nitem: NAME | "LIMIT " NUMBER\n'
        "NAME: /[a-z]+/\nNUMBER: /[0-9]+/\n"
    )
    result = repaired(grammar, "SELECT TOP 5 name")
    assert (result.text, result.stop_reason, result.repairs) == ("SELECT name", "complete", 1)


def test_a_conditional_of_another_notation_is_the_apis_own_text_in_the_grammars_order() -> None:
    """The condition and branches are the API's (kept, shown as draft); only the form's keywords
    are the edit's (where a branch may end is the grammar's to say: SQL's `'fail' AS r` ends
    after `'fail'`, a case of SLIPS)."""
    result = repaired("python_expr", "label = n >= 10 ? 'many' : 'few'\n")
    assert spans(result) == [
        ("draft", "label = "),
        ("draft", "'many'"),
        ("edit", " if "),
        ("draft", "n >= 10"),
        ("edit", " else "),
        ("draft", "'few'\n"),
    ]
    assert result.kept == 1.0
    # Not a conditional: JavaScript's `??`, or a `?` with no second branch.
    for draft in ("y = a ?? b : c\n", "y = a ? b\n"):
        assert " if " not in repaired("python_expr", draft).text


# Slips in grammars the project does not ship (benchmarks/corpora/unseen.py), each repaired with
# one call. Where a repair reads the API's text two ways at one cost, it keeps what the API wrote.
SHADOW = "inset 0 1px 0 rgba(255, 255, 255, .15), 0 1px 1px rgba(0, 0, 0, .075)"
UNSEEN_SLIPS = [
    # After blanks, `;` opens a comment, not another statement (`; ` read as a line end made
    # `done` an S-expression of its own); nor is it written as `// done` or `-- done`, where
    # `//` and `--` are symbols.
    (
        "sexp",
        "((milk juice) (honey marmalade))  ; done\n(a b)\n",
        "((milk juice) (honey marmalade))\n(a b)\n",
    ),
    # Two strings in another notation's quotes on one line: the edits that read the line
    # through at least cost, both requoted, not the cheapest at the first cut alone (the `'`
    # deleted) and then the next slip written around (`mathematics" "computing`).
    (
        "sexp",
        "(fields 'mathematics' 'computing')\n(born . 1815)\n",
        '(fields "mathematics" "computing")\n(born . 1815)\n',
    ),
    # A comment on a line of its own goes with its line's end: a list has no blank item
    # (before, `<!--` became the item mark `-`).
    (
        "mdlist",
        "- [Tutorial](/t.md) for it.\n<!-- more items below -->\n- Blog: [a DSL](/b.md)\n",
        "- [Tutorial](/t.md) for it.\n- Blog: [a DSL](/b.md)\n",
    ),
    # Castling in zeros, the letter the grammar takes written as the digit it looks like: two
    # edits, not the move deleted (`5. Be7 Re1`).
    (
        "chess",
        "1. e4 e5\n2. Nf3 Nc6\n3. Bb5 a6\n4. Ba4 Nf6\n5. 0-0 Be7\n6. Re1 b5\n",
        "1. e4 e5\n2. Nf3 Nc6\n3. Bb5 a6\n4. Ba4 Nf6\n5. O-O Be7\n6. Re1 b5\n",
    ),
    # A digit where the grammar takes only one: the one it takes, in place of the draft's (two
    # edits). Before, no repair was found, the first lines went as a preamble and the local
    # model wrote `syntax` after a comment; on a longer file, comment lines until its budget
    # ended, the text left incomplete.
    (
        "protobuf",
        'syntax = "proto2";\n\npackage demo;\n\nmessage A {\n  string name = 1;\n}\n',
        'syntax = "proto3";\n\npackage demo;\n\nmessage A {\n  string name = 1;\n}\n',
    ),
    # The last line after a comment: read on to the reply's end after the comment's deletion,
    # though that is no long stretch (before, `- b` was dropped as trailing text).
    (
        "mdlist",
        "- [Tutorial](/t.md) for it.\n<!-- more items below -->\n- b\n",
        "- [Tutorial](/t.md) for it.\n- b\n",
    ),
    # A key in quotes where INI writes it bare, on the last line: the key unquoted, not the line
    # dropped, nor made its previous line's continuation by a blank inserted before it.
    (
        "ini",
        '[flake8]\nignore =\n    E126 # a reason\n"max-line-length" = 160\n',
        "[flake8]\nignore =\n    E126 # a reason\nmax-line-length = 160\n",
    ),
    # A label's colon where the instruction follows on its line: the colon is the grammar's own
    # there (a label alone on its line), so not YAML's `key: value` written as `loop2 = DEX`
    # (an assignment), which cost nothing as another notation's operator; the colon deleted.
    (
        "asm6502",
        "start LDY #$FF\nloop2: DEX   ; X = X - 1\n      BNE loop2\n",
        "start LDY #$FF\nloop2 DEX   ; X = X - 1\n      BNE loop2\n",
    ),
    # A game's comment in braces, which the grammar does not have: deleted whole with the
    # blank before it, one edit (before, a correction and a second call), also with an inner
    # bracket; not the game's moves after it.
    (
        "chess",
        "1. d4 Nf6\n2. c4 e6 {the Nimzo [or Queen's Indian] is near}\n3. Nc3 Bb4\n4. Qc2 O-O\n",
        "1. d4 Nf6\n2. c4 e6\n3. Nc3 Bb4\n4. Qc2 O-O\n",
    ),
    # An attribute list's `]` left out: closed right after its content, before the statement's
    # `;`, not after the separator, at the next line's start (`\n\t]A1 -> B1`, the next
    # statement read as more attributes up to its `->`), or inside a name (`s2]2`).
    (
        "dot",
        "digraph g {\n\tnode [shape=plaintext;\n\tA1 -> B1;\n}\n",
        "digraph g {\n\tnode [shape=plaintext];\n\tA1 -> B1;\n}\n",
    ),
    (
        "dot",
        "digraph g {\ns1 [label=a;\ns22 -> s3;\n}\n",
        "digraph g {\ns1 [label=a];\ns22 -> s3;\n}\n",
    ),
    ("dot", "digraph g {\n\ta [shape=box;\n}\n", "digraph g {\n\ta [shape=box];\n}\n"),
    # Where the next line, as deep as the list's, slips further on than a repair reaches back
    # by characters: the `]` at the end of the list's line all the same, where the layout
    # ended the list, not after the next node's name (`s218][`), nor that node's `[` deleted.
    (
        "dot",
        'digraph g {\ns1 [label=a, shape=circle;\ns218[fontsize=11, label="x"];\ns1 -> s218;\n}\n',
        'digraph g {\ns1 [label=a, shape=circle];\ns218[fontsize=11, label="x"];\ns1 -> s218;\n}\n',
    ),
    (
        "dot",
        'digraph g {\n\t"5th" [sides=9, color=salmon2;\n\t"6th" [sides=5, color=blue];\n}\n',
        'digraph g {\n\t"5th" [sides=9, color=salmon2];\n\t"6th" [sides=5, color=blue];\n}\n',
    ),
    # Mermaid's arrow: of the two characters that may go, the doubled one (`->`, not the
    # undirected `--`): one edit either way.
    ("dot", "digraph g {\n\ta --> b;\n\tb -> c;\n}\n", "digraph g {\n\ta -> b;\n\tb -> c;\n}\n"),
    # A line's `;` left out: at that line's end, before its comment, not at the next line's
    # start (`;int32`, `;}`).
    (
        "protobuf",
        'syntax = "proto3";\nmessage A {\n  string name = 1 // the name\n  int32 id = 2;\n}\n',
        'syntax = "proto3";\nmessage A {\n  string name = 1; // the name\n  int32 id = 2;\n}\n',
    ),
    (
        "protobuf",
        'syntax = "proto3";\nmessage A {\n  string name = 1\n}\n',
        'syntax = "proto3";\nmessage A {\n  string name = 1;\n}\n',
    ),
    # A declaration's `;` left out at its line's end, where CSS reads on into the next line (a
    # value of terms, `0 padding`) and slips at its `:`: the layout (the next line ends with
    # `;`) puts it after `0`, not `padding = 0` (another notation's `:`, which costs nothing),
    # also where the cut's line is longer than a repair's window, or ends with a `}` after `;`.
    ("css", "a {\n\tmargin: 0\n\tpadding: 0;\n}\n", "a {\n\tmargin: 0;\n\tpadding: 0;\n}\n"),
    (
        "css",
        f"a {{\n  top: 0\n  box-shadow: {SHADOW};\n}}\n",
        f"a {{\n  top: 0;\n  box-shadow: {SHADOW};\n}}\n",
    ),
    ("css", "a { top: 0\n     left: 50px; }\n", "a { top: 0;\n     left: 50px; }\n"),
    # A line comment where CSS has block comments only, its `/` read as a `/*`'s: deleted with
    # the blanks before it (before, `0  / fallback` read as a division).
    (
        "css",
        "a {\n\tpadding: 0;  // fallback\n\tposition: absolute;\n}\n",
        "a {\n\tpadding: 0;\n\tposition: absolute;\n}\n",
    ),
    # The same edit again and again is a neighbouring notation, not prose to stop repairing
    # (before, three repairs within 16 characters sent the rest to the local model: SmolLM2's
    # `quantities: 1.2, 3.4, ...` took three calls and came back written four times over).
    ("sexp", "(list 1.2, 3.4, 5.6, 7.8, 9.0, 11.2)\n", "(list 1.2 3.4 5.6 7.8 9.0 11.2)\n"),
    # A reply that ended lacks only the line end its grammar ends lines with (a chat API strips
    # a reply's last one): it goes at the end (before, a call more, glued to the last line).
    (
        "mdlist",
        "- Learn the basics\n- Practice regularly",
        "- Learn the basics\n- Practice regularly\n",
    ),
    # A bracket the API opened is closed, not deleted (`LDA $30,Y`): one edit either way.
    (
        "asm6502",
        "NXTEL    LDA ($30,Y   ;FETCH ELEMENT\n         CMP $32\n",
        "NXTEL    LDA ($30),Y   ;FETCH ELEMENT\n         CMP $32\n",
    ),
]


@pytest.mark.parametrize(("gname", "draft", "expected"), UNSEEN_SLIPS)
@pytest.mark.parametrize("chunk", [0, 3], ids=["whole", "streamed"])
def test_a_slip_in_a_grammar_nobody_tuned_for_is_repaired(
    gname: str, draft: str, expected: str, chunk: int
) -> None:
    result = repaired(load_unseen_grammar(gname), draft, chunk=chunk)
    assert (result.text, result.api_calls, result.corrections) == (expected, 1, 0)


# A closer the API left out lines before its reply's end, where the grammar reads on one level too
# deep and the text ends open: placed where the draft's layout closed the block, with one call
# (before, the API was asked to go on, and the closer came at the end, after lines it encloses).
ROSETTE = "repeat 12 {\n    repeat 4 {\n        f60 r90\n    \n    r30\n}\n"
SCHEME = "(define (sq xs\n  (map (lambda (x) (* x x)) xs))\n"
KICAD = '(lib\n  (symbol "R"\n    (property "Value" (at 0 0 90\n      (effects (font 1)))))\n'
OPEN_JSON = '{\n  "a": [\n    1\n  ],\n  "c": {\n    "d": [1, 2]\n}\n'
ALIST = '((name . "Ada")\n (born . 1815)\n (fields "maths")\n'
FORGOTTEN_CLOSERS = [
    # Braces on lines of their own: before the next line no deeper than the block's first, on
    # the blank line left there as deep as it, or on a line of its own.
    ("turtle", ROSETTE, ROSETTE.replace("    \n", "    }\n"), "}"),
    (
        "turtle",
        "fill {\n    repeat 5 {\n        f150\n    }\nb50 l90\n",
        "fill {\n    repeat 5 {\n        f150\n    }\n}\nb50 l90\n",
        "}",
    ),
    (
        "turtle",
        "fill {\n    repeat 5 {\n        f150\n    \n}\nb50 l90\n",
        "fill {\n    repeat 5 {\n        f150\n    }\n}\nb50 l90\n",
        "}",
    ),
    # The same in JSON, where the grammar takes one object's members after another's.
    ("json", OPEN_JSON, OPEN_JSON.replace("2]\n", "2]\n  }\n"), "}"),
    # Closers at the ends of lines: before the next line that starts at or left of the bracket.
    ("sexp", SCHEME, SCHEME.replace("xs\n", "xs)\n", 1), ")"),
    ("sexp", KICAD, KICAD.replace("90\n", "90)\n"), ")"),
    # Left off the reply's last line, which opened the bracket, where the reply ended after
    # that line's end: at the line's end (before, the API was asked to go on and wrote the
    # closer after the line end: a call more, and the closer out of place).
    ("sexp", "((milk juice) (honey marmalade)\n", "((milk juice) (honey marmalade))\n", ")"),
    ("json", '{"a": [1, 2]\n', '{"a": [1, 2]}\n', "}"),
    # Brackets opened on one line, the last line closing only the inner one: the outer closes
    # with it (before, the API was asked to go on: a call more, the closer on a line after).
    (
        "turtle",
        "fill { repeat 5 {\n    f150 r72\n}\n",
        "fill { repeat 5 {\n    f150 r72\n}}\n",
        "}",
    ),
    ("json", '[{\n  "a": 1\n}\n', '[{\n  "a": 1\n}]\n', "]"),
]


@pytest.mark.parametrize(("gname", "draft", "expected", "closers"), FORGOTTEN_CLOSERS)
@pytest.mark.parametrize("chunk", [0, 3], ids=["whole", "streamed"])
def test_a_closer_left_out_goes_where_the_layout_closed_its_block(
    gname: str, draft: str, expected: str, closers: str, chunk: int
) -> None:
    grammar = gname if gname == "json" else load_unseen_grammar(gname)
    result = repaired(grammar, draft, chunk=chunk)
    assert (result.text, result.stop_reason, result.api_calls) == (expected, "complete", 1)
    edits = [s.text.strip() for s in result.trace.spans if s.origin == "edit"]
    assert edits == [closers]
    assert "".join(s.text for s in result.trace.spans if s.origin in OUTPUT_ORIGINS) == expected
    assert result.kept == 1.0


def test_a_closer_left_out_lines_back_is_placed_through_the_openai_sdk(
    openai_server: Any, openai_client: Any
) -> None:
    """Through wrap() (a reply not streamed on): one upstream request, the closer in place."""
    openai_server.script(text(OPEN_JSON, chunk_size=4))
    client = wrap(openai_client(), target=ScriptedTarget(), **NO_CORRECTIONS)
    reply = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "JSON"}], grammar="json"
    )
    assert reply.choices[0].message.content == OPEN_JSON.replace("2]\n", "2]\n  }\n")
    assert (reply.guide_result.api_calls, len(openai_server.bodies)) == (1, 1)


def test_a_closer_placed_lines_back_is_shown_in_its_place() -> None:
    """The trace shows the closer where it went, and the fence closed after the answer after
    it (a first form read the text after the closer again, after the dropped fence)."""
    result = repaired(load_unseen_grammar("turtle"), f"```\n{ROSETTE}```\n")
    assert spans(result) == [
        ("dropped", "```\n"),
        ("draft", "repeat 12 {\n    repeat 4 {\n        f60 r90\n    "),
        ("edit", "}"),
        ("draft", "\n    r30\n}\n"),
        ("dropped", "```\n"),
    ]
    repairs = [(r.at, r.inserted) for round_ in result.trace.rounds for r in round_.repairs]
    assert repairs == [(len("repeat 12 {\n    repeat 4 {\n        f60 r90\n    "), "}")]


def test_a_closer_left_out_is_not_placed_where_the_layout_shows_nothing() -> None:
    """A reply whose text lacks more than closers, that stopped inside a line or after an
    opener, that leaves a bracket of an earlier line open (one its last closer's bracket was
    not opened with), or text already passed on to `on_text`: the API is asked to go on, as
    for a reply cut short."""
    for draft in ['{\n  "a": 1,\n', '{"a": [1, 2', '{"a": [\n', '[\n  {\n    "a": 1\n  }\n']:
        assert repaired("json", draft).api_calls == 2, draft
    # A bracket of an earlier line open after the last: the reply may be cut short after a
    # whole line (a truncated one ends so as often as one that forgot its last closer).
    result = repaired(load_unseen_grammar("sexp"), ALIST)
    assert (result.text, result.api_calls) == (ALIST + ")", 2)
    api = ScriptedAPI(ROSETTE)
    pieces: list[str] = []
    settings = {**NO_CORRECTIONS, "on_text": pieces.append}
    result = guide(
        providers.FunctionDrafter(api),
        load_unseen_grammar("turtle"),
        prompt="p",
        target=ScriptedTarget(),
        **settings,
    )
    assert (result.text, result.api_calls) == (ROSETTE + "}", 2)
    assert "".join(pieces) == result.text


@pytest.mark.parametrize("chunk", [0, 3])
@pytest.mark.parametrize(
    ("gname", "answer", "closers"),
    [("json", '[\n  {\n    "a": 1\n  }\n', "]"), ("sexp", ALIST, ")")],
)
def test_a_reply_that_closed_its_fence_gets_its_closers_at_the_end(
    gname: str, answer: str, closers: str, chunk: int
) -> None:
    """The same texts in a code fence the reply closed: it said its answer is over, so the
    closers the text lacks go at its end, with no call more (SmolLM2 wrote a DOT graph without
    its `}` and closed its fence: asked to go on, it wrote the graph again)."""
    grammar = gname if gname == "json" else load_unseen_grammar(gname)
    result = repaired(grammar, f"```\n{answer}```\n", chunk=chunk)
    assert (result.text, result.api_calls, result.stop_reason) == (answer + closers, 1, "complete")


def test_a_reply_cut_short_at_its_token_budget_is_asked_to_go_on() -> None:
    """The same list, but the function says its reply ran out of tokens (`Reply`, "length"):
    the line may go on, so the API is asked for the rest, and no line end is added."""
    answer = "- Learn the basics\n- Practice regularly every day\n"
    api = ScriptedAPI(answer, drafts=["- Learn the basics\n- Practice regularly"])

    def cut_short(prompt: Any, prefix: str) -> providers.Reply:
        text = api(prompt, prefix)
        return providers.Reply(text, "length" if api.calls == 1 else "stop")

    grammar = load_unseen_grammar("mdlist")
    drafter = providers.FunctionDrafter(cut_short)
    result = guide(drafter, grammar, prompt="p", target=ScriptedTarget(), **NO_CORRECTIONS)
    assert (result.text, result.api_calls) == (answer, 2)


@pytest.mark.parametrize("chunk", [1, 3, 0])
def test_a_closer_left_off_the_last_line_goes_at_its_end_in_text_passed_on(chunk: int) -> None:
    """Streamed to `on_text`: what was passed on stays as it was, and the closer goes at the
    last line's end, which was not (the closers of lines back are not placed there, above)."""
    draft = "(a b)\n((milk juice) (honey marmalade)\n"
    pieces: list[str] = []
    api = ScriptedAPI(draft, chunk=chunk)
    result = guide(
        providers.FunctionDrafter(api.stream if chunk else api),
        load_unseen_grammar("sexp"),
        prompt="p",
        target=ScriptedTarget(),
        **{**NO_CORRECTIONS, "on_text": pieces.append},
    )
    assert (result.text, result.api_calls) == ("(a b)\n((milk juice) (honey marmalade))\n", 1)
    assert "".join(pieces) == result.text


@pytest.mark.parametrize(
    ("grammar", "draft"),
    [
        ("json", '{"a": [1, 2, 3], "b": {"c": "x, y"}}'),
        ("sqlite", "SELECT name, age FROM users WHERE age > 3 ORDER BY age LIMIT 5;"),
        ("arithmetic", "1 + 2 * (3 + 4)"),
    ],
)
def test_a_valid_draft_passes_through_untouched(grammar: str, draft: str) -> None:
    result = repaired(grammar, draft, chunk=5)
    assert result.text == draft and spans(result) == [("draft", draft)]
    assert (result.api_calls, result.repairs) == (1, 0)


@pytest.mark.parametrize("chunk", [0, 3], ids=["whole", "streamed"])
def test_quotes_put_right_just_before_the_next_slip(chunk: int) -> None:
    """After the last value's quotes are mended, nothing of the draft fits until its trailing
    comma goes: one path of edits, not a correction."""
    draft = "{'name': 'Ann', 'city': 'Oslo',}"
    result = repaired(Grammar.load("json_keys", n=2), draft, chunk=chunk)
    assert result.text == '{"name": "Ann", "city": "Oslo"}'
    assert (result.api_calls, result.corrections) == (1, 0)


@pytest.mark.parametrize(
    ("grammar", "draft", "dropped", "expected"),
    [
        ("arithmetic", "Sure: 1 + 2 * x", "Sure: ", "1 + 2 * x"),  # prose, with its blank
        ("json", '<b>JSON</b>\n{"a": 1}', "<b>JSON</b>\n", '{"a": 1}'),  # no repair from 0
    ],
)
def test_a_preamble_is_dropped_when_it_reads_as_prose_or_has_no_repair(
    grammar: str, draft: str, dropped: str, expected: str
) -> None:
    result = repaired(grammar, draft)
    assert spans(result) == [("dropped", dropped), ("draft", expected)]


@pytest.mark.parametrize("chunk", [0, 3], ids=["whole", "streamed"])
def test_a_preamble_before_an_answer_that_fits_nowhere_is_dropped(chunk: int) -> None:
    """No offset of the reply starts a text the grammar takes (each item is numbered, where the
    grammar wants `- `), so the answer's start is not found; the repair at the reply's first
    character drops the sentence that announces the answer, as a continuation's remark (before,
    `Here` became `-`: `- are two tips:` was kept as an item)."""
    draft = "Here are two tips:\n\n1. Learn the basics\n2. Practice every day\n"
    result = repaired(load_unseen_grammar("mdlist"), draft, chunk=chunk)
    assert result.text == "- Learn the basics\n- Practice every day\n"
    assert spans(result)[0] == ("dropped", "Here are two tips:\n")
    assert (result.api_calls, result.corrections) == (1, 0)


@pytest.mark.parametrize(
    ("rest", "inserted"), [("(x + 4) + 1", " * "), ("(x+4)+1", "*"), ("(x)", "*")]
)
def test_edits_that_tie_go_to_the_model_with_the_drafts_text_after_them(
    rest: str, inserted: str
) -> None:
    """`2(x + 4)`: every operator inserted costs one edit; `prefer` picks among them. The one
    picked is spaced as the draft spaces its own operators."""
    checker = Grammar.load("arithmetic").checker()
    checker.feed("2")
    offered: list[list[str]] = []

    def prefer(texts: list[str]) -> int:
        offered.append(texts)
        return texts.index(f"2*{rest}")

    edit = search(checker, rest, final=True, floor=0, limits=RepairLimits(), prefer=prefer)
    assert edit is not None and edit.insert == inserted
    (texts,) = offered
    assert {f"2*{rest}", f"2+{rest}", f"2%{rest}"} <= set(texts)
    assert checker.text == "2"


def test_one_cheapest_edit_asks_the_model_nothing() -> None:
    checker = Grammar.load("json").checker()
    checker.feed('{"a": 1,')
    asked: list[list[str]] = []

    def prefer(texts: list[str]) -> int:
        asked.append(texts)
        return 0

    edit = search(checker, "}", final=True, floor=0, limits=RepairLimits(), prefer=prefer)
    assert edit is not None and edit.deleted == "," and asked == []


@pytest.mark.e2e
def test_smollm2_breaks_a_tie_as_the_api_meant(target: Any) -> None:
    api = ScriptedAPI("2(x + 4) + 1")
    result = guide(
        providers.FunctionDrafter(api), "arithmetic", prompt="p", target=target, **NO_CORRECTIONS
    )
    assert (result.text, result.api_calls) == ("2 * (x + 4) + 1", 1)


@pytest.mark.parametrize(
    ("grammar", "draft", "expected"),
    [
        # Strings in the quotes GraphQL takes: not names (`[zuck, ...]` would be enum values).
        ("graphql", "{ p(h: ['a', 'b-c']) { id } }", '{ p(h: ["a", "b-c"]) { id } }'),
        # An input object's keys quoted as in JSON: bare names.
        (
            "graphql",
            '{ p(at: { "x": 1.5, "y": -2 }) { id } }',
            "{ p(at: { x: 1.5, y: -2 }) { id } }",
        ),
        # The keyword a fragment needs, left out.
        ("graphql", "{ a }\n\nfragment f User { id }", "{ a }\n\nfragment f on User { id }"),
        # A YAML key's value where TOML writes `key = value`.
        ("toml", 'name = "Nail"\ncolor: "gray"\n', 'name = "Nail"\ncolor = "gray"\n'),
        # JSX attributes where HTML goes: className, htmlFor and a style object.
        (
            "html",
            "<div className=\"a\" style={{marginTop: '4px', color: 'red'}}>x</div>\n",
            '<div class="a" style="margin-top: 4px; color: red;">x</div>\n',
        ),
        ("html", '<label htmlFor="n">Name</label>\n', '<label for="n">Name</label>\n'),
        # An attribute's value without quotes: quoted, not joined to the name (`aria-label-nav`).
        ("html", "<nav aria-label=nav>x</nav>\n", '<nav aria-label="nav">x</nav>\n'),
    ],
)
def test_notations_of_other_formats(grammar: str, draft: str, expected: str) -> None:
    """On the second corpus's grammars (benchmarks/grammars)."""
    from benchmarks.corpora.other import load_other_grammar

    result = repaired(load_other_grammar(grammar), draft)
    assert (result.text, result.api_calls, result.corrections) == (expected, 1, 0)


@pytest.mark.parametrize(
    ("grammar", "draft", "expected"),
    [
        ("graphql", "query q($a: Boolean {\n  a\n}\n", "query q($a: Boolean) {\n  a\n}\n"),
        ("html", '<img alt="x" />\n<p>a<br />b</p>\n', '<img alt="x">\n<p>a<br>b</p>\n'),
        ("json", '{"a": [1, 2, ], "b": 3}', '{"a": [1, 2], "b": 3}'),
        # Where the opener has a blank after it, so does the text before the closer.
        ("json", '{ "a": [ 1, 2, ], "b": 3 }', '{ "a": [ 1, 2 ], "b": 3 }'),
        ("graphql", "{ p( h: 1 { id } }", "{ p( h: 1 ){ id } }"),
    ],
)
@pytest.mark.parametrize("chunk", [0, 1, 3], ids=["whole", "by-character", "streamed"])
def test_a_closer_an_edit_leaves_is_spaced_as_its_opener(
    grammar: str, draft: str, expected: str, chunk: int
) -> None:
    """A `)` inserted after `Boolean `, or a `/` or `,` deleted before a closer, left a blank
    there (`Boolean ){`, `alt="x" >`, `[1, 2 ]`) where the opener had none after it."""
    from benchmarks.corpora.other import load_other_grammar

    loaded = grammar if grammar == "json" else load_other_grammar(grammar)
    result = repaired(loaded, draft, chunk=chunk)
    assert (result.text, result.api_calls, result.corrections) == (expected, 1, 0)


@pytest.mark.parametrize(
    ("draft", "expected", "edit"),
    [
        # Left out: the one end tag the grammar allows, inserted before the draft's own.
        (
            '<ul><li><a href="#">x</li></ul>',
            '<ul><li><a href="#">x</a></li></ul>',
            [("edit", "</a>"), ("draft", "</li></ul>")],
        ),
        # Written twice: deleted whole, not made a start tag (`<li>`, which the draft never
        # closes).
        (
            "<div><p>one</p></p>\n<p>two</p></div>\n",
            "<div><p>one</p>\n<p>two</p></div>\n",
            [("deleted", "</"), ("skipped", "p>"), ("draft", "\n<p>two</p></div>\n")],
        ),
        # In the wrong order: swapped.
        (
            '<ul>\n  <li><a href="#">Prev</li></a>\n  <li>1</li>\n</ul>\n',
            '<ul>\n  <li><a href="#">Prev</a></li>\n  <li>1</li>\n</ul>\n',
            [("deleted", "</"), ("skipped", "li></a>"), ("edit", "</a></li>")],
        ),
    ],
)
def test_an_end_tag_is_one_bracket(draft: str, expected: str, edit: list[tuple[str, str]]) -> None:
    """HTML (benchmarks/grammars/html.lark) closes with end tags as JSON does with brackets: one
    left out, written twice or swapped is one edit, and the API's text around it is kept."""
    from benchmarks.corpora.other import load_other_grammar

    result = repaired(load_other_grammar("html"), draft)
    assert (result.text, result.api_calls, result.corrections) == (expected, 1, 0)
    shown = spans(result)
    at = shown.index(edit[0])
    assert shown[at : at + len(edit)] == edit


@pytest.mark.parametrize(
    ("draft", "skipped"),
    [
        ('{"zz": true, "a": 1, "b": "x"}', 'zz": true, '),
        ('{"a": 1, "zz": [1, {"q": 2}], "b": "x"}', 'zz": [1, {"q": 2}], '),
        ('{"a": 1, "b": "x", "zz": null}', 'zz": null'),
    ],
)
def test_a_key_the_schema_lacks_is_deleted_with_its_value(draft: str, skipped: str) -> None:
    """Not its value given to the next key (`"lang": "412"`), nor a name made up for it."""
    schema = {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
        "required": ["a", "b"],
        "additionalProperties": False,
    }
    result = repaired(Grammar.coerce(schema), draft)
    assert (result.text, result.api_calls) == ('{"a": 1, "b": "x"}', 1)
    assert [t for o, t in spans(result) if o == "skipped"] == [skipped]


@pytest.mark.parametrize("chunk", [0, 3], ids=["whole", "streamed"])
def test_a_line_whose_whole_text_is_deleted_goes_with_its_line_end(chunk: int) -> None:
    """Not a blank line left where each member the schema lacks was (`{\\n    \\n    "name"`);
    the next line keeps its own indentation."""
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "watered": {"type": "boolean"}},
        "required": ["name", "watered"],
        "additionalProperties": False,
    }
    draft = '{\n    "id": 1,\n    "name": "fern",\n    "kind": "x",\n  "watered": true\n}'
    result = repaired(Grammar.coerce(schema), draft, chunk=chunk)
    assert result.text == '{\n    "name": "fern",\n  "watered": true\n}'
    assert result.api_calls == 1
    assert [t for o, t in spans(result) if o in ("deleted", "skipped")] == [
        '\n    "',
        'id": 1,',
        '\n    "',
        'kind": "x",',
    ]


@pytest.mark.parametrize("chunk", [0, 3], ids=["whole", "streamed"])
@pytest.mark.parametrize(
    ("draft", "written"),
    [
        ('{\n  "title": "Crash",\n  "severity": 3,\n  "steps": [\n    "open"\n  ]\n}', '"high"'),
        ('{\n  "title": "Crash",\n  "severity": 3\n}', '"high"\n  '),
    ],
    ids=["before-a-key", "last"],
)
def test_a_value_the_schema_refuses_is_replaced_and_the_draft_goes_on_after_it(
    draft: str, written: str, chunk: int
) -> None:
    """Not the next key chipped away a character at a time until a bracket fits (`"severity":`
    then the line end and indentation kept, `"steps":` deleted and skipped in five edits, the
    list refused), nor the value and the object's `}` replaced by a line end or a quote, reading
    none of the draft (two calls, `"severity": \\n\\n"high"\\n  }`): the target writes the
    value, the API's `3` is skipped, and its rest is reused, with no call more; the draft's line
    end follows the value, not the target's own line end and indentation."""
    schema = {
        "type": "object",
        "properties": {
            "title": {"type": "string"},
            "severity": {"enum": ["low", "medium", "high"]},
            "steps": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["title", "severity"],
        "additionalProperties": False,
    }
    api = ScriptedAPI(draft, chunk=chunk)
    target = ScriptedTarget(written)
    result = guide(
        providers.FunctionDrafter(api.stream if chunk else api), schema, prompt="p", target=target
    )
    assert result.text == draft.replace("3", '"high"')
    assert (result.api_calls, result.corrections) == (1, 1)
    shown = spans(result)
    assert shown[shown.index(("correction", '"high"')) + 1] == ("skipped", "3")


@pytest.mark.parametrize(
    ("written", "calls"),
    [(('"', 'high"'), (1, 2)), (('"', "hi"), (2, 2))],
    ids=["the-word-ends", "still-inside-it"],
)
def test_a_correction_that_stops_inside_a_word_goes_on_before_the_api_is_asked_again(
    written: tuple[str, ...], calls: tuple[int, int]
) -> None:
    """SmolLM2 wrote an enum's opening quote and stopped (a quote ends a lexeme as often as it
    begins one); the API, asked to go on inside the word, wrote `42"` (a call more, and the target
    wrote the rest of the document). The draft's rest stays for one more correction: once the
    word is written, it is reused; where the text is still inside the word then, the API goes on
    from there."""
    schema = {
        "type": "object",
        "properties": {
            "severity": {"enum": ["low", "medium", "high"]},
            "steps": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["severity", "steps"],
        "additionalProperties": False,
    }
    draft = '{\n  "severity": 3,\n  "steps": [\n    "open"\n  ]\n}'
    api = ScriptedAPI(draft.replace("3", '"high"'), (draft,))
    target = ScriptedTarget(*written)
    result = guide(providers.FunctionDrafter(api), schema, prompt="p", target=target)
    assert result.text == api.answer
    assert (result.api_calls, result.corrections) == calls
    assert [until for _, until in target.calls] == ["terminal", "terminal"]
    shown = spans(result)
    if calls[0] == 1:
        assert ("skipped", "3") in shown


def test_a_forgotten_bracket_is_shown_as_one_insertion() -> None:
    result = repaired("json", '{"a": [1, 2, "b": 3}')
    assert spans(result) == [("draft", '{"a": [1, 2'), ("edit", "]"), ("draft", ', "b": 3}')]
    edits = [(e.at, e.deleted, e.skipped, e.inserted) for e in result.trace.rounds[0].repairs]
    assert edits == [(11, "", "", "]")]


def test_prose_where_json_goes_on_is_not_edited_word_by_word() -> None:
    # No path of edits through the prose resynchronises (it costs more edits than it reads), nor
    # is an edit every few characters a slip (after three within 16 characters the loop stops
    # repairing): the target corrects and the API goes on. No word of the prose is kept.
    api = ScriptedAPI('{"a": 1, "b": 2}', drafts=['{"a": 1, I think the next key is b'])
    target = ScriptedTarget('"b"')
    result = guide(providers.FunctionDrafter(api), "json", prompt="p", target=target)
    assert json.loads(result.text) == {"a": 1, "b": 2}
    assert (result.corrections, result.api_calls) == (1, 2)
    assert len(result.trace.rounds[0].repairs) <= 3
    assert not any(word in result.text for word in ("think", "next", "key"))


def test_repairs_can_be_turned_off() -> None:
    result = repaired("json", '{"a": 1, "b": 2,}', repair_window=0)
    assert result.text == '{"a": 1, "b": 2,' and result.repairs == 0
    assert spans(result)[-1] == ("rejected", "}")


def test_a_stream_that_drops_while_a_repair_reads_on_resumes_from_the_committed_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import providers.retry

    monkeypatch.setattr(providers.retry, "backoff", lambda attempt, exc: 0.0)
    draft = '{"a": [1, 2, 3,], "b": null}'
    drop = providers.ProviderError("dropped", retryable=True)
    api = ScriptedAPI(draft, chunk=3, fail=lambda call: (6, drop) if call == 0 else None)
    result = guide(
        providers.FunctionDrafter(api.stream),
        "json",
        prompt="p",
        target=ScriptedTarget(),
        **NO_CORRECTIONS,
    )
    assert result.text == '{"a": [1, 2, 3], "b": null}'
    assert result.api_calls == 2 and api.prefixes[1] == '{"a": [1, 2, 3,'


# -- the search's cost -----------------------------------------------------------------------------


def test_the_search_does_bounded_work_on_a_long_draft_with_many_slips(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A 64 KB draft with two slips every kilobyte: every slip is repaired, and the engine
    checks per repair stay under a fixed bound, whatever the length of the draft."""
    items = [
        f'{{"id": {i}, "tags": ["x", "y",], "ok": True}}'
        if i % 24 == 0
        else f'{{"id": {i}, "tags": ["x", "y"], "ok": true}}'
        for i in range(1500)
    ]
    draft = "[" + ", ".join(items) + "]"
    assert len(draft) > 64_000
    calls = [0]
    checked = [0]
    fits = Checker.fits

    def counted(self: Checker, chunk: str) -> int:
        calls[0] += 1
        checked[0] += len(chunk)
        return fits(self, chunk)

    monkeypatch.setattr(Checker, "fits", counted)
    result = repaired("json", draft, chunk=64, max_repairs=10_000, max_draft_tokens=10_000)
    expected = draft.replace('"y",]', '"y"]').replace("True", "true")
    assert result.text == expected and result.api_calls == 1
    assert result.repairs == 2 * len(range(0, 1500, 24))
    assert calls[0] / result.repairs < 2_000
    assert checked[0] / result.repairs < 2_000 * 64


def test_scoring_a_candidate_reads_a_bounded_tail_of_the_committed_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What a candidate's scoring is given of the committed text is its last CONTEXT characters,
    however long the text: not a copy of all of it per candidate (64 KB copied about 40 times a
    cut made one search after 1 MB twice as slow as after 1 KB; bench_repair_cost)."""
    lengths: list[int] = []
    changes_words = candidates_module.changes_words

    def recorded(before: str, removed: str, inserted: str, after: str) -> bool:
        lengths.append(len(before))
        return changes_words(before, removed, inserted, after)

    monkeypatch.setattr(candidates_module, "changes_words", recorded)
    text = "[" + ", ".join(['{"a": 1}'] * 8000) + ', {"b": [1, 2,]}]'
    checker = Grammar.load("json").checker()
    taken = checker.feed(text)
    assert text[taken:] == "]}]" and taken > 64_000
    edit = search(checker, text[taken:], final=True, floor=0, limits=RepairLimits())
    assert edit is not None and (edit.back, edit.insert) == (1, "")
    assert lengths and max(lengths) == CONTEXT


def test_search_leaves_the_checker_as_it_was() -> None:
    grammar = Grammar.load("json")
    checker = grammar.checker()
    taken = checker.feed('{"a": [1, 2,]')
    committed = checker.text
    edit = search(checker, '{"a": [1, 2,]'[taken:], final=True, floor=0, limits=RepairLimits())
    assert edit is not None and (edit.back, edit.insert) == (1, "")
    assert checker.text == committed and checker.chars == len(committed)
    assert checker.feed("3]") == 2  # still at the cut, after the comma


# -- both repair corpora, repairs alone ----------------------------------------------------------

CORPUS_EXACT = 49  # of the 66 documents, when end tags, JSX and quoted values were last changed
# Edit distance to the meant documents, all of them together. 94 before an API that stops short
# twice had its brackets closed: arith-unbalanced and gql-missing-brace ended incomplete a
# character away; now they are valid, the closer at the end, two characters away.
CORPUS_DISTANCE = 96


def test_the_repair_corpora_with_repairs_alone_lose_no_ground() -> None:
    """Both repair corpora (benchmarks/corpora/main.py and corpus_other.py: 66 documents, 9
    grammars) through the benchmark's scripted API, with repairs alone (the local model is never
    asked: a
    correction ends the run). A floor under how many come out exactly as meant, and a ceiling on
    the edit distance of all: a change that repairs one slip by losing another fails here,
    before the benchmark shows it. Raise them when repairs get better."""
    from benchmarks.bench_repair import ScriptedAPI as CorpusAPI
    from benchmarks.bench_repair import grammar_of, levenshtein, target_prompt
    from benchmarks.corpora.main import CASES
    from benchmarks.corpora.other import OTHER_CASES

    distances = {}
    for case in [*CASES, *OTHER_CASES]:
        result = guide(
            providers.FunctionDrafter(CorpusAPI(case)),
            grammar_of(case),
            prompt=target_prompt(case),
            target=ScriptedTarget(),
            **NO_CORRECTIONS,
        )
        distances[case.name] = levenshtein(result.text, case.clean)
    far = {name: d for name, d in distances.items() if d}
    assert sum(d == 0 for d in distances.values()) >= CORPUS_EXACT, far
    assert sum(distances.values()) <= CORPUS_DISTANCE, far


def test_a_restart_is_the_answer_again_within_a_tenth_of_its_characters() -> None:
    answer = '{\n    "order_id": "12345",\n    "quantity": 0'  # 33 non-blank characters: 3 edits
    restart = Restart.of(answer)
    assert restart is not None and restart.slack == 3
    again = '{"order_id": 12345, "quantity": 0, "total": 1.2}'  # blanks aside, 2 edits
    assert again[restart.end(again) :] == ', "total": 1.2}'
    assert restart.end('{"order_id": 99, "quantity": 1, "total": 1.2}') is None  # 7 edits
    assert restart.end(', "total": 1.2}') is None  # a continuation
    assert Restart.of('{"a": 1, "b"') is None  # too short to tell a repeat from a continuation
    assert Restart.of("x" * (MAX_INK + 1)) is None  # too long to compare


def test_a_rewrite_of_the_answer_goes_on_after_the_answers_last_characters_written_again() -> None:
    # SmolLM2 asked to go on after `"nights":` wrote the answer over, the hotel an object now.
    restart = Restart.of('{\n    "hotel": "Eurek",\n    "nights":')
    assert restart is not None and restart.anchor == 'nights":'  # the fewest that occur once
    reply = '{\n  "hotel": {"name": "Eurek", "description": "A hotel in Paris"},\n  "nights": 1}'
    assert restart.enough(reply)
    assert reply[restart.end(reply) :] == " 1}"
    assert not restart.enough(reply[:60])  # started over: the anchor may come yet
    # Another order's id, 7 edits: no repeat, but a rewrite all the same.
    order = Restart.of('{\n    "order_id": "12345",\n    "quantity": 0')
    assert order is not None
    again = '{"order_id": 99, "quantity": 0, "total": 1.2}'
    assert again[order.end(again) :] == ', "total": 1.2}'
    # A continuation that writes the anchor, not starting as the answer does, goes on as it is.
    assert order.end(', "quantity": 0, "total": 1.2}') is None
    assert order.enough(', "total": 1.2, "notes": "x", "quantity": 0}')
    # One that starts over and, by its end, has not got there has nothing to go on from.
    over = '{"order_id": 12345, "total": 9}'
    assert order.end(over) is None
    assert order.rewrites(over, final=True) and not order.rewrites(over, final=False)
    assert not order.rewrites(', "total": 9}', final=True)  # a continuation


def test_within_is_a_whole_reply_that_repeats_a_start_of_the_answer() -> None:
    restart = Restart.of('{\n    "order_id": "12345",\n    "quantity": 0')
    assert restart is not None
    assert restart.within('{"order_id": 12345, "q')  # 2 edits, blanks aside
    assert not restart.within('{"order_id": 12345, "total": 9}')  # then something else
    assert not restart.within('{"order_id": "1')  # too short to tell
    assert not restart.within('{"order_id": "12345", "quantity": 0, "total": 1.2}')  # more


def test_a_reply_longer_than_the_answer_and_its_slack_is_read_to_its_end() -> None:
    restart = Restart.of('{"order_id": "12345", "quant')
    assert restart is not None
    reply = '{"order_id": "12345", "quantity": 2, "notes": "' + "x" * 200 + '"}'
    assert reply[restart.end(reply) :].startswith('ity": 2')


# -- a quotation in a bare field -------------------------------------------------------------------
# The field is quoted whole as the grammar quotes, its quotes escaped as the grammar escapes them
# (backtrack.repair.fields): the quotes are the API's text, and deleting them, the smaller edit,
# changed what the field says.

# Settings whose values are bare text that takes no quote, or strings whose quotes are escaped
# with a backslash.
BACKSLASHED = Grammar.from_lark(
    r"""
    start: pair ("\n" pair)* "\n"?
    pair: KEY "=" (TEXT | STRING)
    KEY: /[a-z]+/
    TEXT: /[^"\n]+/
    STRING: /"(\\.|[^"\\\n])*"/
    """
)


@pytest.mark.parametrize("chunk", [0, 3], ids=["whole", "streamed"])
@pytest.mark.parametrize(
    ("draft", "clean"),
    [
        (
            'name,quote\nAnn,She said "hi"\nBob,He said "bye"\n',
            'name,quote\nAnn,"She said ""hi"""\nBob,"He said ""bye"""\n',
        ),
        ('a,b\n1,the "best" one,2\n', 'a,b\n1,"the ""best"" one",2\n'),
    ],
    ids=["quote-ends-it", "text-after-it"],
)
def test_a_csv_field_with_quotes_is_quoted_whole(draft: str, clean: str, chunk: int) -> None:
    result = repaired("csv", draft, chunk=chunk)
    assert result.text == clean
    assert (result.valid, result.api_calls, result.corrections) == (True, 1, 0)
    # What the API wrote is all there, field for field.
    fields = list(csv.reader(io.StringIO(result.text)))
    assert fields == [line.split(",") for line in draft.splitlines()]
    assert result.kept == 1.0  # the quotes and escapes added are the edits; the rest is its own


def test_quotes_are_escaped_as_the_grammar_escapes_them() -> None:
    result = repaired(BACKSLASHED, 'name=Ann\nquote=She said "hi" twice\nx=y\n')
    assert result.text == 'name=Ann\nquote="She said \\"hi\\" twice"\nx=y\n'
    assert (result.valid, result.api_calls) == (True, 1)
    assert ("edit", '"') in spans(result) and ("draft", "She said ") in spans(result)


def test_a_field_longer_than_the_reach_loses_its_quote_instead() -> None:
    long = "x" * MAX_FIELD
    result = repaired("csv", f'a\n{long} "y"\n')
    assert result.valid and result.api_calls == 1
    assert long in result.text and '"' not in result.text


@pytest.mark.parametrize(
    ("removed", "insert", "pieces"),
    [
        (
            'say "hi"',
            '"say ""hi"""',
            [
                *[('"', False), ("say ", True), ('"', False), ('"hi', True)],
                *[('"', False), ('"', True), ('"', False)],
            ],
        ),
        ('a"b', '"a\\"b"', [('"', False), ("a", True), ("\\", False), ('"b', True), ('"', False)]),
        ("ab", '"ab"', [('"', False), ("ab", True), ('"', False)]),
        ('a"b', '"a"b"', None),  # an unescaped quote: not the text quoted
        ("ab", "ab", None),
    ],
)
def test_quoted_pieces_tell_the_apis_text_from_the_quotes_added(
    removed: str, insert: str, pieces: list[tuple[str, bool]] | None
) -> None:
    assert quoted_pieces(removed, insert) == pieces
