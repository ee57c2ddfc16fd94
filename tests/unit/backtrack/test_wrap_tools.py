"""Strict tools through wrap(client): a tool call's arguments are the guided text. The real SDKs
talk HTTP to the scripted servers (tests/support/servers.py), which stream tool calls as the APIs
do and never read a schema; the local model is a ScriptedTarget."""

from __future__ import annotations

import json
from typing import Any

import pytest
from anthropic.types import TextBlock, ToolUseBlock

from backtrack import wrap
from backtrack.wire.tools import GuidedTool, guided_tool
from tests.support.scripted import ScriptedTarget
from tests.support.servers import Reply, text, tool_call

MESSAGES = [{"role": "user", "content": "The weather in Oslo for three days?"}]
SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
    "required": ["city", "days"],
    "additionalProperties": False,
}
# Cut at `t`: the local model writes 3. The rest does not go on after it, however much of its
# start is skipped (as `three}` would, its word skipped): the API continues.
SLIP = '{"city": "Oslo", "days": three weeks}'
KEPT = '{"city": "Oslo", "days": '
ARGUMENTS = '{"city": "Oslo", "days": 3}'
COMMA = '{"city": "Oslo", "days": 3,}'  # mended by an edit: no local model runs


def function(name: str, *, strict: bool = True) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": SCHEMA, "strict": strict}}


FORECAST = [function("forecast")]
FORCED = {"type": "function", "function": {"name": "forecast"}}
CLAUDE_TOOLS = [{"name": "forecast", "description": "The forecast.", "input_schema": SCHEMA}]


def test_a_forced_strict_function_has_its_arguments_guided_and_continued(
    openai_server: Any, openai_client: Any
):
    """Issue 25: tool-call deltas were dropped. The arguments are the guided text: cut at the
    slip, corrected by the local model, then continued by the API as plain text (tool_choice
    "none", the arguments so far its own last message); content stays apart, id and name as
    given."""
    openai_server.script(tool_call("forecast", SLIP, id="call_7", text="Looking."), text("}"))
    target = ScriptedTarget("3")
    reply = wrap(openai_client()).chat.completions.create(
        model="m", messages=MESSAGES, tools=FORECAST, tool_choice=FORCED, target=target
    )
    choice = reply.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content == "Looking."
    (call,) = choice.message.tool_calls or []
    assert (call.id, call.function.name, call.function.arguments) == (
        "call_7",
        "forecast",
        ARGUMENTS,
    )  # type: ignore[union-attr]
    assert reply.guide_result.valid and reply.guide_result.corrections == 1
    assert target.calls == [(KEPT, "terminal")]
    first, second = openai_server.bodies
    assert first["tools"] == FORECAST and first["tool_choice"] == FORCED and first["stream"]
    assert second["tools"] == FORECAST and second["tool_choice"] == "none"
    assert second["messages"][-2] == {"role": "assistant", "content": KEPT + "3"}


def test_content_instead_of_a_call_comes_back_as_given(openai_server: Any, openai_client: Any):
    openai_server.script(text("Oslo will be sunny; no tool needed."))
    reply = wrap(openai_client()).chat.completions.create(
        model="m", messages=MESSAGES, tools=FORECAST
    )
    assert reply.choices[0].message.content == "Oslo will be sunny; no tool needed."
    assert reply.choices[0].message.tool_calls is None
    assert reply.choices[0].finish_reason == "stop"
    assert reply.guide_result.api_calls == 1 and reply.guide_result.text == ""
    assert openai_server.bodies[0]["stream"] is True  # read by the run, not passed through


def test_of_several_calls_the_guided_functions_first_is_guided_the_rest_pass_as_given(
    openai_server: Any, openai_client: Any
):
    calls = (("call_1", "lookup", '{"q": "Oslo"}'), ("call_2", "forecast", COMMA))
    openai_server.script(Reply(tool_calls=calls))
    tools = [*FORECAST, {"type": "function", "function": {"name": "lookup", "parameters": {}}}]
    reply = wrap(openai_client()).chat.completions.create(model="m", messages=MESSAGES, tools=tools)
    got = [
        (c.id, c.function.name, c.function.arguments)
        for c in reply.choices[0].message.tool_calls or []
    ]  # type: ignore[union-attr]
    assert got == [("call_1", "lookup", '{"q": "Oslo"}'), ("call_2", "forecast", ARGUMENTS)]


def test_an_anthropic_tool_use_input_is_guided(anthropic_server: Any, anthropic_client: Any):
    anthropic_server.script(tool_call("forecast", SLIP, id="toolu_1", text="Checking."), text("}"))
    reply = wrap(anthropic_client()).messages.create(
        model="m",
        max_tokens=100,
        messages=MESSAGES,
        tools=CLAUDE_TOOLS,
        tool_choice={"type": "tool", "name": "forecast"},
        target=ScriptedTarget("3"),
    )
    assert reply.stop_reason == "tool_use"
    text_block, use = reply.content
    assert isinstance(text_block, TextBlock) and text_block.text == "Checking."
    assert isinstance(use, ToolUseBlock)
    assert (use.id, use.name, use.input) == ("toolu_1", "forecast", {"city": "Oslo", "days": 3})
    first, second = anthropic_server.bodies
    assert first["tools"] == CLAUDE_TOOLS and first["stream"] is True
    assert second["tools"] == CLAUDE_TOOLS and second["tool_choice"] == {"type": "none"}
    assert second["messages"][-1] == {"role": "assistant", "content": KEPT + "3"}  # prefill


