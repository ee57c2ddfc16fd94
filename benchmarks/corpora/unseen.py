"""A third repair corpus, from grammars the project neither ships nor has tuned on.

Eight grammars of different kinds, taken from public grammar collections (each .lark file in
benchmarks/corpora/unseen/ names its source, repository and commit, and what was changed in
translation; all compile under llguidance and lark, which read every document and draft alike;
sexp.lark, asm6502.lark and protobuf.lark describe the one odd text each where they differ):

| grammar | kind                     | from                                                    |
|---------|--------------------------|---------------------------------------------------------|
| ini     | configuration file       | lark-parser/lark examples/advanced/conf_earley.py       |
| chess   | line-based format        | ggerganov/llama.cpp grammars/chess.gbnf (GBNF, by hand) |
| turtle  | a DSL (LOGO-like)        | lark-parser/lark examples/turtle_dsl.py                 |
| sexp    | nested data, not JSON    | antlr/grammars-v4 sexpression/sexpression.g4 (by hand)  |
| asm6502 | assembly                 | antlr/grammars-v4 asm/asm6502/asm6502.g4 (by hand)      |
| mdlist  | line-based markdown list | ggerganov/llama.cpp grammars/list.gbnf (GBNF, by hand)  |
| dot     | graph description (DOT)  | antlr/grammars-v4 dot/DOT.g4 (by hand)                  |
| protobuf | schema (proto3)        | antlr/grammars-v4 protobuf/protobuf3/Protobuf3.g4 (by hand) |

The intended documents are files in benchmarks/corpora/unseen/documents/, named
<grammar>-<key>.txt; `DOCUMENTS` gives each one's source (real files from public repositories
where there were some; the others say "written here").

The drafts are made from the documents by a seeded generator of realistic LLM slips (`SLIPS`:
each kind with a one-line example). Every grammar gets the twelve slips of `PLAN`, each on a
document drawn in turn (the next one where a slip does not apply, e.g. no `O-O` to write as
`0-0`); where a slip could hit several places, `random.Random` seeded with SEED and the case's
name picks one. A slip that leaves a valid document is an error, not a case.

The split, into a "look" half and a "held" half (`half_cases()`): within each grammar, the cases
sorted by the CRC-32 of their names; the first six are "look", the other six "held". It depends
on the names alone, and every grammar has six in each half. The rule: failures are looked at on
the look half only (`python -m benchmarks.bench_repair --corpus unseen`); the held half
(`--corpus unseen-held`) is run and reported as it comes out, every run, and never tuned on: no
change to the repair code, the grammars or the slips is made because of what it shows.

A data module: the tables LANGUAGES and DOCUMENTS make up most of its length.
"""

from __future__ import annotations

import itertools
import random
import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from benchmarks.corpora.main import Case
from benchmarks.corpora.other import dialect_all, dialect_one, fenced, missing, stray
from grammars.errors import GrammarError, TextError
from grammars.grammar import Grammar

GRAMMAR_DIR = Path(__file__).parent / "unseen"
DOCUMENT_DIR = GRAMMAR_DIR / "documents"
SEED = 23
HALVES = ("look", "held")


@dataclass(frozen=True)
class Dialect:
    """One place (or every place, `everywhere`) written as a neighbouring notation writes it."""

    name: str
    pattern: str
    replacement: str | Callable[[re.Match[str]], str]
    words: str
    everywhere: bool = False


@dataclass(frozen=True)
class Language:
    grammar: str  # benchmarks/corpora/unseen/<grammar>.lark
    kind: str  # what a document is called in prompts and prose ("INI file")
    fence: str  # the tag of a markdown fence around it
    delimiter: str  # a delimiter that the "unbalanced" slip leaves out (a pattern)
    comment_at: str  # where a comment in another notation is appended (a pattern)
    comment: str  # that comment
    dialects: tuple[Dialect, ...]


def _line_number(found: re.Match[str]) -> str:
    """`1. `, `2. `, ... for the bullet at the start of each line."""
    return f"{found.string.count(chr(10), 0, found.start()) + 1}. "


