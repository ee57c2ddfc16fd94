"""A continuation that never left the string it began in: asked to go on from a text cut inside a
string, a chat model may answer as to a chat (`I'm ready to help. What can I do for you?`, from
SmolLM2 through llama.cpp, twice), and any text is a string's content. A reply that ended there,
on its own, with the text not complete, wrote no more of the document: a model going on with it
closes the string and what is open. Its text is left out (a `stray` drop, counted as lost), and
the target finishes the text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from backtrack.run.output import Output

MAX_STRAY = 2048  # characters of a reply looked through, at most


def stray(output: Output, begun: int) -> bool:
    """Whether the text after character `begun`, a continuation's whole reply (which ended on
    its own), lies inside one free-text lexeme that was open at `begun` and still is, the text
    not complete: its every character read where the grammar takes free text."""
    checker, text = output.checker, output.text
    new = text[begun:]
    if not new.strip() or len(new) > MAX_STRAY or checker.complete or begun == 0:
        return False
    if not checker.in_free_text():
        return False
    checker.rollback(begun)
    inside = checker.in_free_text()
    at = begun
    while inside and at < len(text):
        checker.feed(text[at])
        at += 1
        inside = at == len(text) or checker.in_free_text()
    checker.feed(text[at:])
    return inside


def leave_out_stray(output: Output, begun: int) -> int:
    """Where the continuation after character `begun` is `stray`, its text leaves the output,
    shown as dropped: how many characters (0: it is not)."""
    if not stray(output, begun):
        return 0
    text = output.text[begun:]
    output.unread(begun)
    output.drop(text, "stray")
    return len(text)
