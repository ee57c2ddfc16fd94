"""The output layer apart from the model's body: next-token logits for every token, or only for the
tokens the grammar allows ("selective multiplication").

The output layer multiplies the last hidden state by one row per vocabulary entry. With a large
vocabulary it is a large share of a forward pass (Gemma-3-270M: 262,144 rows of 640, more
multiply-adds than all its layers), and where the grammar allows a few hundred tokens the other
rows are wasted. So a forward pass stops at the hidden states (`Next`), and the logits are computed
when a choice needs them: all of them, or the allowed rows only.

Split this way, a model must give the same logits as its own forward pass; `OutputHead.of` checks
that on a probe and returns None where it does not (a model that scales its logits in its own
way), and the target then keeps whole logits.
"""

from __future__ import annotations

from typing import Any

import torch


class OutputHead:
    """A causal LM's output layer (its output embedding, then the final soft-capping if the
    model has one)."""

    def __init__(self, model: Any) -> None:
        self.module = model.get_output_embeddings()
        config = model.config.get_text_config()
        self.softcap: float | None = getattr(config, "final_logit_softcapping", None)

    @classmethod
    def of(cls, model: Any, probe: list[int]) -> OutputHead | None:
        """The head of `model` when the body's last hidden state through it gives the model's own
        logits on `probe` (token ids); else None."""
        head = cls(model)
        ids = torch.tensor([probe], device=next(model.parameters()).device)
        with torch.inference_mode():
            whole = model(input_ids=ids).logits[0, -1].float()
            hidden = model.base_model(input_ids=ids).last_hidden_state[0, -1]
            split = head(hidden).float()
        scale = whole.abs().max().clamp(min=1.0)
        return head if torch.allclose(split, whole, atol=1e-4 * float(scale)) else None

    def __call__(self, hidden: torch.Tensor, ids: torch.Tensor | None = None) -> torch.Tensor:
        """Logits from one hidden state [H]: for every row [V], or for the rows `ids` [k]."""
        if ids is None:
            logits: torch.Tensor = self.module(hidden)  # the module itself: its hooks run
        else:
            weight = self.module.weight.index_select(0, ids.to(self.module.weight.device))
            bias = self.module.bias
            logits = torch.nn.functional.linear(
                hidden, weight, None if bias is None else bias.index_select(0, ids)
            )
        if self.softcap:
            logits = torch.tanh(logits / self.softcap) * self.softcap
        return logits


class Pass:
    """The hidden states one forward pass kept (its last positions), and their logits, computed
    for all of them at once when first asked: one multiplication reads the output layer once,
    however many positions it serves (speculation keeps several)."""

    def __init__(self, hidden: torch.Tensor | None, head: OutputHead | None) -> None:
        self.hidden = hidden  # [k, H]
        self.head = head
        self.full: torch.Tensor | None = None  # [k, V]

    @classmethod
    def of_logits(cls, logits: torch.Tensor) -> Pass:
        """Logits already computed in full [k, V]."""
        made = cls(None, None)
        made.full = logits
        return made

    def rows(self) -> list[Next]:
        """One Next for each position kept."""
        kept = self.full if self.full is not None else self.hidden
        assert kept is not None
        return [Next(self, i) for i in range(len(kept))]

    def logits(self) -> torch.Tensor:
        if self.full is None:
            assert self.hidden is not None and self.head is not None
            with torch.inference_mode():
                self.full = self.head(self.hidden)
        return self.full


class Next:
    """The model's output after a token sequence (row `index` of a forward pass): its next-token
    logits, computed from the last hidden state when first asked (`logits`), or for some tokens
    only (`logits_for`)."""

    def __init__(self, source: Pass, index: int) -> None:
        self._pass = source
        self._index = index

    @property
    def split(self) -> bool:
        """The logits are not computed yet: some rows cost less than all of them."""
        return self._pass.full is None

    def logits(self) -> torch.Tensor:
        """The next-token logits for every token [V] (computed once, with the pass's others)."""
        return self._pass.logits()[self._index]

    def logits_for(self, ids: torch.Tensor) -> torch.Tensor:
        """The next-token logits of the tokens `ids` [k], equal to `logits()[ids]`."""
        source = self._pass
        if source.full is not None:
            return source.full[self._index][ids.to(source.full.device)]
        assert source.hidden is not None and source.head is not None
        with torch.inference_mode():
            return source.head(source.hidden[self._index], ids)
