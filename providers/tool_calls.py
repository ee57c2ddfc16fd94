"""Tool calls in a draft: the arguments of one named function are the draft's text, or, where no
function is guided, the content is and the calls are kept apart.

A drafter given `guided_tool=` (providers.openai, providers.anthropic) sends the request's tools
with a fresh answer (nothing committed yet) and reads its reply in two parts: the arguments of the
first call of `guided_tool`, streamed as the draft's text, and the rest on the side, in a
`ToolReply` (the content the model wrote beside the call, and every call with its id and name;
the other calls' arguments as the model gave them, unguided). A drafter whose requests carry tools
but guide none (the grammar is the content's) reads the content as the draft and keeps the calls
apart the same way, so that a reply that only calls tools is not mistaken for an empty one.

Once text is committed, a draft continues the arguments as plain text: the request keeps its tools
(a conversation that holds earlier calls needs them defined) but may call none (`calling_none`:
tool_choice "none"), the arguments so far are the model's own last message (continued as any text
is: providers.align), and the reply's content is the rest of them. A call that started over would
write a fresh object, not the rest of this one.

A fresh answer that calls no `guided_tool` (content only, or other functions), or that only calls
tools where the content is guided, ends the run with `NoGuidedCall`, which carries that reply: the
caller hands it back as the upstream gave it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from providers.errors import ProviderError

__all__ = ["NoGuidedCall", "ToolCall", "ToolReply", "calling_none"]


@dataclass
class ToolCall:
    """One call as the model made it: `arguments` as it streamed them (for the guided call, the
    draft's text holds them instead)."""

    id: str
    name: str
    arguments: str = ""


@dataclass
class ToolReply:
    """What a fresh answer carried besides the guided text. `tool`: the function whose arguments
    are the guided text (None: the content is). `calls` in the reply's order, keyed by the
    stream's index (OpenAI's tool call index, Anthropic's content block index); `guided` the key
    of the first call of `tool`. `unguided`: the reply is passed on as it came (NoGuidedCall)."""

    tool: str | None
    content: str = ""
    calls: dict[int, ToolCall] = field(default_factory=dict)
    guided: int | None = None
    unguided: bool = False

    def text(self, piece: str) -> str | None:
        """Content: the draft's text where no function is guided (returned), else kept apart."""
        self.content += piece
        return piece if self.tool is None else None

    def start(self, key: int, id: str, name: str) -> None:
        """A call begins at `key` (a second start at the same key, as OpenAI sends, changes it)."""
        call = self.calls.setdefault(key, ToolCall(id, name))
        call.id, call.name = id or call.id, name or call.name
        if self.guided is None and self.tool is not None and call.name == self.tool:
            self.guided = key

    def arguments(self, key: int, piece: str) -> str | None:
        """`piece` of the call at `key`: the draft's text for the guided call (returned), kept
        on the side for the others (None)."""
        if key == self.guided:
            return piece
        if key in self.calls:
            self.calls[key].arguments += piece
        return None

    def ended(self, request_id: str | None) -> None:
        """The reply ended: NoGuidedCall when it called no `tool`, or (no function guided) when
        it only called tools."""
        if self.tool is None:
            self.unguided = bool(self.calls) and not self.content
        else:
            self.unguided = self.guided is None
        if self.unguided:
            raise NoGuidedCall(self, request_id)


class NoGuidedCall(ProviderError):
    """A fresh answer that called no guided function: `reply` holds what it wrote instead. Not
    retryable: the model chose to answer so, and the answer is passed on as it is."""

    def __init__(self, reply: ToolReply, request_id: str | None) -> None:
        self.reply = reply
        wrote = "only called tools" if reply.tool is None else f"did not call {reply.tool!r}"
        super().__init__(f"the reply {wrote}", request_id=request_id)


def calling_none(kwargs: dict[str, Any], none: object) -> dict[str, Any]:
    """`kwargs` with the tool_choice `none` (the protocol's "call no tool") beside its tools, in
    it or in its `extra_body` (where the server sends a body's other fields)."""
    out = dict(kwargs)
    out.pop("tool_choice", None)
    extra = out.get("extra_body")
    if isinstance(extra, dict) and "tools" in extra:
        out["extra_body"] = {**extra, "tool_choice": none}
    else:
        out["tool_choice"] = none
    return out
