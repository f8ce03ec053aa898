# tfx-book: build the book and run every test.
#   make book           build _build/html, executing notebooks through the cache
#   make test           unit tests + browser test + nbval on every notebook (TFX_PROFILE=quick) from the
#                       built wheel in a clean venv (colab-check) + the book built with -W from its outputs
#   make book-rendered  build _build/html from the committed outputs (no execution)
#   make browser-deps   install Debian's chromium for the browser test (root)
#   make notebooks      re-execute book/**/*.ipynb in place, saving outputs + widget state
#                       (one notebook: make notebooks NB=book/03-x.ipynb; profile from TFX_PROFILE)
#   make colab-check    nbval on every notebook from the built wheel in a clean venv, from an empty folder (quick)
#   make gpu-results    the GPU half: every experiment's full profile, in priority order, within BUDGET minutes
#   make gpu-plan       print that plan: each experiment, its runs, their estimated minutes, the total (trains nothing)
#   make gpu-wheels     the wheels a bare GPU machine lacks, into .gpu-wheels/ (carry it; scripts/gpu_burst.sh)
#   make gpu-tree       what scripts/gpu_burst.sh needs, staged into _build/gpu-tree/ (≤ 64 MiB; scripts/gpu_tree.py)
#   make clean          remove build outputs (keeps .venv);  make distclean: also .venv
# Needs GNU make and Python 3.11-3.13 (python3, or PYTHON=...); .venv is created on first use.

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := book
.DELETE_ON_ERROR:

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
JB_FLAGS := -W -n --keep-going
CHROMIUM := /usr/bin/chromium

# Tools from the venv come first (jupyter kernels, nbval, jupyter-book).
export PATH := $(abspath $(BIN)):$(PATH)
export PIP_DISABLE_PIP_VERSION_CHECK := 1
export PYDEVD_DISABLE_FILE_VALIDATION := 1

.PHONY: book book-rendered claims-page test browser-deps notebooks clean distclean venv colab-check gpu-results \
        gpu-plan gpu-wheels gpu-tree page-report

venv: $(STAMP)

# pip's output goes to .venv/pip.log; it is shown only if pip fails.
$(STAMP): requirements.txt constraints.txt requirements-nodeps.txt pyproject.toml
	@echo "==> Setting up $(VENV) from requirements.txt (first use takes a minute or two)"
	@$(PYTHON) -c 'import sys; sys.exit(not (3, 11) <= sys.version_info[:2] <= (3, 13))' || { \
	  echo "error: $(PYTHON) is Python $$($(PYTHON) -c 'import platform; print(platform.python_version())'); the pinned" \
	       "environment needs Python 3.11 to 3.13 (make PYTHON=python3.12 ...). The library alone" \
	       "(pip install tfx-book) runs on 3.10 too." >&2; exit 1; }
	@if [ ! -x $(BIN)/python ]; then \
	  if ! $(PYTHON) -m venv $(VENV) 2>/dev/null; then \
	    rm -rf $(VENV); \
	    if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	      echo "==> python3 -m venv needs Debian's python3-venv; installing it"; \
	      (apt-get update -qq && apt-get install -y -qq --no-install-recommends python3-venv) >/dev/null; \
	      $(PYTHON) -m venv $(VENV); \
	    else \
	      echo "error: '$(PYTHON) -m venv' failed. On Debian/Ubuntu: sudo apt-get install python3-venv" >&2; exit 1; \
	    fi; \
	  fi; \
	fi
	@$(BIN)/python -m pip install -q -r requirements.txt -c constraints.txt > $(VENV)/pip.log 2>&1 \
	  || { tail -n 40 $(VENV)/pip.log >&2; echo "error: pip install -r requirements.txt failed (log: $(VENV)/pip.log)" >&2; exit 1; }
	@$(BIN)/python -m pip install -q --no-deps -r requirements-nodeps.txt >> $(VENV)/pip.log 2>&1 \
	  || { tail -n 40 $(VENV)/pip.log >&2; echo "error: pip install --no-deps -r requirements-nodeps.txt failed (log: $(VENV)/pip.log)" >&2; exit 1; }
	@$(BIN)/python -m pip install -q -e . --no-deps >> $(VENV)/pip.log 2>&1 \
	  || { tail -n 40 $(VENV)/pip.log >&2; echo "error: pip install -e . failed (log: $(VENV)/pip.log)" >&2; exit 1; }
	@touch $@

# jupyter-book exits non-zero on a warning with -W --keep-going; the grep is a
# second guard in case a future version stops doing so.
define jupyter_book
	@mkdir -p _build
	$(BIN)/jupyter-book build . $(JB_FLAGS) $(1) 2>&1 | tee _build/$(2).log
	@if grep -q "build finished with problems" _build/$(2).log; then \
	  echo "error: the book build had warnings (see _build/$(2).log)" >&2; exit 1; fi
endef

# The claims appendix is generated from tfx/book/claims.py, the tests and the chapters.
claims-page: $(STAMP)
	$(BIN)/python -m tfx.book.claims_page book/claims.md

book: $(STAMP) claims-page
	$(call jupyter_book,,book)

# Same build, but notebooks are not executed: the committed outputs are rendered, and the
# committed claims page too (tests/test_book.py fails when it is out of date: `make book`
# or `make claims-page` regenerates it), so `make test` never rewrites a tracked file.
book-rendered: $(STAMP)
	@mkdir -p _build
	$(BIN)/python scripts/rendered_config.py _build/_config.rendered.yml
	$(call jupyter_book,--config _build/_config.rendered.yml,book-rendered)

