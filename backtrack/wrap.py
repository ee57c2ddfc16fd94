"""wrap(client): the same SDK client, with a `grammar=` argument on its create calls.

    client = wrap(OpenAI())
    reply = client.chat.completions.create(model=..., messages=..., grammar="json")
    reply.choices[0].message.content        # the guided text: always parses
    reply.guide_result                      # the GuideResult: trace, counts, to_html()

Works for OpenAI, AsyncOpenAI (chat.completions.create, responses.create) and Anthropic,
AsyncAnthropic (messages.create). The grammar may also come as the SDK's own structured-output
argument: chat's `response_format`, Responses' `text={"format": ...}`, Anthropic's `output_format`
or `output_config={"format": ...}` (backtrack.wire, `Shape.take_format`); it is then not sent
upstream. Without a grammar a call goes to the SDK untouched, and so does everything else on the
client. The response is the SDK's usual type (a subclass carrying `guide_result`). A type checker
sees the SDK's client back, its create() taking `grammar=` too (backtrack.wire.guided_clients).
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, overload

from backtrack.run.guide import aguide, guide
from backtrack.run.options import GuideOptions, option_names, resolve, unknown_option
from backtrack.trace.result import GuideResult
from backtrack.wire import anthropic_messages, openai_chat, openai_responses
from backtrack.wire.anthropic_messages import AnthropicMessages
from backtrack.wire.openai_chat import OpenAIChat
from backtrack.wire.openai_responses import OpenAIResponses
from backtrack.wire.shape import SdkDrafter, Shape, asks_for_grammar
from grammars import GrammarLike
from providers.base import Message
from providers.clients import client_kind
from providers.tool_calls import NoGuidedCall, ToolReply

if TYPE_CHECKING:
    from anthropic import Anthropic, AsyncAnthropic
    from openai import AsyncOpenAI, OpenAI

    from backtrack.wire.guided_clients import (
        GuidedAnthropic,
        GuidedAsyncAnthropic,
        GuidedAsyncOpenAI,
        GuidedOpenAI,
    )
    from local_target import LocalTarget

# How a guided create() call is read: (client, kwargs) -> (drafter, prompt); `kwargs` is what is
# left once the grammar and the options are out.
ReadKwargs = Callable[[Any, dict[str, Any]], tuple[SdkDrafter, list[Message]]]
# How the result is answered: (model, result, what a tool call carried besides) -> the SDK's
# response.
Respond = Callable[[str, GuideResult, ToolReply | None], Any]


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


@overload
def wrap(
    client: OpenAI,
    *,
    target: LocalTarget | None = None,
    options: GuideOptions | None = None,
    **option_changes: Any,
) -> GuidedOpenAI: ...
@overload
def wrap(
    client: AsyncOpenAI,
    *,
    target: LocalTarget | None = None,
    options: GuideOptions | None = None,
    **option_changes: Any,
) -> GuidedAsyncOpenAI: ...
@overload
def wrap(
    client: Anthropic,
    *,
    target: LocalTarget | None = None,
    options: GuideOptions | None = None,
    **option_changes: Any,
) -> GuidedAnthropic: ...
@overload
def wrap(
    client: AsyncAnthropic,
    *,
    target: LocalTarget | None = None,
    options: GuideOptions | None = None,
    **option_changes: Any,
) -> GuidedAsyncAnthropic: ...
def wrap(
    client: Any,
    *,
    target: LocalTarget | None = None,
    options: GuideOptions | None = None,
    **option_changes: Any,
) -> Any:
    """`client` with `grammar=` on `chat.completions.create` and `responses.create` (OpenAI) or
    `messages.create` (Anthropic). `target` (the local model) and `options` (a GuideOptions, or
    single options as keywords) apply to every guided call. A guided call may change them for
    itself by name (`create(..., grammar="json", max_corrections=2, target=...)`) or give
    `guide_options=`; its `max_tokens` (`max_output_tokens`) is the budget of each draft request
    (max_draft_tokens)."""
    defaults = _Defaults(
        target, resolve("wrap", options, option_changes, also=("target", "options"))
    )
    kind = client_kind(client)
    if kind is not None and kind.sdk == "openai":
        chat = _guided(
            client,
            client.chat.completions,
            defaults,
            OpenAIChat(),
            openai_chat.read_kwargs,
            openai_chat.chat_completion,
        )
        responses = _guided(
            client,
            client.responses,
            defaults,
            OpenAIResponses(),
            openai_responses.read_kwargs,
            openai_responses.response,
        )
        return _Proxy(client, chat=_Proxy(client.chat, completions=chat), responses=responses)
    if kind is not None and kind.sdk == "anthropic":
        messages = _guided(
            client,
            client.messages,
            defaults,
            AnthropicMessages(),
            anthropic_messages.read_kwargs,
            anthropic_messages.message,
        )
        return _Proxy(client, messages=messages)
    raise TypeError(f"wrap() takes an OpenAI or Anthropic client, not {type(client).__name__}")


@dataclass(frozen=True)
class _Defaults:
    """What wrap() was given for every guided call."""

    target: LocalTarget | None
    options: GuideOptions


@dataclass(frozen=True)
class _Call:
    """One guided create() call, taken apart: the drafter, the grammar, guide()'s arguments, and
    how its result is answered."""

    drafter: SdkDrafter
    grammar: GrammarLike
    prompt: list[Message]
    target: LocalTarget | None
    options: GuideOptions
    respond: Respond

    def arguments(self) -> dict[str, Any]:
        """guide()'s keywords besides the drafter and the grammar."""
        return {"prompt": self.prompt, "target": self.target, "options": self.options}

    def answer(self, result: GuideResult | NoGuidedCall) -> Any:
        """The SDK's response; a reply that called no guided function as the upstream gave it."""
        if isinstance(result, NoGuidedCall):
            if not isinstance(result.partial, GuideResult):
                raise result
            result = result.partial
        return self.respond(self.drafter.model, result, self.drafter.tool_reply)


