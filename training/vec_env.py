"""``SixNimmtVecEnv``: a Stable-Baselines3 ``VecEnv`` of B learner seats on the batched engine (issue 5).

One env index is one game of a :class:`~sixnimmt_env.compiled.learner.LearnerTables` batch: the learner holds one
seat (drawn per episode or fixed, like :class:`sixnimmt_env.gym_env.SingleSeatEnv`'s ``learner_seat``), the other
seats are played inside the batch:

- the heuristic agents (``random``, ``lowest``, ``highest``, ``greedy``) by the compiled kernel of
  :mod:`sixnimmt_env.compiled.heuristics`, with the rest of the step;
- checkpoint and self-play opponents (:class:`training.ppo_agents.PolicyAgent`, specs ``ppo:PATH`` and
  ``ppo-sample:PATH``) and the shipped ``champion`` (:class:`sixnimmt_env.champion.ChampionAgent`) by ONE
  forward pass of their network per engine step, over the stacked observations and masks of every game where
  that opponent must act;
- ``mc:N`` by the batched search of :class:`sixnimmt_env.compiled.mc.MonteCarloPlayers`, one compiled call per
  engine step for every game where it must act (the reference agent's rule, on worlds of its own streams);
- any other agent through its ``act(view, rng)``, one decision at a time (correct, not fast).

It is the Gymnasium env batched, space for space and value for value:

====================  ==============================================================
space / key           value
====================  ==============================================================
observation_space     the Gymnasium env's ``Box(0, high, (506,), float32)``: the vector of
                      :mod:`sixnimmt_env.observation` for the learner's seat
action_space          ``Discrete(109)``; the learner is asked only when it has a decision
action_masks()        ``bool (B, 109)``; ``env_method("action_masks")`` gives the B rows,
                      which sb3-contrib's ``get_action_masks`` stacks
reward                ``float32 (B,)``: minus the bullheads the learner took (R8, R9) in
                      its step and in every opponent-only step up to its next decision;
                      with ``reward="relative"``, plus the mean of the other seats'
                      bullheads in those steps (:func:`sixnimmt_env.rewards.rewards`);
                      with ``win_bonus`` w, plus w at the end of an episode the learner
                      wins (lowest total; w/k for a k-way tie for lowest)
done                  the episode (round or game, per ``episode``) ended, or an illegal
                      action with ``illegal_action="terminate"`` (reward ``-171``)
infos                 ``{}`` while the episode runs; at its end ``terminal_observation``,
                      ``TimeLimit.truncated`` (False), ``learner_seat``, ``illegal_action``
                      and, unless illegal, ``round_penalties``, ``totals`` and ``rank``
====================  ==============================================================

Finished games restart at once (SB3's auto-reset): the returned observation is the new episode's first one and
the last one is in ``infos[i]["terminal_observation"]``. Seeds: ``seed=`` at construction or SB3's
``env.seed(s)`` before ``reset()`` (the seed of env 0 seeds the whole batch: the deals, the heuristic agents'
streams and the generator that draws seats, opponents and sampled policy actions); later resets continue the
streams. Same seed, same episodes for the same learner actions.

``train.vec_env: batched`` in a training config builds it (``training.vec``'s builder, registered in
:data:`training.vec.VEC_ENV_BUILDERS`); ``train.n_envs`` is then B.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any, Literal, cast

import numpy as np
from gymnasium import spaces
from stable_baselines3.common.vec_env import VecEnv
from stable_baselines3.common.vec_env.base_vec_env import VecEnvIndices, VecEnvObs, VecEnvStepReturn

from sixnimmt_env import agents as ref_agents
from sixnimmt_env.agents import Agent, make_agent
from sixnimmt_env.champion import ChampionAgent
from sixnimmt_env.compiled.heuristics import KINDS
from sixnimmt_env.compiled.learner import LearnerTables
from sixnimmt_env.compiled.mc import MonteCarloPlayers
from sixnimmt_env.gym_env import check_learner_options
from sixnimmt_env.rewards import check_reward_mode
from sixnimmt_env.rules.engine import NOOP, NUM_ACTIONS, PHASES, GameConfig, view
from sixnimmt_env.rules.learner_step import (
    ILLEGAL_ACTION_PENALTY,
    TRUNCATED,
    ended,
    episode_summary,
    illegal_action_error,
    illegal_reward,
    integer_action,
    legal_in_masks,
)
from sixnimmt_env.stats import win_shares
from training.opponents import MixtureSampler
from training.ppo_agents import PolicyAgent

__all__ = ["MixedTablesVecEnv", "SixNimmtVecEnv", "env_indices"]

_HEURISTIC_TYPES: dict[type, int] = {
    ref_agents.RandomAgent: KINDS["random"],
    ref_agents.LowestAgent: KINDS["lowest"],
    ref_agents.HighestAgent: KINDS["highest"],
    ref_agents.GreedyAgent: KINDS["greedy"],
}
"""Reference agent classes (exactly these, not subclasses) played by the compiled heuristic kernel."""


def env_indices(indices: VecEnvIndices, num_envs: int) -> list[int]:
    """SB3's ``indices`` argument (``None``: all ``num_envs``; one int; or a sequence) as a list of ints."""
    if indices is None:
        return list(range(num_envs))
    if isinstance(indices, int | np.integer):
        return [int(indices)]
    return [int(i) for i in indices]


