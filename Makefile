# ieqa developer entry points. Everything works from a fresh clone:
#   make demo   set up .venv and run the end-to-end demo
#   make test   set up .venv and run the test suite
#   make docs   build the documentation site into site/ (make docs-serve: live preview)
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.ieqa-installed

.PHONY: setup test demo lint bench clean docs docs-serve

setup: $(STAMP)

# torch comes first, pinned to the CPU build shipped on the development machines, and
# only when it is missing: an unpinned resolve would pull the multi-GB CUDA build.
$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e ".[dev]"
	@! $(PY) -m pip show -q torchvision 2>/dev/null || (echo "torchvision got installed; it breaks transformers' Qwen-VL imports" && exit 1)
	@touch $(STAMP)

test: setup
	HF_HUB_OFFLINE=1 $(PY) -m pytest -q

demo: setup
	HF_HUB_OFFLINE=1 $(VENV)/bin/ieqa demo

docs: setup
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict

docs-serve: setup
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs serve

lint: setup
	$(VENV)/bin/ruff check src tests benchmarks

clean:
	rm -rf $(VENV) build dist site src/*.egg-info .pytest_cache ieqa-demo
