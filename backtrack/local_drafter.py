"""LocalDrafter: a local transformers model as the (unconstrained) black box.

Used when no API key is at hand: the demo lets SmolLM2 draft freely and the same model, masked,
correct. When guide()'s target is this drafter's model, drafts run in the request's target
session (`DraftRequest.session`): drafts and corrections share one KV cache, and a correction
after a cut rolls the draft's tokens back instead of feeding the committed text again. Otherwise
each draft gets its own session (the prompt's KV cache is still reused).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from providers.base import AsyncDraftStream, Capabilities, DraftRequest, DraftStream

__all__ = ["LocalDrafter"]


class LocalDrafter:
    """Drafts with `target.session(prompt).generate(...)`, greedy unless a temperature is given."""

    capabilities = Capabilities(prefill=True, streaming=True)

    def __init__(self, target: Any, *, temperature: float = 0.0, seed: int | None = None) -> None:
        from local_target import Sampling

        self.target = target
        self.sampling = Sampling(temperature, 1.0, seed)

    def __repr__(self) -> str:
        return f"LocalDrafter({type(self.target.model).__name__})"

    def draft(self, request: DraftRequest) -> DraftStream:
        session = request.session
        if session is None or session.target is not self.target:
            session = self.target.session(request.prompt)
        chunks = session.generate(
            request.prefix, max_tokens=request.max_tokens, sampling=self.sampling
        )
        return DraftStream(chunks, closer=chunks.close)

    async def adraft(self, request: DraftRequest) -> AsyncDraftStream:
        import asyncio

        sync = self.draft(request)
        done = object()

        async def chunks() -> AsyncIterator[str]:
            while (chunk := await asyncio.to_thread(next, sync.chunks, done)) is not done:
                yield str(chunk)

        async def close() -> None:
            sync.close()

        return AsyncDraftStream(chunks(), closer=close)
