"""Slips of other notations and what they mean, as text: the synonyms of other languages'
literals, other notations' operators, other dialects' phrases (SQL, JSX), end tags, comments,
quoting (a quoted text, a quoted name, a bare value) and `\\u` escapes, with the measures a repair
is ranked by (edit distance, words changed, character classes). No grammar here:
backtrack.repair.search turns these into candidate edits and checks them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator

from backtrack.repair.conditionals import conditional_forms

QUOTES = "'`\u2018\u2019\u201c\u201d"  # quotes of other kinds than the double quote
WORD = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance (the strings here are a few characters long)."""
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        previous, row[0] = row[0], i
        for j, cb in enumerate(b, 1):
            previous, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, previous + (ca != cb))
    return row[-1]


BRACKETS = {"(": ")", "[": "]", "{": "}"}  # each opener with its closer
CLOSERS = ")]}"


def brackets(text: str, start: int = 0) -> Iterator[tuple[int, str]]:
    """The brackets of `text` from character `start` on, outside double-quoted strings (a `"`
    escaped in one does not end it), each with where it is."""
    quoted = escaped = False
    for at in range(start, len(text)):
        char = text[at]
        if quoted:
            quoted, escaped = char != '"' or escaped, char == "\\" and not escaped
        elif char == '"':
            quoted = True
        elif char in BRACKETS or char in CLOSERS:
            yield at, char


# Characters that look alike, each with those it may stand for: one edit, though a letter or a
# digit inserted on its own is made-up content.
LOOK_ALIKES = {"0": "O", "O": "0", "1": "lI", "l": "1", "I": "1"}
_CLASSES = (CLOSERS, "([{", "\"'`", ",;", " \t\r\n")


def _class(char: str) -> int:
    for i, members in enumerate(_CLASSES):
        if char in members:
            return i
    return len(_CLASSES) + (not char.isalnum())


def unlike_classes(removed: str, inserted: str) -> int:
    """How many characters a substitution puts in another class than the ones it replaces (a
    bracket for a bracket is likelier what the API meant than a blank for a bracket)."""
    if len(removed) != len(inserted):
        return 0
    return sum(_class(a) != _class(b) for a, b in zip(removed, inserted, strict=True))


def common(a: str, b: str) -> int:
    """The length of the longest common subsequence of two short strings."""
    row = [0] * (len(b) + 1)
    for ca in a:
        previous = 0
        for j, cb in enumerate(b, 1):
            previous, row[j] = row[j], previous + 1 if ca == cb else max(row[j], row[j - 1])
    return row[-1]


_WORDS = re.compile(r"\w+")


# Literals of other languages and the JSON/SQL ones they mean: as close as a one-letter slip.
_SYNONYMS = frozenset(
    {("none", "null"), ("nil", "null"), ("undefined", "null"), ("nan", "null"), ("null", '""')}
)
# Literal words, of JSON and of other languages: not a bare string value to quote.
_LITERALS = frozenset({"true", "false", "null"} | {slip for slip, _ in _SYNONYMS})


# Operators of other languages and notations, and what they mean in the common ones: a candidate
# each where the grammar takes the meaning, at no cost (it is what the API meant: `2**10` is
# `2^10` where `^` is the power, not `2*10`).
OPERATORS = {
    "×": ("*",),
    "÷": ("/",),
    "·": ("*",),
    "−": ("-",),
    "≤": ("<=",),
    "≥": (">=",),
    "≠": ("!=", "<>"),
    "**": ("^",),
    "^": ("**",),
    "&&": ("and", "AND"),
    "||": ("or", "OR"),
    "!": ("not ", "NOT "),
    "===": ("==",),
    "!==": ("!=",),
    "; ": ("\n",),  # statements on one line, where a grammar separates them by lines
    ": ": (" = ",),  # a YAML or JSON key's value, where the grammar writes `key = value`
}


