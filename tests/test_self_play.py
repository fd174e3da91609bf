"""Self-play at strong tables (issue 58): the learner's current self as an opponent (``self_play.current``), the
growing snapshot pool (``self_play.pool: growing``) and the shares of the opponent draws."""

from __future__ import annotations

import bisect
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from sb3_contrib import MaskablePPO
from stable_baselines3.common.callbacks import BaseCallback, CallbackList

from sixnimmt_env.agents import Agent, make_agent
from sixnimmt_env.champion import pick_masked
from sixnimmt_env.compiled.heuristics import KINDS
from training.callbacks import CurrentSelfSync
from training.config import ConfigError, load_config
from training.opponents import CurrentSelf, MixtureSampler, SnapshotPool, current_self, mixture_sampler
from training.policy import algo_kwargs
from training.train import train
from training.vec import build_vec_env
from training.vec_env import SixNimmtVecEnv

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ROOT / "configs" / "smoke.yaml"
STRONG = ROOT / "lab" / "configs" / "strong_tables.yaml"
BATCHED = ["train.vec_env=batched", "train.n_envs=32", "algo.n_steps=16", "algo.batch_size=128", "train.workers=1"]


def _within(share: float, expected: float, n: int) -> bool:
    """``share`` of ``n`` draws within 4 standard deviations of a binomial share ``expected``."""
    return abs(share - expected) <= 4 * np.sqrt(expected * (1 - expected) / n)


# --------------------------------------------------------------------------- shares of the draws