LANGUAGES = {
    lang.grammar: lang
    for lang in (
        Language(
            "ini",
            "INI file",
            "ini",
            r"\](?=\n)",
            r"^\[[^\]\n]*\]",
            "  // environments",
            (
                Dialect("colon", r"^([A-Za-z0-9_][\w.\-]*) ?= ?", r"\1: ", "`key: value` (YAML)"),
                Dialect("double-brackets", r"^\[([^\]\n]+)\]$", r"[[\1]]", "TOML's `[[table]]`"),
                Dialect("quoted-key", r"^([A-Za-z_][\w.\-]*)(?= ?=)", r'"\1"', 'a "quoted" key'),
            ),
        ),
        Language(
            "chess",
            "list of chess moves",
            "pgn",
            r"\.(?= )",
            r"^\d+\. \S+ \S+",
            " {a developing move}",
            (
                Dialect("compact", r"^(\d+)\. ", r"\1.", "PGN's `2.Nf3`", everywhere=True),
                Dialect("zero-castling", r"O-O", "0-0", "castling as `0-0`"),
                Dialect("one-line", r"\n(?=\d)", " ", "PGN's one-line movetext", everywhere=True),
                Dialect("result", r"\n\Z", "\n1-0\n", "PGN's result token `1-0` at the end"),
            ),
        ),
        Language(
            "turtle",
            "turtle program",
            "logo",
            r"\}",
            r"[0-9](?=\n)",
            "  // next side",
            (
                Dialect("logo-forward", r"\bf(\d+)", r"fd \1", "Logo's `fd 100` for `f100`"),
                Dialect("logo-brackets", r"\{([^{}]*)\}", r"[\1]", "Logo's `repeat 4 [...]`"),
                Dialect("pencolor", r"^c ", "setpencolor ", "Logo's `setpencolor red`"),
                Dialect("semicolon", r"([0-9])$", r"\1;", "a statement ended with `;`"),
            ),
        ),
        Language(
            "sexp",
            "S-expression",
            "lisp",
            r"\)",
            r"\)$",
            "  ; done",
            (
                Dialect("square-brackets", r"\(([^()]*)\)", r"[\1]", "a Clojure vector `[a b]`"),
                Dialect("commas", r"(?<=[\w\"]) (?=[\w\"(])", ", ", "items separated by `, `"),
                Dialect("quote", r"\((?=[a-z])", "'(", "a quoted list `'(a b)`"),
                Dialect(
                    "single-quotes", r'"([^"\\\n]*)"', r"'\1'", "'single' quotes", everywhere=True
                ),
            ),
        ),
        Language(
            "asm6502",
            "6502 assembly program",
            "asm",
            r"\)(?=,)",
            r"^[^;\n]*\w(?=\n)",
            "  // next",
            (
                Dialect("hex-0x", r"\$([0-9A-Fa-f]{2})\b", r"0x\1", "C's `0xFF` for `$FF`"),
                Dialect(
                    "colon-label",
                    r"^(\s*)([a-zA-Z]\w*)(\s+)(?=[A-Z]{3}\b)",
                    r"\1\2:\3",
                    "a label with a colon, `loop1: LDX` (ca65)",
                ),
                Dialect("brackets", r"\((\$\w+)\)", r"[\1]", "indirect addressing as `[$30],Y`"),
            ),
        ),
        Language(
            "mdlist",
            "markdown list",
            "markdown",
            r"(?<=^-) ",
            r"\n(?=- )",
            "<!-- more items below -->\n",
            (
                Dialect("asterisks", r"^- ", "* ", "`* ` bullets", everywhere=True),
                Dialect("numbered", r"^- ", _line_number, "a numbered list `1. `", everywhere=True),
                Dialect("blank-line", r"\n(?=- )", "\n\n", "a blank line between items"),
                Dialect("nested", r"^- ", "  - ", "an item indented as a sub-item"),
            ),
        ),
        Language(
            "dot",
            "Graphviz DOT graph",
            "dot",
            r"\](?=;)",
            r";(?=\n)",
            "  # the main path",
            (
                Dialect("colon", r"\b(label|color|shape) ?= ?", r"\1: ", "`key: value` (YAML)"),
                Dialect("mermaid-arrow", r"->", "-->", "Mermaid's arrow `a --> b`"),
                Dialect("single-quotes", r'"([^"\\\n]*)"', r"'\1'", "'single' quotes"),
                Dialect("bare-label", r'(label ?= ?)"([^"\n]*)"', r"\1\2", "a label unquoted"),
            ),
        ),
        Language(
            "protobuf",
            "Protocol Buffers (proto3) file",
            "protobuf",
            r";(?=\n)",
            r";(?=\n)",
            "  # the user's id",
            (
                Dialect(
                    "required",
                    r"^( +)((?:string|int32|int64|bool|double|bytes) \w+ = \d+;)",
                    r"\1required \2",
                    "proto2's `required` label on a field",
                ),
                Dialect(
                    "comma-enum",
                    r"^( +[A-Z][A-Z0-9_]* = -?\d+);",
                    r"\1,",
                    "an enum's constants ended with `,` (C, TypeScript)",
                    everywhere=True,
                ),
                Dialect(
                    "comma-field", r"(\w+ = \d+);(?=\n)", r"\1,", "a field ended with `,` (JSON)"
                ),
                Dialect(
                    "proto2",
                    r'"proto3"',
                    '"proto2"',
                    'the `syntax = "proto2"` of the older version',
                ),
            ),
        ),
        Language(
            "css",
            "CSS style sheet",
            "css",
            r";(?=\n)",
            r";(?=\n)",
            "  // fallback",
            (
                Dialect("brace-semicolon", r"\}(?=\n)", "};", "a block closed with `};` (C, JS)"),
                Dialect(
                    "css-in-js",
                    r"^([ \t]+[a-z-]+): ([^;\n]+);$",
                    r'\1: "\2",',
                    'a declaration as CSS-in-JS writes it, `display: "none",`',
                ),
                Dialect(
                    "selector-comma",
                    r"(?<=[\w\])])(?= ?\{)",
                    ",",
                    "a selector list ended with `,` before its block",
                ),
            ),
        ),
    )
}
GRAMMARS = tuple(LANGUAGES)
KINDS = {name: lang.kind for name, lang in LANGUAGES.items()}


