"""Self-play on RLlib through its policy mapping: a multi-agent env of learner and snapshot seats, and the league.

With ``self_play.enabled`` the RLlib backend (:mod:`training.rllib.backend`) trains a multi-agent setup:

- :class:`LeagueEnv`, an RLlib ``MultiAgentEnv``: one table of the game (:func:`sixnimmt_env.parallel_env`),
  the learner's seat (``env.learner_seat``) and every opponent seat drawn at reset. An opponent seat is a
  snapshot seat (an RLlib agent) with probability ``self_play.prob`` once the league holds a snapshot, the
  snapshot drawn uniformly from the filled slots; otherwise an agent of the ``opponents`` mixture played
  inside the env, as in the single-seat env. RLlib agents get an observation only when they have a
  decision (``{"observations": float32 (506,), "action_mask": int8 (109,)}``); steps where only in-env
  opponents decide (e.g. their row choice, R9) are played inside :meth:`LeagueEnv.step`. An agent's reward
  is minus the bullheads its seat took since its last decision (R8, R9), given with its next observation
  and at the end.
- Agent ids name the role and the seat: ``learner_<seat>``, ``snapshot<k>_<seat>``. :func:`league_mapping`
  (the ``policy_mapping_fn``) maps ``learner_*`` to the trained module :data:`LEARNER_MODULE`, and
  ``snapshot<k>_*`` to the module ``snapshot<k>``.
- The league: ``self_play.pool_size`` snapshot modules ``snapshot0..`` declared up front, never trained
  (``policies_to_train`` names the learner's module only). Every ``self_play.snapshot_every`` steps the
  learner's weights are copied into the next slot (a ring: the oldest snapshot is replaced) and every env
  is told how many slots are filled (:func:`snapshot_into_slot`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import numpy as np
from gymnasium import spaces
from ray.rllib.env.multi_agent_env import MultiAgentEnv
from ray.rllib.utils.typing import AgentID, MultiAgentDict

from sixnimmt_env.gym_env import Seated, opponent_actions, seated
from sixnimmt_env.pettingzoo_env import parallel_env
from sixnimmt_env.rllib_env import MASK_KEY, OBS_KEY, masked_space
from sixnimmt_env.rules.engine import NOOP, NUM_ACTIONS
from sixnimmt_env.rules.learner_step import illegal_action_error, integer_action, is_legal
from training.opponents import MixtureSampler

__all__ = [
    "LEARNER_MODULE",
    "LeagueEnv",
    "league_env",
    "league_mapping",
    "module_ids",
    "push_slots",
    "slot_module",
    "snapshot_into_slot",
]

LEARNER_MODULE = "default_policy"
"""The trained module's id (RLlib's default, so ``rllib:PATH`` finds it in algorithm checkpoints)."""


def slot_module(slot: int) -> str:
    """The module id of snapshot slot ``slot`` (``snapshot<slot>``)."""
    return f"snapshot{slot}"


def league_mapping(agent_id: AgentID, episode: Any = None, **kwargs: Any) -> str:
    """RLlib's ``policy_mapping_fn``: ``learner_<seat>`` to :data:`LEARNER_MODULE`, ``snapshot<k>_<seat>`` to
    ``snapshot<k>``."""
    role = str(agent_id).split("_", 1)[0]
    return LEARNER_MODULE if role == "learner" else role


def _legal(mask: np.ndarray) -> list[int]:
    """The legal actions of a seat's mask (for the learner-step contract's messages)."""
    return np.flatnonzero(mask).tolist()


class LeagueEnv(MultiAgentEnv):
    """The learner's seat and the snapshot seats of one table as RLlib agents; other seats played inside.

    Args:
        config: ``game`` (:class:`~sixnimmt_env.rules.engine.GameConfig` keywords; ``num_players`` is taken from
            ``table_sizes``), ``table_sizes`` (env runner ``i`` plays ``table_sizes[i % len]``),
            ``learner_seat`` (``"random"`` or a seat index), ``specs``/``weights`` (the opponent mixture,
            a :class:`training.opponents.MixtureSampler` without a pool: snapshots are RLlib agents here),
            ``prob`` (chance of a snapshot per opponent seat), ``pool_slots`` (snapshot slots),
            ``filled`` (slots holding a snapshot now; :meth:`set_filled` changes it). RLlib passes an
            ``EnvContext`` whose ``worker_index`` picks the table size.

    Every random choice (seats, opponents, the deal) flows from the seed given to :meth:`reset`.
    """

    def __init__(self, config: Mapping[str, Any]) -> None:
        super().__init__()
        sizes = list(config["table_sizes"])
        self.num_players = sizes[getattr(config, "worker_index", 0) % len(sizes)]
        self.parallel = parallel_env(**{**config["game"], "num_players": self.num_players}, illegal_action="raise")
        self.names: tuple[str, ...] = tuple(self.parallel.possible_agents)
        self.learner_seat_option = config["learner_seat"]
        self.mixture = MixtureSampler(list(config["specs"]), list(config["weights"]))
        self.prob = float(config["prob"])
        self.pool_slots = int(config["pool_slots"])
        self.filled = int(config.get("filled", 0))
        seats = range(max(sizes))
        possible: list[AgentID] = [f"learner_{s}" for s in seats]
        possible += [f"{slot_module(k)}_{s}" for k in range(self.pool_slots) for s in seats]
        self.possible_agents = possible
        self.agents = []
        space = masked_space(self.parallel.observation_space(self.names[0])["observation"])
        self.observation_spaces = dict.fromkeys(self.possible_agents, space)
        self.action_spaces = dict.fromkeys(self.possible_agents, spaces.Discrete(NUM_ACTIONS))
        self._rng = np.random.default_rng()
        self._seat_agent: dict[int, AgentID] = {}  # seat -> RLlib agent id
        self._inside: list[Seated] = []  # the agents played inside the env
        self._pending: dict[AgentID, float] = {}
        self._last: dict[AgentID, dict[str, np.ndarray]] = {}

    def set_filled(self, filled: int) -> None:
        """Slots holding a snapshot from the next episode on (``0..pool_slots``)."""
        if not 0 <= filled <= self.pool_slots:
            raise ValueError(f"filled must be 0..{self.pool_slots} (pool_slots), got {filled}")
        self.filled = filled

    def reset(  # type: ignore[override]  # RLlib's MultiAgentEnv.reset (matched here) differs from gymnasium's Env.reset
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[MultiAgentDict, MultiAgentDict]:
        """Draw the seats and opponents, deal, play in-env steps up to an RLlib agent's decision.

        Returns:
            ``(observations, infos)`` keyed by the agents that decide now.
        """
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        rng, n = self._rng, self.num_players
        opt = self.learner_seat_option
        learner = int(rng.integers(n)) if opt == "random" else int(opt)
        self._seat_agent = {learner: f"learner_{learner}"}
        inside = []
        for k in range(1, n):
            seat = (learner + k) % n
            if self.filled and rng.random() < self.prob:
                self._seat_agent[seat] = f"{slot_module(int(rng.integers(self.filled)))}_{seat}"
            else:
                inside.append((seat, self.mixture(rng, 1)[0]))
        self._inside = seated(self.names, inside)
        self.agents = list(self._seat_agent.values())
        self._pending = dict.fromkeys(self.agents, 0.0)
        self._last = {}
        observations, _ = self.parallel.reset(seed=int(rng.integers(2**63 - 1)))
        self._absorb(observations)
        done = self._advance(False)
        if done:
            raise RuntimeError("the episode ended before any RLlib agent had a decision")
        obs, _ = self._emit(False)
        return obs, {}

    def step(  # type: ignore[override]  # RLlib's MultiAgentEnv.step (matched here) differs from gymnasium's Env.step
        self, action_dict: MultiAgentDict
    ) -> tuple[MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict]:
        """Play the RLlib agents' actions (and the in-env seats'), then in-env-only steps up to the next
        decision of an RLlib agent or the end of the episode.

        Raises:
            ValueError: an RLlib agent's action that is not an integer (a float is never truncated), or not legal now
                (a deciding agent left out of ``action_dict`` plays the no-op 108): the learner-step contract's
                error (:mod:`sixnimmt_env.rules.learner_step`) naming the seat's agent of the table
                (``player_<seat>``), the action and the legal actions, for the first such seat in seat order. It is
                raised before any seat acts: nothing is played and no random number is drawn.
        """
        done = self._play(self._checked(action_dict))
        if not done:
            done = self._advance(done)
        obs, rewards = self._emit(done)
        terminateds: MultiAgentDict = {"__all__": done}
        if done:
            terminateds.update(dict.fromkeys(self.agents, True))
        return obs, rewards, terminateds, {"__all__": False}, {}

    # ------------------------------------------------------------------ internals

    def _absorb(self, observations: Mapping[str, Any]) -> None:
        self._observations = observations
        for seat, agent_id in self._seat_agent.items():
            ob = observations.get(self.names[seat])
            if ob is not None:
                self._last[agent_id] = {
                    OBS_KEY: np.asarray(ob["observation"], np.float32),
                    MASK_KEY: np.asarray(ob["action_mask"], np.int8),
                }

    def _deciders(self) -> list[AgentID]:
        return [a for a, ob in self._last.items() if not ob[MASK_KEY][NOOP] and ob[MASK_KEY].any()]

    def _checked(self, action_dict: Mapping[AgentID, Any]) -> dict[int, int]:
        """Every RLlib agent's action by seat (the no-op 108 for one left out), each a legal integer (the
        learner-step contract, as in :class:`sixnimmt_env.gym_env.SingleSeatEnv`), checked before anyone acts."""
        checked: dict[int, int] = {}
        for seat in sorted(self._seat_agent):
            name = self.names[seat]
            mask = self._observations[name]["action_mask"]
            a = integer_action(name, action_dict.get(self._seat_agent[seat], NOOP), partial(_legal, mask))
            if not is_legal(a, mask):
                raise illegal_action_error(name, a, _legal(mask), self.parallel.game_state.phase)
            checked[seat] = a
        return checked

    def _play(self, checked: Mapping[int, int]) -> bool:
        """One ParallelEnv step: the RLlib agents' ``checked`` actions (by seat; the no-op for a seat left out) and
        the in-env opponents' (:func:`~sixnimmt_env.gym_env.opponent_actions`)."""
        actions = dict.fromkeys(self.names, NOOP)
        for seat, a in checked.items():
            actions[self.names[seat]] = a
        opponent_actions(self.parallel, self._observations, self._inside, actions, self._rng)
        observations, rewards, terminations, truncations, _ = self.parallel.step(actions)
        for seat, agent_id in self._seat_agent.items():
            self._pending[agent_id] += float(rewards.get(self.names[seat], 0.0))
        self._absorb(observations)
        return not self.parallel.agents or any(terminations.values()) or any(truncations.values())

    def _advance(self, done: bool) -> bool:
        while not done and not self._deciders():
            done = self._play({})
        return done

    def _emit(self, done: bool) -> tuple[MultiAgentDict, MultiAgentDict]:
        ids = self.agents if done else self._deciders()
        obs = {a: self._last[a] for a in ids}
        rewards = {a: self._pending[a] for a in ids}
        for a in ids:
            self._pending[a] = 0.0
        return obs, rewards


