"""The SDK clients as wrap() gives them back, for a type checker: the SDK's own client, whose
`chat.completions.create` and `responses.create` (OpenAI) or `messages.create` (Anthropic) also
take `grammar=` and then answer a GuidedChatCompletion, a GuidedResponse or a GuidedMessage (the
SDK's type with `guide_result`), or with stream=True a GuidedStream of the SDK's stream items;
OpenAI's `chat.completions.parse` answers a GuidedParsedChatCompletion.

At run time wrap() gives a proxy and these classes are never made: they exist only for type
checkers, and importing this module imports no SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

if TYPE_CHECKING:
    from functools import cached_property

    from anthropic import Anthropic, AsyncAnthropic
    from anthropic import AsyncStream as AnthropicAsyncStream
    from anthropic import Stream as AnthropicStream
    from anthropic.resources import AsyncMessages, Messages
    from anthropic.types import Message, RawMessageStreamEvent
    from openai import AsyncOpenAI, AsyncStream, OpenAI, Stream
    from openai.resources.chat import AsyncChat, AsyncCompletions, Chat, Completions
    from openai.resources.responses import AsyncResponses, Responses
    from openai.types.chat import ChatCompletion, ChatCompletionChunk, ParsedChatCompletion
    from openai.types.responses import Response, ResponseStreamEvent

    from backtrack.trace.result import GuideResult
    from backtrack.wire.guided_stream import AsyncGuidedStream, GuidedStream
    from grammars import GrammarLike

    Parsed = TypeVar("Parsed")

    # -- OpenAI, AsyncOpenAI

    class GuidedChatCompletion(ChatCompletion):
        """The SDK's ChatCompletion with the run's GuideResult."""

        guide_result: GuideResult

    class GuidedParsedChatCompletion(ParsedChatCompletion[Parsed]):
        """The SDK's ParsedChatCompletion with the run's GuideResult."""

        guide_result: GuideResult

    class GuidedCompletions(Completions):
        @overload  # type: ignore[override]
        def create(
            self, *, grammar: GrammarLike, stream: Literal[False] | None = None, **kwargs: Any
        ) -> GuidedChatCompletion: ...
        @overload
        def create(
            self, *, grammar: GrammarLike, stream: Literal[True], **kwargs: Any
        ) -> GuidedStream[ChatCompletionChunk]: ...
        @overload
        def create(
            self, *, stream: Literal[False] | None = None, **kwargs: Any
        ) -> ChatCompletion: ...
        @overload
        def create(
            self, *, stream: Literal[True], **kwargs: Any
        ) -> Stream[ChatCompletionChunk]: ...
        @overload
        def create(
            self, *, stream: bool, **kwargs: Any
        ) -> ChatCompletion | Stream[ChatCompletionChunk]: ...
        def create(self, **kwargs: Any) -> Any: ...
        @overload  # type: ignore[override]
        def parse(
            self, *, response_format: type[Parsed], **kwargs: Any
        ) -> GuidedParsedChatCompletion[Parsed]: ...
        @overload
        def parse(
            self, *, grammar: GrammarLike, **kwargs: Any
        ) -> GuidedParsedChatCompletion[Any]: ...
        def parse(self, **kwargs: Any) -> Any: ...

    class GuidedAsyncCompletions(AsyncCompletions):
        @overload  # type: ignore[override]
        async def create(
            self, *, grammar: GrammarLike, stream: Literal[False] | None = None, **kwargs: Any
        ) -> GuidedChatCompletion: ...
        @overload
        async def create(
            self, *, grammar: GrammarLike, stream: Literal[True], **kwargs: Any
        ) -> AsyncGuidedStream[ChatCompletionChunk]: ...
        @overload
        async def create(
            self, *, stream: Literal[False] | None = None, **kwargs: Any
        ) -> ChatCompletion: ...
        @overload
        async def create(
            self, *, stream: Literal[True], **kwargs: Any
        ) -> AsyncStream[ChatCompletionChunk]: ...
        @overload
        async def create(
            self, *, stream: bool, **kwargs: Any
        ) -> ChatCompletion | AsyncStream[ChatCompletionChunk]: ...
        async def create(self, **kwargs: Any) -> Any: ...
        @overload  # type: ignore[override]
        async def parse(
            self, *, response_format: type[Parsed], **kwargs: Any
        ) -> GuidedParsedChatCompletion[Parsed]: ...
        @overload
        async def parse(
            self, *, grammar: GrammarLike, **kwargs: Any
        ) -> GuidedParsedChatCompletion[Any]: ...
        async def parse(self, **kwargs: Any) -> Any: ...

    class GuidedResponse(Response):
        """The SDK's Response with the run's GuideResult."""

        guide_result: GuideResult

    class GuidedResponses(Responses):
        @overload  # type: ignore[override]
        def create(
            self, *, grammar: GrammarLike, stream: Literal[False] | None = None, **kwargs: Any
        ) -> GuidedResponse: ...
        @overload
        def create(
            self, *, grammar: GrammarLike, stream: Literal[True], **kwargs: Any
        ) -> GuidedStream[ResponseStreamEvent]: ...
        @overload
        def create(self, *, stream: Literal[False] | None = None, **kwargs: Any) -> Response: ...
        @overload
        def create(
            self, *, stream: Literal[True], **kwargs: Any
        ) -> Stream[ResponseStreamEvent]: ...
        @overload
        def create(
            self, *, stream: bool, **kwargs: Any
        ) -> Response | Stream[ResponseStreamEvent]: ...
        def create(self, **kwargs: Any) -> Any: ...

    class GuidedAsyncResponses(AsyncResponses):
        @overload  # type: ignore[override]
        async def create(
            self, *, grammar: GrammarLike, stream: Literal[False] | None = None, **kwargs: Any
        ) -> GuidedResponse: ...
        @overload
        async def create(
            self, *, grammar: GrammarLike, stream: Literal[True], **kwargs: Any
        ) -> AsyncGuidedStream[ResponseStreamEvent]: ...
        @overload
        async def create(
            self, *, stream: Literal[False] | None = None, **kwargs: Any
        ) -> Response: ...
        @overload
        async def create(
            self, *, stream: Literal[True], **kwargs: Any
        ) -> AsyncStream[ResponseStreamEvent]: ...
        @overload
        async def create(
            self, *, stream: bool, **kwargs: Any
        ) -> Response | AsyncStream[ResponseStreamEvent]: ...
        async def create(self, **kwargs: Any) -> Any: ...

    class GuidedChat(Chat):
        @cached_property
        def completions(self) -> GuidedCompletions: ...

    class GuidedAsyncChat(AsyncChat):
        @cached_property
        def completions(self) -> GuidedAsyncCompletions: ...

    class GuidedOpenAI(OpenAI):
        @cached_property
        def chat(self) -> GuidedChat: ...
        @cached_property
        def responses(self) -> GuidedResponses: ...

    class GuidedAsyncOpenAI(AsyncOpenAI):
        @cached_property
        def chat(self) -> GuidedAsyncChat: ...
        @cached_property
        def responses(self) -> GuidedAsyncResponses: ...

    # -- Anthropic, AsyncAnthropic

    class GuidedMessage(Message):
        """The SDK's Message with the run's GuideResult."""

        guide_result: GuideResult

    class GuidedMessages(Messages):
        @overload  # type: ignore[override]
        def create(
            self, *, grammar: GrammarLike, stream: Literal[False] | None = None, **kwargs: Any
        ) -> GuidedMessage: ...
        @overload
        def create(
            self, *, grammar: GrammarLike, stream: Literal[True], **kwargs: Any
        ) -> GuidedStream[RawMessageStreamEvent]: ...
        @overload
        def create(self, *, stream: Literal[False] | None = None, **kwargs: Any) -> Message: ...
        @overload
        def create(
            self, *, stream: Literal[True], **kwargs: Any
        ) -> AnthropicStream[RawMessageStreamEvent]: ...
        @overload
        def create(
            self, *, stream: bool, **kwargs: Any
        ) -> Message | AnthropicStream[RawMessageStreamEvent]: ...
        def create(self, **kwargs: Any) -> Any: ...

    class GuidedAsyncMessages(AsyncMessages):
        @overload  # type: ignore[override]
        async def create(
            self, *, grammar: GrammarLike, stream: Literal[False] | None = None, **kwargs: Any
        ) -> GuidedMessage: ...
        @overload
        async def create(
            self, *, grammar: GrammarLike, stream: Literal[True], **kwargs: Any
        ) -> AsyncGuidedStream[RawMessageStreamEvent]: ...
        @overload
        async def create(
            self, *, stream: Literal[False] | None = None, **kwargs: Any
        ) -> Message: ...
        @overload
        async def create(
            self, *, stream: Literal[True], **kwargs: Any
        ) -> AnthropicAsyncStream[RawMessageStreamEvent]: ...
        @overload
        async def create(
            self, *, stream: bool, **kwargs: Any
        ) -> Message | AnthropicAsyncStream[RawMessageStreamEvent]: ...
        async def create(self, **kwargs: Any) -> Any: ...

    class GuidedAnthropic(Anthropic):
        @cached_property
        def messages(self) -> GuidedMessages: ...

    class GuidedAsyncAnthropic(AsyncAnthropic):
        @cached_property
        def messages(self) -> GuidedAsyncMessages: ...
