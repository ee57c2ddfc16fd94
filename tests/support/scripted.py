"""Scripted stand-ins for guide()'s two parties: a black-box API and a local target.

ScriptedAPI replays fixed text and never reads the grammar: what a run makes of its text is the
product's doing, so a test that asserts on the result tests the product, not the script.
ScriptedTarget writes fixed corrections, for loop decisions that must not hang on a model's
choices.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import providers
from backtrack import GuideResult, guide
from grammars import Grammar
from local_target.correction import Correction

NO_CORRECTIONS = {"max_corrections": 0, "complete_on_budget": False}

Failure = Callable[[int], "tuple[int, BaseException] | None"]
"""`fail(call)`: None, or (chunks, error): call `call` raises `error` after that many chunks."""


def common_prefix(a: str, b: str) -> int:
    """The length of the longest common prefix of `a` and `b`."""
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


@dataclass
class ScriptedAPI:
    """An API that means to write `answer` and keeps that intent.

    Call i replies `drafts[i]` verbatim where one is given (None: not scripted): a slip, or text
    written for a prefix the test knows. Any other call continues from the committed prefix: of
    its answer and its first draft, the one sharing the longer common prefix with it (the answer
    on a tie) is the text, and the reply is that text's rest from the end of the common prefix.
    `habit` rewrites every such rest of the answer (a persistent slip). It never reads a grammar.
    `reply(prefix)` is one call's text, for a caller that is no drafter function: a test server's
    responder (tests/e2e/test_guide_servers.py) passes it the prefix each request carries.

    `chunk` > 0 streams replies in pieces of that many characters (`stream`, `astream`).
    `fail(i)` may return (chunks, error): call i raises `error` after yielding that many chunks
    from `stream`, or at once when called as a plain function (`astream` does not fail).

    Records, one entry per call: `prefixes` (the committed text it was given), `sent` (the whole
    reply it meant to send), `yielded` (chunks handed over) and `closed` (the caller closed the
    stream before its end); the last two for streams only.
    """

    answer: str
    drafts: Sequence[str | None] = ()
    habit: Callable[[str], str] | None = None
    chunk: int = 0
    fail: Failure | None = None
    prefixes: list[str] = field(default_factory=list)
    sent: list[str] = field(default_factory=list)
    yielded: list[int] = field(default_factory=list)
    closed: list[bool] = field(default_factory=list)

    @property
    def calls(self) -> int:
        return len(self.prefixes)

    def continuation(self, prefix: str) -> str:
        """What it writes after `prefix` when no draft is scripted for the call."""
        answer = common_prefix(prefix, self.answer)
        first = self.drafts[0] if self.drafts else None
        if first is not None and common_prefix(prefix, first) > answer:
            return first[common_prefix(prefix, first) :]
        rest = self.answer[answer:]
        return self.habit(rest) if self.habit else rest

    def reply(self, prefix: str) -> str:
        call = len(self.prefixes)
        self.prefixes.append(prefix)
        scripted = self.drafts[call] if call < len(self.drafts) else None
        text = scripted if scripted is not None else self.continuation(prefix)
        self.sent.append(text)
        return text

    def _failure(self) -> tuple[int, BaseException] | None:
        return self.fail(len(self.prefixes)) if self.fail else None

    def _pieces(self, text: str) -> list[str]:
        size = self.chunk or len(text) or 1
        return [text[i : i + size] for i in range(0, len(text), size)]

    def __call__(self, prompt: Any, prefix: str) -> str:
        failure = self._failure()
        text = self.reply(prefix)
        if failure is not None:
            raise failure[1]
        return text

    def stream(self, prompt: Any, prefix: str) -> Iterator[str]:
        failure = self._failure()
        pieces = self._pieces(self.reply(prefix))
        self.yielded.append(0)
        self.closed.append(False)
        try:
            for index, piece in enumerate(pieces):
                if failure is not None and index >= failure[0]:
                    raise failure[1]
                self.yielded[-1] += 1
                yield piece
            if failure is not None:
                raise failure[1]
        except GeneratorExit:
            self.closed[-1] = True
            raise

    async def astream(self, prompt: Any, prefix: str) -> AsyncIterator[str]:
        pieces = self._pieces(self.reply(prefix))
        self.yielded.append(0)
        self.closed.append(False)
        try:
            for piece in pieces:
                self.yielded[-1] += 1
                yield piece
        except GeneratorExit:
            self.closed[-1] = True
            raise


class ScriptedTarget:
    """Stands in for LocalTarget: each correction writes the next of `texts`, as sampled tokens
    of one character each. It records (committed text, until) per correction in `calls`, and
    the grammar it was asked to write under in `grammars`."""

    def __init__(self, *texts: str) -> None:
        self.texts = list(texts)
        self.calls: list[tuple[str, Any]] = []
        self.grammars: list[Grammar] = []

    def session(self, prompt: Any) -> ScriptedTarget:
        return self

    def likeliest(self, texts: list[str]) -> int:
        """Repairs that tie: the first, the search's own order."""
        return 0

    def correct(self, text: str, grammar: Grammar, **options: Any) -> Correction:
        self.calls.append((text, options.get("until")))
        self.grammars.append(grammar)
        if not self.texts:
            raise AssertionError(f"an unscripted correction was asked for after {text!r}")
        new = self.texts.pop(0)
        return Correction(
            text=new,
            tokens=tuple(range(len(new))),
            flags=("sampled",) * len(new),
            complete=grammar.matches(text + new),
            stop_reason="terminal",
            healed_bytes=0,
            seconds=0.0,
            forward_seconds=0.0,
            mask_seconds=0.0,
            forward_passes=1,
            runs=(("sampled", new),) if new else (),
        )


def repaired(grammar: str | Grammar, draft: str, *, chunk: int = 0, **options: Any) -> GuideResult:
    """guide() on a ScriptedAPI that replies `draft` (streamed in pieces of `chunk` characters,
    or whole), with a ScriptedTarget that has nothing to say: no correction asked for, none
    made (`NO_CORRECTIONS`, unless `options` say otherwise). Its API calls are the script's."""
    api = ScriptedAPI(draft, chunk=chunk)
    fn = api.stream if chunk else api
    settings = {**NO_CORRECTIONS, **options}
    result = guide(
        providers.FunctionDrafter(fn), grammar, prompt="p", target=ScriptedTarget(), **settings
    )
    assert api.calls == result.api_calls
    return result
