# ieqa developer entry points. Everything works from a fresh clone:
#   make demo   set up .venv and run the end-to-end demo
#   make test   set up .venv and run the test suite
#   make docs   build the documentation site into site/ (make docs-serve: live preview)
#   make calibration-data   download the calibration data tests/scorers compare against
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.ieqa-installed

.PHONY: setup test demo lint bench clean docs docs-serve browser calibration-data

setup: $(STAMP) browser

# tests/studio drive the studio's pages in Debian's chromium (through Playwright, which is
# pointed at /usr/bin/chromium: its own browser download cannot be used). Installed here
# when missing, as root; otherwise say what to run (the browser tests skip until then).
CHROMIUM ?= /usr/bin/chromium
browser:
	@if [ -x $(CHROMIUM) ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "installing Debian's chromium for the browser tests (tests/studio): apt-get install -y chromium"; \
		(apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium) >/dev/null \
			|| echo "apt-get install chromium failed; the browser tests in tests/studio will be skipped"; \
	else \
		echo "tests/studio's browser tests need Debian's chromium at $(CHROMIUM): run" \
			"'sudo apt-get install -y chromium' (they are skipped until then)"; \
	fi

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

# tests/scorers' calibration tests need IQA-PyTorch's ResultsCalibra data (five TID2013 pairs
# and the official values). CI has it in ../shared/data; in any other clone this downloads it,
# at a pinned commit and SHA-256 checked, into .data/pyiqa_calibra (git-ignored). Standard
# library only, so no .venv is needed.
calibration-data:
	$(PYTHON) scripts/fetch_calibration_data.py

docs: setup
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict

docs-serve: setup
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs serve

lint: setup
	$(VENV)/bin/ruff check src tests benchmarks

clean:
	rm -rf $(VENV) build dist site src/*.egg-info .pytest_cache ieqa-demo
