"""llguidance, the engine every grammar is compiled for: the byte vocabulary every check runs
over, matchers compiled on a thread with a large stack, and the engine's errors as GrammarError.
"""

from __future__ import annotations

import functools
import logging
import re
import threading
import time
from collections.abc import Callable
from typing import ClassVar

import llguidance

from grammars.errors import GrammarError

__all__ = ["EOS", "Matchers", "byte_tokenizer"]

logger = logging.getLogger(__name__)

EOS = 256


class _ByteVocabulary:
    """The tokenizer shape llguidance wants, with one token per byte value."""

    eos_token_id = EOS
    bos_token_id = None
    tokens: ClassVar[list[bytes]] = [bytes([i]) for i in range(256)] + [b"<eos>"]
    special_token_ids: ClassVar[list[int]] = [EOS]

    def __call__(self, text: str | bytes) -> list[int]:
        return list(text if isinstance(text, bytes) else text.encode("utf-8"))


@functools.cache
def byte_tokenizer() -> llguidance.LLTokenizer:
    """The shared byte-level LLTokenizer (built on first use, not at import)."""
    return llguidance.LLTokenizer(llguidance.TokenizerWrapper(_ByteVocabulary()), slices=[])


# llguidance reports positions as "at 3(14): ..." or "3(14): ..." (line, column; 1-based).
_POSITION = re.compile(r"^(?:at )?(\d+)\((\d+)\):\s*(.*)$")
# llguidance numbers symbols with 16 bits and asserts when a grammar has more.
_TOO_MANY_SYMBOLS = "grammar.symbols.len() < u16::MAX"
# The engine compiles rules recursively; compiling on a thread with this stack keeps the depth it
# can take (GrammarLimits.max_depth) independent of the caller's thread.
_COMPILE_STACK = 64 << 20
_compile_lock = threading.Lock()


def _engine_error(message: str, source: str | None) -> GrammarError:
    """GrammarError from an llguidance message. Positions are kept only when `source` is the text
    they refer to (Lark text the user wrote); the reason on an `error: ` line is appended."""
    if _TOO_MANY_SYMBOLS in message:
        return GrammarError(
            "the grammar has more than 65,525 symbols (rules, terminals and the parts of their "
            "alternatives), the most llguidance can number"
        )
    first, _, rest = message.strip().partition("\n")
    reason = next((ln.strip() for ln in rest.splitlines() if ln.strip().startswith("error: ")), "")
    found = _POSITION.match(first)
    what = found[3] if found else first or "invalid grammar"
    if reason:
        what = f"{what.rstrip(': ')}: {reason.removeprefix('error: ')}"
    if found and source is not None:
        return GrammarError(what, line=int(found[1]), column=int(found[2]), source=source)
    return GrammarError(what)


def _compile(
    tokenizer: llguidance.LLTokenizer, ll_grammar: str, limits: llguidance.LLParserLimits
) -> llguidance.LLMatcher:
    """A new matcher, compiled on a thread with a 64 MiB stack (the engine recurses once per rule
    level, about 3 KB a level; a caller's thread may have as little as 512 KB)."""
    built: list[llguidance.LLMatcher] = []
    started = time.perf_counter()

    def run() -> None:
        built.append(llguidance.LLMatcher(tokenizer, ll_grammar, log_level=0, limits=limits))

    with _compile_lock:  # the stack size is process-wide: set it for this thread only
        previous = threading.stack_size(_COMPILE_STACK)
        try:
            worker = threading.Thread(target=run, name="backtrack-compile", daemon=True)
            worker.start()
        finally:
            threading.stack_size(previous)
    worker.join()
    logger.debug(
        "compiled a %d-byte grammar for a %d-token vocabulary in %.3f s",
        len(ll_grammar),
        tokenizer.vocab_size,
        time.perf_counter() - started,
    )
    return built[0]


class Matchers:
    """The pristine matchers of one grammar, one per tokenizer, each compiled on first use; a
    check works on a copy (`deep_copy`), so a pristine matcher is never advanced. Thread-safe.

    `source`: the text the engine's line and column refer to, kept in its errors (None: none)."""

    def __init__(
        self, ll_grammar: str, limits: llguidance.LLParserLimits, source: str | None
    ) -> None:
        self._ll_grammar = ll_grammar
        self._limits = limits
        self._source = source
        self._lock = threading.Lock()
        # keyed by id(tokenizer); the tokenizer is kept alive beside its matcher (few exist)
        self._pristine: dict[int, tuple[llguidance.LLTokenizer, llguidance.LLMatcher]] = {}

    def pristine(self, tokenizer: llguidance.LLTokenizer) -> llguidance.LLMatcher:
        """The pristine matcher over `tokenizer`. Raises GrammarError where the engine refuses
        the grammar."""
        with self._lock:
            entry = self._pristine.get(id(tokenizer))
            if entry is None:
                pristine = _compile(tokenizer, self._ll_grammar, self._limits)
                if pristine.is_error():
                    raise _engine_error(pristine.get_error(), self._source)
                entry = self._pristine[id(tokenizer)] = (tokenizer, pristine)
            return entry[1]

    def renewer(self, tokenizer: llguidance.LLTokenizer) -> Callable[[], llguidance.LLMatcher]:
        """A function that compiles the pristine matcher anew, for when its lexer (which every copy
        shares) reached its limit of states: without it, every later check would fail too."""

        def renew() -> llguidance.LLMatcher:
            with self._lock:
                self._pristine.pop(id(tokenizer), None)
            return self.pristine(tokenizer)

        return renew
