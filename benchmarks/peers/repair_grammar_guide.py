"""grammar-guide 0.0.11 on the repair benchmark (run by benchmarks/bench_repair.py).

Runs with the grammar-guide venv's interpreter (guidance 0.1.16, transformers 4.45.2) and talks
to bench_repair over stdin/stdout, one JSON object a line, so that its drafts come from the same
scripted API as the other methods':

    -> {"op": "load", "model": FOLDER}          <- {"op": "ready", "versions": {...}}
    -> {"op": "case", "grammar": LARK, "prompt": ..., "max_corrections": N, "limit_s": S}
    <- {"op": "draft", "prompt": ..., "prefix": ...}   -> {"op": "text", "text": ...}   (repeated)
    <- {"op": "result", "output": ..., ...}  or  {"op": "error", "error": ...}
    -> {"op": "quit"}

grammar-guide's generic loop (`draft_model` a function) asks the function for a continuation of
`prefix.rstrip()` and appends it to the unstripped prefix; its corrections pick a candidate
terminal (alone when there is one, else with a guidance model of SmolLM2, greedy, given the
prompt). A guidance model's metrics count its tokens (`engine_output_tokens`). Its own
output to stdout goes to stderr here: stdout carries the protocol only. A case that runs past
`limit_s` ends the process after printing its stack to stderr: the caller records the case as
timed out and starts a new runner.
"""

from __future__ import annotations

import faulthandler
import json
import os
import sys
import time
import traceback
from importlib.metadata import version
from typing import Any

_PROTOCOL = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
os.dup2(2, 1)
sys.stdout = sys.stderr


def send(message: dict[str, Any]) -> None:
    _PROTOCOL.write(json.dumps(message) + "\n")
    _PROTOCOL.flush()


def receive() -> dict[str, Any]:
    line = sys.stdin.readline()
    if not line:
        raise SystemExit(0)
    message: dict[str, Any] = json.loads(line)
    return message


def load(folder: str) -> Any:
    import guidance
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.models.gpt2.tokenization_gpt2 import bytes_to_unicode

    torch.set_num_threads(1)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    # guidance 0.1.16 fetches the "gpt2" tokenizer (offline: fails) unless the tokenizer has this.
    tokenizer.byte_decoder = {v: k for k, v in bytes_to_unicode().items()}
    model = AutoModelForCausalLM.from_pretrained(folder, torch_dtype=torch.float32)
    model.eval()
    return guidance.models.Transformers(model=model, tokenizer=tokenizer, echo=False), tokenizer


def run_case(message: dict[str, Any], target: Any, tokenizer: Any) -> dict[str, Any]:
    import grammar_guide as gg
    from grammar_guide.utils import prepare_initial_prefix

    parser = gg.load_parser(message["grammar"])
    seed = prepare_initial_prefix(parser=parser)

    def draft(prompt: str, prefix: str, max_new_tokens: int = 0) -> str:
        print(f"draft after {prefix!r}", file=sys.stderr, flush=True)
        send({"op": "draft", "prompt": prompt, "prefix": prefix})
        reply = receive()
        return str(reply["text"])

    metrics = target.engine.metrics
    before = metrics.engine_output_tokens
    start = time.perf_counter()
    result = gg.guide(
        draft_model=draft,
        parser=parser,
        prompt=message["prompt"],
        # Its transformers path prepends the prompt to the guidance model; the generic one does
        # not: do it here, so that its corrections see the task (backtrack's target does too).
        target_model=target + message["prompt"],
        max_grammar_corrections=message["max_corrections"],
        verbose=False,
        save_html=False,
    )
    seconds = time.perf_counter() - start
    kinds = [c.type for c in result.correction_log]
    inserted = sum(len(c.selected_candidate) for c in result.correction_log)
    return {
        "op": "result",
        "output": result.response,
        "corrections": len(kinds),
        "kinds": kinds,
        "inserted_chars": inserted,
        "seed_chars": len(seed),
        "local_tokens": metrics.engine_output_tokens - before,
        "seconds": seconds,
        "note": ", ".join(f"{kinds.count(k)} {k}" for k in dict.fromkeys(kinds)) or "no correction",
    }


def main() -> None:
    target = tokenizer = None
    while True:
        message = receive()
        op = message.get("op")
        if op == "quit":
            return
        if op == "load":
            target, tokenizer = load(message["model"])
            versions = {p: version(p) for p in ("grammar-guide", "guidance", "transformers")}
            send({"op": "ready", "versions": versions})
            continue
        faulthandler.dump_traceback_later(message.get("limit_s", 600), exit=True)
        try:
            send(run_case(message, target, tokenizer))
        except Exception as exc:  # reported per case; the runner carries on
            traceback.print_exc()
            last = str(exc).strip().splitlines()[:1]
            send({"op": "error", "error": f"{type(exc).__name__}: {last[0] if last else ''}"})
        finally:
            faulthandler.cancel_dump_traceback_later()


if __name__ == "__main__":
    main()