@cache
def load_unseen_grammar(name: str) -> Grammar:
    """The grammar benchmarks/corpora/unseen/<name>.lark."""
    if name not in LANGUAGES:
        raise ValueError(f"no grammar {name!r} in this corpus (known: {', '.join(GRAMMARS)})")
    return Grammar.from_file(GRAMMAR_DIR / f"{name}.lark")


# -- documents ------------------------------------------------------------------------------------

_LARK = "lark-parser/lark"
_GV4 = "antlr/grammars-v4"
_PYCHESS_TOX = "niklasf/python-chess @ 037252ea106aba05f665090eff93f6934a4da47e, tox.ini"
_README = f"{_LARK} @ 0397c926e3c599d939b17e26f8de9f3afd343df3, README.md"
_DEEP_BLUE = (
    "niklasf/python-chess @ a7423c6c8d1803d5b08a92c46bff6644a8c622be, "
    "fuzz/corpus/pgn/kasparov-deep-blue-1997.pgn"
)
_PGN_NOTE = "the moves rewritten one pair a line (`1.Nf3 d5` as `1. Nf3 d5`)"
_WRITTEN = "written here"
_GV4_DOT = f"{_GV4} @ aca577d9e30e591eacbc414f1280f22645412af4, dot/examples"
_GV4_PB = f"{_GV4} @ aca577d9e30e591eacbc414f1280f22645412af4, protobuf/protobuf3/examples"
_GV4_CSS = f"{_GV4} @ aca577d9e30e591eacbc414f1280f22645412af4, css3/examples"


@dataclass(frozen=True)
class Document:
    grammar: str
    key: str  # the file documents/<grammar>-<key>.txt
    prompt: str
    source: str  # where the text comes from, and what was changed

    @property
    def text(self) -> str:
        return _read(f"{self.grammar}-{self.key}")


@cache
def _read(stem: str) -> str:
    return (DOCUMENT_DIR / f"{stem}.txt").read_text(encoding="utf-8")


