# ieqa developer entry points. Everything works from a fresh clone:
#   make demo   set up .venv and run the end-to-end demo
#   make test   set up .venv and run the test suite
#   make test-claims   the slow claim tests alone; records that they passed on this tree
#   make test-machines   the claim tests under every CPU kernel profile, 1 and 2 threads,
#                        shuffled, three runs each (hours; not part of CI)
#   make test-latest   the suite against the newest releases, in .venv-latest
#   make constraints   record .venv-latest's versions in constraints.txt (after test-latest passes)
#   make docs   build the documentation site into site/ (make docs-serve: live preview)
#   make calibration-data   download the calibration data tests/scorers compare against
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.ieqa-installed
# The versions the suite last passed with: `make setup` installs exactly these, so every
# clone gets the environment CI tested. They change on purpose, in a commit of their own,
# after `make test-latest` passes (`make constraints` writes the file from .venv-latest).
# Recorded with Python 3.11 on Linux x86-64; elsewhere `make setup CONSTRAINTS=` resolves
# the newest releases instead.
CONSTRAINTS ?= constraints.txt
PIN := $(if $(CONSTRAINTS),-c $(CONSTRAINTS),)
LATEST_VENV ?= .venv-latest
# the CPU build on the development machines; an upgrade would pull the multi-GB CUDA build
TORCH_VERSION ?= 2.13.0

.PHONY: setup test test-claims test-machines test-latest constraints demo lint bench clean docs docs-serve browser calibration-data

DEEPSPEED_LIB := $(VENV)/deepspeed-lib
DEEPSPEED_VERSION ?= 0.19.8

setup: $(STAMP) browser $(DEEPSPEED_LIB)/.installed

# DeepSpeed, beside the environment rather than in it (tests/train/test_launch_config.py
# checks the shipped ZeRO configs against DeepSpeed's own schema with it on PYTHONPATH;
# installed into .venv it would change what transformers and TRL import). Pure Python,
# about 10 s; when it cannot be installed those checks are skipped.
$(DEEPSPEED_LIB)/.installed: $(STAMP)
	@$(PY) -m pip install -q --no-deps --target $(DEEPSPEED_LIB) deepspeed==$(DEEPSPEED_VERSION) \
		hjson==3.1.0 py-cpuinfo==9.0.0 msgpack==1.2.4 einops==0.8.2 >/dev/null 2>&1 \
		&& touch $@ \
		|| echo "could not install deepspeed into $(DEEPSPEED_LIB); its config checks will be skipped"

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

# Everything, torch included, is installed by uv in one resolve (torch alone: 32 s with pip,
# 12 s with uv on 2 cores). torch is pinned to the CPU build shipped on the development
# machines, and asked for only when it is missing (an installed torch that satisfies the
# constraint is kept). The pin alone does not keep out the multi-GB CUDA build (PyPI's
# torch==2.13.0 is that build): the CPU wheel comes from the machines' find-links folder,
# which pip reads from PIP_FIND_LINKS or its config file and uv reads from neither, so
# they are passed on to uv (folders that do not exist are left out: pip skips them, uv
# would stop). Compiled to bytecode: where PYTHONDONTWRITEBYTECODE is set (as on the CI
# machines) no process writes the .pyc files that uv leaves out, so every process (each
# test worker, docs example, CLI test and Ray worker) compiled torch, transformers,
# diffusers, ray and scipy from source again, about 2 s of CPU each.
$(STAMP): pyproject.toml $(CONSTRAINTS)
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@$(PY) -m pip install -q $(PIN) uv
	links="$${PIP_FIND_LINKS:-$$($(PY) -m pip config get global.find-links 2>/dev/null)}"; \
	$(VENV)/bin/uv pip install -q --compile-bytecode --python $(PY) $(PIN) \
		$$(for d in $$links; do case "$$d" in *://*) ;; *) [ -e "$$d" ] || continue ;; esac; \
			echo "--find-links $$d"; done) \
		$$($(PY) -c "import torch" 2>/dev/null || echo torch==$(TORCH_VERSION)) -e ".[dev]"
	@! $(PY) -m pip show -q torchvision 2>/dev/null || (echo "torchvision got installed; it breaks transformers' Qwen-VL imports" && exit 1)
	@touch $(STAMP)

