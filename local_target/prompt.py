"""A prompt's token ids, as every target sends it to its model."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from local_target.vocab import Vocabulary

Prompt = str | Sequence[dict[str, Any]]


def prompt_ids(tokenizer: Any, prompt: Prompt, eos: int) -> list[int]:
    """Token ids of `prompt`: through the chat template when the tokenizer has one (a str is then
    one user message), else the plain text (messages joined); never empty (BOS, else `eos`)."""
    if getattr(tokenizer, "chat_template", None):
        messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else prompt
        text = tokenizer.apply_chat_template(
            list(messages), add_generation_prompt=True, tokenize=False
        )
        ids: list[int] = tokenizer(text, add_special_tokens=False)["input_ids"]
        return ids
    if not isinstance(prompt, str):
        prompt = "\n".join(str(m.get("content", "")) for m in prompt)
    ids = tokenizer(prompt)["input_ids"]
    if not ids:
        ids = [tokenizer.bos_token_id if tokenizer.bos_token_id is not None else eos]
    return ids


def tokens_left(
    context: int | None, tokenizer: Any, vocab: Vocabulary, prompt: Prompt, text: str
) -> int | None:
    """The tokens a `context` has left after `prompt` and `text` as a session sends them to the
    model (negative where they pass it; local_target.engine.CountsTokens); None where the context
    is not known."""
    if context is None:
        return None
    return context - len(prompt_ids(tokenizer, prompt, vocab.eos)) - len(vocab.encode(text))