DOCUMENTS = (
    Document(
        "ini",
        "lark-tox",
        "The tox.ini of the lark parser: envs py27 to pypy3 (skip missing interpreters), a "
        "[travis] map from Python versions to envs, and a testenv that whitelists git, installs "
        "nearley-requirements.txt, always recreates, and syncs submodules before python -m tests.",
        f"{_LARK} @ 029c5d719e23830449c2862f5391622787282a01, tox.ini",
    ),
    Document(
        "ini",
        "chess-tox",
        "A tox.ini for python-chess: envs py35 to pypy3; a testenv passing LD_LIBRARY_PATH, "
        "allowing stockfish and crafty, running test.py and the README doctests; a [flake8] "
        "section ignoring E126 E131 E241 E302 E305 E741 W504 (with reasons) and lines of 160.",
        _PYCHESS_TOX,
    ),
    Document(
        "chess",
        "deep-blue-1",
        "The first 12 moves of Kasparov vs Deep Blue, 1997 game 1 (1. Nf3 d5), one move pair a "
        "line.",
        f"{_DEEP_BLUE}, game 1, first 12 move pairs; {_PGN_NOTE}",
    ),
    Document(
        "chess",
        "deep-blue-2",
        "The first 14 moves of Deep Blue vs Kasparov, 1997 game 2 (a Ruy Lopez), one move pair "
        "a line.",
        f"{_DEEP_BLUE}, game 2, first 14 move pairs; {_PGN_NOTE}",
    ),
    Document(
        "chess",
        "deep-blue-6",
        "The first 18 moves of Deep Blue vs Kasparov, 1997 game 6 (a Caro-Kann with Nxe6), one "
        "move pair a line.",
        f"{_DEEP_BLUE}, game 6, first 18 move pairs (its 19th has White's move only); {_PGN_NOTE}",
    ),
    Document(
        "turtle",
        "star",
        "A turtle program: colours red and yellow, then a filled star: 36 times forward 200, "
        "left 170.",
        f"{_LARK} @ 50be6a0a4abf8c38bd189a28404a1418373f6b1d, examples/turtle_dsl.py, the text "
        "of test(), dedented",
    ),
    Document("turtle", "square", "A turtle program: in blue, a square of side 100.", _WRITTEN),
    Document(
        "turtle",
        "filled-star",
        "A turtle program: green and yellow, a filled five-pointed star of side 150 (turn 144), "
        "then back 50, left 90, forward 30.",
        _WRITTEN,
    ),
    Document(
        "turtle",
        "rosette",
        "A turtle program: in black, 12 squares of side 60, turning 30 degrees after each.",
        _WRITTEN,
    ),
    Document(
        "sexp",
        "pairs",
        "An S-expression: two pairs, milk and juice, honey and marmalade.",
        f"{_GV4} @ 5692486b0142dadc0d90670118d81389ef96efe0, sexpression/examples/example2.txt",
    ),
    Document(
        "sexp",
        "kicad",
        "A KiCad symbol library (version 20211014) with one resistor symbol R: hidden pin "
        "numbers, Reference and Value properties, one passive pin 1 at (0 3.81 270).",
        f"{_WRITTEN}, in KiCad 6's .kicad_sym layout",
    ),
    Document(
        "sexp",
        "scheme",
        "Scheme: a recursive factorial fact, and square-all that squares every element of a "
        "list with map and lambda.",
        _WRITTEN,
    ),
    Document(
        "sexp",
        "alist",
        "An association list for Ada Lovelace: name, born 1815 (dotted pairs), and her fields "
        "mathematics and computing.",
        _WRITTEN,
    ),
    Document(
        "asm6502",
        "countdown",
        "6502 assembly: a delay loop, Y and X counted down from $FF in two nested loops, then "
        "RTS, with comments.",
        f"{_GV4} @ 25c982ae33c8fea7fa30740a47f75af03269c4a6, asm/asm6502/examples/countdown.txt,"
        " the blanks after its last line dropped",
    ),
    Document(
        "asm6502",
        "sqrt",
        "6502 assembly: the start of a 16-bit square root (Example 5-14): set up the first odd "
        "number in $22/$23, then subtract it from the number in $20/$21.",
        f"{_GV4} @ 9209542d46ed9192ec1671c502265fb2da5c41d9, asm/asm6502/examples/sqrt.txt, "
        "its first 15 lines",
    ),
    Document(
        "asm6502",
        "bubblesort",
        "6502 assembly: the start of an 8-bit bubble sort over a list addressed by $30/$31: "
        "clear the exchange flag, fetch the count, compare neighbours and exchange them.",
        f"{_GV4} @ fe2dddcd8a945d84814caef77361e1f06c35e37e, asm/asm6502/examples/bubblesort.txt,"
        " lines 6-19 (the code, after its header comment)",
    ),
    Document(
        "mdlist",
        "links",
        "A markdown list of the lark parser's quick links: documentation, cheatsheet, online "
        "IDE, tutorial, a blog post on writing a DSL, and the Gitter chat.",
        f"{_README}, section Quick links",
    ),
    Document(
        "mdlist",
        "features",
        "A markdown list of what the lark parser can do: all context-free grammars, automatic "
        "parse trees, performance, pure Python, stand-alone LALR(1) parsers.",
        f"{_README}, section What can it do? (the list's one-space indent dropped)",
    ),
    Document(
        "mdlist",
        "editors",
        "A markdown list of lark's syntax highlighting plugins with links: Sublime Text & "
        "TextMate, vscode, Intellij & PyCharm, Vim, Atom.",
        f"{_README}, section Syntax Highlighting",
    ),
    Document(
        "mdlist",
        "projects",
        "A markdown list of five projects using lark (Poetry, tartiflette, PyQuil, Preql, "
        "Hypothesis), each with its link and a short description.",
        f"{_README}, section Projects using Lark, its first five (the one-space indent dropped)",
    ),
    Document(
        "dot",
        "cluster",
        "A DOT digraph G: two filled clusters, process #1 (a0 to a3, light grey, white nodes) "
        "and process #2 (b0 to b3, blue), edges from start to both and on to end, with start a "
        "Mdiamond and end a Msquare.",
        f"{_GV4_DOT}/cluster.dot",
    ),
    Document(
        "dot",
        "dg",
        "A DOT digraph g of plaintext nodes: A1 A2 A3 over B1 B2 B3, A1 to A2 labelled f, A2 to A3 "
        "g, B2 to B3 g', B1 to B3 (g o f)' through the south ports, each row ranked the same.",
        f"{_GV4_DOT}/dg.dot",
    ),
    Document(
        "dot",
        "java-guard",
        "The DOT graph of the ATN of Java's guard rule, left to right: states 218, 1680, 1681, "
        "1682 and the accepting 219; 'when' then <expression[0]> between epsilon edges.",
        f"{_GV4_DOT}/java/JavaParser.guard.dot",
    ),
    Document(
        "dot",
        "unix",
        "The start of a DOT digraph unix (Object Oriented Graphs, Stephen North, 3/19/93): graph "
        "and node defaults, the 5th and 6th Edition, PWB 1.0 and LSX as polygons, and the 5th "
        "Edition's two edges.",
        f"{_GV4_DOT}/crazy.dot, its first 17 lines, its lines 55-56 (the two edges among "
        "those nodes) and a closing brace",
    ),
    Document(
        "protobuf",
        "addressbook",
        "A proto3 file for package tutorial: Java and C# options, a Person message (name, id, "
        "email, a PhoneType enum of MOBILE, HOME and WORK, a nested PhoneNumber message, repeated "
        "phones) and an AddressBook of repeated people.",
        f"{_GV4_PB}/addressbook.proto, its lines 10-47 (from the syntax statement on)",
    ),
    Document(
        "protobuf",
        "example",
        "A proto3 file showing the language: a public import, an enum allowing aliases with a "
        "value option, a message with a nested message, a map and an optional field, reserved "
        "numbers and names, and a SearchService with one rpc.",
        f"{_GV4_PB}/example.proto",
    ),
    Document(
        "protobuf",
        "helloworld",
        "The gRPC hello world proto3 file: package helloworld, a Greeter service with a SayHello "
        "rpc, and the HelloRequest and HelloReply messages, each with one string field.",
        f"{_GV4_PB}/helloworld.proto, with a line end after its last line",
    ),
    Document(
        "protobuf",
        "struct",
        "The start of google/protobuf/struct.proto: its options, a Struct message holding a map "
        "of Values, and a Value message whose kind is a oneof of null, number, string, bool, "
        "struct and list values.",
        f"{_GV4_PB}/google/protobuf/struct.proto, its lines 31-78 (syntax to the end of Value)",
    ),
    Document(
        "css",
        "jquery-layout",
        "The layout helpers of jQuery UI's CSS: hidden, hidden-accessible (clipped to one pixel), "
        "reset, clearfix (:before and :after as tables), zfix (IE8's Alpha filter) and ui-front "
        "at z-index 100.",
        f"{_GV4_CSS}/jquery-ui.css, its lines 7-53 (the Layout helpers section)",
    ),
    Document(
        "css",
        "bootstrap-buttons",
        "Bootstrap 3.3.7's theme for the six button kinds (default to danger): a text shadow and "
        "an inset box shadow, with -webkit- prefixes, and a deeper inset shadow when active.",
        f"{_GV4_CSS}/bootstrap-theme.css, its lines 6-30 (its first two rules)",
    ),
    Document(
        "css",
        "media",
        "CSS media queries on body: 10pt in print, 13px on screen, line height 1.2 on both, and "
        "1.4 on small retina phones (320-480px device width, pixel ratio 2).",
        f"{_GV4_CSS}/mdn-at-media.css",
    ),
    Document(
        "css",
        "keyframes",
        "CSS @keyframes examples: two named identifier (top and left by percentage), and two "
        "showing that !important declarations in a keyframe are ignored.",
        f"{_GV4_CSS}/mdn-at-keyframes.css",
    ),
)


