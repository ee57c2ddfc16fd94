"""The base of the SDK drafters: one client, one create call, one stream reader, sync or async.

An SDKDrafter holds the client (a copy with the SDK's retries off: providers.retry), knows from it
whether it is sync or async (providers.clients), and starts each draft: `draft()` with a sync
client, `adraft()` with an async one; the other pairing raises TypeError. The stream it returns is
read by providers.sdk_stream. A protocol's drafter (providers.openai, providers.anthropic) writes
only what differs:

    reserved                    the create kwargs the drafter sets itself (TypeError if given)
    request_id_header           the response header that holds the request id
    _endpoint()                 the SDK resource whose `create()` streams the reply
    _prepare(request)           the SDKRequest for a DraftRequest: create() arguments, aligner
    _read_event(event, stream)  the text one stream event carries (usage, finish reason noted)
    _failed(exc, sdk_request)   the error for a request that did not start (translated as is)

With `guided_tool` (a function's name) the draft's text is that function's arguments; with tools
in the create kwargs and none guided, the content is, and the calls are kept apart
(providers.tool_calls): `_create_kwargs` says how a request goes, `reading_tools` how its reply
is read, and `tool_reply` holds what the last fresh answer carried besides.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from providers.align import Aligner
from providers.base import AsyncDraftStream, Capabilities, DraftRequest, DraftStream
from providers.clients import client_kind
from providers.errors import ProviderError, masked_cause, remember_keys
from providers.retry import without_sdk_retries
from providers.sdk_errors import mapped_exceptions, to_provider_error
from providers.sdk_stream import AnyStream, async_stream, header, sync_stream
from providers.tool_calls import ToolReply, calling_none

__all__ = ["SDKDrafter", "SDKRequest"]


@dataclass(frozen=True)
class SDKRequest:
    """One request ready to send: the `create()` keyword arguments; the aligner of its reply (None
    when the reply continues the text as it is); whether it asks the model to continue a final
    assistant message (prefill)."""

    kwargs: dict[str, Any]
    aligner: Aligner | None
    prefilled: bool = False


class SDKDrafter:
    """A drafter over an OpenAI or Anthropic SDK client: what every protocol's drafter shares."""

    reserved: ClassVar[frozenset[str]]
    tool_choice_none: ClassVar[object] = "none"  # the protocol's tool_choice that calls no tool
    request_id_header: ClassVar[str]
    capabilities: Capabilities

    def __init__(self, client: Any, model: str, create_kwargs: dict[str, Any]) -> None:
        clash = self.reserved & create_kwargs.keys()
        if clash:
            raise TypeError(f"set by the drafter, not by create kwargs: {', '.join(sorted(clash))}")
        kind = client_kind(client)
        if kind is None:
            raise TypeError(f"not an OpenAI or Anthropic SDK client: {type(client).__name__}")
        self.is_async = kind.is_async
        remember_keys(client)
        self.client = without_sdk_retries(client)
        self.model = model
        self.create_kwargs = create_kwargs
        self.guided_tool: str | None = None
        self.tool_reply: ToolReply | None = None
        self.reading_tools = False

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r})"

    def _create_kwargs(self, request: DraftRequest) -> dict[str, Any]:
        """The create kwargs for `request`. With tools (or a guided tool), a fresh answer goes
        with them and its reply is read as a new `tool_reply`; once text is committed, a draft
        may call no tool (`tool_choice_none`): its reply's text continues the text."""
        extra = self.create_kwargs.get("extra_body")
        tools = "tools" in self.create_kwargs or (isinstance(extra, dict) and "tools" in extra)
        self.reading_tools = (tools or self.guided_tool is not None) and not request.prefix
        if self.reading_tools:
            self.tool_reply = ToolReply(self.guided_tool)
        if tools and request.prefix:
            return calling_none(self.create_kwargs, self.tool_choice_none)
        return dict(self.create_kwargs)

    def _endpoint(self) -> Any:
        raise NotImplementedError

    def _prepare(self, request: DraftRequest) -> SDKRequest:
        raise NotImplementedError

    def _read_event(self, event: Any, stream: AnyStream) -> str | None:
        raise NotImplementedError

    def _failed(self, exc: BaseException, sdk_request: SDKRequest) -> ProviderError:
        return to_provider_error(exc)

    def _request_id(self, sdk_stream: Any) -> str | None:
        return header(getattr(sdk_stream, "response", None), self.request_id_header)

    def draft(self, request: DraftRequest) -> DraftStream:
        """Start a streamed request (sync client). Raises ProviderError when it fails."""
        if self.is_async:
            raise TypeError(f"{self!r} has an async client: use adraft() (aguide)")
        sdk_request = self._prepare(request)
        try:
            sdk_stream = self._endpoint().create(**sdk_request.kwargs)
        except mapped_exceptions() as exc:
            raise self._failed(exc, sdk_request) from masked_cause(exc)
        return sync_stream(
            sdk_stream,
            self._read_event,
            request_id=self._request_id(sdk_stream),
            aligner=sdk_request.aligner,
            max_tokens=request.max_tokens,
        )

    async def adraft(self, request: DraftRequest) -> AsyncDraftStream:
        """Start a streamed request (async client). Raises ProviderError when it fails."""
        if not self.is_async:
            raise TypeError(f"{self!r} has a sync client: use draft() (guide)")
        sdk_request = self._prepare(request)
        try:
            sdk_stream = await self._endpoint().create(**sdk_request.kwargs)
        except mapped_exceptions() as exc:
            raise self._failed(exc, sdk_request) from masked_cause(exc)
        return async_stream(
            sdk_stream,
            self._read_event,
            request_id=self._request_id(sdk_stream),
            aligner=sdk_request.aligner,
            max_tokens=request.max_tokens,
        )
