"""Continuing a text with chat APIs: the messages to send, and the alignment of the reply.

A chat API without prefill cannot be told "go on from here". It is shown the text so far as its
own last message and asked to continue it (`instruction`). Its reply then often opens a code fence,
or repeats the end of the text, or starts over from the beginning. `Aligner` strips that, so the
drafter yields only new text:

    reply  = [fence opening] + [a suffix of prefix, or all of it] + new text
    output = new text

It holds back only the characters it still needs to decide what the reply repeats (at most the
fence line plus len(prefix)); once it has decided, chunks pass through unchanged.
"""

from __future__ import annotations

import re
from typing import Literal

from providers.base import Message, Prompt

__all__ = [
    "CONTINUE_INSTRUCTION",
    "Aligner",
    "Echo",
    "as_messages",
    "continued_text",
    "instructed",
    "instruction",
]

CONTINUE_INSTRUCTION = (
    "Continue your last message exactly where it stops, even if it stops in the middle of a "
    "word, a number or a string. Reply with the continuation only: do not repeat any of the text "
    "already written, do not explain, and do not use code fences."
)

FENCE = "```"
# A fence opening line: optional blank space, three backticks, an info string ("json"), newline.
FENCE_OPENING = re.compile(r"\s*```[^`\n]*\n")
# An info string longer than this means the backticks were not a fence opening.
_MAX_INFO = 64
# Non-blank characters a repeat of the prefix needs before it is stripped: shorter overlaps are
# too often the true continuation.
MIN_REPEAT = 8


def as_messages(prompt: Prompt) -> list[Message]:
    """`prompt` as a new list of messages (a str is one user message); the caller's are copied."""
    if isinstance(prompt, str):
        return [{"role": "user", "content": prompt}]
    return [dict(message) for message in prompt]


def continued_text(prompt: Prompt, prefix: str) -> tuple[list[Message], str]:
    """The conversation before the text to continue, and that text.

    The text is `prefix`, after the prompt's own final assistant message when there is one (a
    prefill the caller wrote): both are what the model must continue.
    """
    messages = as_messages(prompt)
    if messages and messages[-1].get("role") == "assistant":
        content = messages[-1].get("content")
        if isinstance(content, str):
            messages.pop()
            return messages, content + prefix
    return messages, prefix


def instruction(prompt: Prompt, prefix: str) -> list[Message]:
    """Messages that ask a chat model to continue `prefix` and to reply with the continuation only.

    The text so far goes in as the model's own last message, followed by a user message asking it
    to go on. With nothing to continue, the conversation is sent as it is.
    """
    history, text = continued_text(prompt, prefix)
    if not text:
        return history
    ask = CONTINUE_INSTRUCTION
    return [*history, {"role": "assistant", "content": text}, {"role": "user", "content": ask}]


def instructed(prompt: Prompt, prefix: str) -> tuple[list[Message], Aligner]:
    """What a chat model without prefill is sent to continue `prefix` (`instruction`), and the
    aligner of its reply, which may echo the instruction (sent only with text to continue)."""
    text = continued_text(prompt, prefix)[1]
    aligner = Aligner(text, echoes=CONTINUE_INSTRUCTION if text else "")
    return instruction(prompt, prefix), aligner


