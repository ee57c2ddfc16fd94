.PHONY: setup demo test lint docs bench test-latest lock

setup:
	@bash scripts/setup.sh

demo: setup
	.venv/bin/python -m backtrack demo

lint: setup
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	.venv/bin/mypy

# The API reference from the docstrings (docs/, Sphinx) into build/docs/index.html. Strict: a
# reference that resolves to nothing, or a docstring that reStructuredText misreads, fails it.
docs: setup
	.venv/bin/sphinx-build -E -n -W --keep-going -q -b html docs build/docs

# Everything, models and slow tables included (the daily `pytest` leaves out `model` and `slow`).
test: lint docs
	.venv/bin/python -m pytest -m ""

bench: setup
	.venv/bin/python -m benchmarks

# Drift check: the newest versions pyproject.toml allows, in .venv-latest, and the model tests there.
test-latest:
	bash scripts/test_latest.sh

# Re-resolve requirements.lock from pyproject.toml (a deliberate commit, after test-latest passes).
lock:
	bash scripts/lock.sh
