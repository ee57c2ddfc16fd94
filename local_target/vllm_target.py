"""VllmTarget: corrections written by a vLLM server that runs backtrack's logits processor.

The server (scripts/vllm_serve.py) holds the model; this side holds only its tokenizer. A
correction is one completion request (local_target.vllm_request): the prompt's ids and the
committed text's tokens, the grammar, when to stop. The processor chooses every token as the local
target's decoding does; this side walks the tokens it gets back through the same decisions
(local_target.steps), which checks them and gives each its flag, the text, and the stop reason.
Where the processor fails a correction, the request ends at its stop token (local_target.
vllm_request's `failure_token`), and the correction raises ProcessorError where it failed.
vLLM's prefix caching keeps what corrections of one request share, in place of the local target's
KV rollback, and its batching runs the corrections of concurrent requests together.

Sessions have the local target's `correct` and `likeliest` (the run's Session, local_target.
engine); what they lack is said where it is asked for.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from local_target.comments import refused_openers
from local_target.correction import Correction
from local_target.errors import ProcessorError, TargetError
from local_target.model import common_prefix
from local_target.policy import DEFAULT_POLICY, Until
from local_target.prompt import Prompt, prompt_ids, tokens_left
from local_target.repeats import OwnText
from local_target.sampling import Sampling
from local_target.vllm_request import CorrectionArgs, failure_token
from local_target.vocab import Vocabulary

if TYPE_CHECKING:
    from grammars.grammar import Grammar
    from local_target.steps import Steps

logger = logging.getLogger(__name__)

# Tokens the server may write past `max_tokens`: a correction goes on to finish a character or
# the healed token, and ends with EOS.
_SLACK = 16


class VllmTarget:
    """A vLLM server at `base_url` (its OpenAI-compatible root, ending in /v1) serving the model
    whose tokenizer is in `tokenizer_folder`, with backtrack's logits processor loaded."""

    def __init__(
        self, base_url: str, tokenizer_folder: str | Path, *, model: str | None = None
    ) -> None:
        from openai import OpenAI
        from transformers import AutoConfig, AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(tokenizer_folder)
        n_logits = int(AutoConfig.from_pretrained(tokenizer_folder).vocab_size)
        self.vocab = Vocabulary(self.tokenizer, n_logits)
        self.failure = failure_token(self.vocab, len(self.tokenizer))
        self.client = OpenAI(base_url=base_url, api_key="unused", max_retries=0, timeout=600)
        try:
            self.model, self.context_length = self._served(base_url, model)
        except BaseException:
            self.client.close()
            raise

    def close(self) -> None:
        """Close the connections to the server (`with VllmTarget(...) as target:` does it)."""
        self.client.close()

    def __enter__(self) -> VllmTarget:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _served(self, base_url: str, model: str | None) -> tuple[str, int | None]:
        """The model the server serves (`model`, else the first it lists) and its context (the
        `max_model_len` vLLM lists with it; None where it is not listed, or `model` was given and
        the listing failed)."""
        from openai import OpenAIError

        try:
            listed = self.client.models.list().data
            entry = next(m for m in listed if model is None or m.id == model)
        except (OpenAIError, StopIteration) as exc:
            if model is not None:
                return model, None
            raise TargetError(f"no model listed by the vLLM server at {base_url}: {exc}") from exc
        length = (entry.model_extra or {}).get("max_model_len")
        return entry.id, length if isinstance(length, int) and length > 0 else None

    def tokens_left(self, prompt: Prompt, text: str) -> int | None:
        """The tokens the served model's context has left after `prompt` and `text` (negative
        where they pass it; local_target.engine.CountsTokens); None where it is not known."""
        return tokens_left(self.context_length, self.tokenizer, self.vocab, prompt, text)

    def session(self, prompt: Prompt) -> VllmSession:
        return VllmSession(self, prompt_ids(self.tokenizer, prompt, self.vocab.eos))


