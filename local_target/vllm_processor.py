"""backtrack's logits processor for vLLM: corrections written on a vLLM server.

Loaded by vLLM (`--logits-processors local_target.vllm_processor:CorrectionProcessor`, with this
repository on PYTHONPATH; scripts/vllm_serve.py starts it so) and imported only inside vLLM's
environment: it needs vllm, torch, llguidance, numpy and transformers, and of this project only
local_target's decoding modules, which need nothing more.

A request is a correction when its `vllm_xargs` carry `backtrack_grammar` (local_target.
vllm_request says what each argument is). Its prompt is the chat prompt's ids and the committed
text's tokens up to the one healed; the processor advances a matcher for the grammar over those
tokens and, at every step, chooses the token as the local target would (local_target.steps) and
leaves only that token's logit: vLLM's greedy sampler then writes exactly it. Once the correction
stops, only EOS is left, and vLLM ends the request. Where the correction fails, the processor logs
why under the request's label and leaves only the failure token (local_target.vllm_request), the
request's stop token: the client raises ProcessorError. Other requests are left as they are.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import llguidance
import torch
from transformers import AutoTokenizer
from vllm.v1.sample.logits_processor import (  # type: ignore[import-not-found,unused-ignore]
    BatchUpdate,
    LogitsProcessor,
    MoveDirectionality,
)

from local_target.steps import CHOOSE, Steps
from local_target.vllm_request import CorrectionArgs, failure_token
from local_target.vocab import Vocabulary

if TYPE_CHECKING:
    from vllm import SamplingParams  # type: ignore[import-not-found,unused-ignore]

logger = logging.getLogger(__name__)

_GRAMMARS = 64  # compiled grammars kept, the least recently used dropped first


@dataclass
class _Request:
    """A correction in the batch: its label, its decisions, the list vLLM appends its written
    tokens to, and the decision made at each position: the token, and for the model's choice
    whether it was masked (None for a forced token, a stop or the failure token, which the
    decisions have taken already)."""

    label: str
    steps: Steps | None  # None: the request could not start, or failed (logged); it ends
    written: list[int]
    decided: list[tuple[int, bool | None]] = field(default_factory=list)
    taken: int = 0  # how many of `written` the decisions have taken


class CorrectionProcessor(LogitsProcessor):  # type: ignore[misc,unused-ignore]
    """Chooses every token of the corrections in the batch."""

    @classmethod
    def validate_params(cls, sampling_params: SamplingParams) -> None:
        extra = sampling_params.extra_args or {}
        if "backtrack_grammar" in extra:
            CorrectionArgs.of(extra)  # ValueError (HTTP 400) on a malformed argument

    def __init__(self, vllm_config: Any, device: torch.device, is_pin_memory: bool) -> None:
        model_config = vllm_config.model_config
        tokenizer = AutoTokenizer.from_pretrained(model_config.tokenizer)
        self.vocab = Vocabulary(tokenizer, model_config.get_vocab_size())
        self.failure = failure_token(self.vocab, len(tokenizer))
        self._grammars: OrderedDict[tuple[str, int], llguidance.LLMatcher] = OrderedDict()
        self._requests: dict[int, _Request] = {}

    def is_argmax_invariant(self) -> bool:
        return False

    def update_state(self, batch_update: BatchUpdate | None) -> None:
        if batch_update is None:
            return
        for index in batch_update.removed:
            self._requests.pop(index, None)
        for index, params, prompt_ids, written in batch_update.added:
            extra = params.extra_args or {}
            if "backtrack_grammar" in extra:
                self._requests[index] = self._start(CorrectionArgs.of(extra), prompt_ids, written)
            else:
                self._requests.pop(index, None)
        for a, b, direction in batch_update.moved:
            first, second = self._requests.pop(a, None), self._requests.pop(b, None)
            if first is not None:
                self._requests[b] = first
            if second is not None and direction == MoveDirectionality.SWAP:
                self._requests[a] = second

    def apply(self, logits: torch.Tensor) -> torch.Tensor:
        for index, request in self._requests.items():
            token = self._decide(request, logits[index])
            row = torch.full_like(logits[index], float("-inf"))
            row[token] = 0.0
            logits[index] = row
        return logits

    def _decide(self, request: _Request, logits: torch.Tensor) -> int:
        """The token at the request's next position. vLLM also runs the processor on steps
        whose token it then discards (a prompt prefilled in chunks): a choice is taken into the
        decisions only once vLLM has written its token, and made again from the next step's
        logits where it was discarded. Forced tokens and stops do not depend on the logits:
        they are decided once."""
        at = len(request.written)
        try:
            self._take_written(request, at)
            if at < len(request.decided) and request.decided[at][1] is None:
                return request.decided[at][0]
            del request.decided[at:]
            request.decided.append(self._choose(request.steps, logits))
        except Exception as exc:  # the engine must go on: this correction ends here
            logger.warning(
                "backtrack correction %s failed after %d tokens: %s", request.label, at, exc
            )
            request.steps = None
            request.decided[at:] = [(self.failure, None)]
        return request.decided[at][0]

    @staticmethod
    def _take_written(request: _Request, at: int) -> None:
        """Take the choices vLLM has written since the last step into the decisions."""
        if request.steps is not None:
            for token, (_, masked) in zip(
                request.written[request.taken : at],
                request.decided[request.taken : at],
                strict=True,
            ):
                if masked is not None:
                    request.steps.take(token, masked)
        request.taken = at

    def _choose(self, steps: Steps | None, logits: torch.Tensor) -> tuple[int, bool | None]:
        """(token, masked) at a position not decided yet: masked is None for a forced token, a
        stop by the rules (EOS) or the failure token of a correction that could not start, which
        do not depend on the logits; the model's own end (EOS) is a choice like any other."""
        if steps is None:
            return self.failure, None
        planned = steps.plan()
        if planned is None:
            return self.vocab.eos, None
        if planned != CHOOSE:
            return planned, None
        token, masked = steps.choice(logits.float())
        return (self.vocab.eos if token is None else token), masked

    def _start(
        self, args: CorrectionArgs, prompt_ids: list[int] | None, written: list[int]
    ) -> _Request:
        """A correction's state after its prompt (and any tokens already written, when vLLM adds
        a preempted request again)."""
        try:
            text_ids = list(prompt_ids or [])[len(prompt_ids or []) - args.text_tokens :]
            steps = args.steps(self.vocab, self._matcher(args), text_ids)
            steps.replay(list(written))
        except Exception as exc:  # the engine must go on: this request fails at once
            logger.warning("backtrack correction %s refused: %s", args.label, exc)
            steps = None
        decided: list[tuple[int, bool | None]] = [(token, None) for token in written]
        return _Request(args.label, steps, written, decided, len(written))

    def _matcher(self, args: CorrectionArgs) -> llguidance.LLMatcher:
        """A fresh matcher at the start of the request's grammar."""
        key = (args.grammar, args.grammar_items)
        pristine = self._grammars.pop(key, None)
        if pristine is None:
            limits = llguidance.LLParserLimits(max_items_in_row=args.grammar_items)
            pristine = llguidance.LLMatcher(self.vocab.ll, args.grammar, log_level=0, limits=limits)
        self._grammars[key] = pristine
        while len(self._grammars) > _GRAMMARS:
            self._grammars.popitem(last=False)
        copy: llguidance.LLMatcher = pristine.deep_copy()
        return copy
