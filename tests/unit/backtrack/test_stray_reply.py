"""A continuation that never left the string it began in, and ended there (backtrack.run.
stray_reply): asked to go on from a text cut inside a string, SmolLM2 through llama.cpp answered
as to a chat, `I'm ready to help. What can I do for you?`, twice, and both were kept as the
string's content. Such a reply is left out, counted as lost, and the target finishes the text.

The real openai SDK talks HTTP to a local server that replays fixed replies (tests/support/
servers.py); the target is a ScriptedTarget, so a test fails if a correction is asked for that
the test did not script.
"""

from __future__ import annotations

from typing import Any

import providers
from backtrack import guide, wrap
from tests.support.scripted import ScriptedTarget
from tests.support.servers import text

CUT = '{"name": "Ann", "hobbies": ["chess", "'
CHAT = "I'm ready to help. What can I do for you?"


def _run(openai_server: Any, openai_client: Any, continuation: str, target: ScriptedTarget) -> Any:
    openai_server.script(text(CUT, finish_reason="length"), text(continuation))
    client = wrap(openai_client(), target=target)
    reply = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "Ann"}], grammar="json"
    )
    return reply.guide_result


def test_a_chat_reply_inside_an_open_string_is_left_out(
    openai_server: Any, openai_client: Any
) -> None:
    target = ScriptedTarget('go"]}')
    result = _run(openai_server, openai_client, CHAT, target)
    assert result.text == CUT + 'go"]}'
    assert (result.valid, result.api_calls, len(openai_server.bodies)) == (True, 2, 2)
    assert [(d.reason, d.text) for d in result.drops] == [("stray", CHAT)]
    assert result.lost_chars == len("".join(CHAT.split()))
    assert target.calls == [(CUT, "close")]  # the target finishes and closes: no third call


def test_a_continuation_that_leaves_the_string_is_kept(
    openai_server: Any, openai_client: Any
) -> None:
    result = _run(openai_server, openai_client, 'go", "tennis"]}', ScriptedTarget())
    assert result.text == CUT + 'go", "tennis"]}'
    assert (result.valid, result.api_calls, result.drops) == (True, 2, ())


def test_a_held_continuation_is_never_passed_on(openai_server: Any, openai_client: Any) -> None:
    """What is passed on as final never changes: the continuation is held back while it stays
    in its string, so the text left out was never passed on."""
    openai_server.script(text(CUT, finish_reason="length"), text(CHAT, chunk_size=2))
    pieces: list[str] = []
    drafter = providers.OpenAIChatDrafter(openai_client(), "m")
    result = guide(
        drafter, "json", prompt="Ann", target=ScriptedTarget('go"]}'), on_text=pieces.append
    )
    assert "".join(pieces) == result.text == CUT + 'go"]}'
    assert [d.reason for d in result.drops] == ["stray"]