class VllmSession:
    """One request's prompt on a VllmTarget. The server keeps no state between calls but its
    prefix cache."""

    def __init__(self, target: VllmTarget, prompt_ids: list[int]) -> None:
        self.target = target
        self.prompt_ids = prompt_ids
        self._own = OwnText()  # what the model wrote up to the last correction's end

    def correct(
        self,
        text: str,
        grammar: Grammar,
        *,
        max_tokens: int = 32,
        until: Until = "terminal",
        sampling: Sampling | None = None,
        heal: bool = True,
        cancel: threading.Event | None = None,
        hint: str = "",
    ) -> Correction:
        """TargetSession.correct on the server, with the default DecodingPolicy (its comment
        openers and what the model wrote in the corrections before sent along). `hint` only
        speeds the local target up, so it is not sent; `cancel` is checked before the request.
        ProcessorError where the server's processor failed the correction."""
        del hint  # the same tokens without it
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
        if cancel is not None and cancel.is_set():
            raise TargetError("cancelled before the request; nothing was sent")
        start = time.perf_counter()
        vocab = self.target.vocab
        text_ids = vocab.encode(text)
        heal_id = text_ids.pop() if heal and text_ids else -1
        sampling = sampling or Sampling()
        args = CorrectionArgs(
            grammar=grammar.ll_grammar,
            grammar_items=grammar.limits.row_items + len(grammar.ll_grammar),
            text_tokens=len(text_ids),
            heal=heal_id,
            until=until,
            max_tokens=max_tokens,
            temperature=sampling.temperature,
            top_p=sampling.top_p,
            seed=-1 if sampling.seed is None else sampling.seed,
            openers=CorrectionArgs.sent_openers(refused_openers(grammar, DEFAULT_POLICY)),
            earlier=self._own.before(text).hex(),
            label=f"bt-{uuid.uuid4().hex[:12]}",
        )
        steps = args.steps(vocab, grammar.matcher(vocab.ll), text_ids)  # checks the text first
        tokens, failed = self._complete([*self.prompt_ids, *text_ids], args)
        if failed:
            raise _failure(steps, text_ids, tokens, args.label)
        steps.replay(tokens)
        correction = _correction(steps, time.perf_counter() - start)
        self._own.wrote(text, correction.text, steps.own)
        return correction

    def likeliest(self, texts: list[str]) -> int:
        """The index of the text the model finds likeliest after the prompt, among texts that
        differ only in their ends: the log-probability of each one's tokens after the tokens they
        all start with, all scored whole in one request (`prompt_logprobs`), where the local
        session scores its few finalists by their first token. The first of equal scores wins."""
        encoded = [self.target.vocab.encode(text) for text in texts]
        if len(texts) < 2 or not all(encoded):
            return 0
        shared = min(common_prefix(encoded[0], ids) for ids in encoded)
        shared = min(shared, *(len(ids) - 1 for ids in encoded))  # each scores a token at least
        prompts = [[*self.prompt_ids, *ids] for ids in encoded]
        response = self._request(
            "scoring", prompt=prompts, max_tokens=1, extra_body={"prompt_logprobs": 0}
        )
        start = len(self.prompt_ids) + shared
        scores = [0.0] * len(texts)
        for choice in response.choices:
            rows = (choice.model_extra or {}).get("prompt_logprobs") or []
            ids = prompts[choice.index]
            if len(rows) != len(ids):
                raise TargetError("the vLLM server gave no log-probability for each prompt token")
            scores[choice.index] = sum(
                rows[at][str(ids[at])]["logprob"] for at in range(start, len(ids))
            )
        logger.debug("likeliest of %d texts: scores %s", len(texts), scores)
        return max(range(len(texts)), key=scores.__getitem__)

    def _request(self, what: str, **fields: Any) -> Any:
        """A completion request to the server, greedy; its failure a TargetError."""
        from openai import OpenAIError

        target = self.target
        try:
            return target.client.completions.create(model=target.model, temperature=0.0, **fields)
        except OpenAIError as exc:
            raise TargetError(f"the vLLM server refused the {what}: {exc}") from exc

    def _complete(self, ids: list[int], args: CorrectionArgs) -> tuple[list[int], bool]:
        """The tokens the server wrote after `ids`, its closing EOS or failure token left off,
        and whether the processor failed the correction there."""
        target = self.target
        response = self._request(
            "correction",
            prompt=ids,
            max_tokens=args.max_tokens + _SLACK,
            extra_body={
                "vllm_xargs": args.xargs(),
                "return_token_ids": True,
                "stop_token_ids": [target.failure],
            },
        )
        choice = response.choices[0]
        extra: dict[str, Any] = choice.model_extra or {}
        tokens = list(extra.get("token_ids") or [])
        if choice.finish_reason == "stop" and extra.get("stop_reason") == target.failure:
            if tokens[-1:] == [target.failure]:
                tokens.pop()
            return tokens, True
        if choice.finish_reason != "stop" or not tokens or tokens[-1] != target.vocab.eos:
            raise TargetError(
                f"the vLLM server ended the correction without EOS ({choice.finish_reason}):"
                " is backtrack's logits processor loaded?"
            )
        return tokens[:-1], False


def _failure(steps: Steps, text_ids: list[int], tokens: list[int], label: str) -> ProcessorError:
    """The processor's failure after `tokens`, counted up to the first one these decisions refuse
    too: where the processor failed taking a token it had written, the local target fails there."""
    taken = 0
    with contextlib.suppress(TargetError):
        for token in tokens:
            steps.replay([token])
            taken += 1
    done = steps.vocab.decode([*text_ids, *tokens[:taken]])
    chars = len(done.decode("utf-8", "ignore"))  # the whole characters before it
    return ProcessorError(label, taken, chars, len(done))


def _correction(steps: Steps, seconds: float) -> Correction:
    """The correction `steps` replayed, which took `seconds`."""
    written = steps.written()
    logger.debug(
        "vLLM correction: %d tokens, stop %s, %.3f s",
        len(written.tokens),
        written.stop_reason,
        seconds,
    )
    return Correction(
        text=written.text,
        tokens=written.tokens,
        flags=written.flags,
        complete=bool(steps.matcher.is_accepting()),
        stop_reason=written.stop_reason,
        healed_bytes=steps.healed_bytes,
        seconds=seconds,
        forward_seconds=seconds,
        mask_seconds=0.0,
        forward_passes=len(written.tokens) + 1,
        runs=written.runs,
    )
