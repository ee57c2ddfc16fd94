"""What may come at a first draft's start before the answer's text: a reasoning block, skipped
(backtrack.run.reasoning), then a JSON envelope, whose string's content is the answer's text
(backtrack.run.envelope). The trace shows the block and the envelope's opening as dropped."""

from __future__ import annotations

from typing import TYPE_CHECKING

from backtrack.run.envelope import JsonEnvelope
from backtrack.run.reasoning import ReasoningBlock

if TYPE_CHECKING:
    from backtrack.run.output import Output
    from grammars import Grammar


class ReplyStart:
    def __init__(self, output: Output, grammar: Grammar) -> None:
        self.output = output
        self.reasoning: ReasoningBlock | None = ReasoningBlock()
        self.envelope = JsonEnvelope(grammar)

    @property
    def end(self) -> str | None:
        """The reply from the envelope's closing quote on, once there: the answer is over."""
        return self.envelope.end

    @property
    def held(self) -> str:
        """The text held back (what a failed attempt leaves unread)."""
        block = self.reasoning.held if self.reasoning is not None else ""
        return block + self.envelope.held

    def read(self, chunk: str) -> str:
        """What of the reply, `chunk` included, goes on as the answer's text ("" while held)."""
        if self.reasoning is not None:
            chunk = self.reasoning.skip(chunk)
            if not self.reasoning.done:
                return ""
            self.output.drop(self.reasoning.block, "reasoning")
            self.reasoning = None
        return self._shown(self.envelope.read(chunk))

    def finish(self) -> str:
        """The reply is over: what is still held goes on (a reasoning block never closed as it
        came: no answer followed it)."""
        held = ""
        if self.reasoning is not None:
            held, self.reasoning = self.reasoning.finish(), None
        return self._shown(self.envelope.read(held) + self.envelope.finish())

    def _shown(self, text: str) -> str:
        """`text`, once the trace shows the envelope's opening (where the reply starts)."""
        self.output.drop(self.envelope.opened(), "preamble")
        return text
