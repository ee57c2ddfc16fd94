"""A JSON document with one slip, and the responder that serves a ScriptedAPI through the local
protocol servers (tests/support/servers.py): it reads the committed prefix out of each request
and replies with the API's text from there. It never reads the grammar."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from providers.align import CONTINUE_INSTRUCTION
from tests.support.scripted import ScriptedAPI
from tests.support.servers import Reply, text

DOC = '{"a": [1, 2, 3], "b": null}'
SLIP = '{"a": [1, 2, 3}, "b": null}'  # the first reply: a bracket closed with the wrong brace
PROMPT = f"Reply with this JSON value only:\n{DOC}"
KEPT = '{"a": [1, 2, 3'  # the start of SLIP the grammar takes


def sent_prefix(kind: str, body: dict[str, Any]) -> str:
    """The committed text as the request shows it (Anthropic: without trailing blanks)."""
    if kind == "openai-completions":
        prompt = body["prompt"]
        assert prompt.startswith(PROMPT)
        return str(prompt[len(PROMPT) :])
    messages = body["messages"]
    if kind == "openai-chat":
        if messages[-1] == {"role": "user", "content": CONTINUE_INSTRUCTION}:
            assert messages[-2]["role"] == "assistant"
            return str(messages[-2]["content"])
        assert messages == [{"role": "user", "content": PROMPT}]
        return ""
    if messages[-1]["role"] == "assistant":
        return str(messages[-1]["content"])
    assert messages == [{"role": "user", "content": PROMPT}]
    return ""


Respond = Callable[[dict[str, Any]], Reply]


def responder(
    kind: str, api: ScriptedAPI, *, usage: tuple[int, int] = (7, 3), delay: float = 0.0
) -> Respond:
    """Serves `api`: each request's committed prefix goes to `api.reply`, whose text streams in
    chunks of 4 characters, `delay` seconds before each."""

    def respond(body: dict[str, Any]) -> Reply:
        return text(api.reply(sent_prefix(kind, body)), chunk_size=4, usage=usage, delay=delay)

    return respond
