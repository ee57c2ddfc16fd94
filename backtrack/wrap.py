"""wrap(client): the same SDK client, with a `grammar=` argument on its create calls.

    client = wrap(OpenAI())
    reply = client.chat.completions.create(model=..., messages=..., grammar="json")
    reply.choices[0].message.content        # the guided text: always parses
    reply.guide_result                      # the GuideResult: trace, counts, to_html()

Works for OpenAI, AsyncOpenAI (chat.completions.create) and Anthropic, AsyncAnthropic
(messages.create). Without `grammar=` a call goes to the SDK untouched, and so does everything else
on the client. The response is the SDK's usual type (a subclass carrying `guide_result`).
"""

from __future__ import annotations

import functools
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from backtrack.run.guide import aguide, guide
from backtrack.run.options import GuideOptions, option_names, resolve
from backtrack.trace.result import GuideResult
from grammars import GrammarLike
from local_target import LocalTarget
from providers.anthropic import AnthropicDrafter
from providers.base import Message, check_prompt
from providers.openai import OpenAIChatDrafter


class _Proxy:
    """Attribute access goes to `inner`, except for the names in `overrides`."""

    def __init__(self, inner: Any, **overrides: Any) -> None:
        self._inner = inner
        self._overrides = overrides

    def __getattr__(self, name: str) -> Any:
        if name in self._overrides:
            return self._overrides[name]
        return getattr(self._inner, name)

    def __repr__(self) -> str:
        return f"wrap({self._inner!r})"


def _is_async(client: Any) -> bool:
    return type(client).__name__.startswith("Async")


def wrap(
    client: Any,
    *,
    target: LocalTarget | None = None,
    options: GuideOptions | None = None,
    **option_changes: Any,
) -> Any:
    """`client` with `grammar=` on `chat.completions.create` (OpenAI) or `messages.create`
    (Anthropic). `target` (the local model) and `options` (a GuideOptions, or single options as
    keywords) apply to every guided call. A guided call may change them for itself by name
    (`create(..., grammar="json", max_corrections=2, target=...)`) or give `guide_options=`; its
    `max_tokens` is the budget of each draft request (max_draft_tokens)."""
    defaults = resolve("wrap", options, option_changes, also=("target", "options"))
    kind = type(client).__module__.split(".", 1)[0]
    if kind == "openai":
        completions = client.chat.completions
        create = _openai_create(client, completions.create, _Defaults(target, defaults))
        chat = _Proxy(client.chat, completions=_Proxy(completions, create=create))
        return _Proxy(client, chat=chat)
    if kind == "anthropic":
        create = _anthropic_create(client, client.messages.create, _Defaults(target, defaults))
        return _Proxy(client, messages=_Proxy(client.messages, create=create))
    raise TypeError(f"wrap() takes an OpenAI or Anthropic client, not {type(client).__name__}")


@dataclass(frozen=True)
class _Defaults:
    """What wrap() was given for every guided call."""

    target: LocalTarget | None
    options: GuideOptions


@dataclass(frozen=True)
class _Call:
    """One guided create() call, taken apart: the drafter, the grammar, and guide()'s arguments."""

    drafter: OpenAIChatDrafter | AnthropicDrafter
    grammar: GrammarLike
    prompt: list[Message]
    target: LocalTarget | None
    options: GuideOptions


def _split(kwargs: dict[str, Any], defaults: _Defaults) -> tuple[GrammarLike, GuideOptions]:
    """(grammar, options) taken out of a create() call's kwargs; what is left goes to the API."""
    if kwargs.get("stream"):
        raise ValueError("grammar= does not combine with stream=True: the result is checked whole")
    kwargs.pop("stream", None)
    changes = {name: kwargs.pop(name) for name in option_names() if name in kwargs}
    for name in ("max_tokens", "max_completion_tokens"):
        if name in kwargs:
            changes["max_draft_tokens"] = kwargs.pop(name)
    options = resolve("create", kwargs.pop("guide_options", None) or defaults.options, changes)
    return kwargs.pop("grammar"), options


def _required(kwargs: dict[str, Any], name: str) -> Any:
    if name not in kwargs:
        raise TypeError(f"create() needs {name}= (with grammar= as without)")
    return kwargs.pop(name)


def _messages(kwargs: dict[str, Any]) -> list[Message]:
    """The call's `messages=`, checked before any request: a list of chat messages."""
    messages = _required(kwargs, "messages")
    problem = "" if isinstance(messages, (list, tuple)) else f"not {type(messages).__name__}"
    if not problem:
        try:
            check_prompt(messages)
        except TypeError as exc:
            problem = str(exc)
    if problem:
        raise TypeError(
            "messages= must be a list of chat messages (dicts with 'role' and 'content'): "
            + problem
        )
    return list(messages)