def test_an_anthropic_text_answer_comes_back_as_given(anthropic_server: Any, anthropic_client: Any):
    anthropic_server.script(text("No tool needed."))
    reply = wrap(anthropic_client()).messages.create(
        model="m", max_tokens=100, messages=MESSAGES, tools=CLAUDE_TOOLS
    )
    assert [b.text for b in reply.content if isinstance(b, TextBlock)] == ["No tool needed."]
    assert reply.stop_reason == "end_turn" and reply.guide_result.api_calls == 1


@pytest.mark.anyio
async def test_async_clients_guide_tool_calls(
    openai_server: Any, openai_client: Any, anthropic_server: Any, anthropic_client: Any
):
    openai_server.script(tool_call("forecast", COMMA))
    anthropic_server.script(tool_call("forecast", COMMA))
    async with openai_client(asynchronous=True) as raw_openai:
        chat = await wrap(raw_openai).chat.completions.create(
            model="m", messages=MESSAGES, tools=FORECAST, tool_choice=FORCED
        )
    async with anthropic_client(asynchronous=True) as raw_anthropic:
        message = await wrap(raw_anthropic).messages.create(
            model="m", max_tokens=64, messages=MESSAGES, tools=CLAUDE_TOOLS
        )
    assert chat.choices[0].message.tool_calls[0].function.arguments == ARGUMENTS  # type: ignore[index, union-attr]
    assert isinstance(message.content[0], ToolUseBlock)
    assert message.content[0].input == json.loads(ARGUMENTS)


ANTHROPIC_FORCED = {"type": "tool", "name": "forecast"}
SCHEMA_TEXT = json.dumps(SCHEMA)


@pytest.mark.parametrize(
    ("protocol", "fields", "guided"),
    [
        ("openai", {"tools": FORECAST}, "forecast"),
        ("openai", {"tools": FORECAST, "tool_choice": FORCED}, "forecast"),
        ("openai", {"tools": FORECAST, "tool_choice": "required"}, "forecast"),
        ("openai", {"tools": FORECAST, "tool_choice": "none"}, None),
        ("openai", {"tools": FORECAST, "stream": True}, None),
        ("openai", {"tools": [function("forecast", strict=False)]}, None),
        ("openai", {"tools": [function("forecast", strict=False)], "tool_choice": FORCED}, None),
        ("openai", {"tools": [function("a"), function("forecast")]}, None),
        (
            "openai",
            {"tools": [function("a"), function("forecast")], "tool_choice": FORCED},
            "forecast",
        ),
        ("anthropic", {"tools": CLAUDE_TOOLS}, "forecast"),
        ("anthropic", {"tools": CLAUDE_TOOLS, "tool_choice": ANTHROPIC_FORCED}, "forecast"),
        ("anthropic", {"tools": CLAUDE_TOOLS, "tool_choice": {"type": "none"}}, None),
        ("anthropic", {"tools": [{"type": "web_search_20250305", "name": "web_search"}]}, None),
        ("anthropic", {"tools": [*CLAUDE_TOOLS, {**CLAUDE_TOOLS[0], "name": "b"}]}, None),
    ],
)
def test_which_function_is_guided(protocol: Any, fields: dict[str, Any], guided: str | None):
    expected = None if guided is None else GuidedTool(guided, SCHEMA_TEXT)
    assert guided_tool(fields, protocol) == expected


FORMAT = {"type": "json_schema", "json_schema": {"name": "forecast", "schema": SCHEMA}}


def test_with_a_response_format_the_content_is_guided_and_a_continuation_calls_no_tool(
    openai_server: Any, openai_client: Any
):
    """A response_format guides the content where tools are given too: they go with the fresh
    answer as given, and a continuation of the content asks for tool_choice "none"."""
    openai_server.script(text(SLIP), text("}"))
    reply = wrap(openai_client()).chat.completions.create(
        model="m",
        messages=MESSAGES,
        tools=FORECAST,
        response_format=FORMAT,
        target=ScriptedTarget("3"),
    )
    assert reply.choices[0].message.content == ARGUMENTS
    assert reply.choices[0].message.tool_calls is None
    assert reply.choices[0].finish_reason == "stop"
    first, second = openai_server.bodies
    assert first["tools"] == FORECAST and "tool_choice" not in first
    assert second["tools"] == FORECAST and second["tool_choice"] == "none"


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_with_a_grammar_a_reply_that_only_calls_a_tool_comes_back_as_given(
    kind: str, openai_server: Any, openai_client: Any, anthropic_server: Any, anthropic_client: Any
):
    """Tool-call deltas were dropped, so a call read as an empty reply, retried until the run
    failed; now the calls are kept apart from the guided content, and a reply of calls only
    comes back as the API gave them."""
    server = openai_server if kind == "openai" else anthropic_server
    server.script(tool_call("forecast", '{"city": "Oslo", "days": 3}', id="call_3"))
    if kind == "openai":
        reply = wrap(openai_client()).chat.completions.create(
            model="m", messages=MESSAGES, tools=FORECAST, grammar="json"
        )
        message = reply.choices[0].message
        assert message.content is None and reply.choices[0].finish_reason == "tool_calls"
        got = [(c.id, c.function.name, c.function.arguments) for c in message.tool_calls or []]  # type: ignore[union-attr]
        assert got == [("call_3", "forecast", ARGUMENTS)]
    else:
        claude = wrap(anthropic_client()).messages.create(
            model="m", max_tokens=64, messages=MESSAGES, tools=CLAUDE_TOOLS, grammar="json"
        )
        assert claude.stop_reason == "tool_use"
        (use,) = claude.content
        assert isinstance(use, ToolUseBlock) and use.input == json.loads(ARGUMENTS)
    assert len(server.bodies) == 1
