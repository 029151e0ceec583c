# The two commands a fresh machine needs: `make run` and `make test`.
VENV   ?= .venv
PY     := $(VENV)/bin/python
PYTEST_ARGS ?=

.PHONY: run test lint layers typecheck unit bench clean

$(VENV)/.installed-run: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $@ $(VENV)/.installed-run

run: $(VENV)/.installed-run
	$(VENV)/bin/nenjim journal verify data/sample/journals
	$(VENV)/bin/nenjim journal log data/sample/journals com.r35157.nenjim.hubd
	$(VENV)/bin/nenjim journal show data/sample/journals com.r35157.nenjim.hubd --as-of 20260301T000000Z
	$(PY) examples/agent_run.py

lint: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# The import contracts of pyproject.toml ([tool.importlinter]): the layers hold.
layers: $(VENV)/.installed-dev
	$(VENV)/bin/lint-imports

typecheck: $(VENV)/.installed-dev
	$(VENV)/bin/mypy

# Every core, a test file per worker: the files' module fixtures (a served store, a browser) start once.
unit: $(VENV)/.installed-dev
	$(VENV)/bin/pytest -n auto --dist loadfile $(PYTEST_ARGS)

test: lint layers typecheck unit

# Every benchmark, one full run (tens of minutes); writes benchmarks/results/*.json and
# prints this run's goal rows next to the previous run's.
bench: $(VENV)/.installed-dev
	$(PY) -m benchmarks.run_all
	$(PY) -m benchmarks.results

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache .hypothesis .import_linter_cache