def _guided_create(
    client: Any,
    original: Callable[..., Any],
    setup: Callable[[dict[str, Any]], _Call],
    respond: Callable[[str, GuideResult], Any],
) -> Callable[..., Any]:
    """`create` (or async `acreate`) that runs guide() when given `grammar=`, else `original`.
    `setup(kwargs)` takes the call apart; `respond(model, result)` gives the SDK response."""
    if _is_async(client):

        async def acreate(*args: Any, **kwargs: Any) -> Any:
            if "grammar" not in kwargs:
                return await original(*args, **kwargs)
            call = setup(kwargs)
            result = await aguide(
                call.drafter,
                call.grammar,
                prompt=call.prompt,
                target=call.target,
                options=call.options,
            )
            return respond(call.drafter.model, result)

        return acreate

    def create(*args: Any, **kwargs: Any) -> Any:
        if "grammar" not in kwargs:
            return original(*args, **kwargs)
        call = setup(kwargs)
        result = guide(
            call.drafter, call.grammar, prompt=call.prompt, target=call.target, options=call.options
        )
        return respond(call.drafter.model, result)

    return create


def _openai_create(client: Any, original: Any, defaults: _Defaults) -> Callable[..., Any]:
    def setup(kwargs: dict[str, Any]) -> _Call:
        grammar, options = _split(kwargs, defaults)
        target = kwargs.pop("target", defaults.target)
        model, messages = _required(kwargs, "model"), _messages(kwargs)
        drafter = OpenAIChatDrafter(client, model, **kwargs)
        return _Call(drafter, grammar, messages, target, options)

    return _guided_create(client, original, setup, chat_completion)


def _anthropic_create(client: Any, original: Any, defaults: _Defaults) -> Callable[..., Any]:
    def setup(kwargs: dict[str, Any]) -> _Call:
        grammar, options = _split(kwargs, defaults)
        target = kwargs.pop("target", defaults.target)
        model, messages = _required(kwargs, "model"), _messages(kwargs)
        if "system" in kwargs:
            messages.insert(0, {"role": "system", "content": kwargs.pop("system")})
        drafter = AnthropicDrafter(client, model, **kwargs)
        return _Call(drafter, grammar, messages, target, options)

    return _guided_create(client, original, setup, anthropic_message)


@functools.cache
def _guided_chat_completion() -> Any:
    from openai.types.chat import ChatCompletion

    class GuidedChatCompletion(ChatCompletion):
        guide_result: Any = None

    return GuidedChatCompletion


@functools.cache
def _guided_message() -> Any:
    from anthropic.types import Message

    class GuidedMessage(Message):
        guide_result: Any = None

    return GuidedMessage


def chat_completion(model: str, result: GuideResult) -> Any:
    """`result` as the SDK's ChatCompletion (a subclass carrying `guide_result`)."""
    from openai.types.chat import ChatCompletionMessage
    from openai.types.chat.chat_completion import Choice
    from openai.types.completion_usage import CompletionUsage

    usage = result.usage
    return _guided_chat_completion()(
        id=f"backtrack-{uuid.uuid4().hex}",
        object="chat.completion",
        created=int(time.time()),
        model=model,
        choices=[
            Choice(
                index=0,
                finish_reason="stop" if result.valid else "length",
                message=ChatCompletionMessage(role="assistant", content=result.text),
            )
        ],
        usage=CompletionUsage(
            prompt_tokens=usage.input_tokens,
            completion_tokens=usage.output_tokens,
            total_tokens=usage.input_tokens + usage.output_tokens,
        ),
        guide_result=result,
    )


def anthropic_message(model: str, result: GuideResult) -> Any:
    """`result` as the SDK's Message (a subclass carrying `guide_result`)."""
    from anthropic.types import TextBlock
    from anthropic.types import Usage as AnthropicUsage

    return _guided_message()(
        id=f"msg_backtrack_{uuid.uuid4().hex}",
        type="message",
        role="assistant",
        model=model,
        content=[TextBlock(type="text", text=result.text)],
        stop_reason="end_turn" if result.valid else "max_tokens",
        stop_sequence=None,
        usage=AnthropicUsage(
            input_tokens=result.usage.input_tokens, output_tokens=result.usage.output_tokens
        ),
        guide_result=result,
    )
