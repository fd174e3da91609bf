"""The opponents of training: the weighted mixture of agent specs and the pool of learner snapshots.

:class:`MixtureSampler` draws each opponent seat per episode from the config's weighted mixture, or (with
probability ``self_play.prob``) from the pool of learner snapshots. Both vector env stacks
(:mod:`training.vec`, :mod:`training.vec_env`) and the RLlib backend use it.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import Any

import numpy as np

from sixnimmt_env.agents import Agent, make_agent
from training import agent as _ppo_agents  # noqa: F401  (registers ppo: specs in every process)
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
