"""The local target's errors."""

from __future__ import annotations

from grammars.errors import BacktrackError, PartialResult


class TargetError(BacktrackError):
    """The local target model failed or was used wrongly. When it ends a guided generation,
    `partial` is the GuideResult of the work committed before it (else None)."""

    def __init__(self, message: str, *, partial: PartialResult | None = None) -> None:
        self.partial = partial
        super().__init__(message)


class ProcessorError(TargetError):
    """backtrack's logits processor failed a correction on a vLLM server (local_target.
    vllm_processor): the grammar's state went bad, or choosing a token raised. It wrote `tokens`
    tokens first; the next would have gone at `char_offset` (`byte_offset` in UTF-8) of the text,
    counted from the committed text's start. The server's log says why, under `label`."""

    def __init__(self, label: str, tokens: int, char_offset: int, byte_offset: int) -> None:
        self.label = label
        self.tokens = tokens
        self.char_offset = char_offset
        self.byte_offset = byte_offset
        super().__init__(
            f"backtrack's logits processor failed correction {label} on the vLLM server after"
            f" {tokens} tokens, at character {char_offset} (byte {byte_offset}) of the text;"
            f" the server's log says why (look for {label})"
        )
