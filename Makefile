# `make run` and `make test` each bootstrap .venv on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
DATA_DIR ?= ./data

.PHONY: run test lint bench clean architecture docs

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

# The documentation site into site/ (MkDocs + Material; the reference pages are generated from the code by
# docs/gen/hooks.py at every build). --strict: a broken link or a missing page fails, as in tests/docs.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/python -m mkdocs build --strict

clean:
	rm -rf $(VENV) site .pytest_cache .mypy_cache .ruff_cache .hypothesis
