"""Compiled grammars by the spec a request gave, for requests that send the same one again."""

from __future__ import annotations

from collections import OrderedDict

import anyio

from backtrack.serve.compile_workers import TRIALS
from backtrack.serve.errors import ServeError, to_serve_error
from backtrack.serve.fields import GrammarSpec
from grammars import Grammar, GrammarLimits


class GrammarCache:
    """The last `size` grammars used, by spec; one not there is compiled within `limits` and
    `compile_seconds` (a 400 past either): first in a worker process that is killed past the
    time (backtrack.serve.compile_workers), then in a thread of this one."""

    def __init__(self, limits: GrammarLimits, compile_seconds: float, size: int = 64) -> None:
        self.limits = limits
        self.compile_seconds = compile_seconds
        self.size = size
        self._grammars: OrderedDict[GrammarSpec, Grammar] = OrderedDict()

    async def get(self, spec: GrammarSpec) -> Grammar:
        """The compiled grammar, from the cache or compiled now."""
        cached = self._grammars.get(spec)
        if cached is not None:
            self._grammars.move_to_end(spec)
            return cached
        try:
            # First in a worker process, killed past the limit: a compile that runs over stops.
            finished = await anyio.to_thread.run_sync(
                TRIALS.trial, spec, self.limits, self.compile_seconds, abandon_on_cancel=True
            )
            if finished:  # then here, in about the time it took there
                with anyio.fail_after(self.compile_seconds):
                    grammar = await anyio.to_thread.run_sync(
                        spec.compile, self.limits, abandon_on_cancel=True
                    )
        except TimeoutError:
            finished = False
        except Exception as exc:
            raise to_serve_error(exc) from exc
        if not finished:
            raise ServeError(
                400,
                f"the grammar in `{spec.field}` took longer than {self.compile_seconds:g} s "
                "to compile",
                code="grammar_too_costly",
                param=spec.field,
            )
        self._grammars[spec] = grammar
        if len(self._grammars) > self.size:
            self._grammars.popitem(last=False)
        return grammar