# Every chapter's open-text measures (issue 44) on the built book, against their targets: a
# report (tools/pagecheck.py; tests/book/test_open_text.py holds the chapters to them).
page-report: $(STAMP)
	$(BIN)/python tools/pagecheck.py --open-text

# Every test: the unit tests and the browser test over the rendered book (tests/), then nbval
# on every notebook, run where a Colab reader runs it (colab-check: the built wheel in a clean
# venv, each notebook from an empty folder), then the book built with -W from the outputs
# nbval just produced. Each chapter executes once. pytest collecting nothing (exit 5) fails.
# TEST_WORKERS: pytest processes (pytest-xdist) and notebooks executed at once. --durations
# lists the slowest tests, so that CI time (the guide asks for under 20 minutes) can be read off a log.
TEST_WORKERS ?= $(shell nproc 2>/dev/null || echo 2)
test: export TFX_PROFILE ?= quick
test: book-rendered browser-deps-if-possible
	@echo "==> pytest tests/ (TFX_PROFILE=$$TFX_PROFILE, $(TEST_WORKERS) workers)"
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile --durations=25 tests
	@echo "==> nbval on every notebook, from the built wheel in a clean venv, each from an empty folder"
	$(BIN)/python scripts/colab_check.py --jobs $(TEST_WORKERS)
	@echo "==> the book built with -W from the outputs nbval just produced (a warning only executed outputs give)"
	$(BIN)/python scripts/executed_build.py

browser-deps:
	@if [ -x $(CHROMIUM) ]; then echo "$(CHROMIUM) present"; else \
	  echo "==> Installing Debian's chromium"; \
	  apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium > /dev/null; \
	  $(CHROMIUM) --version; fi

# Used by `test`: install chromium when we can (root + apt), else leave the
# browser test to skip (locally) or fail (CI=true) with its own message.
.PHONY: browser-deps-if-possible
browser-deps-if-possible:
	@if [ ! -x $(CHROMIUM) ] && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  $(MAKE) --no-print-directory browser-deps; fi

# Every chapter as a Colab reader runs it: the wheel installed non-editable into a clean
# venv with only what Colab has, each notebook executed from an empty folder (quick profile).
colab-check: $(STAMP)
	$(BIN)/python scripts/colab_check.py

# The GPU half in short bursts (experiments/README.md says why this order): the full
# profile of every experiment, the runs that settle a claim first; no run starts that is
# not expected to finish within BUDGET minutes, so repeating the command fills in the rest.
# Uses .venv where there is one, else the machine's python3 with tfx importable from here.
# On a lent GPU machine use scripts/gpu_burst.sh, which installs what it lacks and runs this.
# GPU_PLAN is tfx.runs.cost.GPU_PLAN (tests/runs/test_gpu_plan.py checks they agree).
GPU_PLAN := experiments/ad3-deep experiments/lr-sensitivity experiments/warmup-axis experiments/depth experiments/depth-rates \
            experiments/warmup \
            experiments/warmup-fixes experiments/stability-map experiments/admin-profiling \
            experiments/translation experiments/lm experiments/logits experiments/norms \
            experiments/placements
BUDGET ?= 9
JOBS ?= 8
GPU_PYTHON ?= $(if $(wildcard $(BIN)/python),$(BIN)/python,$(PYTHON))
gpu-results:
	PYTHONPATH=$(CURDIR) $(GPU_PYTHON) -m tfx.sweep $(GPU_PLAN) --profile full --budget-minutes $(BUDGET) --jobs $(JOBS)

# The plan with the H100 cost model's step times (tfx.runs.cost), on any machine: trains nothing.
gpu-plan:
	@PYTHONPATH=$(CURDIR) HF_HUB_OFFLINE=1 $(GPU_PYTHON) -m tfx.sweep $(GPU_PLAN) --profile full --plan --jobs $(JOBS)

# The wheels scripts/gpu_burst.sh installs on a bare GPU machine where its python3 lacks them
# (CPython 3.12, manylinux x86-64): what the sweep imports beyond torch (scripts/gpu_wheels.txt).
# tfx-book itself is built there from the carried tree (GPU_WHEELS_ARGS=--tfx: a wheel of it too).
GPU_WHEELS ?= .gpu-wheels
GPU_WHEELS_ARGS ?=
gpu-wheels: $(STAMP)
	$(BIN)/python scripts/gpu_wheels.py $(GPU_WHEELS) $(GPU_WHEELS_ARGS)

# What a burst needs and nothing else (tfx/ with its corpora, experiments/, the build files, the
# script, the full-profile records, LINEAGE.jsonl, gpu-bench.txt), into GPU_TREE: a tree a lent GPU
# machine can carry (≤ 64 MiB; this checkout is larger); run OUT=... bash $(GPU_TREE)/scripts/gpu_burst.sh there.
GPU_TREE ?= _build/gpu-tree
gpu-tree:
	$(GPU_PYTHON) scripts/gpu_tree.py $(GPU_TREE)

NB ?=
notebooks: $(STAMP)
	$(BIN)/python scripts/execute_notebooks.py $(NB)

clean:
	rm -rf _build build .jupyter_cache .pytest_cache
	find . -path ./$(VENV) -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV) *.egg-info