def league_env(config: Mapping[str, Any]) -> LeagueEnv:
    """RLlib env creator of :class:`LeagueEnv` (sets torch's threads to ``config["torch_threads"]``)."""
    import torch

    import training.rllib.rllib_agents  # noqa: F401  (rllib: opponent specs, in every worker)

    torch.set_num_threads(int(config.get("torch_threads", 1)))
    return LeagueEnv(config)


def _set_slots(runner: Any, weights: Mapping[str, Mapping[str, Any]], filled: int) -> None:
    """On one env runner: snapshot weights into their modules, the filled slots into every env (the local
    runner of a remote set-up may have neither module nor env)."""
    module = getattr(runner, "module", None)
    if module is not None:
        for module_id, state in weights.items():
            if module_id in module:
                module[module_id].set_state(dict(state))
    if getattr(runner, "env", None) is not None:
        for env in runner.env.envs:
            env.unwrapped.set_filled(filled)


def push_slots(algo: Any, filled: int) -> None:
    """Give every env runner the learners' weights of the ``filled`` snapshot slots and tell its envs how many
    slots are filled (after :func:`snapshot_into_slot`, and after restoring a checkpoint).

    The env runners get the weights directly: RLlib's ``sync_weights`` skips runners whose weights sequence
    number is already current (the learner's, here).
    """
    ids = [slot_module(k) for k in range(filled)]
    weights = algo.learner_group.get_weights(ids) if ids else {}
    algo.env_runner_group.foreach_env_runner(partial(_set_slots, weights=weights, filled=filled))


def snapshot_into_slot(algo: Any, slot: int, filled: int) -> None:
    """Copy the learner module's weights into snapshot slot ``slot`` on the learners and every env runner, and
    tell every env that ``filled`` slots hold a snapshot (from its next episode)."""
    weights = algo.learner_group.get_weights([LEARNER_MODULE])[LEARNER_MODULE]
    algo.learner_group.set_weights({slot_module(slot): weights})
    push_slots(algo, filled)


def module_ids(pool_slots: int) -> Sequence[str]:
    """Every module id of a league of ``pool_slots`` snapshot slots, the learner's first."""
    return [LEARNER_MODULE, *(slot_module(k) for k in range(pool_slots))]
