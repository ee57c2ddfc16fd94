"""An answer sent as a JSON string: an API in the habit of JSON replies wraps the answer in an
object, `{"query": "{\\n  user(id: 4) {\\n    id\\n  }\\n}"}` for a GraphQL query, `{"sql":
"SELECT ..."}` for SQL. Read as it came, the envelope's quotes and escapes are slips on every line.

`JsonEnvelope` reads the start of a first draft (after a reasoning block): while the reply, after
blanks, may still be opening an object's first member with a string value (`{"name": "`) that the
grammar refuses as its own text, it holds the text back (a JSON grammar, or a schema, that takes
the opening reads the reply as it is, at once). Once it has, the envelope is taken where the
grammar takes the string's first characters, decoded (`PROBE` of them, or all of a shorter one,
not none). From there it hands on the string's content decoded (`\\n` a line end, `\\"` a
quote; an escape split between chunks is held until whole), and at the string's closing quote,
what follows (`"}`) is the envelope's end (`end`): the reply's answer is over, shown as dropped,
as a closing fence is. A reply that opens no envelope passes through at once; the drafts that
continue a run are not read for one.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from grammars import Grammar

PROBE = 16  # decoded characters of the string that the grammar must take, at most
# A prefix of `{"name": "`, the blanks before each part included.
_OPENING = re.compile(r'\s*\{\s*"[A-Za-z_][\w -]{0,31}"\s*:\s*"')
# What completes a prefix of an opening, the shortest first.
_COMPLETIONS = ('"', ': "', '": "', 'a": "', '"a": "', '{"a": "')
_ESCAPE = re.compile(
    r'\\(?:u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|["\\/bfnrt])'
)
_LONGEST_ESCAPE = len("\\ud83d\\ude00")  # a surrogate pair


def _opens(text: str) -> bool:
    return _OPENING.fullmatch(text) is not None


class JsonEnvelope:
    def __init__(self, grammar: Grammar) -> None:
        self.grammar = grammar
        self._held = ""  # the reply's text not handed on yet
        self._state: Literal["opening", "probing", "inside", "done"] = "opening"
        self.opening = ""  # the envelope's opening, once taken
        self._shown = False  # the opening was handed to the trace (`opened`)
        self.end: str | None = None  # the reply from the string's closing quote on, once there

    @property
    def held(self) -> str:
        """The text held back (what a failed attempt leaves unread): the opening too, while the
        string's first characters are awaited."""
        return self.opening + self._held if self._state == "probing" else self._held

    def read(self, chunk: str) -> str:
        """What of the reply, `chunk` included, is handed on: its content decoded inside an
        envelope, all of it outside one ("" while undecided)."""
        if self._state == "done":
            return chunk
        if self.end is not None:
            self.end += chunk
            return ""
        self._held += chunk
        if self._state == "opening":
            opened = _OPENING.match(self._held)
            if opened is None:  # not whole yet: an opening it may be, that the grammar refuses?
                done = next((self._held + c for c in _COMPLETIONS if _opens(self._held + c)), "")
                return "" if done and not self._takes(done) else self._release()
            if self._takes(opened.group()):
                return self._release()  # the grammar's own text (JSON)
            self.opening, self._held = opened.group(), self._held[opened.end() :]
            self._state = "probing"
        if self._state == "probing":
            content, _, closed = _decoded(self._held)
            if len(content) < PROBE and not closed:
                return ""
            probe = content[:PROBE]
            if not probe or not self._takes(probe):
                self._held = self.opening + self._held
                self.opening = ""
                return self._release()
            self._state = "inside"
        return self._decode()

    def opened(self) -> str:
        """The envelope's opening, once it is taken and the first time asked (for the trace)."""
        if self._state != "inside" or self._shown:
            return ""
        self._shown = True
        return self.opening

    def finish(self) -> str:
        """The reply is over: what is still held, as it came where no envelope was taken."""
        if self._state == "inside":
            return self._decode(final=True)
        if self._state == "probing":
            self._held, self.opening = self.opening + self._held, ""
        return self._release() if self._state != "done" else ""

    def _decode(self, *, final: bool = False) -> str:
        content, used, whole = _decoded(self._held, final=final)
        if whole:
            self.end = self._held[used:]
        self._held = "" if whole else self._held[used:]
        return content

    def _takes(self, text: str) -> bool:
        return self.grammar.checker().feed(text) == len(text)

    def _release(self) -> str:
        held, self._held = self._held, ""
        self._state = "done"
        return held


def _decoded(text: str, *, final: bool = False) -> tuple[str, int, bool]:
    """A JSON string's content from `text` (after its opening quote), decoded up to its closing
    quote or, but at the reply's end (`final`), to an escape that may not be whole yet, at the
    end of `text`: (the content, the characters it used,
    whether the closing quote was reached: it is the next). What is no escape JSON has (`\\x`, a
    lone half of a surrogate pair) stays as written."""
    out, at = [], 0
    while at < len(text) and text[at] != '"':
        escape = _ESCAPE.match(text, at) if text[at] == "\\" else None
        decoded = json.loads(f'"{escape.group()}"') if escape is not None else text[at]
        lone = any(0xD800 <= ord(c) <= 0xDFFF for c in decoded)  # half of a pair
        pending = text[at] == "\\" and (escape is None or lone) and not final
        if pending and len(text) - at < _LONGEST_ESCAPE:
            break  # maybe whole, or a pair, once more arrives
        if escape is None or lone:
            escape, decoded = None, text[at]  # as written
        out.append(decoded)
        at = escape.end() if escape is not None else at + 1
    return "".join(out), at, text[at : at + 1] == '"'
