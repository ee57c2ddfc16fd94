"""Write the SmolLM2-135M-Instruct copy that transformers 4.x reads (for the peers' venvs).

    python3 benchmarks/peers/smollm2_copy.py [--main-python .venv/bin/python]

Standard library only. Source: backtrack's converted copy (`local_target.loading.converted_smollm2`,
saved by transformers 5.x; converted first, with the main venv's Python, if missing). Changes:
`rope_theta` at the config's top level (4.x ignores `rope_parameters` and falls back to 10000
silently), a `GPT2Tokenizer` tokenizer config with the chat template inside it, the BPE merges as
"a b" strings (tokenizers 0.20 also reads pairs, older ones do not), and the slow-tokenizer files
`vocab.json` / `merges.txt` (transformers-CFG wants them). The weights are hard-linked (or copied).
The folder is written beside its final place and renamed, so readers never see half a copy.
Prints the folder.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

NAME = "smollm2-135m-instruct-tf4"
VERSION = "1"  # bump when the recipe changes


def cache_root() -> Path:
    if os.environ.get("BACKTRACK_CACHE"):
        return Path(os.environ["BACKTRACK_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "backtrack"


def target_folder() -> Path:
    return cache_root() / "peers" / NAME


def source_folder(main_python: str | None) -> Path:
    folder = cache_root() / "smollm2-135m-instruct"
    if (folder / "config.json").is_file():
        return folder
    if not main_python:
        raise SystemExit(f"{folder} is missing; run once with --main-python .venv/bin/python")
    code = "from local_target.loading import converted_smollm2; print(converted_smollm2())"
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([main_python, "-c", code], cwd=root, check=True, capture_output=True)
    return Path(out.stdout.decode().strip().splitlines()[-1])


def write_copy(source: Path, staging: Path) -> None:
    config = json.loads((source / "config.json").read_text())
    rope = config.pop("rope_parameters", None) or {}
    config["rope_theta"] = float(rope.get("rope_theta", config.get("rope_theta", 100000.0)))
    config.setdefault("rope_scaling", None)
    config["torch_dtype"] = config.pop("dtype", "float32")
    (staging / "config.json").write_text(json.dumps(config, indent=2))
    generation = json.loads((source / "generation_config.json").read_text())
    (staging / "generation_config.json").write_text(json.dumps(generation, indent=2))
    try:
        os.link(source / "model.safetensors", staging / "model.safetensors")
    except OSError:
        shutil.copy2(source / "model.safetensors", staging / "model.safetensors")

    tokenizer = json.loads((source / "tokenizer.json").read_text(encoding="utf-8"))
    model = tokenizer["model"]
    merges = [m if isinstance(m, str) else " ".join(m) for m in model["merges"]]
    model["merges"] = merges
    model.pop("ignore_merges", None)
    (staging / "tokenizer.json").write_text(json.dumps(tokenizer, ensure_ascii=False))
    (staging / "vocab.json").write_text(json.dumps(model["vocab"], ensure_ascii=False))
    (staging / "merges.txt").write_text("#version: 0.2\n" + "\n".join(merges) + "\n")

    old = json.loads((source / "tokenizer_config.json").read_text())
    template_file = source / "chat_template.jinja"
    added = {
        str(t["id"]): {
            "content": t["content"],
            "lstrip": t.get("lstrip", False),
            "normalized": t.get("normalized", False),
            "rstrip": t.get("rstrip", False),
            "single_word": t.get("single_word", False),
            "special": t.get("special", True),
        }
        for t in tokenizer.get("added_tokens", [])
    }
    config_tok = {
        "tokenizer_class": "GPT2Tokenizer",
        "add_prefix_space": False,
        "added_tokens_decoder": added,
        "additional_special_tokens": [
            t["content"] for t in tokenizer.get("added_tokens", []) if t.get("special")
        ],
        "bos_token": old.get("bos_token", "<|im_start|>"),
        "eos_token": old.get("eos_token", "<|im_end|>"),
        "pad_token": old.get("pad_token", "<|im_end|>"),
        "unk_token": old.get("unk_token", "<|endoftext|>"),
        "clean_up_tokenization_spaces": False,
        "model_max_length": 8192,
        "vocab_size": len(model["vocab"]),
    }
    if template_file.is_file():
        config_tok["chat_template"] = template_file.read_text(encoding="utf-8")
    (staging / "tokenizer_config.json").write_text(json.dumps(config_tok, indent=2))
    (staging / "special_tokens_map.json").write_text(
        json.dumps({k: config_tok[k] for k in ("bos_token", "eos_token", "pad_token", "unk_token")})
    )
    (staging / ".recipe").write_text(VERSION)


def ensure(main_python: str | None = None) -> Path:
    folder = target_folder()
    if (folder / ".recipe").is_file() and (folder / ".recipe").read_text() == VERSION:
        return folder
    source = source_folder(main_python)
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{NAME}-", dir=folder.parent))
    try:
        write_copy(source, staging)
        if folder.exists():  # an older recipe: move it aside, then replace
            old = Path(tempfile.mkdtemp(prefix=f".{NAME}-old-", dir=folder.parent))
            folder.rename(old / NAME)
            shutil.rmtree(old, ignore_errors=True)
        try:
            staging.rename(folder)
        except OSError:
            if not (folder / ".recipe").is_file():  # not a concurrent writer that won
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--main-python", default=None)
    args = parser.parse_args()
    print(ensure(args.main_python))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
