"""The command line's own error, and how any error prints: one line, keys masked."""

from __future__ import annotations

from grammars.errors import BacktrackError
from providers.errors import redact


class CommandError(BacktrackError):
    """A command line that cannot run as given (an unknown provider, a missing prompt...)."""


def error_line(exc: BaseException) -> str:
    """`exc` as one line, with every key value this process knows and anything shaped like a key
    masked, whatever the error (a file's error could quote one as well as a provider's). Not a
    CommandError: it says what is wrong with the command line before any request, and the key
    patterns would mask its words ("OPENAI_API_KEY is not set")."""
    text = " ".join(str(exc).split())
    return f"backtrack: error: {text if isinstance(exc, CommandError) else redact(text)}"
