"""Training on several table sizes: edge cases of `MixedTablesVecEnv`, its builder and the config checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from sixnimmt_env.compiled.kinds import KINDS
from training.config import ConfigError, load_config
from training.opponents import mixture_sampler
from training.vec import build_vec_env, players_per_env
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


def test_whole_games_on_several_table_sizes_are_refused_by_the_config_or_trained() -> None:
    """``env.episode: game`` (end score 66, no max_rounds) with ``env.num_players: [2, 5]`` on the batched engine: the
    observation's upper bound of the round number depends on the table size, so the two batches' spaces differ and
    MixedTablesVecEnv refused them with ``ValueError: the batches of a MixedTablesVecEnv must have the same spaces``
    after the config had been accepted (``python -m training.train`` crashed with a traceback, its run folder
    made). Either the config refuses it, naming the keys, or the env is built."""
    try:
        cfg = load_config(
            ROOT / "configs" / "smoke.yaml",
            ["train.vec_env=batched", "env.num_players=[2, 5]", "env.episode=game", "eval.opponents=[greedy]"],
        )
    except ConfigError:
        pytest.fail("the config was refused")
    venv = build_vec_env(cfg.env, cfg.train, mixture_sampler(cfg.opponents, cfg.self_play, cfg.train.opponent_draw))
    assert venv.reset().shape == (cfg.train.n_envs, 506)
    # the widest bounds of the two batches: the most rounds (count / 10) a whole game can last grows with the table
    parts = venv.venv.parts
    assert [part.observation_space.high.max() for part in parts] == pytest.approx([13.2, 32.7])
    assert (venv.observation_space.high == parts[1].observation_space.high).all()


def test_the_batched_env_plays_each_size_as_often_as_the_config_docstring_says() -> None:
    """training/config/schema.py: training env ``i`` plays ``num_players[i % len]``; on the batched engine each size
    has that many games, in a row (one batch per size), in the order the sizes first appear; ``vec_env: dummy``
    follows the rule env by env."""
    cfg = load_config(
        ROOT / "configs" / "smoke.yaml",
        ["train.vec_env=batched", "train.n_envs=11", "env.num_players=[4, 2, 10]", 'eval.opponents=["greedy"]'],
    )
    assert players_per_env(cfg.env, cfg.train.n_envs) == [4, 2, 10, 4, 2, 10, 4, 2, 10, 4, 2]
    venv = build_vec_env(cfg.env, cfg.train, mixture_sampler(cfg.opponents, cfg.self_play, cfg.train.opponent_draw))
    assert venv.get_attr("num_players") == [4] * 4 + [2] * 4 + [10] * 3
    dummy = build_vec_env(
        cfg.env,
        cfg.train.model_copy(update={"vec_env": "dummy"}),
        mixture_sampler(cfg.opponents, cfg.self_play, cfg.train.opponent_draw),
    )
    assert [env.unwrapped.num_players for env in dummy.envs] == players_per_env(cfg.env, cfg.train.n_envs)


def test_fewer_training_envs_than_table_sizes_is_a_config_error() -> None:
    """``train.n_envs: 2`` with ``env.num_players: [2, 4, 10]`` trains on 2 and 4 players only, silently (the
    10-player table, listed, is never played)."""
    with pytest.raises(ConfigError, match="n_envs"):
        load_config(
            ROOT / "configs" / "smoke.yaml",
            ["train.vec_env=batched", "train.n_envs=2", "env.num_players=[2, 4, 10]", 'eval.opponents=["greedy"]'],
        )


def test_negative_env_indices_work_as_in_the_other_vector_envs() -> None:
    """SB3's DummyVecEnv and SixNimmtVecEnv take ``indices=-1`` (the last env); MixedTablesVecEnv raised IndexError,
    and ``env_is_wrapped`` took any index, even out of range, without a word."""
    mixed = _mixed()
    mixed.reset()
    assert mixed.get_attr("num_players", -1) == [5]
    with pytest.raises(IndexError):
        mixed.env_is_wrapped(object, 99)