def _css(match: re.Match[str]) -> str:
    """A JSX style object (`{{width: '18rem', marginTop: 4}}`) as the CSS text of an HTML style
    attribute (`"width: 18rem; margin-top: 4;"`): names in kebab case, values unquoted."""
    declarations = []
    for entry in match.group(1).split(","):
        name, _, value = entry.partition(":")
        name, value = name.strip().strip("'\""), value.strip().strip("'\"")
        if name:
            kebab = re.sub(r"[A-Z]", lambda m: "-" + m.group().lower(), name)
            declarations.append(f"{kebab}: {value};")
    return '"' + " ".join(declarations) + '"'


Meaning = str | Callable[[re.Match[str]], str]

# Phrases of other dialects that the grammar's notation writes another way, and how (`\\1`: the
# phrase's number or name): SQL that SQLite writes otherwise, JSX attributes where HTML goes.
# A candidate each where the grammar takes it, at no cost: what the API meant.
PHRASES: tuple[tuple[re.Pattern[str], Meaning], ...] = (
    (re.compile(r"SIMILAR\s+TO\b", re.I), "LIKE"),
    (re.compile(r"FETCH\s+(?:FIRST|NEXT)\s+(\d+)\s+ROWS?\s+ONLY\b", re.I), r"LIMIT \1"),
    (re.compile(r"(\w+)::(\w+)"), r"CAST(\1 AS \2)"),
    (re.compile(r"className="), "class="),
    (re.compile(r"htmlFor="), "for="),
    (re.compile(r"\{\{([^{}]*)\}\}"), _css),
)
# Phrases of other dialects that the grammar's notation writes elsewhere, and what it writes
# there: deleted where the API wrote them (a candidate at no cost, as PHRASES are), their
# meaning placed at the first point after which the whole text is complete (backtrack.run.moves).
MOVES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"TOP\s+(\d+)\s+", re.I), r"LIMIT \1"),
)
# Each phrase of another dialect and how the grammar writes it where the API wrote it.
REWRITES: tuple[tuple[re.Pattern[str], Meaning], ...] = (
    *PHRASES,
    *((move, "") for move, _ in MOVES),
)


def spaced(before: str, operator: str, after: str) -> str:
    """`operator`, inserted between `before` and `after`, spaced as the text around spaces its
    binary operators (`2 * (x + 4)` where the draft wrote `2(x + 4) + 1`)."""
    if operator not in _BINARY or before[-1:].isspace() or after[:1].isspace():
        return operator
    around = before[-_STYLE:] + after[:_STYLE]
    return f" {operator} " if _SPACED.search(around) else operator


_BINARY = "+-*/%^"
_SPACED = re.compile(r"[\w)] [-+*/%^] [\w(]")
_STYLE = 32  # characters each side of an insertion that show the text's style


def written(match: re.Match[str], meaning: Meaning) -> str:
    """A phrase of PHRASES (`match`) as the grammar's notation writes it."""
    return match.expand(meaning) if isinstance(meaning, str) else meaning(match)


_OPERATOR_SYNONYMS = frozenset((slip, meant) for slip, all in OPERATORS.items() for meant in all)


def rewritten(text: str) -> str | None:
    """How the grammar's notation writes `text` when it is another dialect's phrase as a whole
    (one of MOVES: nothing, where it stands); None otherwise."""
    for phrase, meaning in REWRITES:
        match = phrase.fullmatch(text)
        if match is not None:
            return written(match, meaning)
    return None


def moved(removed: str, inserted: str) -> str | None:
    """What the grammar writes elsewhere for `removed`, one of MOVES as a whole, deleted (nothing
    `inserted`); None otherwise."""
    matches = [(move.fullmatch(removed), there) for move, there in MOVES] if not inserted else []
    return next((match.expand(there) for match, there in matches if match is not None), None)


CONTEXT = 32  # characters each side of an edit that its scoring reads (changes_words, flips_tag)


