"""A local model opens none of the grammar's comments: a grammar never needs one, and SmolLM2,
completing a proto file its draft had not begun, wrote `//proto3`, `//user`, `//id`, ... (114
tokens the grammar reads nothing of). What comments open with is read off the grammar: its
ignored terminals and those it names comments (grammars.lark.comments)."""

from __future__ import annotations

import pytest

from benchmarks.corpora.unseen import load_unseen_grammar
from grammars.grammar import Grammar
from grammars.lark.comments import comment_openers
from local_target import DecodingPolicy, LocalTarget
from local_target.comments import Comments, refused_openers

PROTO = load_unseen_grammar("protobuf")
SQL = Grammar.load("sqlite")


def test_a_grammars_comments_open_with_what_its_ignored_and_comment_terminals_begin_with() -> None:
    assert comment_openers(PROTO) == ("/*", "//")  # `%ignore /\/\/[^\n]*/`, and the block's
    assert comment_openers(load_unseen_grammar("ini")) == ("#", ";")  # COMMENT: /[#;][^\r\n]*/
    assert comment_openers(SQL) == ("--", "/*")  # _LINE_COMMENT, _BLOCK_COMMENT in a rule
    common = '%import common.SH_COMMENT\n%import common.WS\nstart: "a"+\n%ignore SH_COMMENT\n'
    assert comment_openers(Grammar.from_lark(common + "%ignore WS")) == ("#",)
    assert comment_openers(Grammar.load("json")) == ()  # blanks alone are no comment
    assert comment_openers(Grammar.from_json_schema({"type": "object"})) == ()
    assert comment_openers(Grammar.from_regex("#[a-z]+")) == ()
    # A grammar the lark library cannot read: nothing known, the grammar still usable.
    assert comment_openers(Grammar.from_lark('start: %json {"type": "integer"}')) == ()


def _refused(target: LocalTarget, grammar: Grammar, text: str) -> set[bytes]:
    """The tokens a correction after `text` is refused as comments' openers, as bytes."""
    vocab = target.vocab
    matcher = grammar.matcher(vocab.ll)
    assert matcher.consume_tokens(vocab.encode(text))
    comments = Comments.of(vocab, refused_openers(grammar, DecodingPolicy()), text.encode())
    assert comments is not None
    refused = comments.refused(matcher, b"")
    ids = [] if refused is None else refused.nonzero().flatten().tolist()
    return {vocab.token_bytes[i] for i in ids}


def test_an_opener_is_refused_outside_strings_and_its_start_where_nothing_else_may_follow(
    smollm2: LocalTarget,
) -> None:
    top = _refused(smollm2, PROTO, 'syntax = "proto3";\n')
    assert {b"//", b"/*", b" //", b"////", b"/"} <= top  # `/` opens nothing but a comment there
    assert not {b"message", b"syntax", b"\n"} & top
    assert _refused(smollm2, PROTO, 'syntax = "proto3";\nimport "') == set()  # its text
    after = _refused(smollm2, SQL, "SELECT a /")  # `/` and `*`: a block comment
    assert {b"*", b"**", b"/*"} <= after and not {b"2", b" 2", b"("} & after
    division = _refused(smollm2, SQL, "SELECT a ")
    assert b"--" in division and b"/*" in division and b"/" not in division  # `a / 2`


@pytest.mark.usefixtures("one_torch_thread")
def test_smollm2_completing_a_proto_file_writes_it_not_comments(smollm2: LocalTarget) -> None:
    prompt = "Write a proto3 file for a User message with id, name and email."
    free = DecodingPolicy(comments=True)
    commented = smollm2.correct(prompt, "", PROTO, max_tokens=24, until="complete", policy=free)
    assert commented.text.lstrip().startswith(("/*", "//")), commented.text  # as before
    c = smollm2.correct(prompt, "", PROTO, max_tokens=24, until="complete")
    assert "//" not in c.text and "/*" not in c.text and "syntax" in c.text, c.text