# -- slips ----------------------------------------------------------------------------------------
# A slip kind turns (document text, its language, its prompt, a seed key) into a draft; it raises
# ValueError where it does not apply. The example after each is what it does to one line.

_INTROS = (
    "Sure! Here is the {kind}:\n\n",
    "Here's the {kind} you asked for.\n\n",
    "Certainly. Below is the {kind}.\n\n",
)
_OUTROS = (
    "\nLet me know if you'd like any changes!\n",
    "\nThis {kind} does exactly what you asked; I've kept it short.\n",
    "\nNote: adjust the values to your own setup.\n",
)

Slip = Callable[[str, Language, str, str], str]


def prose_after(text: str, lang: Language, prompt: str, key: str) -> str:
    """A stray prose line after the document: `b50 l90 f30\\nLet me know if ...`."""
    return text + random.Random(key).choice(_OUTROS).format(kind=lang.kind)


def prose_before(text: str, lang: Language, prompt: str, key: str) -> str:
    """A prose line before it: `Sure! Here is the INI file:\\n\\n[tox]`."""
    return random.Random(key).choice(_INTROS).format(kind=lang.kind) + text


def fence(text: str, lang: Language, prompt: str, key: str) -> str:
    """A markdown fence around it: ```` ```ini\\n[tox]\\n...\\n``` ````."""
    return fenced(text, lang.fence)


