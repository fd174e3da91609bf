"""A user's own ``training.py`` in the working folder (issue 37, item 4): the arena's ``ppo:`` agent steps past it
and never runs it; where it is imported already, the error names the clash."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import gymnasium
import pytest
from sb3_contrib import MaskablePPO

USER_MODULE = 'raise SystemExit("the user\'s training.py ran")\n'


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A working folder with a user's ``training.py`` and a small MaskablePPO checkpoint, ``model.zip``."""
    folder = tmp_path_factory.mktemp("user")
    (folder / "training.py").write_text(USER_MODULE)
    env = gymnasium.make("sixnimmt_env:sixnimmt/SixNimmt-v0", num_players=3, episode="round")
    model = MaskablePPO("MlpPolicy", env, n_steps=16, batch_size=16, policy_kwargs={"net_arch": [8]}, seed=0)
    model.save(folder / "model.zip")
    return folder


@pytest.mark.parametrize("workers", [1, 2])
def test_the_arena_plays_a_ppo_agent_beside_a_users_training_module(folder: Path, workers: int) -> None:
    """``python -m sixnimmt_env.arena`` puts the working folder first on ``sys.path``; with 2 workers the games are
    played in spawned processes, which get the same path."""
    out = folder / f"out{workers}"
    command = [sys.executable, "-m", "sixnimmt_env.arena", "--agents", "ppo:model.zip,greedy,random"]
    command += ["--games", "6", "--workers", str(workers), "--quiet", "--out", str(out)]
    run = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "the user's training.py ran" not in run.stderr
    results = json.loads((out / "results.json").read_text())
    assert results["games"] == 6


def test_a_users_training_module_imported_first_is_a_clear_error(folder: Path) -> None:
    code = (
        "import sys; sys.modules['training'] = type(sys)('training'); sys.modules['training'].__file__ = "
        "'/home/me/training.py'\n"
        "from sixnimmt_env.agents import make_agent\n"
        "make_agent('ppo:model.zip')\n"
    )
    run = subprocess.run([sys.executable, "-c", code], cwd=folder, capture_output=True, text=True, timeout=300)
    assert run.returncode == 1
    assert run.stderr.splitlines()[-1] == (
        "ImportError: the agent plugin 'ppo' needs sixnimmt's package 'training', but the module 'training' "
        "imported here is '/home/me/training.py', not a package: rename that module of yours"
    )
