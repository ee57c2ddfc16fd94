.PHONY: setup demo test lint bench

setup:
	@bash scripts/setup.sh

demo: setup
	.venv/bin/python -m backtrack demo

lint: setup
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	.venv/bin/mypy

# Everything, models and slow tables included (the daily `pytest` leaves out `model` and `slow`).
test: lint
	.venv/bin/python -m pytest -m ""

bench: setup
	.venv/bin/python -m benchmarks
