"""Real tokenizers and tiny random-weight models for the local target's tests.

Named `tokenizer_fixtures`, not `tokenizers`: pytest puts `tests/` first on sys.path, and a
`tests/tokenizers.py` would shadow the Hugging Face `tokenizers` package that transformers imports.

The tokenizer files come from PyPI packages (nothing here reaches a model hub):
- GPT-2 byte-level BPE: `whisper/assets/gpt2.tiktoken` in the openai-whisper sdist, converted with
  transformers' TikTokenConverter (needs tiktoken; reads the local file, downloads nothing);
- Mistral 7B v0.1 sentencepiece (32000, byte fallback): `mistral_common/data/tokenizer.model.v1`
  in the mistral-common wheel, converted by transformers (needs sentencepiece and protobuf);
- SmolLM2: the tokenizer saved beside the converted default model (`converted_smollm2()`).

Each is built once, written beside its final folder and renamed into place (atomic), under
`cache_root()/tokenizers` (outside the repository); later runs load the saved fast tokenizer in well
under a second. The set-up command builds them (`python tests/support/tokenizer_fixtures.py`, run by
scripts/setup.sh): tests never download; a missing fixture is a FixtureError that says to run the
set-up (tests fail, they do not skip). A failed download during the set-up is a FixtureError too;
only a missing `pip` raises PipUnavailable, which the tests turn into an explicit skip.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from local_target.loading import cache_root, converted_smollm2

WHISPER = "openai-whisper==20250625"
WHISPER_MEMBER = "whisper/assets/gpt2.tiktoken"
MISTRAL_COMMON = "mistral-common==1.13.1"
MISTRAL_MEMBER = "mistral_common/data/tokenizer.model.v1"

# GPT-2's pre-tokenizer split (the TikTokenConverter default is the cl100k one).
GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
GPT2_EOS = "<|endoftext|>"

NAMES = ("gpt2", "smollm2", "mistral")
# Only the set-up command (this module run as a script) may reach the package index.
_downloads_allowed = False


class FixtureError(RuntimeError):
    """A tokenizer could not be obtained or built (a test using it must fail, loudly)."""


class PipUnavailable(FixtureError):
    """`pip` itself is missing, so nothing can be downloaded (the one case tests may skip)."""


def tokenizer_cache() -> Path:
    return cache_root() / "tokenizers"


# -- downloads ----------------------------------------------------------------------------------


def _pip_download(requirement: str, *, sdist: bool) -> Path:
    """The file of `requirement` from PyPI (kept in the cache's downloads folder)."""
    dest = tokenizer_cache() / "downloads"
    dest.mkdir(parents=True, exist_ok=True)
    name, _, version = requirement.partition("==")
    stem = f"{name.replace('-', '_')}-{version}"
    found = sorted(p for p in dest.iterdir() if p.name.lower().startswith(stem.lower()))
    if found:
        return found[0]
    if not _downloads_allowed:
        raise FixtureError(
            f"{requirement} is not in {dest}: run the set-up (make setup, or "
            "`python tests/support/tokenizer_fixtures.py`) to build the tokenizer fixtures"
        )
    if importlib.util.find_spec("pip") is None:
        raise PipUnavailable(f"pip is not installed, so {requirement} cannot be downloaded")
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check"]
    command += ["--no-binary", ":all:"] if sdist else ["--only-binary", ":all:"]
    command += ["-d", str(dest), requirement]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    except subprocess.TimeoutExpired as exc:
        raise FixtureError(f"`{' '.join(command)}` timed out after {exc.timeout} s") from exc
    found = sorted(p for p in dest.iterdir() if p.name.lower().startswith(stem.lower()))
    if done.returncode != 0 or not found:
        tail = (done.stderr or done.stdout).strip()[-1500:]
        raise FixtureError(
            f"could not download {requirement} from PyPI (needed for a real tokenizer fixture)"
            f"\n$ {' '.join(command)}\nexit status {done.returncode}\n{tail}"
        )
    return found[0]


def _extract(archive: Path, member_suffix: str, target: Path) -> Path:
    """Copy the archive member whose path ends with `member_suffix` to `target`."""
    if archive.name.endswith(".whl") or archive.suffix == ".zip":
        with zipfile.ZipFile(archive) as z:
            names = [n for n in z.namelist() if n.endswith(member_suffix)]
            if not names:
                raise FixtureError(f"{member_suffix} is missing from {archive.name}")
            target.write_bytes(z.read(names[0]))
    else:
        with tarfile.open(archive) as t:
            members = [m for m in t.getmembers() if m.isfile() and m.name.endswith(member_suffix)]
            if not members:
                raise FixtureError(f"{member_suffix} is missing from {archive.name}")
            handle = t.extractfile(members[0])
            assert handle is not None
            target.write_bytes(handle.read())
    return target


def _build_once(name: str, build: Callable[[Path, Path], None]) -> Path:
    """The cached folder `name`; on first use `build(work, out)` fills `out`, renamed into place."""
    folder = tokenizer_cache() / name
    if (folder / "tokenizer.json").is_file():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=folder.parent))
    try:
        work, out = staging / "work", staging / "out"
        work.mkdir()
        out.mkdir()
        build(work, out)
        if not (out / "tokenizer.json").is_file():
            raise FixtureError(f"building the {name} tokenizer wrote no tokenizer.json")
        try:
            out.rename(folder)
        except OSError:
            if not (folder / "tokenizer.json").is_file():  # not a concurrent build that won
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return folder


# -- the tokenizers -------------------------------------------------------------------------------