def test_the_sampler_draws_current_self_pool_and_mixture_at_their_shares() -> None:
    """50 % current self, 20 % a pool snapshot (uniform over the pool), 30 % the mixture at its weights, per table
    (one draw fills the table) and per seat; while the pool is empty its share goes to the mixture."""
    me = current_self()
    pool: list[str | Agent] = [make_agent("lowest"), make_agent("highest")]
    n = 20_000
    for draw in ("table", "seat"):
        sampler = MixtureSampler(
            ["greedy", "random"], [0.6, 0.4], pool=pool, pool_prob=0.2, draw=draw, current=me, current_prob=0.5
        )
        rng = np.random.default_rng(3)
        tables = [sampler(rng, 3) for _ in range(n // 3 if draw == "seat" else n)]
        if draw == "table":
            assert all(t[0] is t[1] is t[2] for t in tables)
            drawn = [t[0] for t in tables]
        else:
            drawn = [a for t in tables for a in t]
            assert np.mean([len({id(a) for a in t}) > 1 for t in tables]) > 0.5  # seats draw on their own
        m = len(drawn)
        shares = {
            "current": float(np.mean([a is me for a in drawn])),
            "lowest": float(np.mean([a is pool[0] for a in drawn])),
            "highest": float(np.mean([a is pool[1] for a in drawn])),
            "greedy": float(np.mean([type(a).__name__ == "GreedyAgent" for a in drawn])),
            "random": float(np.mean([type(a).__name__ == "RandomAgent" for a in drawn])),
        }
        expected = {"current": 0.5, "lowest": 0.1, "highest": 0.1, "greedy": 0.3 * 0.6, "random": 0.3 * 0.4}
        for key, value in expected.items():
            assert _within(shares[key], value, m), (draw, key, shares[key], value)
        assert abs(sum(shares.values()) - 1) < 1e-12
    empty = MixtureSampler(["greedy"], [1.0], pool_prob=0.2, draw="table", current=me, current_prob=0.5)
    rng = np.random.default_rng(4)
    drawn = [empty(rng, 3)[0] for _ in range(n)]
    assert _within(float(np.mean([a is me for a in drawn])), 0.5, n)  # the empty pool's 20 % play the mixture
    with pytest.raises(ValueError, match=r"current_prob must be in 0..1 - pool_prob \(0.8\), got 0.9"):
        MixtureSampler(["greedy"], [1.0], pool_prob=0.2, current=me, current_prob=0.9)
    with pytest.raises(ValueError, match=r"current_prob > 0 needs the current self"):
        MixtureSampler(["greedy"], [1.0], current_prob=0.5)


def test_without_a_current_self_the_sampler_draws_as_before() -> None:
    """``current_prob`` 0 (every existing config): the draws are those of the sampler before the current self
    (this test holds the rule it had: one uniform for the pool when there is one, one for the mixture)."""
    pool: list[str | Agent] = [make_agent("lowest"), make_agent("highest")]
    specs, weights = ["greedy", "random", "lowest"], [0.5, 0.3, 0.2]
    sampler = MixtureSampler(specs, weights, pool=pool, pool_prob=0.3)
    cumulative = np.cumsum(np.asarray(weights) / sum(weights)).tolist()
    mine, ref = np.random.default_rng(9), np.random.default_rng(9)
    for _ in range(2000):
        (got,) = sampler(mine, 1)
        if ref.random() < 0.3:
            assert got is pool[int(ref.integers(2))]
        else:
            spec = specs[min(bisect.bisect_right(cumulative, ref.random()), 2)]
            assert got is sampler._agent(spec)
    cfg = load_config(STRONG, ["self_play.current=0"])
    assert mixture_sampler(cfg.opponents, cfg.self_play, cfg.train.opponent_draw).current is None
    assert mixture_sampler(cfg.opponents, load_config(SMOKE).self_play, "seat").current_prob == 0.0


def _label(env: SixNimmtVecEnv, sampler: MixtureSampler, kind: int, ext: int) -> str:
    """What plays an opponent seat of the batched engine: ``current``, ``pool``, or the mixture's spec."""
    if ext < 0:
        return {code: name for name, code in KINDS.items()}[kind]
    agent = env._externals[ext]
    if agent is sampler.current:
        return "current"
    if getattr(agent, "spec", "").startswith("ppo-sample:"):
        return "pool"
    return next(spec for spec, a in env._spec_agents.items() if a is agent)  # champion:..., mc:16


def test_the_strong_tables_config_seats_its_documented_shares_on_the_batched_engine(tmp_path: Path) -> None:
    """lab/configs/strong_tables.yaml on the batched engine, with two snapshots in its pool: over 8 x 2,000 new
    episodes (table draws), 50 % of the tables are the learner's current self, 20 % past selves (each snapshot
    half of them), 30 % the mixture at its weights (stage 8 0.4, mc:16 0.3, default-ppo 0.15, greedy 0.15); every
    table is one agent at all three opponent seats."""
    cfg = load_config(STRONG, ["train.n_envs=2000", "train.workers=1"])
    assert (cfg.self_play.current, cfg.self_play.prob, cfg.train.opponent_draw) == (0.5, 0.2, "table")
    assert (cfg.algo.learning_rate, cfg.algo.clip_range, cfg.self_play.pool) == (3e-5, 0.1, "growing")
    sampler = mixture_sampler(cfg.opponents, cfg.self_play, cfg.train.opponent_draw)
    assert isinstance(sampler.current, CurrentSelf) and sampler.current_prob == 0.5
    venv = build_vec_env(cfg.env, cfg.train, sampler)
    model = MaskablePPO(env=venv, seed=0, **algo_kwargs(cfg.algo))
    paths = [tmp_path / "snapshot_1.zip", tmp_path / "snapshot_2.zip"]
    for path in paths:
        model.save(path)
    pooled = sampler.with_pool([str(p) for p in paths])
    venv.env_method("set_opponents", pooled)
    env = venv.unwrapped
    assert isinstance(env, SixNimmtVecEnv)
    labels: list[str] = []
    snapshots: list[int] = []
    for episode in range(8):
        env.seed(100 + episode)
        env.reset()
        t = env.tables
        opp = np.ones_like(t.kinds, dtype=bool)
        opp[np.arange(env.num_envs), t.seat] = False
        kinds, ext = t.kinds[opp].reshape(-1, 3), t.ext[opp].reshape(-1, 3)
        assert (kinds == kinds[:, :1]).all() and (ext == ext[:, :1]).all()
        drawn = [(_label(env, pooled, int(k), int(e)), int(e)) for k, e in zip(kinds[:, 0], ext[:, 0], strict=True)]
        labels += [label for label, _ in drawn]
        snapshots += [e for label, e in drawn if label == "pool"]
    n = len(labels)
    assert n == 16_000
    expected = {
        "current": 0.5,
        "pool": 0.2,
        "champion:stage-8": 0.3 * 0.4,
        "mc:16": 0.3 * 0.3,
        "champion:default-ppo": 0.3 * 0.15,
        "greedy": 0.3 * 0.15,
    }
    counts = {key: labels.count(key) / n for key in expected}
    assert set(labels) == set(expected)
    for key, share in expected.items():
        assert _within(counts[key], share, n), (key, counts[key], share)
    assert len(set(snapshots)) == 2 and _within(np.mean(np.asarray(snapshots) == snapshots[0]), 0.5, len(snapshots))


# --------------------------------------------------------------------------- the current self


class _CheckCurrentSelf(BaseCallback):
    """At the end of each rollout (the weights that collected it, before the update): the current-self opponents of
    the engine decide as the learner's policy does on their seats' observations (same probabilities; same sampled
    actions from the same uniform numbers); records the weights each rollout was played with."""

    def __init__(self, current: CurrentSelf, env: SixNimmtVecEnv) -> None:
        super().__init__()
        self.current, self.env = current, env
        self.logits: list[np.ndarray] = []

    def _on_step(self) -> bool:
        return True

    def _on_rollout_end(self) -> None:
        t, env = self.env.tables, self.env
        games = np.arange(env.num_envs)
        seats = (t.seat + 1) % env.num_players  # an opponent seat of each game
        assert all(env._externals[e] is self.current for e in t.ext[games, seats])  # the engine's own agent
        obs, masks = t.observe_pairs(games, seats), t.mask_pairs(games, seats)
        policy: Any = self.model.policy
        with torch.no_grad():
            dist = policy.get_distribution(torch.as_tensor(obs), action_masks=masks).distribution
        ours = self.current.logits(obs)
        probs = np.exp(np.where(masks, ours, -np.inf) - np.where(masks, ours, -np.inf).max(axis=1, keepdims=True))
        np.testing.assert_allclose(probs / probs.sum(axis=1, keepdims=True), dist.probs.numpy(), atol=2e-5)
        a, b = np.random.default_rng(7), np.random.default_rng(7)
        logits = dist.logits.numpy()
        np.testing.assert_array_equal(
            self.current.choose(obs, masks, a), pick_masked(logits, masks, b, sample=True, who="learner")
        )
        self.logits.append(ours)


def test_the_current_self_plays_the_weights_that_collect_each_rollout() -> None:
    """``self_play.current: 1`` (every opponent seat the current self), ``train.workers: 1``: before each rollout
    :class:`CurrentSelfSync` gives the engine's current-self agent the learner's weights, so at the end of every
    rollout its seats decide as the learner's policy; the weights change from rollout to rollout (PPO updates)."""
    cfg = load_config(SMOKE, [*BATCHED, "self_play.current=1.0", "self_play.prob=0", "algo.learning_rate=0.003"])
    sampler = mixture_sampler(cfg.opponents, cfg.self_play, cfg.train.opponent_draw)
    current = sampler.current
    assert current is not None and current.refreshes == 0
    venv = build_vec_env(cfg.env, cfg.train, sampler)
    env = venv.unwrapped
    assert isinstance(env, SixNimmtVecEnv)
    model = MaskablePPO(env=venv, seed=0, **algo_kwargs(cfg.algo))
    check = _CheckCurrentSelf(current, env)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as training runs (train.torch_threads): small matrices, no thread pool to wait on
    try:
        model.learn(4 * 32 * 16, callback=CallbackList([CurrentSelfSync(current), check]))
    finally:
        torch.set_num_threads(threads)
    assert current.refreshes == 1 + 4  # training start, then before each of the 4 rollouts
    assert len(check.logits) == 4
    for before, after in zip(check.logits, check.logits[1:], strict=False):
        assert np.abs(after - before).max() > 1e-3  # each rollout's opponents played the updated weights
    # without a refresh it never plays: an opponent decision before the first one is an error, not a silent policy
    with pytest.raises(RuntimeError, match="no weights yet"):
        current_self().logits(np.zeros((1, 506), np.float32))


@pytest.mark.parametrize("workers", [1, 2])
def test_a_run_where_every_opponent_is_the_current_self_trains(tmp_path: Path, workers: int) -> None:
    """The pipeline with ``self_play.current: 1``: every opponent decision is the current self's, which has weights
    only once refreshed: in the learner's process (``workers: 1``) or in the rollout process, from the weights it
    collects with (``workers: 2``)."""
    overrides = [
        *BATCHED,
        f"train.workers={workers}",
        "self_play.current=1.0",
        "self_play.prob=0",
        "train.total_timesteps=2048",
        "eval.every=100000",
        "eval.final_games=2",
        f"train.output_dir={tmp_path}",
    ]
    summary = train(SMOKE, overrides, progress=False)
    assert summary["steps"] == 2048 and summary["workers"] == workers


def _final_weights(summary: dict[str, Any]) -> dict[str, torch.Tensor]:
    return MaskablePPO.load(summary["final_model"]).policy.state_dict()


def test_a_seeded_run_with_current_self_and_a_growing_pool_is_the_same_run_twice(tmp_path: Path) -> None:
    """Same seed, same run: 50 % current self, 30 % pool (growing, a snapshot every 512 steps), table draws; the
    final weights are equal to the bit, and differ from the same run without the current self."""
    overrides = [
        *BATCHED,
        "self_play.current=0.5",
        "self_play.prob=0.3",
        "self_play.pool=growing",
        "self_play.pool_size=2",
        "self_play.snapshot_every=512",
        "train.opponent_draw=table",
        "train.total_timesteps=2048",
        "eval.every=100000",
        "eval.final_games=2",
    ]
    runs = [
        train(SMOKE, [*overrides, f"train.output_dir={tmp_path / name}", *extra], progress=False)
        for name, extra in (("a", []), ("b", []), ("c", ["self_play.current=0"]))
    ]
    first, second, without = (_final_weights(s) for s in runs)
    for key, value in first.items():
        assert torch.equal(value, second[key]), key
    assert any(not torch.equal(value, without[key]) for key, value in first.items())
    # snapshots 1..4 (every 512 steps) in a growing pool of 2: stride 2 at the 4th, so the 2nd and 4th are kept
    pool = sorted(p.name for p in (Path(runs[0]["run_dir"]) / "pool").iterdir())
    assert pool == ["snapshot_1024.zip", "snapshot_2048.zip"]


# --------------------------------------------------------------------------- the growing pool


def test_the_growing_pool_keeps_a_spread_of_the_whole_run(tmp_path: Path) -> None:
    """``pool: growing``, size 4, a snapshot every 100 steps: the k-th snapshot is kept while k is a multiple of the
    stride (the least power of two s with n // s <= 4 for the newest n in the pool); between 2 and 4 kept, spread
    over the run; a snapshot off the stride of its own k is not taken; a resumed run's folder is pruned by the same
    rule."""
    folder = tmp_path / "pool"
    pool = SnapshotPool(folder, 4, growing=True, every=100)
    kept_after: dict[int, list[int]] = {}
    for k in range(1, 21):
        steps = k * 100 + 7  # a snapshot fires a little past its multiple (the vector step that crosses it)
        if pool.keeps(steps):
            path = pool.path_for(steps)
            path.write_bytes(b"zip")
            path.with_name(path.stem + ".obsnorm.npz").write_bytes(b"npz")
            pool.add(path)
            pool.prune()
        kept_after[k] = [int(Path(p).stem.split("_")[1]) // 100 for p in pool.paths]
        on_disk = sorted(int(p.stem.split("_")[1]) // 100 for p in folder.glob("snapshot_*.zip"))
        assert on_disk == kept_after[k] and len(list(folder.glob("*.obsnorm.npz"))) == len(on_disk)
        assert 2 <= len(pool.paths) <= 4 or k < 2
    assert kept_after[4] == [1, 2, 3, 4]
    assert kept_after[5] == [1, 2, 3, 4]  # stride 2 from the 5th: off the stride, not taken
    assert kept_after[6] == [2, 4, 6]  # the 6th enters: the pool thins to the stride
    assert kept_after[9] == [2, 4, 6, 8]
    assert kept_after[12] == [4, 8, 12]  # stride 4
    assert kept_after[20] == [4, 8, 12, 16]  # stride 8 from the 20th, which is off it
    for k in (3, 5, 9, 24):  # a resumed run: the folder pruned by the rule of its newest snapshot (24: stride 8)
        (folder / f"snapshot_{k * 100}.zip").write_bytes(b"zip")
    assert [Path(p).name for p in SnapshotPool(folder, 4, growing=True, every=100).paths] == [
        "snapshot_807.zip",
        "snapshot_1607.zip",
        "snapshot_2400.zip",
    ]
    newest = SnapshotPool(tmp_path / "newest", 2)  # the default: the newest 2, every snapshot taken
    for k in range(1, 5):
        assert newest.keeps(k * 100)
        newest.path_for(k * 100).write_bytes(b"zip")
        newest.add(newest.path_for(k * 100))
        newest.prune()
    assert [Path(p).name for p in newest.paths] == ["snapshot_300.zip", "snapshot_400.zip"]


# --------------------------------------------------------------------------- config


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            ["self_play.current=0.6", "self_play.prob=0.5"],
            r"'self_play.current' \(0.6\) and 'self_play.prob' \(0.5\) are shares .* at most 1, got 1.1",
        ),
        (["self_play.current=0.5", "train.vec_env=subproc"], r"'self_play.current' \(0.5\) does not apply .* subproc"),
        (
            ["self_play.current=0.5", "algo.policy=MlpPolicy", "train.normalize_obs=true", "train.workers=1"],
            r"'self_play.current' \(0.5\) does not apply with train.normalize_obs",
        ),
        (["self_play.current=0.5", "train.backend=rllib"], r"'self_play.current' \(0.5\) does not apply .* rllib"),
        (["self_play.pool=growing", "train.backend=rllib"], r"'self_play.pool' 'growing' applies to .* sb3 only"),
        (["self_play.pool=all"], r"'self_play.pool' must be 'newest' or 'growing', got 'all'"),
        (["self_play.current=1.5"], r"'self_play.current' must be a number >= 0.0 and <= 1.0, got 1.5"),
    ],
)
def test_self_play_config_errors_name_the_key(overrides: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config(SMOKE, overrides)
    # the same keys with self-play off are ignored but for the shares' sum
    load_config(SMOKE, ["self_play.enabled=false", "self_play.current=0.5", "train.vec_env=subproc"])