def _split(kwargs: dict[str, Any], defaults: _Defaults) -> tuple[GrammarLike, GuideOptions]:
    """(grammar, options) taken out of a create() call's kwargs; what is left goes to the API."""
    if kwargs.get("stream"):
        raise ValueError("grammar= does not combine with stream=True: the result is checked whole")
    kwargs.pop("stream", None)
    changes = {name: kwargs.pop(name) for name in option_names() if name in kwargs}
    for name in ("max_tokens", "max_completion_tokens", "max_output_tokens"):
        if name in kwargs:
            changes["max_draft_tokens"] = kwargs.pop(name)
    options = resolve("create", kwargs.pop("guide_options", None) or defaults.options, changes)
    return kwargs.pop("grammar"), options


def _refuse_mistyped_options(kwargs: dict[str, Any], original: Callable[..., Any]) -> None:
    """A TypeError, as guide() gives, for a keyword that the SDK's create() does not take and
    that is close to one of backtrack's options (`max_correction=`): sent on, it would fail
    inside the drafter as an SDK error."""
    try:
        taken = inspect.signature(original).parameters
    except (TypeError, ValueError):  # no signature to read: the SDK decides
        return
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in taken.values()):
        return
    for name in kwargs:
        if name not in taken and difflib.get_close_matches(name, option_names(), n=1):
            raise unknown_option("create", name, also=_CREATE_KEYWORDS)


_CREATE_KEYWORDS = ("grammar", "target", "guide_options")


def _guided(
    client: Any,
    resource: Any,
    defaults: _Defaults,
    shape: Shape,
    read: ReadKwargs,
    respond: Respond,
) -> _Proxy:
    """The SDK `resource` (`chat.completions`, `responses`, `messages`) whose `create` (or async
    `create`) runs guide() where the call asks for a grammar (`grammar=`, the shape's
    structured-output field, strict tools: `asks_for_grammar`), else the SDK's own. `read` takes
    the call apart (the shape's `read_kwargs`); `respond(model, result, tool reply)` gives the
    SDK response."""
    original = resource.create

    def setup(kwargs: dict[str, Any]) -> _Call:
        grammar, options = _split(kwargs, defaults)
        target = kwargs.pop("target", defaults.target)
        tool = kwargs.pop("guided_tool", None)  # set by `asks_for_grammar`, from the tools
        _refuse_mistyped_options(kwargs, original)
        drafter, prompt = read(client, {**kwargs, "guided_tool": tool} if tool else kwargs)
        return _Call(drafter, grammar, prompt, target, options, respond)

    kind = client_kind(client)
    if kind is not None and kind.is_async:

        async def acreate(*args: Any, **kwargs: Any) -> Any:
            if not asks_for_grammar(kwargs, shape):
                return await original(*args, **kwargs)
            call = setup(kwargs)
            try:
                return call.answer(await aguide(call.drafter, call.grammar, **call.arguments()))
            except NoGuidedCall as exc:
                return call.answer(exc)

        return _Proxy(resource, create=acreate)

    def create(*args: Any, **kwargs: Any) -> Any:
        if not asks_for_grammar(kwargs, shape):
            return original(*args, **kwargs)
        call = setup(kwargs)
        try:
            return call.answer(guide(call.drafter, call.grammar, **call.arguments()))
        except NoGuidedCall as exc:
            return call.answer(exc)

    return _Proxy(resource, create=create)
