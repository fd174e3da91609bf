"""The opponents of training: the weighted mixture of agent specs, the pool of learner snapshots and the learner's
current self.

:class:`MixtureSampler` draws each opponent seat per episode from the config's weighted mixture, or (with
probability ``self_play.prob``) from the pool of learner snapshots, or (with probability ``self_play.current``) the
learner's current weights (:class:`CurrentSelf`); :func:`mixture_sampler` builds it from a config's sections. Both
vector env stacks (:mod:`training.vec`, :mod:`training.vec_env`) and the RLlib backend use it.
:class:`SnapshotPool` is the pool of an SB3 run: the newest ``self_play.pool_size`` snapshot files in the run's
``pool/`` folder, or with ``self_play.pool: growing`` at most that many spread over the whole run
(:class:`training.callbacks.SelfPlaySnapshots` adds one every ``self_play.snapshot_every`` steps). The RLlib league
keeps its snapshots in RLModule slots instead (:mod:`training.rllib.self_play`).
"""

from __future__ import annotations

import bisect
import copy
import uuid
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from sixnimmt_env.agents import Agent, make_agent
from training import ppo_agents as _ppo_agents  # noqa: F401  (registers ppo: specs in every process)
from training.config.schema import OPPONENT_DRAWS, OpponentEntry, SelfPlaySection
from training.ppo_agents import PolicyAgent


class CurrentSelf(PolicyAgent):
    """The learner's current weights as an opponent (``self_play.current``): a
    :class:`~training.ppo_agents.PolicyAgent` that samples from the masked policy, whose numpy copy of the actor
    :meth:`refresh` takes again from the learner's policy.

    The training refreshes it before every rollout with the weights that collect that rollout: the learner's
    process (:class:`training.callbacks.CurrentSelfSync`, ``train.workers: 1``) or each rollout process from the
    weights it receives (:mod:`training.rollouts`), so the opponents at its seats play the policy the learner plays
    (on the batched engine: one numpy forward per engine step for all its seats, like a pool snapshot).

    One instance per ``token`` and process (:func:`current_self`): a sampler pickled to another process (a rollout
    process, a new sampler after a snapshot) finds that process's instance there, the one its envs play and the
    process refreshes. Until its first refresh it has no weights: asked to act, it raises ``RuntimeError``.
    """

    def __init__(self, token: str) -> None:  # no policy yet: PolicyAgent.__init__ runs in refresh
        self.token = token
        self.policy: Any = None
        self.obs_norm = None
        self.sample = True
        self.spec = "self:current"
        self.layers = None
        self.card_features = False
        self.card_actor = None
        self.refreshes = 0
        """How many times :meth:`refresh` ran."""

    def __repr__(self) -> str:
        return f"CurrentSelf({self.token!r}, refreshes={self.refreshes})"

    def refresh(self, policy: Any) -> None:
        """Take the actor's weights of ``policy`` (the learner's MaskablePPO policy, raw observations) now; later
        changes to ``policy`` are not seen until the next refresh."""
        PolicyAgent.__init__(self, policy, None, sample=True, name=self.spec)
        self.refreshes += 1

    def logits(self, obs: np.ndarray) -> np.ndarray:
        """As :meth:`training.ppo_agents.PolicyAgent.logits`, once refreshed.

        Raises:
            RuntimeError: before the first :meth:`refresh`.
        """
        if self.policy is None:
            raise RuntimeError(
                "the current-self opponent has no weights yet: the training refreshes it before each rollout "
                "(CurrentSelf.refresh)"
            )
        return super().logits(obs)

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return current_self, (self.token,)


_CURRENT_SELVES: weakref.WeakValueDictionary[str, CurrentSelf] = weakref.WeakValueDictionary()
"""This process's :class:`CurrentSelf` of each token (alive while a sampler or an env holds it)."""


def current_self(token: str | None = None) -> CurrentSelf:
    """This process's :class:`CurrentSelf` of ``token`` (made on first use; ``None``: a new token)."""
    token = uuid.uuid4().hex if token is None else token
    agent = _CURRENT_SELVES.get(token)
    if agent is None:
        agent = CurrentSelf(token)
        _CURRENT_SELVES[token] = agent
    return agent