OpponentsArg = str | Sequence[str | Agent] | Callable[[np.random.Generator, int], Sequence[Agent]]


def _check_rows(out: np.ndarray | None, shape: tuple[int, ...]) -> None:
    """Check an ``observe_into`` target: ``None`` or a C-contiguous ``float32`` array of ``shape``.

    Raises:
        ValueError: naming the shape needed and the array given.
    """
    if out is not None and (out.dtype != np.float32 or out.shape != shape or not out.flags.c_contiguous):
        raise ValueError(
            f"observe_into needs a C-contiguous float32 array of shape {shape}, got "
            f"{out.dtype} {out.shape}{'' if out.flags.c_contiguous else ' (not C-contiguous)'}"
        )


class SixNimmtVecEnv(VecEnv):
    """B games on the batched engine, one learner seat each, as an SB3 ``VecEnv`` (see the module docstring).

    Args:
        num_envs: B, the number of games (>= 1).
        opponents: as :class:`~sixnimmt_env.gym_env.SingleSeatEnv`: one spec for every other seat, a list of
            ``num_players - 1`` specs or agents (seat order after the learner), or a sampler
            ``sampler(rng, k) -> k agents`` drawn per episode (a :class:`training.opponents.MixtureSampler` is drawn
            for all new episodes at once, with the same distribution). Default ``"greedy"``.
        learner_seat: ``"random"`` (drawn per episode) or a seat ``0..num_players-1``.
        illegal_action: ``"terminate"`` (the episode ends, reward ``-illegal_penalty``) or ``"raise"``.
        illegal_penalty: bullheads charged for an illegal action (> 0).
        seed: seeds the batch (see the module docstring); ``None``: fresh entropy.
        win_bonus: bullheads added to the learner's reward when an episode ends (not by an illegal action) with
            the learner's total the lowest at the table, split evenly among the seats tied for lowest (a single
            round: the round's penalties; a whole game: the game's totals). 0 (default): the plain penalty reward.
        reward: ``"penalty"`` (default): minus the learner's bullheads; ``"relative"``: plus the mean of the other
            seats' bullheads taken in the same steps (the modes of :func:`sixnimmt_env.rewards.rewards`).
        **config: every :class:`~sixnimmt_env.rules.engine.GameConfig` field.

    Raises:
        ValueError: a bad ``num_envs``, learner seat, illegal-action mode or penalty, ``win_bonus``, reward mode,
            an opponent list of the wrong length, an unknown agent spec, or a bad config field.
    """

    def __init__(
        self,
        num_envs: int,
        opponents: OpponentsArg | None = None,
        learner_seat: int | Literal["random"] = "random",
        illegal_action: Literal["terminate", "raise"] = "terminate",
        illegal_penalty: float = ILLEGAL_ACTION_PENALTY,
        seed: int | None = None,
        win_bonus: float = 0.0,
        reward: str = "penalty",
        **config: Any,
    ) -> None:
        check_reward_mode(reward)
        if not (isinstance(win_bonus, int | float) and not isinstance(win_bonus, bool) and 0.0 <= win_bonus < 1e6):
            raise ValueError(f"win_bonus must be a number of bullheads in [0, 1e6), got {win_bonus!r}")
        if isinstance(num_envs, bool) or not isinstance(num_envs, int | np.integer) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive integer, got {num_envs!r}")
        self.config = GameConfig(**config)
        n = self.config.num_players
        check_learner_options(learner_seat, illegal_action, illegal_penalty, n)
        from sixnimmt_env.pettingzoo_env import parallel_env

        observation_space = cast(spaces.Box, parallel_env(**config).observation_space("player_0")["observation"])
        self.render_mode = None
        B = int(num_envs)
        self.num_players = n
        self.learner_seat_option = learner_seat
        self.illegal_action = illegal_action
        self.illegal_penalty = float(illegal_penalty)
        self.win_bonus = float(win_bonus)
        self.reward_mode = reward
        self.tables = LearnerTables(self.config, B, seed, reward=reward)
        self.np_random = np.random.default_rng(seed)
        self._seed = seed
        self._externals: list[Agent] = []
        self._external_index: dict[int, int] = {}
        self._spec_agents: dict[str, Agent] = {}
        self._mc_players: dict[int, MonteCarloPlayers] = {}
        self.set_opponents("greedy" if opponents is None else opponents)
        self._joint = np.full((B, n), NOOP, np.int64)
        self._reward = np.zeros(B, np.float32)
        self._scratch = np.zeros(B, np.float32)
        self._obs = np.zeros((B, *observation_space.shape), np.float32)
        self._mask8 = np.zeros((B, NUM_ACTIONS), np.int8)
        self._index = np.arange(B)
        self._actions: np.ndarray | None = None
        self._out: np.ndarray | None = None  # where the next step writes its observations (observe_into)
        self._started = False
        super().__init__(B, observation_space, spaces.Discrete(NUM_ACTIONS))

    # ------------------------------------------------------------------ opponents

    def set_opponents(self, opponents: OpponentsArg) -> None:
        """Replace the opponents (new episodes draw from them); same forms as the constructor.

        Raises:
            ValueError: a list whose length is not ``num_players - 1``, or a bad spec (the opponents are unchanged).
        """
        k = self.num_players - 1
        sampler: Callable[[np.random.Generator, int], Sequence[Agent]] | None = None
        mixture: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, float, bool, int, float] | None = None
        fixed: tuple[np.ndarray, np.ndarray] | None = None
        if isinstance(opponents, str):
            fixed = self._codes([self._agent(opponents, "opponents")] * k)
        elif isinstance(opponents, MixtureSampler):
            kind, ext = self._codes([self._agent(s, "opponents") for s in opponents.specs])
            # a pool entry is a checkpoint path (played as pool_spec:PATH) or an agent (an RLlib runner's snapshots)
            pool = [
                self._agent(p if isinstance(p, Agent) else f"{opponents.pool_spec}:{p}", "opponents.pool")
                for p in opponents.pool
            ]
            pool_ext = self._codes(pool)[1] if pool else np.zeros(0, np.int16)
            prob = opponents.pool_prob if pool else 0.0
            # the learner's current self (self_play.current): one agent, refreshed in place by the training
            current = opponents.current if opponents.current_prob > 0 else None
            current_ext = -1 if current is None else int(self._codes([self._agent(current, "opponents.current")])[1][0])
            mixture = (
                np.cumsum(opponents.probs),
                kind,
                ext,
                pool_ext,
                prob,
                opponents.draw == "table",
                current_ext,
                opponents.current_prob if current is not None else 0.0,
            )
        elif isinstance(opponents, Sequence):
            self.check_opponents(opponents)
            fixed = self._codes([self._agent(o, f"opponents[{i}]") for i, o in enumerate(opponents)])
        elif callable(opponents):
            sampler = opponents
        else:
            raise ValueError(f"opponents must be a spec, a list of specs/agents or a sampler, got {opponents!r}")
        # set only now: a refused argument leaves the opponents as they were
        self._sampler, self._mixture, self._fixed = sampler, mixture, fixed

    def check_opponents(self, opponents: OpponentsArg) -> None:
        """Refuse a list of opponents whose length is not ``num_players - 1`` (ValueError); other forms pass."""
        k = self.num_players - 1
        if isinstance(opponents, Sequence) and not isinstance(opponents, str) and len(opponents) != k:
            raise ValueError(
                f"opponents must name {k} agents (num_players={self.num_players}), got {len(opponents)}: "
                f"{list(opponents)!r}"
            )

    def _agent(self, item: str | Agent, where: str) -> Agent:
        if isinstance(item, str):
            if item not in self._spec_agents:
                self._spec_agents[item] = make_agent(item)
            return self._spec_agents[item]
        if isinstance(item, Agent):
            return item
        raise ValueError(f"{where}: expected an agent spec string or an object with act(view, rng), got {item!r}")

    def _codes(self, agents: Sequence[Agent]) -> tuple[np.ndarray, np.ndarray]:
        """Per agent: its heuristic kind code (or -1) and its external index (or -1)."""
        kind = np.full(len(agents), -1, np.int8)
        ext = np.full(len(agents), -1, np.int16)
        for i, agent in enumerate(agents):
            code = _HEURISTIC_TYPES.get(type(agent))
            if code is not None:
                kind[i] = code
                continue
            key = id(agent)
            if key not in self._external_index:
                self._external_index[key] = len(self._externals)
                self._externals.append(agent)  # kept alive, so its id stays its own
            ext[i] = self._external_index[key]
        return kind, ext

    def _draw(self, games: np.ndarray) -> None:
        """New learner seats and opponents for the episodes starting in ``games`` (int indices)."""
        t, rng, n = self.tables, self.np_random, self.num_players
        m, k = len(games), n - 1
        if self.learner_seat_option == "random":
            seat = rng.integers(n, size=m)
        else:
            seat = np.full(m, int(self.learner_seat_option), np.int64)
        if self._fixed is not None:
            kind = np.broadcast_to(self._fixed[0], (m, k))
            ext = np.broadcast_to(self._fixed[1], (m, k))
        elif self._mixture is not None:
            cum, spec_kind, spec_ext, pool_ext, prob, per_table, current_ext, current_prob = self._mixture
            d = 1 if per_table else k  # draws per episode: one fills the table, or one per seat
            pick = np.minimum(np.searchsorted(cum, rng.random((m, d)) * cum[-1], side="right"), len(cum) - 1)
            kind, ext = spec_kind[pick], spec_ext[pick]
            if current_prob > 0:  # one uniform number per draw: current self, pool snapshot or the mixture's pick
                u = rng.random((m, d))
                mine = u < current_prob
                kind = np.where(mine, -1, kind)
                ext = np.where(mine, np.int16(current_ext), ext)
                if prob > 0:
                    from_pool = ~mine & (u < current_prob + prob)
                    kind = np.where(from_pool, -1, kind)
                    ext = np.where(from_pool, pool_ext[rng.integers(len(pool_ext), size=(m, d))], ext)
            elif prob > 0:
                from_pool = rng.random((m, d)) < prob
                kind = np.where(from_pool, -1, kind)
                ext = np.where(from_pool, pool_ext[rng.integers(len(pool_ext), size=(m, d))], ext)
            kind, ext = np.broadcast_to(kind, (m, k)), np.broadcast_to(ext, (m, k))
        else:
            kind = np.empty((m, k), np.int8)
            ext = np.empty((m, k), np.int16)
            for i in range(m):
                drawn = list(self._sampler(rng, k))  # type: ignore[misc]
                if len(drawn) != k:
                    raise ValueError(f"opponent sampler returned {len(drawn)} agents, expected {k}")
                kind[i], ext[i] = self._codes(drawn)
        t.seat[games] = seat
        t.kinds[games, seat] = -1
        t.ext[games, seat] = -1
        for j in range(k):
            s = (seat + 1 + j) % n
            t.kinds[games, s] = kind[:, j]
            t.ext[games, s] = ext[:, j]

    # ------------------------------------------------------------------ playing

    def _external_actions(self, active: np.ndarray) -> None:
        """Fill in the decisions of the external agents due in the active games (one forward per policy)."""
        games, seats = self.tables.pending(active)
        if not len(games):
            return
        which = self.tables.ext[games, seats]
        for k in np.unique(which):
            sel = which == k
            g, s = games[sel], seats[sel]
            agent = self._externals[k]
            chosen: np.ndarray | list[int]
            if isinstance(agent, PolicyAgent | ChampionAgent):
                chosen = agent.choose(self.tables.observe_pairs(g, s), self.tables.mask_pairs(g, s), self.np_random)
            elif type(agent) is ref_agents.MonteCarloAgent:
                chosen = self._mc_actions(agent.samples, g, s)
            else:
                batch = self.tables.games
                chosen = [
                    agent.act(view(batch.get_state(int(b)), int(q)), self.np_random) for b, q in zip(g, s, strict=True)
                ]
            self._joint[g, s] = chosen

    def _mc_actions(self, samples: int, games: np.ndarray, seats: np.ndarray) -> np.ndarray:
        """``mc:samples`` decisions of the seats ``(games[i], seats[i])``, all in one compiled call
        (:class:`sixnimmt_env.compiled.mc.MonteCarloPlayers`, its worlds drawn from streams seeded by this env's
        generator): the reference agent's rule on other sampled worlds."""
        players = self._mc_players.get(samples)
        if players is None:
            seed = int(self.np_random.integers(2**63))
            players = MonteCarloPlayers(self.tables.games, np.zeros(self.num_players, np.bool_), samples, seed=seed)
            self._mc_players[samples] = players
        players.seats = np.zeros((self.num_envs, self.num_players), np.bool_)
        players.seats[games, seats] = True
        out = np.full((self.num_envs, self.num_players), NOOP, np.int64)
        return players.act(out)[games, seats]

    def _play(self, active: np.ndarray, reward: np.ndarray) -> None:
        """Play the active games up to the learner's next decision or the end of the episode."""
        while True:
            if self._externals:
                self._external_actions(active)
            self.tables.play(self._joint, active, reward)
            if not active.any():
                return

    def _start(self, games: np.ndarray) -> None:
        """Draw seats and opponents for the new episodes in ``games`` and play them up to the learner's decision."""
        self._draw(games)
        active = np.zeros(self.num_envs, np.bool_)
        active[games] = True
        active &= ~self.tables.learner_decides()
        if active.any():
            self._play(active, self._scratch)  # nothing is taken before the first decision (R3, V2)

    def _observe(self, out: np.ndarray | None = None) -> None:
        g, seat = self.tables.games, self.tables.seat
        g.observe(self._obs if out is None else out, seats=seat)
        g.legal_mask(self._mask8, seats=seat)

    def observe_into(self, out: np.ndarray | None) -> None:
        """Make the next :meth:`step_wait` (only the next) write its observations into ``out`` and return ``out``
        itself instead of a new array; ``None`` cancels. A rollout process (:mod:`training.rollouts`) passes the
        next row of its rollout buffer, which saves two copies of the observations (2 MB at 1,024 games) per step.

        Args:
            out: ``float32 (num_envs, 506)``, C-contiguous, or ``None``.

        Raises:
            ValueError: ``out`` of another shape, dtype or layout (the env is unchanged).
        """
        _check_rows(out, self._obs.shape)
        self._out = out

    # ------------------------------------------------------------------ VecEnv API

    def reset(self) -> VecEnvObs:
        """Start a new episode in every game (reseeded if ``seed()`` was called); returns observations ``(B, 506)``."""
        seed = self._seeds[0]
        if seed is not None:
            self.np_random = np.random.default_rng(seed)
            self.tables.reseed(seed)
            self._mc_players.clear()  # their streams are drawn anew from the reseeded generator
        elif self._started:
            self.tables.restart(np.ones(self.num_envs, np.bool_))
        self._reset_seeds()
        self._started = True
        self._start(self._index)
        self._observe()
        return self._obs.copy()

    def step_async(self, actions: np.ndarray) -> None:
        """Store the learner's actions (``int (B,)``) for :meth:`step_wait`."""
        self._actions = actions

    def step_wait(self) -> VecEnvStepReturn:
        """Play the learner's actions, the opponents' and every opponent-only step up to each learner's next decision.

        Returns:
            ``(observations float32 (B, 506), rewards float32 (B,) in bullheads, dones bool (B,), infos)``; the
            rewards are <= 0 without ``win_bonus``.

        Raises:
            RuntimeError: ``step`` before ``reset``.
            ValueError: actions that are not integers, or an illegal action with ``illegal_action="raise"``,
                naming the env, the action and the legal actions (:mod:`sixnimmt_env.rules.learner_step`); no game
                changes.
        """
        if not self._started or self._actions is None:
            raise RuntimeError("call reset() before step()")
        B, t = self.num_envs, self.tables
        actions = np.asarray(self._actions).reshape(B)
        self._actions = None
        if actions.dtype.kind not in "iu":  # a float 2.7 is not the action 2: refused, as in the other envs
            values = actions.tolist()  # (Python scalars: the message shows 2.7, not np.float64(2.7))
            actions = np.array([integer_action(self._who(b), a, self._legal(b)) for b, a in enumerate(values)])
        actions = actions.astype(np.int64)
        legal = legal_in_masks(actions, self._mask8)
        illegal = ~legal
        if illegal.any() and self.illegal_action == "raise":
            b = int(np.flatnonzero(illegal)[0])
            phase = PHASES[int(t.games.phase[b])]
            raise illegal_action_error(self._who(b), int(actions[b]), self._legal(b)(), phase)
        reward = self._reward
        reward[:] = 0.0
        self._joint[self._index, t.seat] = np.where(legal, actions, NOOP)
        self._play(legal.copy(), reward)  # the learner's reward in this env's mode (sixnimmt_env.rewards)
        reward[illegal] = illegal_reward(self.illegal_penalty)
        dones = ended(t.games.done, illegal)
        if self.win_bonus and dones.any():
            reward += self.win_bonus * self._win_shares(dones & ~illegal)
        infos: list[dict[str, Any]] = [{} for _ in range(B)]
        if dones.any():
            self._observe()
            games = np.flatnonzero(dones)
            for b in games.tolist():
                s = int(t.seat[b])
                info: dict[str, Any] = {
                    "terminal_observation": self._obs[b].copy(),
                    "TimeLimit.truncated": TRUNCATED,
                    "learner_seat": s,
                    "illegal_action": bool(illegal[b]),
                }
                if not illegal[b]:
                    info.update(episode_summary(t.games.totals[b], t.games.round_pen[b], s))
                infos[b] = info
            t.restart(dones)
            self._start(games)
        out, self._out = self._out, None
        self._observe(out)
        return self._obs.copy() if out is None else out, reward.copy(), dones, infos

    def _who(self, b: int) -> str:
        """Who acts in env ``b``, for error messages: ``"env b (learner seat s)"``."""
        return f"env {b} (learner seat {int(self.tables.seat[b])})"

    def _legal(self, b: int) -> Callable[[], list[int]]:
        """The learner's legal actions in env ``b`` now, when called (for error messages)."""
        return lambda: np.flatnonzero(self._mask8[b]).tolist()

    def _win_shares(self, ended: np.ndarray) -> np.ndarray:
        """``float32 (B,)``: in the games of ``ended`` (bool (B,)), the learner's share of the win
        (:func:`sixnimmt_env.stats.win_shares` of the totals: ``1/k`` if its total is the lowest, tied by ``k``
        seats); 0 elsewhere."""
        t = self.tables
        games = np.flatnonzero(ended)
        out = np.zeros(self.num_envs, np.float32)
        out[games] = win_shares(t.games.totals[games])[np.arange(len(games)), t.seat[games]]
        return out

    def action_masks(self) -> np.ndarray:
        """``bool (B, 109)``: True at each learner's legal actions now."""
        return self._mask8.astype(np.bool_)

    def close(self) -> None:
        """Nothing to release (no processes, no files)."""

    def _indices(self, indices: VecEnvIndices) -> list[int]:
        return env_indices(indices, self.num_envs)

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """The attribute of the batch, once per index (``learner_seat``: each game's seat).

        Raises:
            AttributeError: for an attribute the env does not have.
        """
        idx = self._indices(indices)
        if attr_name == "learner_seat":
            return [int(self.tables.seat[i]) for i in idx]
        value = getattr(self, attr_name)
        return [value] * len(idx)

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        """Set an attribute of the batch (shared by every index)."""
        setattr(self, attr_name, value)

    def env_method(
        self, method_name: str, *method_args: Any, indices: VecEnvIndices = None, **method_kwargs: Any
    ) -> list:
        """Call a method of the batch once; ``action_masks`` gives one ``bool (109,)`` row per index.

        ``set_opponents(sampler)`` applies to every game (new episodes), whatever ``indices``.
        """
        idx = self._indices(indices)
        if method_name == "action_masks":
            masks = self.action_masks()
            return [masks[i] for i in idx]
        result = getattr(self, method_name)(*method_args, **method_kwargs)
        return [result] * len(idx)

    def env_is_wrapped(self, wrapper_class: type, indices: VecEnvIndices = None) -> list[bool]:
        """No Gymnasium wrappers inside: False for every index."""
        return [False] * len(self._indices(indices))