def changes_words(before: str, removed: str, inserted: str, after: str) -> bool:
    """Whether replacing `removed` by `inserted` between `before` and `after` changes the text's
    words (beyond letter case): cuts into one (FROM to FRM) or joins two (TOP 5 to TOP5). An API
    writes whole words, so its slip is rarely half of one; a word the grammar offers in place of
    the draft's whole word is a candidate of its own, not counted here."""
    old = _WORDS.findall(before[-CONTEXT:] + removed + after[:CONTEXT])
    new = _WORDS.findall(before[-CONTEXT:] + inserted + after[:CONTEXT])
    return [w.lower() for w in old] != [w.lower() for w in new]


def quote_count(text: str) -> int:
    """How many quotes `text` holds: an edit of characters that deletes or adds an odd number
    right before a word turns the word from a string's text into a name or back (`'zuck'` to the
    name `zuck`), and costs one more (a quoted text or a name requoted as a whole is a candidate
    of its own)."""
    return sum(text.count(q) for q in QUOTES + '"')


def distance(removed: str, inserted: str, *, taken: bool = False) -> int:
    """The edit distance; a known synonym of another language counts as one edit, and so does a
    quoted text in the quotes the grammar takes (or a quoted name bare); a known operator of
    another notation, a phrase of another dialect (SQL, JSX) or another notation's conditional
    (backtrack.repair.conditionals) counts as none. But an operator the grammar `taken` whole,
    with the blank after it, is its own there, not the other notation's (6502's label in
    `loop2: DEX`, not YAML's `key: value`): rewriting it is an edit like any other."""
    if (removed.strip().lower(), inserted.strip().lower()) in _SYNONYMS:
        return 1
    if requoted(removed) == (len(removed), inserted) or quoted_name(removed + ":") == (
        len(removed),
        inserted,
    ):
        return 1
    if rewritten(removed) == inserted or inserted in conditional_forms(removed):
        return 0
    if (removed, inserted) in _OPERATOR_SYNONYMS and not (taken and removed[-1:].isspace()):
        return 0
    return edit_distance(removed, inserted)


# An end tag of HTML or XML: one closing bracket, as `]` is in JSON.
END_TAG = "</"
_END_TAG = re.compile(r"</[A-Za-z][\w:.-]*\s*>")


def is_end_tag(text: str) -> bool:
    """Whether `text` is one whole end tag (`</li>`)."""
    return _END_TAG.fullmatch(text) is not None


def moves_end_tag(removed: str, inserted: str) -> bool:
    """Whether the edit deletes one whole end tag (one written twice), inserts one before the
    text it removed, which is read again after it (one left out), or swaps two (`</li></a>`
    written for `</a></li>`): one edit, as a bracket is."""
    if not removed:
        return False
    if not inserted:
        return is_end_tag(removed)
    if inserted.endswith(removed):
        return is_end_tag(inserted[: -len(removed)])
    tags = _END_TAG.findall(removed)
    return len(tags) == 2 and "".join(tags) == removed and inserted == tags[1] + tags[0]


def flips_tag(before: str, removed: str, inserted: str, after: str) -> bool:
    """Whether replacing `removed` by `inserted` between `before` and `after` turns an end tag
    into a start tag or back (`</li>` to `<li>`): it opens an element the API closed, whose end
    the rest of the draft then lacks (an end tag deleted or inserted whole: moves_end_tag)."""
    old = before[-1:] + removed + after[:1]
    new = before[-1:] + inserted + after[:1]
    return old.count(END_TAG) != new.count(END_TAG)


# Comment openings of common notations, and what closes each (a line comment: the line's end).
COMMENTS = {"//": "\n", "#": "\n", ";": "\n", "--": "\n", "/*": "*/", "<!--": "-->"}


def comment_at(rest: str) -> tuple[int, str, str] | None:
    """When the draft goes on with a comment of a common notation: (its length, its opening, its
    text, not blank). A line comment ends before its line's end, which must have arrived; a block
    comment ends after its closing. None otherwise."""
    for opening, closing in COMMENTS.items():
        if not rest.startswith(opening):
            continue
        end = rest.find(closing, len(opening))
        if end < 0:
            return None
        text = rest[len(opening) : end]
        if not text.strip():
            return None  # `;` at a line's end ends a statement; an empty comment is no slip
        return end + len(closing) if closing != "\n" else end, opening, text
    return None


