"""What a guided run needs of a target, whichever engine writes its corrections: the in-process
transformers model (local_target.target.LocalTarget) or a vLLM server running backtrack's logits
processor (local_target.vllm_target.VllmTarget).

A target gives one session per run's prompt; a session writes corrections of committed text and
says which of several texts that tie it finds likeliest. The run (backtrack.run) calls nothing
else, so it does not care which engine it has; where the target also counts tokens
(`CountsTokens`), the run holds its text to what the target's context can read.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from grammars.grammar import Grammar
    from local_target.correction import Correction
    from local_target.policy import Until
    from local_target.prompt import Prompt
    from local_target.sampling import Sampling


class Session(Protocol):
    """One prompt on a target."""

    def correct(
        self,
        text: str,
        grammar: Grammar,
        *,
        max_tokens: int = ...,
        until: Until = ...,
        sampling: Sampling | None = ...,
        heal: bool = ...,
        cancel: threading.Event | None = ...,
        hint: str = ...,
    ) -> Correction:
        """A grammar-valid continuation of `text` (a valid prefix) in at most `max_tokens`."""
        ...

    def likeliest(self, texts: list[str]) -> int:
        """The index of the text the model finds likeliest after the prompt."""
        ...


class Target(Protocol):
    """An engine that writes corrections: one session per prompt."""

    def session(self, prompt: Prompt) -> Session: ...


@runtime_checkable
class CountsTokens(Protocol):
    """A target that says how much of its model's context a text leaves (both engines do; a
    target without this method has no known context to the run)."""

    def tokens_left(self, prompt: Prompt, text: str) -> int | None:
        """The tokens the context has left after `prompt` and the committed `text`, as a session
        sends them to the model (negative where they pass it); None where the context is not
        known."""
        ...