class MixtureSampler:
    """Per episode and opponent seat: the learner's current self with probability ``current_prob``, a pool
    snapshot with probability ``pool_prob`` (when the pool is not empty; while it is, that share goes to the
    mixture), else an agent spec drawn from the weighted mixture. With ``draw="table"`` the draw is made once per
    episode and fills every opponent seat: a table of the current self, of one pool snapshot or of one spec of the
    mixture, like the line-ups the arena evaluates (three ``mc:64``, three ``greedy``).

    Args:
        specs: agent specs (``ppo:PATH`` included).
        weights: one positive weight per spec (normalised here).
        pool: learner snapshots: checkpoint paths (played as ``pool_spec:PATH``) or agents (played as they are).
        pool_prob: 0..1.
        pool_spec: ``"ppo-sample"`` (default: sample from the snapshot's policy) or ``"ppo"``.
        draw: ``"seat"`` (default: every opponent seat draws on its own) or ``"table"`` (one draw per episode
            for all of them).
        current: the learner's current self (:class:`CurrentSelf`), needed when ``current_prob > 0``.
        current_prob: 0..1, at most ``1 - pool_prob``; 0 (default) draws exactly as before it existed.

    Raises:
        ValueError: mismatched lengths, non-positive weights, an unknown ``draw``, a ``current_prob`` out of range
            or without ``current``.
    """

    def __init__(
        self,
        specs: Sequence[str],
        weights: Sequence[float],
        pool: Sequence[str | Agent] = (),
        pool_prob: float = 0.0,
        pool_spec: str = "ppo-sample",
        draw: str = "seat",
        current: CurrentSelf | None = None,
        current_prob: float = 0.0,
    ) -> None:
        if len(specs) != len(weights) or not specs:
            raise ValueError(f"need one weight per spec, got {len(specs)} specs and {len(weights)} weights")
        w = np.asarray(weights, np.float64)
        if (w <= 0).any():
            raise ValueError(f"opponent weights must be > 0, got {list(weights)}")
        if draw not in OPPONENT_DRAWS:
            raise ValueError(f"opponent draw must be one of {list(OPPONENT_DRAWS)}, got {draw!r}")
        if not 0.0 <= current_prob <= 1.0 - pool_prob + 1e-12:
            raise ValueError(f"current_prob must be in 0..1 - pool_prob ({1.0 - pool_prob:g}), got {current_prob!r}")
        if current_prob > 0 and current is None:
            raise ValueError("current_prob > 0 needs the current self (current=)")
        self.draw = draw
        self.specs = list(specs)
        self.probs = w / w.sum()
        self._cumulative = np.cumsum(self.probs).tolist()
        self.pool = list(pool)
        self.pool_prob = float(pool_prob)
        self.pool_spec = pool_spec
        self.current = current
        self.current_prob = float(current_prob)
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
        """One draw: the current self with probability ``current_prob``, a pool snapshot with probability
        ``pool_prob``, else a spec of the mixture (one uniform number decides among the three; without
        ``current_prob`` the draws are those of the sampler before it existed)."""
        if self.current_prob > 0:
            u = rng.random()
            if u < self.current_prob:
                assert self.current is not None  # checked in __init__
                return self.current
            if self.pool and u < self.current_prob + self.pool_prob:
                return self._snapshot(rng)
            return self._mixture(rng)
        if self.pool and rng.random() < self.pool_prob:
            return self._snapshot(rng)
        return self._mixture(rng)

    def _snapshot(self, rng: np.random.Generator) -> Agent:
        entry = self.pool[int(rng.integers(len(self.pool)))]
        return entry if isinstance(entry, Agent) else self._agent(f"{self.pool_spec}:{entry}")

    def _mixture(self, rng: np.random.Generator) -> Agent:
        # inverse CDF of one uniform draw (rng.choice(p=...) costs ~10x more per call)
        i = min(bisect.bisect_right(self._cumulative, rng.random()), len(self.specs) - 1)
        return self._agent(self.specs[i])

    def with_pool(self, pool: Sequence[str | Agent]) -> MixtureSampler:
        """A sampler of the same mixture, pool probability, current self and draw whose pool is ``pool`` (the
        self-play pool after a snapshot), with agents of its own (none loaded yet)."""
        other = copy.copy(self)
        other.pool = list(pool)
        other._agents = {}
        return other

    def mixture_only(self) -> MixtureSampler:
        """A sampler of the same mixture and draw without the learner's selves (no pool, no current self): what a
        throwaway env plays (:mod:`training.rollouts` compiles the engine on one before the learner's weights
        arrive)."""
        other = self.with_pool(())
        other.current, other.current_prob = None, 0.0
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
    ``self_play.prob`` when self-play is enabled). With ``self_play.current`` > 0 (and self-play enabled) the
    sampler's current self is a new :class:`CurrentSelf` (its own token), refreshed by the training.

    Raises:
        ValueError: as :class:`MixtureSampler` (the config's checks rule these out).
    """
    prob = self_play.prob if self_play.enabled else 0.0
    share = self_play.current if self_play.enabled else 0.0
    return MixtureSampler(
        [o.agent for o in opponents],
        [o.weight for o in opponents],
        pool,
        prob,
        draw=draw,
        current=current_self() if share > 0 else None,
        current_prob=share,
    )


class SnapshotPool:
    """The learner snapshots opponent seats may play, files ``snapshot_<steps>.zip`` of ``folder`` (each with its
    ``.obsnorm.npz`` under VecNormalize), oldest first in :attr:`paths`:

    - ``growing=False`` (``self_play.pool: newest``): the newest ``size``;
    - ``growing=True`` (``self_play.pool: growing``): the snapshot taken at ``steps`` is the ``k``-th,
      ``k = steps // every``; with ``n`` the newest one's ``k``, the pool holds those whose ``k`` is a multiple of the
      stride ``s``, the least power of two with ``n // s <= size``: between ``size / 2`` and ``size`` snapshots
      evenly spread over the run so far (the stride doubles as the run goes on; a snapshot off the stride is not
      kept, :meth:`keeps`).

    The folder is created if missing; snapshots already in it (a resumed run) that the rule does not keep are
    deleted at once.
    """

    def __init__(self, folder: Path, size: int, growing: bool = False, every: int = 1) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.folder, self.size = folder, size
        self.growing, self.every = growing, max(int(every), 1)
        self.paths: list[str] = self.prune()

    def path_for(self, steps: int) -> Path:
        """Where the snapshot taken after ``steps`` environment steps goes."""
        return self.folder / f"snapshot_{steps}.zip"

    def stride(self, steps: int) -> int:
        """The growing pool's stride once the snapshot at ``steps`` is taken (1 for the newest-``size`` pool)."""
        if not self.growing:
            return 1
        n, s = steps // self.every, 1
        while n // s > self.size:
            s *= 2
        return s

    def keeps(self, steps: int) -> bool:
        """Whether a snapshot taken at ``steps`` enters the pool (always but for a growing pool off its stride)."""
        return not self.growing or (steps // self.every) % self.stride(steps) == 0

    def _kept(self, paths: list[str]) -> list[str]:
        if not self.growing:
            return paths[-self.size :]
        if not paths:
            return []
        s = self.stride(max(_steps_of(Path(p)) for p in paths))
        return [p for p in paths if (_steps_of(Path(p)) // self.every) % s == 0][-self.size :]

    def add(self, path: str | Path) -> None:
        """Put a saved snapshot into :attr:`paths` (those the rule drops leave it; their files stay until
        :meth:`prune`)."""
        self.paths = self._kept([*self.paths, str(path)])

    def prune(self) -> list[str]:
        """Delete the snapshots of the folder (and their ``.obsnorm.npz``) that the rule does not keep; returns the
        paths kept, oldest first."""
        snapshots = [str(p) for p in sorted(self.folder.glob("snapshot_*.zip"), key=_steps_of)]
        kept = self._kept(snapshots)
        for old in set(snapshots) - set(kept):
            Path(old).unlink(missing_ok=True)
            Path(old).with_name(Path(old).stem + ".obsnorm.npz").unlink(missing_ok=True)
        return kept


def _steps_of(path: Path) -> int:
    digits = "".join(ch for ch in path.stem if ch.isdigit())
    return int(digits) if digits else -1