def echo(text: str, lang: Language, prompt: str, key: str) -> str:
    """The instruction echoed before the answer: `A turtle program: in blue, ...\\n\\nc blue`."""
    return f"{prompt}\n\n{text}"


def truncated(text: str, lang: Language, prompt: str, key: str) -> str:
    """The reply ends early, mid-line: `12. Nf1 Bd7\\n13. N`. The cut is drawn among those in the
    middle 40-85% of the text that leave an incomplete document."""
    complete = load_unseen_grammar(lang.grammar).matches
    cuts = [c for c in range(len(text) * 2 // 5, len(text) * 17 // 20) if not complete(text[:c])]
    if not cuts:
        raise ValueError("every cut leaves a complete document")
    return text[: random.Random(key).choice(cuts)]


def unbalanced(text: str, lang: Language, prompt: str, key: str) -> str:
    """A delimiter left out: `(at 0 0 90` for `(at 0 0 90)`, `[testenv` for `[testenv]`."""
    return missing(text, lang.delimiter, key)


def comment(text: str, lang: Language, prompt: str, key: str) -> str:
    """A comment in a notation the grammar lacks: `2. Nf3 d6 {a developing move}`."""
    return stray(text, lang.comment_at, lang.comment, key)


def dialect(text: str, lang: Language, prompt: str, key: str, which: Dialect) -> str:
    """A neighbouring dialect's notation, one place or all: `fd 100` for `f100`."""
    if which.everywhere:
        found = dialect_all(text, which.pattern, which.replacement)
        if found == text:
            raise ValueError(f"no {which.pattern!r} in the document")
        return found
    if callable(which.replacement):
        raise TypeError("a replacement function is for `everywhere` dialects")
    return dialect_one(text, which.pattern, which.replacement, key)


SLIPS: dict[str, tuple[Slip, str]] = {
    "prose-after": (prose_after, "a stray prose line after the document"),
    "prose-before": (prose_before, "a prose line before the document"),
    "fenced": (fence, "a markdown fence around the document"),
    "prose-echo": (echo, "the instruction echoed before the document"),
    "truncated": (truncated, "truncated output"),
    "unbalanced": (unbalanced, "a delimiter left out"),
    "comment": (comment, "a comment in another notation"),
}
# Twelve slips a grammar; "dialect" takes the grammar's dialects in turn, "+" adds a second slip.
PLAN = (
    "prose-after",
    "prose-before",
    "fenced",
    "prose-echo",
    "truncated",
    "unbalanced",
    "comment",
    "dialect",
    "dialect",
    "dialect",
    "truncated",
    "dialect+prose-after",
)


def _draft(doc: Document, lang: Language, kinds: list[str], which: Dialect, name: str) -> str:
    text = doc.text
    for kind in kinds:
        key = f"{SEED}:{name}:{kind}"
        if kind == "dialect":
            text = dialect(text, lang, doc.prompt, key, which)
        else:
            text = SLIPS[kind][0](text, lang, doc.prompt, key)
    if load_unseen_grammar(lang.grammar).matches(text):
        raise ValueError(f"{name}: the draft is still valid")
    return text


def _describe(kinds: list[str], which: Dialect) -> str:
    return ", ".join(which.words if kind == "dialect" else SLIPS[kind][1] for kind in kinds)


def _cases_of(lang: Language) -> list[Case]:
    docs = [d for d in DOCUMENTS if d.grammar == lang.grammar]
    cases: list[Case] = []
    names: set[str] = set()
    dialects = itertools.cycle(lang.dialects)
    for i, step in enumerate(PLAN):
        kinds = step.split("+")
        which = next(dialects) if "dialect" in kinds else lang.dialects[0]
        label = step.replace("dialect", f"dialect-{which.name}").replace("+", "-")
        for doc in docs[i % len(docs) :] + docs[: i % len(docs)]:
            name = f"{lang.grammar}-{label}-{doc.key}"
            if name in names:
                continue
            try:
                draft = _draft(doc, lang, kinds, which, name)
            except ValueError:
                continue
            names.add(name)
            cases.append(
                Case(name, lang.grammar, doc.prompt, doc.text, draft, _describe(kinds, which))
            )
            break
        else:
            raise ValueError(f"{lang.grammar}: no document takes the slip {label}")
    return cases


@cache
def unseen_cases() -> tuple[Case, ...]:
    """Every case, grammar by grammar, in PLAN's order."""
    return tuple(case for lang in LANGUAGES.values() for case in _cases_of(lang))


def _by_hash(case: Case) -> int:
    return zlib.crc32(case.name.encode("utf-8"))


@cache
def half_cases(which: str) -> tuple[Case, ...]:
    """The cases of one half, "look" or "held" (see the module docstring)."""
    if which not in HALVES:
        raise ValueError(f"no half {which!r} (known: {', '.join(HALVES)})")
    picked: set[str] = set()
    for grammar in GRAMMARS:
        ranked = sorted((c for c in unseen_cases() if c.grammar == grammar), key=_by_hash)
        cut = len(ranked) // 2
        picked.update(c.name for c in (ranked[:cut] if which == "look" else ranked[cut:]))
    return tuple(case for case in unseen_cases() if case.name in picked)


def check_unseen_corpus() -> list[str]:
    """Problems with this corpus: an intended document that llguidance or lark refuses, a draft
    that llguidance accepts or that is the document itself, a duplicate name. Empty when all is
    well."""
    problems = []
    seen: set[str] = set()
    for case in unseen_cases():
        if case.name in seen:
            problems.append(f"{case.name}: duplicate name")
        seen.add(case.name)
        grammar = load_unseen_grammar(case.grammar)
        try:
            grammar.parse(case.clean)  # the lark library
        except (TextError, GrammarError) as exc:
            problems.append(f"{case.name}: lark refuses the document: {exc}")
        if not grammar.matches(case.clean):
            problems.append(f"{case.name}: llguidance refuses the document")
        if grammar.matches(case.corrupted) or case.corrupted == case.clean:
            problems.append(f"{case.name}: the draft is valid")
    return problems


if __name__ == "__main__":
    found = check_unseen_corpus()
    counts = {h: len(half_cases(h)) for h in HALVES}
    print("\n".join(found) or f"{len(unseen_cases())} cases, halves {counts}, all sound")
