"""LocalDrafter: a local transformers model as the (unconstrained) black box.

Used when no API key is at hand: the demo lets SmolLM2 draft freely and the same model, masked,
correct. Sharing the KV cache is explicit: a drafter that can draft in the target's session is a
`SessionDrafter`, and when guide()'s target is its model, the run asks it for `in_session(session)`,
a drafter bound to the run's session. Drafts and corrections then share one KV cache, and a
correction after a cut rolls the draft's tokens back instead of feeding the committed text again.
Otherwise each draft gets its own session (the prompt's KV cache is still reused).

The local model lives in local_target and the drafter protocol in providers; neither imports the
other, so the drafter that joins them lives here, above both.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Generator
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from local_target import Sampling
from providers.base import (
    AsyncDrafter,
    AsyncDraftStream,
    Capabilities,
    Drafter,
    DraftRequest,
    DraftStream,
    FinishReason,
)

if TYPE_CHECKING:  # they import torch, which this module needs only once a model is given
    from local_target import LocalTarget, TargetSession

__all__ = ["LocalDrafter", "SessionDrafter"]


@runtime_checkable
class SessionDrafter(Protocol):
    """A drafter that runs on a LocalTarget and can draft in a session of it."""

    @property
    def target(self) -> LocalTarget: ...

    def in_session(self, session: TargetSession) -> Drafter | AsyncDrafter:
        """This drafter, drafting in `session` (one run's; not shared between runs)."""
        ...


class LocalDrafter:
    """Drafts with `target.session(prompt).generate(...)`, greedy unless a sampling is given."""

    capabilities = Capabilities(prefill=True, streaming=True)

    def __init__(
        self,
        target: LocalTarget,
        *,
        sampling: Sampling | None = None,
        session: TargetSession | None = None,
    ) -> None:
        self._target = target
        self.sampling = sampling or Sampling()
        self.session = session

    @property
    def target(self) -> LocalTarget:
        return self._target

    def __repr__(self) -> str:
        return f"LocalDrafter({type(self._target.model).__name__})"

    def in_session(self, session: TargetSession) -> LocalDrafter:
        return LocalDrafter(self._target, sampling=self.sampling, session=session)

    def draft(self, request: DraftRequest) -> DraftStream:
        session = self.session or self._target.session(request.prompt)
        source = self._chunks(session, request)

        def chunks() -> Generator[str, None, None]:
            stream.finish_reason = yield from source

        iterator = chunks()
        stream = DraftStream(iterator, closer=iterator.close)
        return stream

    def _chunks(
        self, session: TargetSession, request: DraftRequest
    ) -> Generator[str, None, FinishReason]:
        """The session's chunks. Returns the finish reason: "length" when the token budget (or
        the model's context) ended the draft, "stop" when the model ended its turn. (Not
        `stream.finished`: that is an API's word, and a local model that writes nothing has
        simply finished.)"""
        start = session.prompt_len + len(self._target.vocab.encode(request.prefix))
        yield from session.generate(
            request.prefix, max_tokens=request.max_tokens, sampling=self.sampling
        )
        return "length" if len(session.ids) - start >= request.max_tokens else "stop"

    async def adraft(self, request: DraftRequest) -> AsyncDraftStream:
        """The model's forward passes run in a worker thread, one chunk at a time."""
        session = self.session
        if session is None:
            session = await asyncio.to_thread(self._target.session, request.prompt)
        source = self._chunks(session, request)

        def step() -> tuple[str | None, FinishReason]:
            """(the next chunk, "unknown"), or (None, the finish reason) at the end."""
            try:
                return next(source), "unknown"
            except StopIteration as end:
                return None, end.value

        async def chunks() -> AsyncIterator[str]:
            while True:
                chunk, reason = await asyncio.to_thread(step)
                if chunk is None:
                    stream.finish_reason = reason
                    return
                yield chunk

        async def close() -> None:
            source.close()

        stream = AsyncDraftStream(chunks(), closer=close)
        return stream
