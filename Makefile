# The two commands of the README:
#   make demo   install, start the local services, run the demo of both services
#   make test   install, start the local services, ruff, mypy, pytest
#   make packaging   build the wheel, install it into fresh virtual environments, run the services
# Also: make bench (benchmarks, prints figures and ratios, writes var/bench/results.md and
# .json), make bench-anchors (Orbit's drain beside Celery's and Procrastinate's), make fuzz (the long fuzzing
# profile: >= 10,000 cases per target), make services-stop.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test packaging fuzz bench bench-anchors services-stop install services system-packages lint typecheck unit integration

# Everything, editable (the extras `all`, `dev`, `services`). The distribution was called
# agentcall-orbit before: that install goes first, so that one editable install remains.
$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip uninstall -q -y agentcall-orbit 2>/dev/null || true
	rm -rf src/agentcall_orbit.egg-info
	$(BIN)/pip install -q -c constraints.txt -e '.[all,dev,services]'
	touch $(STAMP)

install: $(STAMP)

services: install
	scripts/services start

# Debian packages of scripts/debian-packages.txt: installed when run as root, named otherwise.
system-packages:
	scripts/system-packages

demo: services
	eval "$$(scripts/services env)" && $(BIN)/python scripts/demo.py

lint: install
	$(BIN)/ruff check src tests bench scripts examples
	$(BIN)/ruff format --check src tests bench scripts examples

typecheck: install
	$(BIN)/mypy

# The wheel test (marker packaging: a build and two fresh virtual environments, minutes) runs
# on its own: `make packaging`, which CI runs after `make test`.
test: system-packages services lint typecheck
	eval "$$(scripts/services env)" && $(BIN)/pytest -m "not packaging"

packaging: services
	eval "$$(scripts/services env)" && $(BIN)/pytest -m packaging

fuzz: system-packages services
	eval "$$(scripts/services env)" && FUZZ_EXAMPLES=10000 $(BIN)/pytest -m fuzz

bench: system-packages services
	eval "$$(scripts/services env)" && $(BIN)/python bench/run_all.py

# The peers of bench/anchors/ live in their own virtual environment, outside the project's
# dependencies; PostgreSQL (Debian's package) runs from a temporary directory per drain.
ANCHORS_VENV := var/bench/anchors-venv
ANCHORS_STAMP := $(ANCHORS_VENV)/.installed

$(ANCHORS_STAMP): bench/anchors/requirements.txt
	test -x $(ANCHORS_VENV)/bin/python || $(PYTHON) -m venv $(ANCHORS_VENV)
	$(ANCHORS_VENV)/bin/pip install -q -r bench/anchors/requirements.txt
	touch $(ANCHORS_STAMP)

bench-anchors: system-packages services $(ANCHORS_STAMP)
	scripts/system-packages bench/anchors/debian-packages.txt
	eval "$$(scripts/services env)" && $(BIN)/python bench/run_all.py --only anchors --out var/bench/anchors

services-stop:
	scripts/services stop