def remark_at(rest: str) -> int | None:
    """When the draft goes on (after blanks) with a bracketed remark closed on its line (` {a
    developing move}`, ` (approximately)`): its length with the blanks before it. None otherwise:
    no opener, or its closer not on the line (brackets in double quotes do not count)."""
    body = rest.lstrip(" \t")
    if body[:1] not in BRACKETS:
        return None
    open_: list[str] = []
    for end, char in brackets(re.split(r"[\r\n]", body, maxsplit=1)[0]):
        if char in BRACKETS:
            open_.append(BRACKETS[char])
        elif open_.pop() != char:
            return None
        elif not open_:
            return len(rest) - len(body) + end + 1
    return None


def is_comment(text: str, after: str) -> bool:
    """Whether `text` is one whole comment where `after` follows it (a line comment runs to its
    line's end), maybe with the line end after it."""
    comment = comment_at(text + after)
    return comment is not None and comment[0] in (len(text), len(text) - text.endswith("\n"))


def word_at(text: str) -> int:
    """The length of the word `text` starts with (letters, digits after the first, `_`)."""
    n = 0
    while n < len(text) and (text[n] in WORD or (n and text[n].isdigit())):
        n += 1
    return n


def requoted(rest: str) -> tuple[int, str] | None:
    """When the draft opens a quote of another kind, (its quoted text's length, the same text in
    double quotes); None otherwise."""
    if not rest or rest[0] not in QUOTES:
        return None
    for i in range(1, len(rest)):
        if rest[i] in QUOTES:
            inner = rest[1:i]
            if '"' in inner or "\\" in inner or "\n" in inner:
                return None
            return i + 1, f'"{inner}"'
        if rest[i] == "\n":
            return None
    return None


def quoted_name(rest: str) -> tuple[int, str] | None:
    """When the draft goes on with a name in double quotes before a `:` or a `=` (`"lon": 12.43`
    where a GraphQL or YAML key is bare, `"max-line-length" = 160` in INI), (its quoted length,
    the bare name); None otherwise."""
    match = _QUOTED_NAME.match(rest)
    return None if match is None else (match.end(1) + 1, match.group(1))


_QUOTED_NAME = re.compile(r'"([A-Za-z_][\w.-]*)"(?=[ \t]*[:=])')


_ESCAPES = re.compile(r"(?:\\u[0-9a-fA-F]{4})+")


def characters(deleted: str, rest: str) -> list[tuple[str, int | None]]:
    """Where the backed-off text starts `\\uXXXX` escapes that the grammar refuses (a JSON
    schema's strings take them only for control characters), the characters they stand for,
    with the skip past them: the same string."""
    escape = decoded(deleted + rest) if deleted.startswith("\\u") else None
    if escape is None or escape[0] <= len(deleted):
        return []
    return [(escape[1], escape[0] - len(deleted))]


def decoded(text: str) -> tuple[int, str] | None:
    """When `text` starts with `\\uXXXX` escapes (a surrogate pair too), (their length, the
    characters they stand for); None otherwise, or for a lone surrogate."""
    match = _ESCAPES.match(text)
    if match is None:
        return None
    chars = json.loads(f'"{match.group()}"')
    if any(0xD800 <= ord(c) <= 0xDFFF for c in chars):
        return None
    return match.end(), chars


BARE = "_-."  # in a bare word or number, besides letters and digits


def bare_value(rest: str) -> tuple[int, str] | None:
    """When the draft goes on with a bare word or number, (its length, it in double quotes): a
    string the API wrote without quotes (`{name: "Ann"}`, `"age": 31` where a string goes)."""
    n = 0
    while n < len(rest) and (rest[n].isalnum() or rest[n] in BARE):
        n += 1
    after = rest[n:].lstrip(" ")[:1]
    if not n or (after and after not in ",:}]>\n"):
        return None  # a word of prose (a comment's), not a value or a key
    if rest[:n].lower() in _LITERALS:
        return None  # a literal, maybe another language's (`True`, `None`), not a string
    return n, f'"{rest[:n]}"'
