# `make run` and `make test` each bootstrap .venv on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
DATA_DIR ?= ./data

.PHONY: run test lint bench clean architecture

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,pipeline]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/python -m kcoord serve --data-dir $(DATA_DIR)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/mypy -p kcoord

test: $(STAMP)
	$(BIN)/lint-imports
	$(BIN)/python -m pytest

# docs/architecture.md's picture, arrows and contracts table, from the import graph (needs Graphviz's dot).
architecture: $(STAMP)
	$(BIN)/python docs/gen/architecture.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
