# Two commands set everything up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: venv demo test test-fast test-min venv-min bench-smoke bench lint format docs docs-deps clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[all,test,dev]"
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/dpsample quickstart

# The "intermittent XLA:CPU segfault while compiling" was a long-lived worker running
# out of memory mappings (vm.max_map_count); conftest.py now bounds the compiled
# programs a worker keeps. Two fresh-clone CI runs showed 0 reruns, so `--reruns 1`
# is gone: a crash now fails the run instead of being retried. `--durations=15` stays
# so each CI log names its slowest tests. `--dist loadfile` as in test-fast: a file's
# tests share a worker, so its module fixtures and compiled programs are built once,
# not once per worker (test_report_privacy's runs of every example are one fixture).
test: $(STAMP)
	$(PY) -m pytest -n 2 --dist loadfile --durations=15 -m "not bench"

# The declared minimums: dpsample with every extra, each dependency pinned at its floor
# (constraints/minimum.txt), in its own venv, and a representative subset of the fast
# tests: imports of every module, the interop with each dependency (JAX precision,
# dp-accounting, Optax, BlackJAX, ArviZ, scikit-learn, pandas, Dask, matplotlib).
MIN_VENV := .venv-min
MIN_STAMP := $(MIN_VENV)/.installed-stamp
MIN_TESTS := tests/test_extras.py tests/test_packaging.py tests/test_precision.py \
	tests/test_dp_event_interop.py tests/finders/test_optax_interop.py \
	tests/samplers/test_blackjax_interop.py tests/samplers/test_diagnostics.py \
	tests/test_datasets.py tests/validation/test_sweep_tables.py \
	tests/validation/test_sweep_engine.py \
	tests/validation/test_sweep_figures_one_value.py dpsample/finders/dp_sgd.py

$(MIN_STAMP): pyproject.toml constraints/minimum.txt
	rm -rf $(MIN_VENV)
	$(PYTHON) -m venv $(MIN_VENV)
	$(MIN_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(MIN_VENV)/bin/python -m pip install --quiet -c constraints/minimum.txt -e ".[all,test]"
	touch $(MIN_STAMP)

venv-min: $(MIN_STAMP)

test-min: $(MIN_STAMP)
	$(MIN_VENV)/bin/python -m pytest -n 2 --durations=10 \
		-m "not slow and not bench" $(MIN_TESTS)

# Every benchmark in its quick mode, from a mirrored checkout (minutes).
bench-smoke: $(STAMP)
	$(PY) -m pytest -n 2 -m bench tests/test_benchmarks_smoke.py

# --dist loadfile: a file's tests share a worker, so its compiled programs and module
# fixtures are built once, not once per worker (5m43s against 6m18s, 1344 tests).
test-fast: $(STAMP)
	$(PY) -m pytest -n 2 -m "not slow and not bench" --dist loadfile

bench: $(STAMP)
	$(PY) -m pip install --quiet "torch==2.13.0" || true
	$(PY) -m pip install --quiet -e ".[bench]" || echo "bench extra unavailable: Opacus rows will be skipped"
	$(PY) benchmarks/run_all.py

lint: $(STAMP)
	$(VENV)/bin/ruff check dpsample tests benchmarks experiments tools
	$(VENV)/bin/ruff format --check dpsample tests benchmarks experiments tools
	$(VENV)/bin/mypy

format: $(STAMP)
	$(VENV)/bin/ruff format dpsample tests benchmarks experiments tools
	$(VENV)/bin/ruff check --fix dpsample tests benchmarks experiments tools

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
	rm -rf $(VENV) $(MIN_VENV) .pytest_cache build *.egg-info site
