"""Strict tools as a grammar: which function a request guides, read from a create() call (`wrap`)
and from a body (`backtrack serve`) alike, in either protocol:

    OpenAI     tools=[{"type": "function", "function": {"name", "parameters", "strict": true}}]
               tool_choice={"type": "function", "function": {"name": ...}} names one
    Anthropic  tools=[{"name", "input_schema"}]; tool_choice={"type": "tool", "name": ...}

The guided function is the strict one tool_choice names, else the only strict tool (Anthropic:
every tool with an input_schema is strict); its schema is the run's grammar, and the reply's call
of it carries the guided text as its arguments (providers.tool_calls reads the stream). No function
is guided when tool_choice is "none", names a tool that is not strict, or when several strict
tools are given and none is named; nor in a streamed request, or one that gives its own grammar
(grammar=, a response_format). Their tools go upstream as they came; in a guided request, the
grammar guides the content and the calls come back as the model made them (providers.tool_calls).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from providers.tool_calls import ToolCall, ToolReply

Protocol = Literal["openai", "anthropic"]


@dataclass(frozen=True)
class GuidedTool:
    """The function a request guides: its name and its parameters' schema as JSON text."""

    name: str
    schema: str


def guided_tool(fields: Mapping[str, Any], protocol: Protocol) -> GuidedTool | None:
    """The function whose arguments `fields` (a create() call's kwargs, or a body) guides."""
    tools = fields.get("tools")
    if fields.get("stream") or not isinstance(tools, (list, tuple)):
        return None
    strict = dict(filter(None, (_strict(tool, protocol) for tool in tools)))
    choice = fields.get("tool_choice")
    kind = choice.get("type") if isinstance(choice, dict) else choice
    if kind == "none":
        return None
    named = _named(choice, protocol)
    if named is None and len(strict) == 1:
        named = next(iter(strict))
    if named is None or named not in strict:
        return None
    return GuidedTool(named, json.dumps(strict[named]))


def _strict(tool: Any, protocol: Protocol) -> tuple[str, dict[str, Any]] | None:
    """(name, schema) of a strict tool; None for any other."""
    if not isinstance(tool, dict):
        return None
    if protocol == "openai":
        function = tool.get("function") if tool.get("type") == "function" else None
        if not isinstance(function, dict) or function.get("strict") is not True:
            return None
        name, schema = function.get("name"), function.get("parameters")
    else:
        name, schema = tool.get("name"), tool.get("input_schema")
    return (name, schema) if isinstance(name, str) and isinstance(schema, dict) else None


def _named(choice: Any, protocol: Protocol) -> str | None:
    """The function a tool_choice names (None when it names none)."""
    if not isinstance(choice, dict):
        return None
    if protocol == "openai":
        function = choice.get("function") if choice.get("type") == "function" else None
        name = function.get("name") if isinstance(function, dict) else None
    else:
        name = choice.get("name") if choice.get("type") == "tool" else None
    return name if isinstance(name, str) else None


def reply_calls(tools: ToolReply, text: str) -> list[ToolCall]:
    """The reply's calls in order, the guided one with `text` (the run's) as its arguments."""
    return [
        ToolCall(call.id, call.name, text if key == tools.guided else call.arguments)
        for key, call in sorted(tools.calls.items())
    ]