def _build_gpt2(work: Path, out: Path) -> None:
    from transformers import PreTrainedTokenizerFast
    from transformers.convert_slow_tokenizer import TikTokenConverter

    if importlib.util.find_spec("tiktoken") is None:
        raise FixtureError("the GPT-2 tokenizer fixture needs tiktoken (pip install -e '.[dev]')")
    ranks = _extract(_pip_download(WHISPER, sdist=True), WHISPER_MEMBER, work / "gpt2.tiktoken")
    converter = TikTokenConverter(
        vocab_file=str(ranks), pattern=GPT2_PATTERN, extra_special_tokens=[GPT2_EOS]
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=converter.converted(),
        bos_token=GPT2_EOS,
        eos_token=GPT2_EOS,
        unk_token=GPT2_EOS,
    )
    # GPT-2's own ids: a wrong pattern or merge order would show here
    got = fast("Hello world, it's 12345")["input_ids"]
    if len(fast) != 50257 or got != [15496, 995, 11, 340, 338, 17031, 2231]:
        raise FixtureError(f"the converted GPT-2 tokenizer is wrong: {len(fast)} tokens, {got}")
    fast.save_pretrained(out)


def _build_mistral(work: Path, out: Path) -> None:
    from transformers import AutoTokenizer

    missing = [m for m in ("sentencepiece", "google.protobuf") if not _importable(m)]
    if missing:
        raise FixtureError(
            f"converting the Mistral tokenizer needs {', '.join(missing)} "
            "(pip install -e '.[dev]' installs sentencepiece and protobuf)"
        )
    source = work / "spm"
    source.mkdir()
    _extract(_pip_download(MISTRAL_COMMON, sdist=False), MISTRAL_MEMBER, source / "tokenizer.model")
    (source / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "LlamaTokenizer"}))
    fast = AutoTokenizer.from_pretrained(source)
    ids = fast("ꙮ ok", add_special_tokens=False)["input_ids"]
    pieces = fast.convert_ids_to_tokens(ids)
    if len(fast) != 32000 or not fast.is_fast or pieces[:4] != ["▁", "<0xEA>", "<0x99>", "<0xAE>"]:
        raise FixtureError(f"the converted Mistral tokenizer is wrong: {len(fast)}, {pieces}")
    fast.save_pretrained(out)
    # kept for the slow-tokenizer test; not named tokenizer.model, so loads take tokenizer.json
    shutil.copyfile(source / "tokenizer.model", out / "sentencepiece.model")


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def tokenizer_dir(name: str) -> Path:
    """The folder of real tokenizer `name` (one of NAMES), built on first use."""
    if name == "gpt2":
        return _build_once("gpt2", _build_gpt2)
    if name == "mistral":
        return _build_once("mistral-7b-v0.1", _build_mistral)
    if name == "smollm2":
        return converted_smollm2()
    raise KeyError(name)


def load_tokenizer(name: str) -> Any:
    """A fast transformers tokenizer for `name`."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir(name))
    if not tokenizer.is_fast:
        raise FixtureError(f"the {name} tokenizer loaded as a slow tokenizer")
    return tokenizer


def load_slow_mistral() -> Any:
    """The Mistral tokenizer as a slow (sentencepiece, pure Python wrapper) tokenizer."""
    if not _importable("sentencepiece"):
        raise FixtureError(
            "the slow-tokenizer fixture needs sentencepiece (pip install -e '.[dev]')"
        )
    from transformers import SentencePieceBackend

    model = tokenizer_dir("mistral") / "sentencepiece.model"
    return SentencePieceBackend(vocab_file=str(model), bos_token="<s>", eos_token="</s>")


# -- tiny models ----------------------------------------------------------------------------------


def tiny_model(arch: str, tokenizer: Any, *, extra_rows: int = 0, seed: int = 0) -> Any:
    """A randomly initialised 2-layer, 64-wide causal LM over `tokenizer`'s vocabulary, with
    `extra_rows` padding rows in its embedding (as models padded to a multiple of 64 have)."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

    vocab_size = len(tokenizer) + extra_rows
    eos = tokenizer.eos_token_id
    bos = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else eos
    torch.manual_seed(seed)
    if arch == "gpt2":
        config = GPT2Config(
            vocab_size=vocab_size,
            n_positions=2048,
            n_embd=64,
            n_layer=2,
            n_head=4,
            bos_token_id=bos,
            eos_token_id=eos,
        )
        model = GPT2LMHeadModel(config)
    elif arch == "llama":
        config = LlamaConfig(
            vocab_size=vocab_size,
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=2048,
            bos_token_id=bos,
            eos_token_id=eos,
            tie_word_embeddings=False,
        )
        model = LlamaForCausalLM(config)
    else:
        raise KeyError(arch)
    model.eval()
    return model


def add_logit_bias(model: Any, bias: dict[int, float]) -> Any:
    """Add `bias[token]` to the model's output logits (a forward hook on its output embedding):
    crafted preferences for deterministic tests. Returns the hook handle."""
    import torch

    rows = int(model.get_output_embeddings().weight.shape[0])
    vector = torch.zeros(rows)
    for token, value in bias.items():
        vector[token] = value

    def hook(_module: Any, _inputs: Any, output: torch.Tensor) -> torch.Tensor:
        return output + vector.to(output.dtype)

    return model.get_output_embeddings().register_forward_hook(hook)


if __name__ == "__main__":
    _downloads_allowed = True
    for fixture in NAMES:
        print(f"tokenizer fixture {fixture}: {tokenizer_dir(fixture)}")
