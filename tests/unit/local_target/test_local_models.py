"""SmolLM2 as the black box: as a LocalDrafter beside the target (one KV cache), and served by
the local protocol servers to the real OpenAI and Anthropic SDKs (tests/support/servers.py
`serving`).

Unconstrained SmolLM2 slips on these prompts; whatever it writes, guide() must end with text the
grammar matches and a trace that shows each reply as it came: its spans other than a repair's
edits are, in order, what the drafter wrote (what was read of it), and the output spans are the
text.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import pairwise
from typing import Any

import pytest

from backtrack import Grammar, guide
from backtrack.cli.commands import DEMO_SCHEMA
from backtrack.local_drafter import LocalDrafter, SessionDrafter
from backtrack.trace.record import OUTPUT_ORIGINS
from backtrack.trace.result import GuideResult
from local_target import LocalTarget
from providers import AnthropicDrafter, OpenAIChatDrafter, OpenAICompletionsDrafter
from providers.base import DraftRequest
from tests.support.servers import MockServer, serving

pytestmark = pytest.mark.e2e

PROMPT = "Give a JSON object with the name, color and age of a cat."
SETTINGS = {"max_corrections": 4, "max_draft_tokens": 64, "completion_tokens": 64}


def check_trace(result: GuideResult, grammar: Grammar, sent: list[str], *, read: bool) -> None:
    """The output parses; draft round i shows `sent[i]`, what the drafter wrote for request i,
    in order: all of it when `read` (it records what was read), else its start (a stream closed
    early); the output is the output spans."""
    assert grammar.matches(result.text), (result.stop_reason, result.text)
    drafts = [r.index for r in result.trace.rounds if r.kind == "draft"]
    assert len(drafts) == len(sent) == result.api_calls
    for index, written in zip(drafts, sent, strict=True):
        shown = "".join(
            s.text for s in result.trace.spans if s.round == index and s.origin != "edit"
        )
        same = shown == written if read else written.startswith(shown)
        assert same, (index, shown, written)
    output = "".join(s.text for s in result.trace.spans if s.origin in OUTPUT_ORIGINS)
    assert output == result.text


def spans(result: GuideResult) -> list[tuple[int, str, str]]:
    return [(s.round, s.origin, s.text) for s in result.trace.spans]


def fed_tokens(monkeypatch: pytest.MonkeyPatch, target: LocalTarget) -> list[int]:
    """Counts the tokens each forward pass of `target` feeds."""
    fed: list[int] = []
    forward = target.forward

    def counting(ids: list[int], cache: Any, rows: int = 1) -> Any:
        fed.append(len(ids))
        return forward(ids, cache, rows)

    monkeypatch.setattr(target, "forward", counting)
    return fed


def test_local_drafter_shares_the_targets_kv_cache(
    smollm2: LocalTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Drafts run in the target's session: a correction rolls the draft's tokens back, and the
    next draft goes on from the correction, instead of feeding the committed text again. Against
    the same model drafting in a fresh session each time: same text, fewer tokens fed."""
    # The age as a string: SmolLM2's `"age": 2` is a cut mid-document, and a draft follows the
    # correction (under DEMO_SCHEMA its only cut is after the last key, and the run ends there).
    text = {"type": "string"}
    grammar = Grammar.from_json_schema(
        DEMO_SCHEMA | {"properties": {"name": text, "color": text, "age": text}}
    )

    written: list[str] = []  # per request, what was read of the fresh session's draft

    def fresh_sessions(prompt: Any, prefix: str) -> Iterator[str]:
        written.append("")
        limit = SETTINGS["max_draft_tokens"]
        for piece in smollm2.session(prompt).generate(prefix, max_tokens=limit):
            written[-1] += piece
            yield piece

    smollm2.session(PROMPT)  # both runs start with the prompt's KV cache at hand
    fed = fed_tokens(monkeypatch, smollm2)
    # Without edits, so that SmolLM2's draft takes a correction (an edit mends it otherwise).
    settings = SETTINGS | {"repair_window": 0}
    shared = guide(LocalDrafter(smollm2), grammar, prompt=PROMPT, target=smollm2, **settings)
    shared_fed = sum(fed)
    fed.clear()
    separate = guide(fresh_sessions, grammar, prompt=PROMPT, target=smollm2, **settings)
    check_trace(separate, grammar, written, read=True)
    # A draft after a correction.
    kinds = [r.kind for r in shared.trace.rounds]
    assert ("correction", "draft") in pairwise(kinds), kinds
    assert spans(shared) == spans(separate)
    assert shared.api_calls == separate.api_calls
    assert shared_fed + len(smollm2.vocab.encode(shared.text[:10])) < sum(fed)


@pytest.mark.parametrize("kind", ["openai-chat", "openai-completions", "anthropic"])
def test_servers_serving_smollm2(
    kind: str,
    smollm2: LocalTarget,
    openai_server: MockServer,
    anthropic_server: MockServer,
    openai_client: Any,
    anthropic_client: Any,
) -> None:
    """The SDKs talk HTTP to a server whose replies SmolLM2 writes: chat with instruction and
    alignment, the completions endpoint with a chat-formatted prompt, Anthropic with prefill."""
    grammar = Grammar.from_json_schema(DEMO_SCHEMA)
    prompt: str = PROMPT
    drafter: Any
    if kind == "openai-chat":
        openai_server.responder = serving(smollm2)
        drafter = OpenAIChatDrafter(openai_client(), "smollm2")
    elif kind == "openai-completions":
        openai_server.responder = serving(smollm2)
        drafter = OpenAICompletionsDrafter(openai_client(), "smollm2")
        messages = [{"role": "user", "content": PROMPT}]
        prompt = smollm2.tokenizer.apply_chat_template(
            messages, add_generation_prompt=True, tokenize=False
        )
    else:
        anthropic_server.responder = serving(smollm2)
        drafter = AnthropicDrafter(anthropic_client(), "smollm2")
    result = guide(drafter, grammar, prompt=prompt, target=smollm2, **SETTINGS)
    server = anthropic_server if kind == "anthropic" else openai_server
    replies = [e.reply.text for e in server.wait() if e.reply is not None]
    check_trace(result, grammar, replies, read=False)
    assert result.accepted_chars > 0


def test_the_progress_wrapper_keeps_a_local_drafter_sharing_the_session(
    smollm2: LocalTarget,
) -> None:
    """The command line wraps its drafter for progress; around a LocalDrafter the wrapper is still
    a SessionDrafter, so guide() drafts in the target's session. Around an API drafter it is not."""
    from backtrack.cli.models import watched
    from backtrack.cli.progress import Progress
    from providers import FunctionDrafter

    progress = Progress(quiet=True)
    local = watched(LocalDrafter(smollm2), progress, "local")
    assert isinstance(local, SessionDrafter) and local.target is smollm2
    session = smollm2.session(PROMPT)
    bound = local.in_session(session)
    assert not isinstance(bound, SessionDrafter)
    assert "".join(bound.draft(DraftRequest(PROMPT, "", 4)))
    assert len(session.ids) > session.prompt_len  # it drafted in the session it was given
    api = watched(FunctionDrafter(lambda prompt, prefix: ""), progress, "fn")
    assert not isinstance(api, SessionDrafter)