class MixedTablesVecEnv(VecEnv):
    """Several :class:`SixNimmtVecEnv` batches, one per table size, as one SB3 ``VecEnv``: training on mixed table
    sizes (``env.num_players`` as a list with ``train.vec_env: batched``).

    The envs of ``parts[0]`` come first, then those of ``parts[1]``, and so on. Every space, value and info is the
    parts' (the observation does not depend on the table size: it holds the number of players and the seats
    present), concatenated; every call goes to the parts that hold the indices asked for. The observation space is
    the parts' shape with the widest bounds (in whole games the most rounds a game can last depends on the table
    size). ``set_attr`` sets the attribute of each part holding one of the indices (a part's attributes are shared
    by its games).

    Args:
        parts: the batches, each of one table size (at least one; their observation and action spaces equal).

    Raises:
        ValueError: no parts, or parts whose spaces differ.
    """

    def __init__(self, parts: Sequence[SixNimmtVecEnv]) -> None:
        if not parts:
            raise ValueError("MixedTablesVecEnv needs at least one batch")
        first = parts[0]
        space = cast(spaces.Box, first.observation_space)
        for part in parts[1:]:
            other = cast(spaces.Box, part.observation_space)
            if other.shape != space.shape or other.dtype != space.dtype or part.action_space != first.action_space:
                raise ValueError("the batches of a MixedTablesVecEnv must have the same shapes and action space")
            # the bounds may differ (whole games: the most rounds a game can last depends on the table size)
            space = spaces.Box(np.minimum(space.low, other.low), np.maximum(space.high, other.high), dtype=np.float32)
        self.parts = list(parts)
        self.render_mode = None
        bounds = np.cumsum([0] + [part.num_envs for part in parts])
        self._bounds = [(int(a), int(b)) for a, b in itertools.pairwise(bounds)]
        self.num_players = [part.num_players for part in parts]
        """The table size of each part (the envs of part ``k`` seat ``num_players[k]`` players)."""
        self._out: np.ndarray | None = None
        super().__init__(int(bounds[-1]), space, first.action_space)

    def players_of_envs(self) -> np.ndarray:
        """``int (num_envs,)``: the table size of each env."""
        return np.repeat(self.num_players, [b - a for a, b in self._bounds])

    def seed(self, seed: int | None = None) -> Sequence[int | None]:
        """Seed every part for its next ``reset()``: the part whose first env is env ``i`` gets ``seed + i``
        (SB3's rule of one seed per env, whose first env seeds a whole batch); ``None`` draws one seed."""
        if seed is None:
            seed = int(np.random.randint(0, np.iinfo(np.uint32).max, dtype=np.uint32))
        out: list[int | None] = []
        for part, (a, _) in zip(self.parts, self._bounds, strict=True):
            out += list(part.seed(seed + a))
        return out

    def reset(self) -> VecEnvObs:
        """Reset every part; observations ``float32 (num_envs, 506)``."""
        return np.concatenate([part.reset() for part in self.parts])

    def observe_into(self, out: np.ndarray | None) -> None:
        """As :meth:`SixNimmtVecEnv.observe_into`: the next :meth:`step_wait` writes into ``out`` (each part its own
        rows) and returns it.

        Raises:
            ValueError: ``out`` of another shape, dtype or layout (the env is unchanged).
        """
        _check_rows(out, (self.num_envs, *self.observation_space.shape))  # type: ignore[misc]
        self._out = out

    def step_async(self, actions: np.ndarray) -> None:
        """Hand each part its rows of the learner's actions (``int (num_envs,)``)."""
        actions = np.asarray(actions).reshape(self.num_envs)
        for part, (a, b) in zip(self.parts, self._bounds, strict=True):
            part.step_async(actions[a:b])

    def step_wait(self) -> VecEnvStepReturn:
        """Step every part (:meth:`SixNimmtVecEnv.step_wait`); the four results concatenated in env order."""
        out, self._out = self._out, None
        if out is not None:
            for part, (a, b) in zip(self.parts, self._bounds, strict=True):
                part.observe_into(out[a:b])  # rows of a C-contiguous array: C-contiguous
        results = [part.step_wait() for part in self.parts]
        obs = out if out is not None else np.concatenate([r[0] for r in results])
        rewards = np.concatenate([r[1] for r in results])
        dones = np.concatenate([r[2] for r in results])
        infos = [info for r in results for info in r[3]]
        return obs, rewards, dones, infos

    def action_masks(self) -> np.ndarray:
        """``bool (num_envs, 109)``: True at each learner's legal actions now."""
        return np.concatenate([part.action_masks() for part in self.parts])

    def set_opponents(self, opponents: OpponentsArg) -> None:
        """:meth:`SixNimmtVecEnv.set_opponents` of every part (a sampler or one spec: a list of specs fits one
        table size only: refused before any part changes)."""
        for part in self.parts:
            part.check_opponents(opponents)
        for part in self.parts:
            part.set_opponents(opponents)

    def close(self) -> None:
        """Close every part."""
        for part in self.parts:
            part.close()

    def _split(self, indices: VecEnvIndices) -> list[tuple[SixNimmtVecEnv, list[int]]]:
        """The parts holding ``indices``, each with its own indices of them, in the order asked."""
        out: list[tuple[SixNimmtVecEnv, list[int]]] = []
        for i in env_indices(indices, self.num_envs):
            if not -self.num_envs <= i < self.num_envs:
                raise IndexError(f"env index {i} out of range {-self.num_envs}..{self.num_envs - 1}")
            i %= self.num_envs  # -1 is the last env, as in SB3's vector envs
            k = next(k for k, (a, b) in enumerate(self._bounds) if a <= i < b)
            if out and out[-1][0] is self.parts[k]:
                out[-1][1].append(i - self._bounds[k][0])
            else:
                out.append((self.parts[k], [i - self._bounds[k][0]]))
        return out

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """The parts' :meth:`SixNimmtVecEnv.get_attr`, once per index (``num_players``: each env's table size)."""
        return [value for part, idx in self._split(indices) for value in part.get_attr(attr_name, idx)]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        """Set the attribute in the parts holding ``indices``."""
        for part, idx in self._split(indices):
            part.set_attr(attr_name, value, idx)

    def env_method(
        self, method_name: str, *method_args: Any, indices: VecEnvIndices = None, **method_kwargs: Any
    ) -> list:
        """:meth:`SixNimmtVecEnv.env_method` of the parts holding ``indices``, one result per index
        (``set_opponents(sampler)`` reaches every game of those parts)."""
        return [
            result
            for part, idx in self._split(indices)
            for result in part.env_method(method_name, *method_args, indices=idx, **method_kwargs)
        ]

    def env_is_wrapped(self, wrapper_class: type, indices: VecEnvIndices = None) -> list[bool]:
        """No Gymnasium wrappers inside: False for every index (an index out of range is an ``IndexError``)."""
        return [False for _, idx in self._split(indices) for _ in idx]
