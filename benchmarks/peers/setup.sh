#!/usr/bin/env bash
# Virtual environments for the peers compared in the benchmarks, one per peer, under .bench/venvs/.
#
#   bash benchmarks/peers/setup.sh [PEER ...]   # PEER: grammar-guide, guidance, transformers-cfg,
#                                               # outlines (default: all of them)
#
# Idempotent: a venv whose stamp file matches its requirements is left alone. Each install takes
# the CPU torch 2.13.0 wheel in the same pip command (an unpinned torch would pull a CUDA build).
# It also writes the SmolLM2 copy that transformers 4.x reads (see smollm2_copy.py), outside the
# repository, in $BACKTRACK_CACHE/peers (default ~/.cache/backtrack/peers).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENVS="$ROOT/.bench/venvs"
PYTHON="${PYTHON:-python3}"
TORCH="torch==2.13.0"

requirements() {
  case "$1" in
    grammar-guide)
      # grammar-guide imports guidance.library._regex (gone in guidance 0.3) and trims the KV
      # cache through DynamicCache.key_cache (gone in transformers 5).
      echo "$TORCH grammar-guide==0.0.11 guidance==0.1.16 transformers==4.45.2 numpy<2"
      echo "tokenizers>=0.20,<0.21 sentencepiece protobuf accelerate<1.2 lark==1.3.1" ;;
    transformers-cfg)
      echo "$TORCH transformers-cfg==0.2.7 transformers==4.45.2 numpy<2 tokenizers>=0.20,<0.21"
      echo "sentencepiece protobuf" ;;
    guidance)
      # guidance 0.3.1 (llguidance) crops its KV cache with a positive length: transformers 5.x
      # refuses that, so it gets transformers 4.57 here.
      echo "$TORCH guidance==0.3.1 transformers==4.57.6 sentencepiece protobuf accelerate" ;;
    outlines)
      echo "$TORCH outlines==1.3.3 outlines-core==0.2.14 transformers==4.57.6 numpy<2 sentencepiece"
      echo "protobuf" ;;
    *) echo "unknown peer: $1 (known: grammar-guide guidance transformers-cfg outlines)" >&2; return 2 ;;
  esac
}

setup_peer() {
  local peer="$1" venv="$VENVS/$1" reqs stamp
  reqs="$(requirements "$peer" | tr '\n' ' ')"
  stamp="$venv/.peer-stamp"
  if [[ -x "$venv/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$reqs" ]]; then
    echo "peer $peer: ready ($venv)"
    return 0
  fi
  echo "peer $peer: creating $venv"
  rm -rf "$venv"
  mkdir -p "$VENVS"
  "$PYTHON" -m venv "$venv"
  # (pip's warnings about local index folders that do not exist are filtered out)
  "$venv/bin/python" -m pip install -q --upgrade pip 2> >(grep -v "is ignored" >&2)
  # shellcheck disable=SC2086  # the requirement list is meant to split into words
  "$venv/bin/python" -m pip install -q $reqs 2> >(grep -v "is ignored" >&2)
  echo "$reqs" >"$stamp"
  echo "peer $peer: ready ($venv)"
}

peers=("$@")
if [[ ${#peers[@]} -eq 0 ]]; then
  peers=(grammar-guide guidance transformers-cfg outlines)
fi
for peer in "${peers[@]}"; do
  setup_peer "$peer"
done
# The SmolLM2 copy for transformers 4.x (stdlib only; converts the main cache first if needed).
"$PYTHON" "$ROOT/benchmarks/peers/smollm2_copy.py" --main-python "$ROOT/.venv/bin/python"
