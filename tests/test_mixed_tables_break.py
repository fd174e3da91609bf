"""Attacks on ``training.vec_env.MixedTablesVecEnv`` and training on several table sizes (branch break-mixed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sixnimmt_env.compiled.kinds import KINDS
from training.vec_env import MixedTablesVecEnv, SixNimmtVecEnv

ROOT = Path(__file__).resolve().parents[1]


def _mixed() -> MixedTablesVecEnv:
    return MixedTablesVecEnv(
        [
            SixNimmtVecEnv(3, opponents="greedy", seed=0, num_players=2, episode="round"),
            SixNimmtVecEnv(2, opponents="greedy", seed=1, num_players=5, episode="round"),
        ]
    )


def test_a_refused_opponent_list_leaves_the_batched_env_as_it_was() -> None:
    """A list of specs of the wrong length is refused; the env must keep its opponents and keep working (it used to
    clear them before checking: the next reset failed with ``TypeError: 'NoneType' object is not callable``)."""
    env = SixNimmtVecEnv(2, opponents="lowest", seed=0, num_players=4, episode="round")
    env.reset()
    with pytest.raises(ValueError, match="must name 3 agents"):
        env.set_opponents(["random"])
    with pytest.raises(ValueError):
        env.set_opponents("no-such-agent")
    assert env.reset().shape == (2, 506)
    assert env._fixed is not None and env._fixed[0].tolist() == [KINDS["lowest"]] * 3  # still three "lowest" seats


def test_a_refused_opponent_list_leaves_every_table_of_a_mixed_env_as_it_was() -> None:
    """``set_opponents(list)`` on tables of 2 and 5 players fits no more than one size: refused before any part
    changes (it used to give the 2-player part the new list and break the 5-player one)."""
    mixed = _mixed()
    mixed.reset()
    before = [part._fixed[0].tolist() for part in mixed.parts]
    with pytest.raises(ValueError, match="must name"):
        mixed.set_opponents(["random"])
    assert [part._fixed[0].tolist() for part in mixed.parts] == before
    assert mixed.reset().shape == (5, 506)
