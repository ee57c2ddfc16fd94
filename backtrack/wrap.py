"""wrap(client): the same SDK client, with a `grammar=` argument on its create calls.

    client = wrap(OpenAI())
    reply = client.chat.completions.create(model=..., messages=..., grammar="json")
    reply.choices[0].message.content        # the guided text: always parses
    reply.guide_result                      # the GuideResult: trace, counts, to_html()

Works for OpenAI, AsyncOpenAI (chat.completions.create and .parse, responses.create) and
Anthropic, AsyncAnthropic (messages.create). The grammar may also come as the SDK's own
structured-output argument: chat's `response_format` (parse()'s pydantic model too), Responses'
`text={"format": ...}`, Anthropic's `output_format` or `output_config={"format": ...}`
(backtrack.wire, `Shape.take_format`), or as strict tools (`Shape.guided_tool`); a format is then
not sent upstream. Without a grammar a call goes to the SDK untouched, and so does everything else
on the client. The response is the SDK's usual type (a subclass carrying `guide_result`); parse()
answers a ParsedChatCompletion whose message's `parsed` is the model's instance. With stream=True
the answer is a GuidedStream (AsyncGuidedStream) of the SDK's stream items, the text as it becomes
final, its `guide_result` set once the last item is out (backtrack.wire.guided_stream). A type
checker sees the SDK's client back, its create() taking `grammar=` too
(backtrack.wire.guided_clients).
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, overload

from backtrack.run.guide import AsyncGuideRun, aguide, guide, guide_pieces
from backtrack.run.options import GuideOptions, option_names, resolve, unknown_option
from backtrack.trace.result import GuideResult
from backtrack.wire import anthropic_messages, openai_chat, openai_responses
from backtrack.wire.anthropic_messages import AnthropicMessages
from backtrack.wire.guided_stream import AsyncGuidedStream, GuidedStream
from backtrack.wire.openai_chat import OpenAIChat
from backtrack.wire.openai_responses import OpenAIResponses
from backtrack.wire.shape import EventStream, SdkDrafter, Shape, asks_for_grammar
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
    from local_target import Target

# How a guided create() call is read: (client, kwargs) -> (drafter, prompt); `kwargs` is what is
# left once the grammar and the options are out.
ReadKwargs = Callable[[Any, dict[str, Any]], tuple[SdkDrafter, list[Message]]]
# How the result is answered: (model, result, what a tool call carried besides) -> the SDK's
# response.
Respond = Callable[[str, GuideResult, ToolReply | None], Any]


@dataclass(frozen=True)
class _Replies:
    """How one SDK method is guided (backtrack.wire): `shape` says whether a call asks for a
    grammar (`asks_for_grammar`); `read` takes the call apart; `respond` is the SDK's reply;
    `events(model, stream_options)` its stream's events, for stream=True (None: the method does
    not stream)."""

    shape: Shape
    read: ReadKwargs
    respond: Respond
    events: Callable[[str, dict[str, Any]], EventStream] | None


_CHAT = _Replies(
    OpenAIChat(), openai_chat.read_kwargs, openai_chat.chat_completion, openai_chat.chat_stream
)
_CHAT_PARSE = dataclasses.replace(_CHAT, respond=openai_chat.parsed_chat_completion, events=None)
_RESPONSES = _Replies(
    OpenAIResponses(),
    openai_responses.read_kwargs,
    openai_responses.response,
    lambda model, stream_options: openai_responses.ResponseStream(model),
)
_MESSAGES = _Replies(
    AnthropicMessages(),
    anthropic_messages.read_kwargs,
    anthropic_messages.message,
    lambda model, stream_options: anthropic_messages.MessageStream(model),
)


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
    target: Target | None = None,
    options: GuideOptions | None = None,
    **option_changes: Any,
) -> GuidedOpenAI: ...
@overload
def wrap(
    client: AsyncOpenAI,
    *,
    target: Target | None = None,
    options: GuideOptions | None = None,
    **option_changes: Any,
) -> GuidedAsyncOpenAI: ...
@overload
def wrap(
    client: Anthropic,
    *,
    target: Target | None = None,
    options: GuideOptions | None = None,
    **option_changes: Any,
) -> GuidedAnthropic: ...
@overload
def wrap(
    client: AsyncAnthropic,
    *,
    target: Target | None = None,
    options: GuideOptions | None = None,
    **option_changes: Any,
) -> GuidedAsyncAnthropic: ...
def wrap(
    client: Any,
    *,
    target: Target | None = None,
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
        completions = client.chat.completions
        create = _guided(client, completions.create, defaults, _CHAT)
        parse = _guided(client, completions.parse, defaults, _CHAT_PARSE)
        chat = _Proxy(client.chat, completions=_Proxy(completions, create=create, parse=parse))
        responses = _Proxy(
            client.responses, create=_guided(client, client.responses.create, defaults, _RESPONSES)
        )
        return _Proxy(client, chat=chat, responses=responses)
    if kind is not None and kind.sdk == "anthropic":
        create = _guided(client, client.messages.create, defaults, _MESSAGES)
        return _Proxy(client, messages=_Proxy(client.messages, create=create))
    raise TypeError(f"wrap() takes an OpenAI or Anthropic client, not {type(client).__name__}")


@dataclass(frozen=True)
class _Defaults:
    """What wrap() was given for every guided call."""

    target: Target | None
    options: GuideOptions


@dataclass(frozen=True)
class _Call:
    """One guided create() call, taken apart: the drafter, the grammar, guide()'s arguments, and
    how its result is answered (for stream=True, the reply's events; None: not streamed)."""

    drafter: SdkDrafter
    grammar: GrammarLike
    prompt: list[Message]
    target: Target | None
    options: GuideOptions
    respond: Respond
    events: EventStream | None

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


def _split(
    kwargs: dict[str, Any], defaults: _Defaults
) -> tuple[GrammarLike, GuideOptions, dict[str, Any] | None]:
    """(grammar, options, the stream_options of stream=True or None) taken out of a create()
    call's kwargs; what is left goes to the API (the drafter streams it in its own way; a
    caller's `stream_options` go with it, beside the usage the drafter asks for)."""
    stream = kwargs.pop("stream", None)
    stream_options = dict(kwargs.get("stream_options") or {})
    changes = {name: kwargs.pop(name) for name in option_names() if name in kwargs}
    for name in ("max_tokens", "max_completion_tokens", "max_output_tokens"):
        if name in kwargs:
            changes["max_draft_tokens"] = kwargs.pop(name)
    options = resolve("create", kwargs.pop("guide_options", None) or defaults.options, changes)
    return kwargs.pop("grammar"), options, stream_options if stream else None


def _take_apart(
    client: Any,
    original: Callable[..., Any],
    defaults: _Defaults,
    replies: _Replies,
    kwargs: dict[str, Any],
) -> _Call:
    """A guided call's `kwargs` taken apart (`replies.read`), what is left going upstream."""
    grammar, options, stream = _split(kwargs, defaults)
    streams = replies.events
    if stream is not None and streams is None:
        raise TypeError("this call does not stream: create(..., stream=True) does")
    target = kwargs.pop("target", defaults.target)
    tool = kwargs.pop("guided_tool", None)  # set by `asks_for_grammar`, from the tools
    _refuse_mistyped_options(kwargs, original)
    drafter, prompt = replies.read(client, {**kwargs, "guided_tool": tool} if tool else kwargs)
    events = None if stream is None or streams is None else streams(drafter.model, stream)
    return _Call(drafter, grammar, prompt, target, options, replies.respond, events)


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
    client: Any, original: Callable[..., Any], defaults: _Defaults, replies: _Replies
) -> Callable[..., Any]:
    """`create` (or async `acreate`) that runs guide() where the call asks for a grammar
    (`grammar=`, the shape's structured-output field, strict tools: `asks_for_grammar`), else
    `original` (the SDK's `create` or `parse`). With stream=True it answers a GuidedStream
    (AsyncGuidedStream) of the SDK's stream items; else `replies.respond(model, result, tool
    reply)`."""
    shape = replies.shape
    kind = client_kind(client)
    if kind is not None and kind.is_async:

        async def acreate(*args: Any, **kwargs: Any) -> Any:
            if not asks_for_grammar(kwargs, shape):
                return await original(*args, **kwargs)
            call = _take_apart(client, original, defaults, replies, kwargs)
            if call.events is not None:
                return AsyncGuidedStream(
                    lambda on_text: AsyncGuideRun(
                        call.drafter, call.grammar, on_text=on_text, **call.arguments()
                    ),
                    call.events,
                )
            try:
                return call.answer(await aguide(call.drafter, call.grammar, **call.arguments()))
            except NoGuidedCall as exc:
                return call.answer(exc)

        return acreate

    def create(*args: Any, **kwargs: Any) -> Any:
        if not asks_for_grammar(kwargs, shape):
            return original(*args, **kwargs)
        call = _take_apart(client, original, defaults, replies, kwargs)
        if call.events is not None:
            pieces = guide_pieces(call.drafter, call.grammar, **call.arguments())
            return GuidedStream(pieces, call.events)
        try:
            return call.answer(guide(call.drafter, call.grammar, **call.arguments()))
        except NoGuidedCall as exc:
            return call.answer(exc)

    return create