# The suite against the newest releases of every dependency (torch stays at TORCH_VERSION:
# an eager upgrade would replace the CPU build by the newest CUDA one), in its own
# environment so .venv keeps the tested versions.
test-latest: browser
	@test -x $(LATEST_VENV)/bin/python || $(PYTHON) -m venv $(LATEST_VENV)
	@$(LATEST_VENV)/bin/python -c "import torch" 2>/dev/null || $(LATEST_VENV)/bin/python -m pip install -q torch==$(TORCH_VERSION)
	@echo "torch==$(TORCH_VERSION)" > $(LATEST_VENV)/torch-pin.txt
	$(LATEST_VENV)/bin/python -m pip install -q --upgrade --upgrade-strategy eager -c $(LATEST_VENV)/torch-pin.txt -e ".[dev]"
	@! $(LATEST_VENV)/bin/python -m pip show -q torchvision 2>/dev/null || (echo "torchvision got installed; it breaks transformers' Qwen-VL imports" && exit 1)
	HF_HUB_OFFLINE=1 $(LATEST_VENV)/bin/python -m pytest -q $(XDIST) --claims=run

# Records .venv-latest's versions as the new constraints (run after `make test-latest`
# passes, and commit constraints.txt on its own).
constraints:
	@test -x $(LATEST_VENV)/bin/python || (echo "no $(LATEST_VENV): run 'make test-latest' first" && exit 1)
	@{ echo "# The versions \`make test\` last passed with (Python 3.11, Linux x86-64). Written by"; \
	   echo "# \`make constraints\` after \`make test-latest\` passed; commit it on its own."; \
	   $(LATEST_VENV)/bin/python -m pip freeze --exclude-editable | sed -e 's/+cpu$$//' | grep -v '^#'; } > constraints.txt
	@echo "wrote constraints.txt ($$(grep -vc '^#' constraints.txt) packages); run 'make test' with it, then commit it"

# One pytest-xdist worker per core (at most 4), each with one torch thread (tests/conftest.py);
# a test file stays on one worker, so its module fixtures are built once. On 2 cores this
# takes about three quarters of the time of one process. `make test XDIST=` runs one process.
XDIST ?= -n auto --maxprocesses 4 --dist loadfile
# --durations: the slowest tests, printed at the end of every run (CI's time budget).
# compileall: ieqa's own bytecode, for the same reason as --compile-bytecode
# above (only what changed is compiled again).
# The tests marked both `claim` and `slow` (training claims, the classic scorer's agreement
# with ShapesEdit and AURORA: ~40 % of the suite's CPU) run here only while
# tests/claims-record.json is not of the committed tree (tests/claims_record.py); the run
# ends with a `claims:` line saying which. `make test-claims` runs exactly them and, when all
# passed on a clean tree, writes that record: commit it, and `make test` takes them from it
# until anything else changes.
test: setup
	@$(PY) -m compileall -q -j 0 src >/dev/null
	HF_HUB_OFFLINE=1 $(PY) -m pytest -q $(XDIST) --durations=15

test-claims: setup
	@$(PY) -m compileall -q -j 0 src >/dev/null
	HF_HUB_OFFLINE=1 $(PY) -m pytest -q $(XDIST) -m "claim and slow" --claims=run \
		--write-claims-record --durations=15

# The tests marked `claim` (learning, agreement, statistical margins) as they run on other
# CPUs: scripts/test_machines.py; its last table is in docs/development.md.
MACHINES_ARGS ?= --markdown test-machines.md
test-machines: setup
	HF_HUB_OFFLINE=1 $(PY) scripts/test_machines.py $(MACHINES_ARGS)

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
	$(VENV)/bin/lint-imports

clean:
	rm -rf $(VENV) $(LATEST_VENV) build dist site src/*.egg-info .pytest_cache ieqa-demo
