"""Training environments: the opponent mixture, the self-play pool and the vector env stacks.

:class:`MixtureSampler` draws each opponent seat per episode from the config's
weighted mixture, or (with probability ``self_play.prob``) from the pool of
learner snapshots. :func:`build_vec_env` builds ``n_envs`` copies of
:class:`sixnimmt_env.gym_env.SingleSeatEnv` (each in a ``Monitor`` writing
``monitor/<i>.monitor.csv``) with the builder named by ``train.vec_env`` in
:data:`VEC_ENV_BUILDERS`, then wraps it in ``VecNormalize`` (observations only)
when ``train.normalize_obs`` is set.

Every stack forwards ``env_method("action_masks")``, which MaskablePPO calls at
each step, and ``env_method("set_opponents", sampler)``, which the self-play
callback calls when the pool changes. A new kind of vector env (e.g. a batched
engine) is added with :func:`register_vec_env`; it receives the same
:class:`VecEnvRequest`.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecEnv, VecNormalize

from sixnimmt_env.agents import Agent, make_agent
from training import agent as _ppo_agents  # noqa: F401  (registers ppo: specs in every process)

if TYPE_CHECKING:  # avoids an import cycle with training.config
    from training.config import TrainConfig


class MixtureSampler:
    """Per episode and opponent seat: a pool snapshot with probability ``pool_prob`` (when the pool is not
    empty), else an agent spec drawn from the weighted mixture.

    Args:
        specs: agent specs (``ppo:PATH`` included).
        weights: one positive weight per spec (normalised here).
        pool: checkpoint paths of learner snapshots (played as ``pool_spec:PATH``).
        pool_prob: 0..1.
        pool_spec: ``"ppo-sample"`` (default: sample from the snapshot's policy) or ``"ppo"``.

    Raises:
        ValueError: mismatched lengths or non-positive weights.
    """

    def __init__(
        self,
        specs: Sequence[str],
        weights: Sequence[float],
        pool: Sequence[str] = (),
        pool_prob: float = 0.0,
        pool_spec: str = "ppo-sample",
    ) -> None:
        if len(specs) != len(weights) or not specs:
            raise ValueError(f"need one weight per spec, got {len(specs)} specs and {len(weights)} weights")
        w = np.asarray(weights, np.float64)
        if (w <= 0).any():
            raise ValueError(f"opponent weights must be > 0, got {list(weights)}")
        self.specs = list(specs)
        self.probs = w / w.sum()
        self._cumulative = np.cumsum(self.probs).tolist()
        self.pool = list(pool)
        self.pool_prob = float(pool_prob)
        self.pool_spec = pool_spec
        self._agents: dict[str, Agent] = {}

    def _agent(self, spec: str) -> Agent:
        if spec not in self._agents:
            self._agents[spec] = make_agent(spec)
        return self._agents[spec]

    def __call__(self, rng: np.random.Generator, k: int) -> list[Agent]:
        """``k`` opponents for one episode, drawn from ``rng`` only."""
        out = []
        for _ in range(k):
            if self.pool and rng.random() < self.pool_prob:
                path = self.pool[int(rng.integers(len(self.pool)))]
                out.append(self._agent(f"{self.pool_spec}:{path}"))
            else:
                # inverse CDF of one uniform draw (rng.choice(p=...) costs ~10x more per call)
                i = min(bisect.bisect_right(self._cumulative, rng.random()), len(self.specs) - 1)
                out.append(self._agent(self.specs[i]))
        return out

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_agents"] = {}  # loaded policies stay in their process (cached by training.agent)
        return state


def sampler_from_config(cfg: TrainConfig, pool: Sequence[str] = ()) -> MixtureSampler:
    """The :class:`MixtureSampler` of a config's ``opponents`` and ``self_play`` sections."""
    prob = cfg.self_play.prob if cfg.self_play.enabled else 0.0
    return MixtureSampler([o.agent for o in cfg.opponents], [o.weight for o in cfg.opponents], pool, prob)


class EnvFactory:
    """A picklable ``() -> gym.Env`` for one worker: a Monitor-wrapped :class:`SingleSeatEnv`.

    Args:
        game: :class:`~sixnimmt_env.engine.GameConfig` keyword arguments.
        learner_seat: ``"random"`` or a seat.
        sampler: the opponent sampler.
        monitor_file: the Monitor CSV path (``None``: no file).
        torch_threads: torch threads in this process (opponent policies).
    """

    def __init__(
        self,
        game: dict[str, Any],
        learner_seat: int | str,
        sampler: MixtureSampler,
        monitor_file: str | None,
        torch_threads: int = 1,
    ) -> None:
        self.game, self.learner_seat, self.sampler = game, learner_seat, sampler
        self.monitor_file, self.torch_threads = monitor_file, torch_threads

    def __call__(self) -> gym.Env:
        import torch

        from sixnimmt_env.gym_env import make_env

        torch.set_num_threads(self.torch_threads)
        env = make_env(opponents=self.sampler, learner_seat=self.learner_seat, **self.game)  # type: ignore[arg-type]
        return Monitor(env, self.monitor_file)


@dataclass
class VecEnvRequest:
    """What a vector-env builder gets: the config, one factory per env, the sampler and the monitor folder."""

    cfg: TrainConfig
    env_fns: list[Callable[[], gym.Env]]
    sampler: MixtureSampler
    monitor_dir: Path | None


def _dummy(req: VecEnvRequest) -> VecEnv:
    return DummyVecEnv(req.env_fns)


def _subproc(req: VecEnvRequest) -> VecEnv:
    return SubprocVecEnv(req.env_fns, start_method="forkserver")


def _batched(req: VecEnvRequest) -> VecEnv:
    from training.vec_env import build_batched  # the batched engine (numba) loads only when asked for

    return build_batched(req)


VEC_ENV_BUILDERS: dict[str, Callable[[VecEnvRequest], VecEnv]] = {
    "dummy": _dummy,
    "subproc": _subproc,
    "batched": _batched,
}
"""``train.vec_env`` name -> builder. The VecEnv returned must answer ``env_method("action_masks")``
(stacked to ``bool (n_envs, 109)``) and ``env_method("set_opponents", sampler)``."""


def register_vec_env(name: str, builder: Callable[[VecEnvRequest], VecEnv]) -> None:
    """Make ``train.vec_env: <name>`` use ``builder`` (e.g. a batched engine's VecEnv)."""
    VEC_ENV_BUILDERS[name] = builder


def table_sizes(cfg: TrainConfig) -> list[int]:
    """Players of each training env: ``env.num_players``, or with a list of sizes env ``i`` gets ``sizes[i % len]``."""
    sizes = cfg.env.num_players if isinstance(cfg.env.num_players, list) else [cfg.env.num_players]
    return [sizes[i % len(sizes)] for i in range(cfg.train.n_envs)]


def build_vec_env(
    cfg: TrainConfig, monitor_dir: Path | None, pool: Sequence[str] = (), wrap_normalize: bool = True
) -> VecEnv:
    """The training vector env of ``cfg`` (see the module docstring).

    Args:
        cfg: a validated config.
        monitor_dir: folder for ``<i>.monitor.csv`` (created), or ``None``.
        pool: self-play snapshots already in the pool (on resume).
        wrap_normalize: wrap in ``VecNormalize(norm_obs=True, norm_reward=False)`` if ``train.normalize_obs``.
    """
    sampler = sampler_from_config(cfg, pool)
    if monitor_dir is not None:
        monitor_dir.mkdir(parents=True, exist_ok=True)
    fns: list[Callable[[], gym.Env]] = [
        EnvFactory(
            cfg.env.game_kwargs(n),
            cfg.env.learner_seat,
            sampler,
            str(monitor_dir / f"{i}.monitor.csv") if monitor_dir is not None else None,
            cfg.train.torch_threads,
        )
        for i, n in enumerate(table_sizes(cfg))
    ]
    venv = VEC_ENV_BUILDERS[cfg.train.vec_env](VecEnvRequest(cfg, fns, sampler, monitor_dir))
    if wrap_normalize and cfg.train.normalize_obs:
        venv = VecNormalize(venv, norm_obs=True, norm_reward=False)
    return venv
