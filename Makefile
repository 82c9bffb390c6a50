# `make run` and `make test` each bootstrap .venv on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
DATA_DIR ?= ./data

.PHONY: run test test-quick lint bench clean architecture docs

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

# The whole suite over pytest-xdist workers (tests/scheduling.py): most tests wait on servers, clients,
# PostgreSQL, Spark and containers in subprocesses, so three workers a core overlap the waits (4733
# passed in 9:54 on a shared 2-core machine); the longest tests (tests/durations.json) start first.
# The slowest are listed at the end.
TEST_WORKERS ?= 6
# Bytecode caches are written: a shell that sets PYTHONDONTWRITEBYTECODE would make every one of the
# suite's ~1,000 kcoord processes and every worker's collection (pytest's assertion rewriting) compile
# from source again, about 0.2 CPU-s a process on this machine.
unexport PYTHONDONTWRITEBYTECODE
test: $(STAMP)
	$(BIN)/lint-imports
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadgroup --durations=30

# The inner loop: the pure, in-process folders (codec, coordinators, storage, partition logs).
test-quick: $(STAMP)
	$(BIN)/python -m pytest -n 2 tests/unit tests/protocol tests/storage tests/partition_log

# docs/architecture.md's picture, arrows and contracts table, from the import graph (needs Graphviz's dot).
architecture: $(STAMP)
	$(BIN)/python docs/gen/architecture.py

# The documentation site into site/ (MkDocs + Material; the reference pages are generated from the code by
# docs/gen/hooks.py at every build). --strict: a broken link or a missing page fails, as in tests/docs.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/python -m mkdocs build --strict

clean:
	rm -rf $(VENV) site .pytest_cache .mypy_cache .ruff_cache .hypothesis
