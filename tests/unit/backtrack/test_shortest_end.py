"""The grammar's own shortest ending, the last resort of a completion that left the text
incomplete (backtrack.run.shortest_end), on real grammars' checkers and in a run."""

from __future__ import annotations

import pytest

import providers
from backtrack import Grammar, guide
from backtrack.run.shortest_end import MAX_CHARS, shortest_end
from benchmarks.corpora.other import load_other_grammar
from benchmarks.corpora.unseen import load_unseen_grammar
from tests.support.scripted import ScriptedAPI, ScriptedTarget


@pytest.mark.parametrize(
    ("grammar", "text", "ending"),
    [
        # Comments go on forever; the file must start with its syntax line: no comment written.
        ("protobuf", "// a file\n// of comments\n", 'syntax="proto3";'),
        # Inside a comment, what ends it first: a line end, a block comment's `*/`.
        ("protobuf", "// a comment", '\nsyntax="proto3";'),
        ("protobuf", "/* open", '*/syntax="proto3";'),
        # A name, then its body: not a comment, nor a blank where none is needed.
        ("protobuf", 'syntax = "proto3";\nmessage ', "_{}"),
        # Closers, where they are what the text lacks; a string closed first.
        ("json", '{"a": [1, {"b": "x', '"}]}'),
        ("python_expr", "x = [1, (2", ")]"),
        # A value where one must come: brackets that close at once, not a string opened; a
        # name, not a bracket left open.
        ("json", '{"a": ', "[]}"),
        ("arithmetic", "2 * (", "_)"),
        ("csv", "a,b\n1,", ""),  # complete already
        # A section's name is free text, as a comment is: its bracket opened all the same, and
        # the line ended after it (before, only blanks were tried there: none found, in 7 s).
        ("ini", "# -*- coding: utf-8 -*-\n#\n;\n", "[)]\n"),
        # A key's `=` opens its value's free text; it is tried after the key's own marks, and a
        # line end completes the text (before, `-` and `.` went on with the key: none found).
        ("ini", "[a]\nimport-asyncio-from-datetime", "=\n"),
        # Prefixes of the repair corpora's documents that the search before this one ended
        # without an ending (in 0.3 to 4.3 s). A keyword the grammar forces once begun, as one
        # move, and tried after a blank where only some letters may follow:
        ("python_expr", "y = x if x > 0 ", "else()"),
        ("sqlite", "SELECT name, CAST(price ", "AS)"),
        ("protobuf", 'syntax = "proto3";\nservice S {\n  rpc Sear', "(_)returns(_){}}"),
        # An end tag the grammar forces after `</`, tried first as it closes.
        ("html", '<div class="mb-3">\n  <label for="examp', '"></label></div>'),
        # Five elements open: the best-first search runs out of texts to check; followed alone,
        # the move preferred at each text is one after which a move closes (`<` before
        # `/span>`, not `&` before an entity's letters; before, `&` and none found).
        (
            "html",
            '<nav>\n  <ul class="pagination">\n    <li class="page-item">\n      <a href="#">\n'
            '        <span aria-hidden="true">&',
            "#XA;</span></a></li></ul></nav>",
        ),
        # A block opened and closed at once.
        ("css", ".ui-helper-hidd", "{}"),
        # Digits that lead to the same place tried once, not 1 to 8 each.
        ("chess", "1. Nf3 d", "1\n1. O-O O-O\n"),
        # A comma GraphQL ignores is no move; a backslash does not end a string.
        ("graphql", "query Fr", " {_}"),
        ("json_keys", '{"name": "Ann",', '"":"","":"","":"","":""}'),
        # A date's digits: the same bytes may follow, but the text is nearer its end.
        ("toml", "best-day-ever = 1987-0", "0-00"),
    ],
)
def test_the_shortest_ending_completes_the_text(grammar: str, text: str, ending: str) -> None:
    loaded = _load(grammar)
    checker = loaded.checker()
    assert checker.feed(text) == len(text)
    assert shortest_end(checker) == ending
    assert checker.text == text  # left where it was
    assert loaded.matches(text + ending)


def _load(grammar: str) -> Grammar:
    if grammar in ("protobuf", "ini", "css", "chess"):
        return load_unseen_grammar(grammar)
    if grammar in ("html", "graphql", "toml"):
        return load_other_grammar(grammar)
    return Grammar.load(grammar, n=5) if grammar == "json_keys" else Grammar.load(grammar)


def test_an_ending_longer_than_the_bound_is_none_and_the_text_stays() -> None:
    text = '{"a": ' + "[" * MAX_CHARS
    checker = Grammar.load("json").checker()
    checker.feed(text)
    assert shortest_end(checker) is None
    assert checker.text == text


def test_a_completion_that_left_the_text_incomplete_gets_the_grammars_ending() -> None:
    """The local model, free to write comments where a name must come, wrote one and stopped
    with the text incomplete; closing brackets cannot end it. Before, the run ended not valid
    (stop `incomplete`); now the grammar's shortest ending follows, as an edit."""
    draft = 'syntax = "proto3";\n\nmessage ' + "@" * 24 + " {\n  string name = 1;\n}\n"
    target = ScriptedTarget("// the name\n")
    result = guide(
        providers.FunctionDrafter(ScriptedAPI(draft)),
        load_unseen_grammar("protobuf"),
        prompt="p",
        target=target,
        max_corrections=0,
    )
    assert [until for _, until in target.calls] == ["complete"]
    assert (result.valid, result.stop_reason) == (True, "target_completed")
    assert result.text == 'syntax = "proto3";\n\nmessage // the name\n_{}'
    assert [(s.origin, s.text) for s in result.trace.spans][-2:] == [
        ("correction", "// the name\n"),
        ("edit", "_{}"),
    ]


def test_an_ending_out_of_reach_is_found_earlier_in_the_targets_own_text() -> None:
    """The local model, completing, opened brackets deeper than an ending of MAX_CHARS closes.
    Before, the run ended not valid (stop `incomplete`); now its last brackets go (shown as
    deleted) back to where the grammar's ending is within reach, and the ending follows. The
    API's text is never taken back."""
    opened = MAX_CHARS + 12
    target = ScriptedTarget("[" * opened)
    result = guide(
        providers.FunctionDrafter(ScriptedAPI('{"a": @')),
        Grammar.load("json"),
        prompt="p",
        target=target,
        max_corrections=0,
        max_repairs=0,
    )
    assert (result.valid, result.stop_reason) == (True, "target_completed")
    kept = result.text.count("[")
    assert opened - 16 <= kept < opened and result.text.count("]") == kept
    assert result.text == '{"a": ' + "[" * kept + "]" * kept + "}"
    assert [(s.origin, s.text) for s in result.trace.spans][-3:] == [
        ("correction", "[" * kept),
        ("deleted", "[" * (opened - kept)),
        ("edit", "]" * kept + "}"),
    ]


def test_an_ending_is_not_sought_in_the_apis_text() -> None:
    """Brackets the API opened are its own: backing off stops where the target's text starts,
    and the run ends incomplete, the API's text kept whole."""
    draft = '{"a": ' + "[" * (MAX_CHARS + 12) + "@"
    result = guide(
        providers.FunctionDrafter(ScriptedAPI(draft)),
        Grammar.load("json"),
        prompt="p",
        target=ScriptedTarget("["),
        max_corrections=0,
        max_repairs=0,
    )
    assert (result.valid, result.stop_reason) == (False, "incomplete")
    assert result.text == draft[:-1] + "["
