"""What the local target reads before the committed text: the run's prompt, and where the API
answered it in another form, that answer.

An API asked for JSON often answers in prose first (`today's weather: sunny, city of Malibu,
temperature_c 29.6°C`): the grammar refuses it from its first character, nothing of it is
committed, and the target writes the answer's start; where the API's continuation fails too, the
target completes the document. Reading only the prompt, it invents the values (`"city": "New
York"`). Reading the API's reply as the assistant's turn, followed by `ASK_AGAIN`, SmolLM2 wrote
the API's values in seven of eight such replies (Malibu and 29.6; Ethiopia, Addis Ababa, 209;
68.0 and 74.5; Elmira, Paris, Amsterdam): 14 of the 21 values listed from them, none without it.
So where the run's first reply was refused whole (`refused_answer`), the target's prompt carries
it, its first `MOST_CHARS` characters, where the target's context has room for it (`TargetPrompt`).
Where it did not help: asked for "a JSON configuration" (any JSON value), SmolLM2 had answered
in Python; reading that, it began `1.` where it had begun `{` (both poor).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from backtrack.run.context import LEAST_BYTES
from providers.base import Message, Prompt

if TYPE_CHECKING:
    from backtrack.run.output import Output
    from backtrack.trace.record import Round

# Of four wordings tried on those eight replies (SmolLM2 completing from the start), one of the two
# that carried the most values (14 of 21), and the only one that never left the form asked for:
# after `Write that answer again in the form asked for.` (also 14) a Python answer to "a JSON
# configuration" became the number `1.1`.
ASK_AGAIN = "Rewrite your answer in the format requested."
# The reply's characters the target reads at most: the values an answer in prose holds come
# first, and the target's context is kept for the text.
MOST_CHARS = 1024


def with_refused_answer(prompt: Prompt, answer: str) -> list[Message]:
    """`prompt` as chat messages, followed by the API's `answer` (its first `MOST_CHARS`
    characters) as the assistant's turn and `ASK_AGAIN` as the user's."""
    messages: list[Message] = (
        [{"role": "user", "content": prompt}] if isinstance(prompt, str) else list(prompt)
    )
    return [
        *messages,
        {"role": "assistant", "content": answer[:MOST_CHARS]},
        {"role": "user", "content": ASK_AGAIN},
    ]


def refused_answer(rounds: Sequence[Round], output: Output) -> str | None:
    """The run's first reply, where the grammar refused it from its first character (its rest
    after the cut, a preamble dropped before it aside); None where it is not over, or some of it
    was committed."""
    first = rounds[0] if rounds else None
    if first is None or first.kind != "draft" or first.ended != "cut" or first.accepted_chars:
        return None
    spans = output.spans  # read only where the first round says the reply was refused whole
    answer = "".join(s.text for s in spans if s.round == 0 and s.origin == "rejected")
    return answer if answer.strip() else None


class TargetPrompt:
    """A run's target prompt: the run's `prompt` until its first reply is over; from then on,
    where that reply was refused whole, the prompt with it (`with_refused_answer`), where the
    target's context has `reserve` tokens and `LEAST_BYTES` left after it (`left(prompt, "")`:
    the tokens left after a prompt and a text, None where not known), else the prompt alone.
    `fixed`: always the prompt (a drafter that drafts in the target's own session)."""

    def __init__(
        self,
        prompt: Prompt,
        left: Callable[[Prompt, str], int | None],
        reserve: int,
        *,
        fixed: bool = False,
    ) -> None:
        self.prompt = prompt
        self._left = left
        self._reserve = reserve
        self._decided: Prompt | None = prompt if fixed else None

    def now(self, rounds: Sequence[Round], output: Output) -> Prompt:
        """The prompt the target reads now, after the run's `rounds` and `output` so far."""
        if self._decided is not None or not rounds:
            return self._decided or self.prompt
        self._decided = self.prompt
        answer = refused_answer(rounds, output)
        if answer is not None:
            answered = with_refused_answer(self.prompt, answer)
            if self._roomy(answered):
                self._decided = answered
        return self._decided

    def _roomy(self, prompt: Prompt) -> bool:
        left = self._left(prompt, "")
        return left is None or left - self._reserve >= LEAST_BYTES
