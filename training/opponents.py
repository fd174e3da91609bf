"""The opponents of training: the weighted mixture of agent specs and the pool of learner snapshots.

:class:`MixtureSampler` draws each opponent seat per episode from the config's weighted mixture, or (with
probability ``self_play.prob``) from the pool of learner snapshots; :func:`mixture_sampler` builds it from a
config's sections. Both vector env stacks (:mod:`training.vec`, :mod:`training.vec_env`) and the RLlib backend use it.
:class:`SnapshotPool` is the pool of an SB3 run: the newest ``self_play.pool_size`` snapshot files in the run's
``pool/`` folder (:class:`training.callbacks.SelfPlaySnapshots` adds one every ``self_play.snapshot_every``
steps). The RLlib league keeps its snapshots in RLModule slots instead (:mod:`training.rllib.self_play`).
"""

from __future__ import annotations

import bisect
import copy
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from sixnimmt_env.agents import Agent, make_agent
from training import ppo_agents as _ppo_agents  # noqa: F401  (registers ppo: specs in every process)
from training.config.schema import OPPONENT_DRAWS, OpponentEntry, SelfPlaySection


class MixtureSampler:
    """Per episode and opponent seat: a pool snapshot with probability ``pool_prob`` (when the pool is not
    empty), else an agent spec drawn from the weighted mixture. With ``draw="table"`` the draw is made once per
    episode and fills every opponent seat: a table of one pool snapshot with probability ``pool_prob``, else
    of one spec of the mixture, like the line-ups the arena evaluates (three ``mc:64``, three ``greedy``).

    Args:
        specs: agent specs (``ppo:PATH`` included).
        weights: one positive weight per spec (normalised here).
        pool: learner snapshots: checkpoint paths (played as ``pool_spec:PATH``) or agents (played as they are).
        pool_prob: 0..1.
        pool_spec: ``"ppo-sample"`` (default: sample from the snapshot's policy) or ``"ppo"``.
        draw: ``"seat"`` (default: every opponent seat draws on its own) or ``"table"`` (one draw per episode
            for all of them).

    Raises:
        ValueError: mismatched lengths, non-positive weights or an unknown ``draw``.
    """

    def __init__(
        self,
        specs: Sequence[str],
        weights: Sequence[float],
        pool: Sequence[str | Agent] = (),
        pool_prob: float = 0.0,
        pool_spec: str = "ppo-sample",
        draw: str = "seat",
    ) -> None:
        if len(specs) != len(weights) or not specs:
            raise ValueError(f"need one weight per spec, got {len(specs)} specs and {len(weights)} weights")
        w = np.asarray(weights, np.float64)
        if (w <= 0).any():
            raise ValueError(f"opponent weights must be > 0, got {list(weights)}")
        if draw not in OPPONENT_DRAWS:
            raise ValueError(f"opponent draw must be one of {list(OPPONENT_DRAWS)}, got {draw!r}")
        self.draw = draw
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
        if self.draw == "table":
            return [self._one(rng)] * k
        return [self._one(rng) for _ in range(k)]

    def _one(self, rng: np.random.Generator) -> Agent:
        """One draw: a pool snapshot with probability ``pool_prob``, else a spec of the mixture."""
        if self.pool and rng.random() < self.pool_prob:
            entry = self.pool[int(rng.integers(len(self.pool)))]
            return entry if isinstance(entry, Agent) else self._agent(f"{self.pool_spec}:{entry}")
        # inverse CDF of one uniform draw (rng.choice(p=...) costs ~10x more per call)
        i = min(bisect.bisect_right(self._cumulative, rng.random()), len(self.specs) - 1)
        return self._agent(self.specs[i])

    def with_pool(self, pool: Sequence[str | Agent]) -> MixtureSampler:
        """A sampler of the same mixture, pool probability and draw whose pool is ``pool`` (the self-play pool
        after a snapshot), with agents of its own (none loaded yet)."""
        other = copy.copy(self)
        other.pool = list(pool)
        other._agents = {}
        return other

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_agents"] = {}  # loaded policies stay in their process (cached by training.ppo_agents)
        return state


def mixture_sampler(
    opponents: Sequence[OpponentEntry], self_play: SelfPlaySection, draw: str, pool: Sequence[str | Agent] = ()
) -> MixtureSampler:
    """The :class:`MixtureSampler` of a config's ``opponents`` and ``self_play`` sections and its
    ``train.opponent_draw`` (``draw``); ``pool``: the self-play snapshots already taken (played with probability
    ``self_play.prob`` when self-play is enabled).

    Raises:
        ValueError: as :class:`MixtureSampler` (the config's checks rule these out).
    """
    prob = self_play.prob if self_play.enabled else 0.0
    return MixtureSampler([o.agent for o in opponents], [o.weight for o in opponents], pool, prob, draw=draw)


class SnapshotPool:
    """The learner snapshots opponent seats may play: the newest ``size`` files ``snapshot_<steps>.zip`` of
    ``folder`` (each with its ``.obsnorm.npz`` under VecNormalize), oldest first in :attr:`paths`.

    The folder is created if missing; snapshots beyond the newest ``size`` already in it (a resumed run) are
    deleted at once.
    """

    def __init__(self, folder: Path, size: int) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.folder, self.size = folder, size
        self.paths: list[str] = self.prune()

    def path_for(self, steps: int) -> Path:
        """Where the snapshot taken after ``steps`` environment steps goes."""
        return self.folder / f"snapshot_{steps}.zip"

    def add(self, path: str | Path) -> None:
        """Put a saved snapshot into :attr:`paths` (the oldest leaves it; its file stays until :meth:`prune`)."""
        self.paths = [*self.paths, str(path)][-self.size :]

    def prune(self) -> list[str]:
        """Delete all but the newest ``size`` snapshots of the folder (and their ``.obsnorm.npz``); returns the
        paths kept, oldest first."""
        snapshots = sorted(self.folder.glob("snapshot_*.zip"), key=_steps_of)
        for old in snapshots[: max(0, len(snapshots) - self.size)]:
            old.unlink(missing_ok=True)
            old.with_name(old.stem + ".obsnorm.npz").unlink(missing_ok=True)
        return [str(p) for p in snapshots[-self.size :]]


def _steps_of(path: Path) -> int:
    digits = "".join(ch for ch in path.stem if ch.isdigit())
    return int(digits) if digits else -1
