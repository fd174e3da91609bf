# Two commands for a fresh machine: `make train` (the main job) and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
CONFIG ?= configs/ppo_4p.yaml

.PHONY: install train test lint bench champion docs

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e '.[train,play,dev,interop,rllib,docs]'
	touch $@

# The install warms numba's disk cache of the arena's compiled loop (sixnimmt_env/compiled/loop_cache.py): it is
# compiled once here, not in the first arena command; after an edit of its sources numba's caches are cleared first.
install: $(VENV)/.installed
	$(PY) -m sixnimmt_env.compiled.loop_cache

# Train the default config (13 to 18 min on 2 cores, on every core: train.workers), then play its final model
# against the baselines, on the rules it was trained on (training.evaluate reads them from the run). The training's
# own final evaluation (report.md, final_eval.csv: eval.final_games each) already has greedy and random in every
# other seat; then a mixed table, and the searching mc:64 in every other seat.
# The final model is final_model.zip (SB3) or the RLlib module folder final_model/ (train.backend: rllib).
train: install
	$(PY) -m training.train $(CONFIG)
	run=$$(ls -td runs/$(basename $(notdir $(CONFIG)))/*/ | head -1) && \
	model=$$(if [ -f $${run}final_model.zip ]; then echo ppo:$${run}final_model.zip; else echo rllib:$${run}final_model; fi) && \
	sed -n '/^## /,$$p' $${run}report.md | head -20 && \
	$(PY) -m training.evaluate $$model --opponents random,lowest,highest --fill-seats --games 5000 \
		--out $${run}eval_mixed && \
	$(PY) -m training.evaluate $$model --opponents mc:64 --fill-seats --games 2000 --workers 2 --out $${run}eval_mc64

# The shipped champion from scratch (docs/champion.md; about 9.3 hours on 2 cores): the default-config policy (an
# opponent of stages 2 to 8), stage 1 (mc:64 distillation, then PPO), stage 2 (PPO against a league), stage 3 (PPO
# against a league where mc:16 holds 40 % of the seats), stage 4 (PPO against whole tables of one kind), stages 5
# and 6 (the same with more tables of three greedy), stage 7 (the three target line-ups at equal weight, with the
# hand-and-table card features) and stage 8 (the same with tables of stage 6, the champion it had to beat), then
# the two stages on tables of 2 to 10 players (about 75 minutes), whose weights `champion` plays at 3 and 5 to 10
# players, and their continuation at 2 players (about 32 minutes), which `champion` plays at 2. The stages are listed
# in lab/configs/recipes/champion.yaml (the lab: how champion was made, not installed); after a stop, go on with
# `python -m lab.recipe lab/configs/recipes/champion.yaml --from STAGE --force` (`--list` shows what is done).
champion: install
	$(PY) -m lab.recipe lab/configs/recipes/champion.yaml --all --force

test: install
	$(PY) -m pytest -q -n 2

# The documentation site (docs/, Sphinx + MyST + autodoc) into site/, offline; every warning is an error (-W), and so
# is every reference into the project that does not resolve (-n; docs/nitpick_ignore.txt lists the loose ones).
docs: install
	$(PY) -m sphinx -q -E -n -W --keep-going -b html docs site

# The static checks (CI runs them after the tests; .pre-commit-config.yaml runs the same four before a commit): ruff's
# rules, ruff's format, the import layers (lint-imports, pyproject.toml) and the type hints (mypy over sixnimmt_env,
# training and lab: [tool.mypy] in pyproject.toml).
lint: install
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check . && $(VENV)/bin/lint-imports && $(VENV)/bin/mypy

bench: install
	$(PY) benchmarks/env_throughput.py
