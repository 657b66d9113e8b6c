# The README's two commands, `make demo` and `make test`, and the set-up they share.
#
# torch is installed on its own first, so the build is your choice:
#   make test                                     # torch==2.13.0 (the CPU wheel where one is on disk)
#   make test TORCH_SPEC='torch==2.5.1' TORCH_PIP_ARGS='--index-url <your CPU or CUDA wheel index>'
# An existing torch in the venv that satisfies the package's range is kept as it is.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
TORCH_SPEC ?= torch==2.13.0
TORCH_PIP_ARGS ?=
PLUGINS := $(patsubst %/pyproject.toml,%,$(wildcard plugins/*/pyproject.toml))
# Two steps, each remembered by a stamp file: the core and the built-in plugins (all `make demo` and
# `make bench` need), then the development extras on top (pytest, ruff, mypy, and the optional
# Gymnasium, PettingZoo, TorchRL, rsl_rl, ONNX, TensorBoard, Ray and Stable-Baselines3 that the tests
# exercise).
CORE_STAMP := $(VENV)/.installed-core
DEV_STAMP := $(VENV)/.installed-dev
# tournaments/league.yaml picks up the checkpoints written here.
DEMO_DIR := runs/demo
DEMO_TRAIN_SECONDS ?= 120
# The suite runs in one worker process per core (pytest-xdist); TEST_WORKERS=0 runs it in this process.
TEST_WORKERS ?= auto
# `make test-portable`: the suite under the plainest CPU kernels of torch and OpenBLAS, as a machine
# with another CPU computes: a test whose exact numbers or trained scores hold only on this CPU fails.
PORTABLE_KERNELS := ATEN_CPU_CAPABILITY=default OPENBLAS_CORETYPE=Prescott
PYTEST := $(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadgroup

.PHONY: install install-core browser lint test test-portable demo bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(CORE_STAMP): $(BIN)/python pyproject.toml $(wildcard plugins/*/pyproject.toml)
	@$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/pip install $(TORCH_PIP_ARGS) "$(TORCH_SPEC)"
	$(BIN)/pip install -e . $(foreach p,$(PLUGINS),-e $(p))
	@touch $(CORE_STAMP)

# Redone whenever the core step is (a changed pyproject.toml may have changed the extras too).
$(DEV_STAMP): $(CORE_STAMP)
	$(BIN)/pip install -e ".[dev]"
	@touch $(DEV_STAMP)

install-core: $(CORE_STAMP)

install: $(DEV_STAMP)

# The replay viewer's browser test needs Debian's chromium: installed when missing, where possible.
browser:
	@bash .ci/install-chromium.sh

# ruff (lint rules and import order) and mypy, as configured in pyproject.toml.
lint: install
	$(BIN)/ruff check arena plugins benchmarks tests examples
	$(BIN)/mypy

test: install browser lint
	$(PYTEST)

test-portable: install browser
	$(PORTABLE_KERNELS) $(PYTEST)

demo: install-core
	rm -rf $(DEMO_DIR)
	$(BIN)/arena train ppo --vs crank --max-time $(DEMO_TRAIN_SECONDS) --out $(DEMO_DIR)
	$(BIN)/arena tournament tournaments/league.yaml --fresh

bench: install-core
	$(BIN)/python benchmarks/env_throughput.py

clean:
	rm -rf $(VENV) build *.egg-info plugins/*/*.egg-info .pytest_cache
