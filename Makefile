# Two commands for a fresh machine: `make train` (the main job) and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
CONFIG ?= configs/ppo_4p.yaml

.PHONY: install train test lint bench

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e '.[train,dev]'
	touch $@

install: $(VENV)/.installed

train: install
	$(PY) -m sixnimmt_env.arena --agents greedy,lowest,random,random --games 2000 --seed 0

test: install
	$(PY) -m pytest -q -n 2

lint: install
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check .

bench: install
	$(PY) benchmarks/env_throughput.py
