"""Generation runner for bench_speed, executed inside a peer's venv (see benchmarks/peers/).

Line protocol (JSON, one document per line). First line on stdin:

    {"method": "generate" | "grammar-guide" | "guidance"
                | "transformers-cfg" | "outlines",
     "model": "<SmolLM2 folder>", "threads": 1}

answered by {"versions": {...}} (or {"fatal": "..."}); then each further line is a job

    {"n": 10, "trial": 0, "warmup": false, "prompt": "...", "max_tokens": 136,
     "grammar": "<grammar text in the method's own language>"}

answered by {"n", "trial", "warmup", "load", "text", "seconds", "cpu_seconds", "setup_seconds",
"extra"} or {"n", "trial", "warmup", "load", "error"}. The runner stays up between jobs, so the
caller can interleave methods. `seconds` is the wall time of the generation call alone
(`cpu_seconds` the process's CPU time over it, steadier on a shared machine); `setup_seconds` what
was built per grammar before it (the parser, the constraint or the index), outside `seconds`.
The model (and for guidance and grammar-guide the guidance model) is built once, before any job,
outside both.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from typing import Any

import torch
from protocol import Clock, emit
from transformers import AutoModelForCausalLM, AutoTokenizer


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class Runner:
    def __init__(self, method: str, folder: str) -> None:
        self.method = method
        self.model = AutoModelForCausalLM.from_pretrained(folder, torch_dtype=torch.float32)
        self.model.eval()
        self.tokenizer = AutoTokenizer.from_pretrained(folder)
        self.eos = self.tokenizer.eos_token_id
        self.guidance_model: Any = None
        if method in ("grammar-guide", "guidance"):
            self.guidance_model = self._guidance_model()
        self.versions = self._versions()

    def _versions(self) -> dict[str, str]:
        import importlib.metadata as md

        own = {
            "grammar-guide": ["grammar-guide", "guidance"],
            "guidance": ["guidance", "llguidance"],
            "transformers-cfg": ["transformers-cfg"],
            "outlines": ["outlines", "outlines-core"],
        }.get(self.method, [])
        names = [*own, "transformers", "tokenizers", "torch"]
        return {name: md.version(name) for name in names}

    def _guidance_model(self) -> Any:
        import guidance
        from transformers.models.gpt2.tokenization_gpt2 import bytes_to_unicode

        # guidance fetches the "gpt2" tokenizer (offline: fails) unless the fast tokenizer
        # exposes the byte-level decoder table.
        self.tokenizer.byte_decoder = {v: k for k, v in bytes_to_unicode().items()}
        return guidance.models.Transformers(self.model, self.tokenizer, echo=False)

    def ids(self, prompt: str) -> Any:
        return self.tokenizer(prompt, return_tensors="pt", add_special_tokens=False)

    def decode(self, ids: Any) -> str:
        return str(self.tokenizer.decode(ids, skip_special_tokens=True))

    def run(self, job: dict[str, Any]) -> dict[str, Any]:
        return getattr(self, "run_" + self.method.replace("-", "_"))(job)

    # -- the methods ----------------------------------------------------------------------------

    def _generate(self, job: dict[str, Any], processors: Any = None, **kw: Any) -> dict[str, Any]:
        inputs = self.ids(job["prompt"])
        with Clock() as clock, torch.inference_mode():
            out = self.model.generate(
                **inputs,
                max_new_tokens=job["max_tokens"],
                do_sample=False,
                pad_token_id=self.eos,
                logits_processor=processors,
                **kw,
            )
        text = self.decode(out[0, inputs["input_ids"].shape[1] :])
        return {"text": text} | clock.times()

    def run_generate(self, job: dict[str, Any]) -> dict[str, Any]:
        return self._generate(job) | {"setup_seconds": 0.0}

    def run_transformers_cfg(self, job: dict[str, Any]) -> dict[str, Any]:
        from transformers_cfg.generation.logits_process import GrammarConstrainedLogitsProcessor
        from transformers_cfg.grammar_utils import IncrementalGrammarConstraint

        with Clock() as setup:
            constraint = IncrementalGrammarConstraint(job["grammar"], "root", self.tokenizer)
            processor = GrammarConstrainedLogitsProcessor(constraint)
        return self._generate(job, processors=[processor]) | {"setup_seconds": setup.wall}

    def run_guidance(self, job: dict[str, Any]) -> dict[str, Any]:
        import guidance

        with Clock() as setup:
            node = guidance.lark(job["grammar"], temperature=0.0, max_tokens=job["max_tokens"])
            node = guidance.capture(node, "res")
        with Clock() as clock:
            out = self.guidance_model + job["prompt"] + node
        return {"text": str(out["res"]), "setup_seconds": setup.wall} | clock.times()

    def run_grammar_guide(self, job: dict[str, Any]) -> dict[str, Any]:
        import grammar_guide as gg

        with Clock() as setup:
            parser = gg.load_parser(job["grammar"])
        lookahead = 20  # grammar-guide's default: the draft is re-checked after each 20 tokens
        with Clock() as clock:
            res = gg.guide(
                draft_model=self.model,
                tokenizer=self.tokenizer,
                parser=parser,
                prompt=job["prompt"],
                target_model=self.guidance_model,
                stop_at=["```", "}"],  # as in grammar-guide's benchmark
                max_grammar_corrections=2 * (job["max_tokens"] // lookahead) + 10,
                token_healing=False,
                temperature=0.0,
                token_lookahead=lookahead,
                save_html=False,
                verbose=False,
            )
        kinds: dict[str, int] = {}
        for c in res.correction_log:
            kinds[c.type] = kinds.get(c.type, 0) + 1
        extra = {"corrections": res.num_grammar_corrections, "correction_types": kinds}
        return {"text": res.response, "setup_seconds": setup.wall, "extra": extra} | clock.times()

    def run_outlines(self, job: dict[str, Any]) -> dict[str, Any]:
        import outlines
        from outlines.types import Regex

        if not hasattr(self, "_outlines_model"):
            self._outlines_model = outlines.from_transformers(self.model, self.tokenizer)
        with Clock() as setup:
            generator = outlines.Generator(self._outlines_model, Regex(job["grammar"]))
        with Clock() as clock:
            text = generator(job["prompt"], max_new_tokens=job["max_tokens"], do_sample=False)
        return {"text": str(text), "setup_seconds": setup.wall} | clock.times()


def main() -> None:
    request = json.loads(sys.stdin.readline())
    torch.set_num_threads(int(request.get("threads", 1)))
    method = request["method"]
    try:
        runner = Runner(method, request["model"])
    except Exception as exc:
        log(traceback.format_exc())
        emit({"fatal": f"{type(exc).__name__}: {exc}"[:500]})
        return
    emit({"versions": runner.versions})
    for line in sys.stdin:
        if not line.strip():
            break
        job = json.loads(line)
        head = {"n": job["n"], "trial": job["trial"], "warmup": job.get("warmup", False)}
        head["load"] = os.getloadavg()[0]
        try:
            emit(head | runner.run(job))
        except Exception as exc:
            log(traceback.format_exc())
            emit(head | {"error": f"{type(exc).__name__}: {exc}"[:500]})


if __name__ == "__main__":
    main()
