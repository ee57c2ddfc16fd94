"""JSON's notations in a draft: a member the grammar has no place for, a value wrapped in an
object or an array, a key renamed (or named by more or fewer words), a number quoted
(backtrack.repair.candidates makes edits of them)."""

from __future__ import annotations

import json
import re

from backtrack.repair.notations import edit_distance

_MEMBER_NAME = re.compile(r'\s*"(?:[^"\\\n]|\\.)*"\s*:\s*')
_DECODER = json.JSONDecoder()


def json_member(text: str) -> int | None:
    """When `text` starts with one whole JSON object member and its comma, either way round
    (`, "pages": 412` or `"pages": 412, `, blanks after it too), its length: a member the grammar
    has no place for (a key the schema does not have), deleted whole. None otherwise."""
    leading = text.lstrip().startswith(",")
    at = text.index(",") + 1 if leading else 0
    name = _MEMBER_NAME.match(text, at)
    if name is None:
        return None
    try:
        _, end = _DECODER.raw_decode(text, name.end())
    except ValueError:
        return None
    if leading:
        return end
    after = text[end:].lstrip()
    if not after.startswith(","):
        return None
    return len(text) - len(after[1:].lstrip(" "))  # the comma and the blanks after it


_WRAPPED = 3  # values of a wrapping object or array that a repair may read in its place


def wrapped_values(rest: str) -> list[int]:
    """When the draft goes on with an object or an array where the grammar wants another value
    (`{"amount": 19.99, "currency": "EUR"}` for a price, `["Dune"]` for a title), how much of it
    to skip to read each of its first values in its place: the opening, the members before that
    value, and its name; where that value is itself wrapped (`{"data": [{"name": ...}]}`), its
    own first value next. The wrapper's end is then a slip of its own."""
    if rest[:1] not in ("{", "["):
        return []
    found: list[int] = []
    at = 1
    while len(found) < _WRAPPED:
        name = _MEMBER_NAME.match(rest, at) if rest[0] == "{" else None
        start = name.end() if name is not None else _past_blanks(rest, at)
        if (rest[0] == "{" and name is None) or start == len(rest):
            break
        found.append(start)
        found += [start + inner for inner in wrapped_values(rest[start:])[:1]]
        try:
            _, end = _DECODER.raw_decode(rest, start)
        except ValueError:
            break
        at = _past_blanks(rest, end) + 1
        if not rest.startswith(",", at - 1):
            break
    return found


def unwrapped_whole(rest: str) -> list[tuple[str, int, int]]:
    """When the draft goes on with a whole object or array (complete in `rest`) where the grammar
    wants a plain value, each of its first plain values (a string, a number, a literal: as
    `wrapped_values` finds them) to put in place of all of it: (the value's text, the wrapper's
    length, the cost). For an array's item (`[{"name": "Dune", "year": 1965}]` for a list of
    titles), whose wrapper's other members have no object around to be read into."""
    end = wrapper_end(rest)
    if end is None:
        return []
    found = []
    for index, start in enumerate(wrapped_values(rest)):
        try:
            value, stop = _DECODER.raw_decode(rest, start)
        except ValueError:
            continue
        if not isinstance(value, (dict, list)):
            found.append((rest[start:stop], end, 1 + index))
    return found


def wrapper_end(rest: str) -> int | None:
    """The length of the whole JSON object or array the draft goes on with; None where it does
    not start with one, or where it has not ended in `rest`."""
    if rest[:1] not in ("{", "["):
        return None
    try:
        return _DECODER.raw_decode(rest)[1]
    except ValueError:
        return None


def _past_blanks(text: str, at: int) -> int:
    return len(text) - len(text[at:].lstrip())


_KEY_AFTER = re.compile(r'([\w-]*)"\s*:')  # a key's end, after a word's: its rest, quote and colon


def renames_key(before: str, removed: str, inserted: str, after: str) -> bool:
    """Whether a word put in place of the draft's between `before` and `after` renames a JSON
    object's key to one unlike it (`genre` to `venue`, not `adress` to `address`): the value
    the API gave one field would go to another, so the new key counts as written, not edited."""
    end = _KEY_AFTER.match(after)
    if not (before.endswith('"') and end and not end.group(1)):
        return False
    return edit_distance(removed.lower(), inserted.lower()) * 3 > max(len(removed), len(inserted))


_KEY_BEFORE = re.compile(r'[{,]\s*"([\w-]*)$')
_WORD_PART = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")


def renames_by_words(before: str, removed: str, inserted: str, after: str) -> bool:
    """Whether an edit between `before` and `after` makes a JSON object's key one whose words
    are some of the other's (`cuisine_type` or `cuisineType` to `cuisine`, `zip` to
    `zip_code`): the same field named more or less fully, its value the same."""
    start, end = _KEY_BEFORE.search(before), _KEY_AFTER.match(after)
    if start is None or end is None:
        return False
    old = _words(start.group(1) + removed + end.group(1))
    new = _words(start.group(1) + inserted + end.group(1))
    return bool(old and new) and old != new and (old < new or new < old)


def _words(key: str) -> frozenset[str]:
    return frozenset(w.lower() for w in _WORD_PART.findall(key))


_QUOTED_VALUE = re.compile(r'"(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|true|false|null|yes|no)"', re.I)
_ANSWERS = {"yes": "true", "no": "false"}


def unquoted(rest: str) -> tuple[int, str] | None:
    """When the draft goes on with a number or a literal in double quotes (`"age": "31"`,
    `"true"`, or `"yes"` and `"no"` for `true` and `false`), (its quoted length, it bare): a
    value the API quoted where no string goes."""
    match = _QUOTED_VALUE.match(rest)
    if match is None:
        return None
    value = match.group(1)
    return match.end(), _ANSWERS.get(value.lower(), value.lower() if value.isalpha() else value)


def null_text(rest: str) -> int | None:
    """When the draft goes on with the word `null`, its length: where only a string goes, the
    empty string is the nothing the API meant (`"city": null` for a required string)."""
    return 4 if rest.startswith("null") and not rest[4:5].isalnum() else None
