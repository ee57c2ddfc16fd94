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
it, its first `MOST_CHARS` characters.
"""

from __future__ import annotations

from providers.base import Message, Prompt

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
