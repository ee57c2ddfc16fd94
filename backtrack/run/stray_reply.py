"""A continuation that never left the string it began in: asked to go on from a text cut inside a
string, a chat model may answer as to a chat (`I'm ready to help. What can I do for you?`, from
SmolLM2 through llama.cpp, twice), and any text is a string's content. A reply that ended there,
on its own, with the text not complete, wrote no more of the document: a model going on with it
closes the string and what is open. Its text is left out (a `stray` drop, counted as lost), and
the target finishes the text.

While a continuation's text stays inside that string, none of it is final (`Output.hold`): it may
still be left out, and what was passed on as final never changes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from backtrack.run.output import Output


def watch(output: Output) -> None:
    """At a draft round's start: where it continues a text cut inside a string (free text, the
    text not complete), hold back what it writes there (`Output.hold`)."""
    checker = output.checker
    inside = bool(output.text) and checker.in_free_text() and not checker.complete
    output.hold = output.chars if inside else None


def feed_watching(output: Output, chunk: str) -> int:
    """Feeds the draft's `chunk` to the output's checker (how many characters it took); while
    the text is held (`watch`), a character at a time, and the hold ends where the text leaves
    the string or a character does not fit."""
    checker = output.checker
    if output.hold is None:
        return checker.feed(chunk)
    for at, char in enumerate(chunk):
        if checker.feed(char) == 0:
            output.hold = None  # a cut: a slip, not a stray reply
            return at
        if not checker.in_free_text():
            output.hold = None
            return at + 1 + checker.feed(chunk[at + 1 :])
    return len(chunk)


def leave_out_stray(output: Output, begun: int) -> int:
    """Where the continuation after character `begun`, which ended on its own, is still held
    inside the string it began in, the text not complete: its text leaves the output, shown as
    dropped. How many characters (0: none)."""
    text = output.text[begun:]
    held = output.hold == begun and begun >= output.promised
    output.hold = None
    if not held or not text.strip() or output.checker.complete:
        return 0
    output.unread(begun)
    output.drop(text, "stray")
    return len(text)