class Aligner:
    """Strips from a streamed reply what it repeats of `prefix`; feed chunks, then `finish()`.

    Invariant: "".join(outputs) == reply minus (1) a leading code-fence opening line (when
    `strip_fence` and the prefix does not open a fence itself) and (2) the longest start of the rest
    that repeats `prefix` from one of its line starts to its end, when the evidence is unambiguous:
    the repeat holds at least `min_repeat` non-blank characters, or it is the whole prefix repeated
    right after a fence opening (the model started its answer over). The removed text is kept in
    `stripped`.

    A continuation may well begin with the last characters of the prefix ("10" + "00}", "missi" +
    "ssippi", an indentation + more indentation): such short or mid-line overlaps are never
    stripped. A true repeat left in place is cut by the grammar check and repaired visibly, where a
    wrong strip would change the text without a sign.

    With `anchored=True` the reply is known to start exactly where `prefix` starts (a prefill that
    dropped the trailing whitespace `prefix`); only the longest common prefix of reply and `prefix`
    is stripped (after a fence opening, unless `strip_fence=False`).

    With `echoes`, the instruction the request ended with: a first line that echoes it (five words
    or more, four in five of them the instruction's, maybe behind comment marks: `--Do not repeat
    any of the text already written`) is stripped first. The text the project sent never comes
    back as the answer.
    """

    def __init__(
        self,
        prefix: str,
        *,
        strip_fence: bool = True,
        anchored: bool = False,
        min_repeat: int = MIN_REPEAT,
        echoes: str = "",
    ) -> None:
        self.prefix = prefix
        self.anchored = anchored
        self.min_repeat = max(min_repeat, 1)
        self.stripped = ""
        self._echo = Echo(echoes)
        fence = strip_fence and not prefix.lstrip().startswith(FENCE)
        self._after_echo: Literal["fence", "overlap"] = "fence" if fence else "overlap"
        self._state: Literal["echo", "fence", "overlap", "pass"] = (
            "echo" if echoes else self._after_echo
        )
        self._held = ""
        # Start offsets in `prefix` of repeats still possible but not yet complete, and how many
        # characters of `_held` have been checked against them.
        self._pending: list[int] | None = None
        self._checked = 0
        self._best: int | None = None

    @property
    def decided(self) -> bool:
        """True once the repeat is known: from here on chunks pass through unchanged."""
        return self._state == "pass"

    def feed(self, chunk: str) -> str:
        """The new text that `chunk` makes certain ("" while still deciding)."""
        if self._state == "pass":
            return chunk
        self._held += chunk
        return self._advance(final=False)

    def finish(self) -> str:
        """The end of the reply: decide with what arrived and return what was held back."""
        if self._state == "pass":
            return ""
        return self._advance(final=True)

    def _advance(self, final: bool) -> str:
        if self._state == "echo" and not self._strip_echo(final):
            return ""
        if self._state == "fence" and not self._strip_fence(final):
            return ""
        if self.anchored:
            return self._anchored_overlap(final)
        return self._overlap(final)

    def _strip_echo(self, final: bool) -> bool:
        """Strip a first line that echoes the instruction from `_held`; False while it is too
        early to tell (`Echo.may_be`)."""
        line, newline, _ = self._held.partition("\n")
        if not newline and not final and _ECHO_START.match(line) and self._echo.may_be(line):
            return False
        if newline and self._echo.of(line):
            self.stripped += line + newline
            self._held = self._held[len(line) + 1 :]
        self._state = self._after_echo
        return True

    def _strip_fence(self, final: bool) -> bool:
        """Strip a fence opening from `_held`; False while it is too early to tell."""
        match = FENCE_OPENING.match(self._held)
        if match:
            self.stripped += match.group()
            self._held = self._held[match.end() :]
        elif not final:
            body = self._held.lstrip()
            if not body or FENCE.startswith(body):
                return False
            if body.startswith(FENCE):
                info = body[len(FENCE) :]
                if "\n" not in info and "`" not in info and len(info) <= _MAX_INFO:
                    return False
        self._state = "overlap"
        return True

    def _release(self, overlap: int) -> str:
        self.stripped += self._held[:overlap]
        out = self._held[overlap:]
        self._held = ""
        self._state = "pass"
        return out

    def _anchored_overlap(self, final: bool) -> str:
        held, prefix = self._held, self.prefix
        common = 0
        limit = min(len(held), len(prefix))
        while common < limit and held[common] == prefix[common]:
            common += 1
        if final or common < limit or common == len(prefix):
            return self._release(common)
        return ""

    def _overlap(self, final: bool) -> str:
        held, prefix = self._held, self.prefix
        if not prefix:
            return self._release(0)
        if not held:
            return self._release(0) if final else ""
        size = len(prefix)
        if self._pending is None:
            fenced_restart = self.stripped != ""  # a fence opening was stripped just now
            self._pending = [
                i
                for i, non_blank in _line_starts(prefix)
                if prefix[i] == held[0]
                and (non_blank >= self.min_repeat or (i == 0 and fenced_restart))
            ]
        still: list[int] = []
        for start in self._pending:
            length = size - start
            end = min(len(held), length)
            if prefix[start + self._checked : start + end] != held[self._checked : end]:
                continue
            if len(held) >= length:
                if self._best is None or start < self._best:
                    self._best = start
            else:
                still.append(start)
        self._pending = still
        self._checked = len(held)
        if still and not final:
            return ""
        return self._release(0 if self._best is None else size - self._best)


class Echo:
    """What a reply's line that echoes a text the project sent looks like (the instruction to go
    on, the caller's prompt): five words or more, four in five of them the text's, maybe behind
    comment marks (`--Do not repeat any of the text already written`). Such a line is the
    request coming back, not answer text."""

    def __init__(self, sent: str) -> None:
        self.words = frozenset(_WORD.findall(sent.lower()))
        self._longest = 2 * len(sent)

    def of(self, line: str) -> bool:
        """Whether the whole `line` echoes the text."""
        words = _WORD.findall(line.lower())
        echoed = sum(w in self.words for w in words)
        return len(words) >= 5 and 5 * echoed >= 4 * len(words)

    def may_be(self, line: str) -> bool:
        """Whether `line`, still arriving, may yet be an echo: it has only the text's words so
        far (its last may be cut short), and is not longer than twice the text."""
        if not self.words or len(line) > self._longest:
            return False
        words = _WORD.findall(line.lower())
        whole = words[:-1] if line[-1:].isalpha() else words
        return all(w in self.words for w in whole)


_WORD = re.compile(r"[a-z]+")
_ECHO_START = re.compile(r"[\s\-#/;*>]*([A-Za-z]|$)")  # comment marks and blanks, then a word


def _line_starts(text: str) -> list[tuple[int, int]]:
    """(offset, non-blank characters from there to the end) for each line start of `text`."""
    starts: list[tuple[int, int]] = []
    non_blank = 0
    for i in range(len(text) - 1, -1, -1):
        non_blank += not text[i].isspace()
        if i == 0 or text[i - 1] == "\n":
            starts.append((i, non_blank))
    return starts
