# Two commands set everything up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: venv demo test test-fast bench-smoke bench lint format docs docs-deps clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[all,test,dev]"
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/dpsample quickstart

# --reruns 1: a test whose worker crashed (an intermittent XLA:CPU segfault while
# compiling, see pyproject.toml) runs once more; fixed keys make real failures repeat.
test: $(STAMP)
	$(PY) -m pytest -n 2 --reruns 1 --durations=15 -m "not bench"

# Every benchmark in its quick mode, from a mirrored checkout (minutes).
bench-smoke: $(STAMP)
	$(PY) -m pytest -n 2 -m bench tests/test_benchmarks_smoke.py

# --dist loadfile: a file's tests share a worker, so its compiled programs and module
# fixtures are built once, not once per worker (5m43s against 6m18s, 1344 tests).
test-fast: $(STAMP)
	$(PY) -m pytest -n 2 --reruns 1 -m "not slow and not bench" --dist loadfile

bench: $(STAMP)
	$(PY) -m pip install --quiet "torch==2.13.0" || true
	$(PY) -m pip install --quiet -e ".[bench]" || echo "bench extra unavailable: Opacus rows will be skipped"
	$(PY) benchmarks/run_all.py

lint: $(STAMP)
	$(VENV)/bin/ruff check dpsample tests benchmarks experiments
	$(VENV)/bin/ruff format --check dpsample tests benchmarks experiments
	$(VENV)/bin/mypy

format: $(STAMP)
	$(VENV)/bin/ruff format dpsample tests benchmarks experiments
	$(VENV)/bin/ruff check --fix dpsample tests benchmarks experiments

# The documentation site (docs/ and one API page per module, docs/api/) into site/;
# --strict: a broken docstring section or a warning fails the build (about 10 s).
DOCS_STAMP := $(VENV)/.docs-stamp
$(DOCS_STAMP): $(STAMP)
	$(PY) -m pip install --quiet -e ".[docs]"
	touch $(DOCS_STAMP)

docs-deps: $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	$(VENV)/bin/mkdocs build --strict

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info site
