"""Gymnasium environment: one learning seat, the other seats played by agents.

:class:`SingleSeatEnv` is a thin adapter around any PettingZoo ``ParallelEnv``
of this package (:func:`sixnimmt_env.parallel_env`): it is the only place where
seats are chosen. The rules stay in :mod:`sixnimmt_env.rules.engine`; nothing here
copies them.

``gymnasium.make("sixnimmt_env:sixnimmt/SixNimmt-v0", num_players=4, opponents=["greedy", "random", "mc:8"])``
builds one through :func:`make_env`; every :class:`~sixnimmt_env.rules.engine.GameConfig`
field is a keyword.

====================  ==============================================================
space / key           value
====================  ==============================================================
action_space          ``Discrete(109)``: ``0..103`` play card ``a + 1`` (or draft it,
                      V2), ``104..107`` take row ``a - 104`` (R9); the no-op 108 is
                      never legal for the learner, who is asked only when it has a
                      decision
observation_space     ``Box(0, high, (506,), float32)``: the flat vector of
                      :mod:`sixnimmt_env.observation` for the learner's seat, with
                      finite bounds from the rules (:func:`~sixnimmt_env.observation.observation_high`)
action_masks()        ``bool`` array of shape ``(109,)``: True at the learner's legal
                      actions (sb3-contrib's MaskablePPO reads it); never all False:
                      after the episode ends only the no-op 108 is True (Gymnasium's
                      next-step autoreset ignores the action sampled from it)
reward                minus the bullheads the learner took (R8, R9), summed over its
                      own step and every opponent-only step up to its next decision
                      (e.g. a row choice of an opponent's low card, a draft pick)
terminated            the ParallelEnv's episode ended (round or game, per
                      ``episode``), or an illegal action with ``"terminate"``
info                  ``learner_seat`` (int), ``illegal_action`` (bool),
                      ``action_mask`` (``int8 (109,)``, the same mask, for libraries
                      that read it from ``info``); when the episode ends also
                      ``round_penalties`` and ``totals`` (lists of bullheads in
                      seat order) and ``rank`` (1 = lowest total, ties share the
                      better rank)
====================  ==============================================================

Illegal actions (algorithms without masking try them), as every environment
of the package handles them (:mod:`sixnimmt_env.rules.learner_step`): with
``illegal_action="terminate"`` (default) an integer action that is not legal,
including one outside 0..108, ends the episode at once, nothing is played, the
reward is ``-illegal_penalty`` (default
:data:`~sixnimmt_env.rules.learner_step.ILLEGAL_ACTION_PENALTY`, the
ParallelEnv's 171 bullheads, the whole deck: worse than any round can cost) and
``info["illegal_action"]`` is True. With ``"raise"`` it is a ``ValueError``
naming the learner's agent, the action, the phase and the legal actions, and
the env is unchanged (no opponent has acted, no random number was drawn). Any
integer-like action is accepted (Python and numpy integers, 0-d arrays and
tensors through ``__index__``); a value that is not an integer (a float, a
string) is a ``ValueError`` in both modes, as in the ParallelEnv.

Render modes (``render_mode=``): ``"ansi"`` (:meth:`SingleSeatEnv.render`
returns the table as text: rows with bullheads, the cards revealed, scores,
what the steps since the learner's last decision did, the learner's hand),
``"human"`` (prints it) and ``"rgb_array"`` (the same as a ``uint8 (600, 960,
3)`` picture; Gymnasium's ``RecordVideo`` turns the frames into a video).

Copies: the env (with its opponents and generator) survives ``pickle``,
``cloudpickle`` and ``copy.deepcopy`` at any point; the copy plays on exactly
as the original with the same actions.

The id is registered when :mod:`sixnimmt_env` is imported
(:mod:`sixnimmt_env.registration`). Worker processes that never import this
package (``SubprocVecEnv``, ``AsyncVectorEnv`` with ``spawn`` or ``forkserver``)
find it through Gymnasium's ``"module:id"`` form,
``"sixnimmt_env:sixnimmt/SixNimmt-v0"``, which imports the package first.

Opponents: a list of agent specs (``"greedy"``, ``"mc:8"``, ``"ppo:PATH"`` once
``training`` is imported) or :class:`~sixnimmt_env.agents.Agent` objects, one per
other seat in seat order after the learner; a single spec for every seat; or an
:class:`OpponentSampler` called at every reset to draw the line-up of the
episode. Opponents act inside :meth:`SingleSeatEnv.step` and draw their
randomness from the env's ``np_random`` (seeded by ``reset(seed=...)``), so the
same seed plays the same episodes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal, NamedTuple, Protocol, runtime_checkable

import gymnasium as gym
import numpy as np

from sixnimmt_env.agents import Agent, make_agent
from sixnimmt_env.pettingzoo_env import RENDER_MODES, parallel_env
from sixnimmt_env.registration import ENV_ID
from sixnimmt_env.render import render_table, step_events
from sixnimmt_env.rules.engine import NOOP, NUM_ACTIONS, PlayerView, State
from sixnimmt_env.rules.learner_step import (
    ILLEGAL_ACTION_PENALTY,
    TRUNCATED,
    check_illegal_action,
    end_masks,
    episode_summary,
    illegal_action_error,
    illegal_reward,
    integer_action,
    is_legal,
)

__all__ = ["ENV_ID", "ObservationAgent", "OpponentSampler", "SingleSeatEnv", "make_env"]


@runtime_checkable
class OpponentSampler(Protocol):
    """Draws the opponents of one episode: ``sampler(rng, k)`` returns ``k`` agents.

    ``rng`` is the env's generator: a sampler must draw from it only, so the
    same seed gives the same line-ups.
    """

    def __call__(self, rng: np.random.Generator, k: int) -> Sequence[Agent]:
        """``k`` agents, for the other seats in order after the learner."""
        ...


@runtime_checkable
class ObservationAgent(Protocol):
    """An agent that can also decide on the seat's encoded observation (e.g. a trained policy).

    :class:`SingleSeatEnv` hands such an opponent the ParallelEnv's own
    observation of its seat (``float32 (506,)``, :mod:`sixnimmt_env.observation`)
    and mask (``int8 (109,)``, 1 at the legal actions) instead of a view, so the
    observation is never rebuilt from the view. The result must equal
    ``act(view, rng)`` on the same state.
    """

    def act(self, view: Mapping[str, Any], rng: np.random.Generator) -> int:
        """One legal action index 0..108 for the seat of ``view``."""
        ...

    def act_observation(self, observation: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> int:
        """One legal action index (a 1 of ``mask``) for the seat whose observation this is."""
        ...


_NOOP_MASK = end_masks(np.zeros(NUM_ACTIONS, bool))
_NOOP_MASK.setflags(write=False)


class Seated(NamedTuple):
    """An agent played inside the env: its seat, the ParallelEnv's agent name for it, the agent, and its
    :meth:`ObservationAgent.act_observation` (``None`` for an agent that decides on views only)."""

    seat: int
    name: str
    agent: Agent
    act_observation: Callable[..., int] | None


def seated(names: Sequence[str], agents: Iterable[tuple[int, Agent]]) -> list[Seated]:
    """``(seat, agent)`` pairs as :class:`Seated` entries (``names``: the ParallelEnv's agent names, seat order)."""
    return [Seated(seat, names[seat], agent, getattr(agent, "act_observation", None)) for seat, agent in agents]


def opponent_actions(
    parallel: Any,
    observations: Mapping[str, Mapping[str, np.ndarray]],
    opponents: Sequence[Seated],
    actions: dict[str, int],
    rng: np.random.Generator,
) -> dict[str, int]:
    """Put into the joint action ``actions`` (by agent name) the action of every in-env opponent that has a
    decision in ``observations`` (the ParallelEnv's last ones: the no-op 108 is legal only without one); returns
    ``actions``. The one opponent turn of :class:`SingleSeatEnv` and of RLlib's self-play env.

    An :class:`ObservationAgent` decides on its seat's encoded observation and mask, any other agent on its
    seat's :class:`~sixnimmt_env.rules.engine.PlayerView` of ``parallel.game_state`` (computed on read).
    """
    state = None
    for seat, name, agent, act_observation in opponents:
        ob = observations[name]
        mask = ob["action_mask"]
        if mask[NOOP]:
            continue
        if act_observation is not None:
            actions[name] = int(act_observation(ob["observation"], mask, rng))
        else:
            if state is None:
                state = parallel.game_state
            actions[name] = int(agent.act(PlayerView(state, seat), rng))
    return actions


OpponentsArg = str | Sequence[str | Agent] | OpponentSampler | Callable[[np.random.Generator, int], Sequence[Agent]]


def _as_agent(item: str | Agent, where: str) -> Agent:
    if isinstance(item, str):
        return make_agent(item)
    if isinstance(item, Agent):
        return item
    raise ValueError(f"{where}: expected an agent spec string or an object with act(view, rng), got {item!r}")


def check_learner_options(learner_seat: object, illegal_action: str, illegal_penalty: float, num_players: int) -> None:
    """Validate the learner options shared by :class:`SingleSeatEnv` and ``training.vec_env.SixNimmtVecEnv``.

    Args:
        learner_seat: ``"random"`` or a seat index ``0..num_players-1`` (an ``int``/``np.integer``, not a ``bool``).
        illegal_action: ``"terminate"`` or ``"raise"``.
        illegal_penalty: bullheads charged for an illegal action; must be ``> 0``
            (:func:`~sixnimmt_env.rules.learner_step.check_illegal_action`).
        num_players: the number of seats in the game.

    Raises:
        ValueError: naming the option, the value given and what is allowed.
    """
    n = num_players
    seat_ok = learner_seat == "random" or (
        isinstance(learner_seat, int | np.integer) and not isinstance(learner_seat, bool) and 0 <= learner_seat < n
    )
    if not seat_ok:
        raise ValueError(f"learner_seat must be 'random' or a seat 0..{n - 1} (num_players={n}), got {learner_seat!r}")
    check_illegal_action(illegal_action, illegal_penalty)


class SingleSeatEnv(gym.Env[np.ndarray, np.int64]):
    """One learner seat of a PettingZoo ``ParallelEnv``; the others are played by ``opponents``.

    Args:
        parallel: a ``ParallelEnv`` of this package whose observations are
            ``{"observation": float32 (506,), "action_mask": int8 (109,)}``,
            whose infos are the readable views (:class:`~sixnimmt_env.rules.engine.PlayerView`)
            and whose rewards are minus the bullheads taken. Build it with
            ``illegal_action="raise"``.
        opponents: see the module docstring; default ``"greedy"`` at every other seat.
        learner_seat: ``"random"`` (drawn per episode from ``np_random``) or a
            seat index ``0..num_players-1``.
        illegal_action: ``"terminate"`` or ``"raise"`` (module docstring).
        illegal_penalty: bullheads charged for an illegal action (``> 0``).
        render_mode: ``None``, ``"ansi"`` (:meth:`render` returns the table as text, with the learner's
            hand), ``"human"`` (prints it) or ``"rgb_array"`` (a picture of the table, ``uint8 (H, W, 3)``,
            for Gymnasium's ``RecordVideo``).

    Raises:
        ValueError: a bad learner seat, illegal-action mode, penalty or render mode, an
            opponent list of the wrong length (naming ``num_players``), or an
            unknown agent spec.
    """

    metadata: dict[str, Any] = {"render_modes": list(RENDER_MODES), "render_fps": 2}  # noqa: RUF012  (Gymnasium's)

    def __init__(
        self,
        parallel: Any,
        opponents: OpponentsArg | None = None,
        learner_seat: int | Literal["random"] = "random",
        illegal_action: Literal["terminate", "raise"] = "terminate",
        illegal_penalty: float = ILLEGAL_ACTION_PENALTY,
        render_mode: str | None = None,
    ) -> None:
        if render_mode is not None and render_mode not in RENDER_MODES:
            raise ValueError(
                f"render_mode must be None or one of {', '.join(map(repr, RENDER_MODES))}, got {render_mode!r}"
            )
        self.render_mode = render_mode
        self.parallel = parallel
        self.agent_names: tuple[str, ...] = tuple(parallel.possible_agents)
        self.num_players = len(self.agent_names)
        n = self.num_players
        check_learner_options(learner_seat, illegal_action, illegal_penalty, n)
        self.learner_seat_option = learner_seat
        self.illegal_action = illegal_action
        self.illegal_penalty = float(illegal_penalty)
        self.set_opponents("greedy" if opponents is None else opponents)
        first = self.agent_names[0]
        space: gym.spaces.Box = parallel.observation_space(first)["observation"]
        self.observation_space = space
        self.action_space = gym.spaces.Discrete(NUM_ACTIONS)
        self.learner_seat = 0 if learner_seat == "random" else int(learner_seat)
        self._seat_agents: list[Agent | None] = [None] * n
        self._opponents: list[Seated] = []
        self._obs = np.zeros(space.shape, np.float32)
        self._mask = _NOOP_MASK.copy()
        self._done = True
        # the ParallelEnv's steps since the learner's last decision, for rendering (ParallelEnv.last_step())
        self._steps: list[tuple[State, list[int]] | None] = []

    # ------------------------------------------------------------------ opponents

    def set_opponents(self, opponents: OpponentsArg) -> None:
        """Replace the opponents (takes effect at the next reset); same forms as the constructor.

        Raises:
            ValueError: a list whose length is not ``num_players - 1``, or a bad spec.
        """
        k = self.num_players - 1
        if isinstance(opponents, str):
            agent = _as_agent(opponents, "opponents")
            self._fixed: list[Agent] | None = [agent] * k
            self._sampler = None
        elif isinstance(opponents, Sequence):
            if len(opponents) != k:
                raise ValueError(
                    f"opponents must name {k} agents (num_players={self.num_players}), got {len(opponents)}: "
                    f"{list(opponents)!r}"
                )
            self._fixed = [_as_agent(o, f"opponents[{i}]") for i, o in enumerate(opponents)]
            self._sampler = None
        elif callable(opponents):
            self._fixed, self._sampler = None, opponents
        else:
            raise ValueError(f"opponents must be a spec, a list of specs/agents or a sampler, got {opponents!r}")

    # ------------------------------------------------------------------ gym API

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        """Start an episode: draw the learner's seat and the opponents, deal, play up to the learner's decision.

        Returns:
            ``(observation float32 (506,), info)``.

        Raises:
            ValueError: an opponent sampler returning the wrong number of agents.
        """
        super().reset(seed=seed)
        rng = self.np_random
        n = self.num_players
        if self.learner_seat_option == "random":
            self.learner_seat = int(rng.integers(n))
        if self._sampler is not None:
            drawn = list(self._sampler(rng, n - 1))
            if len(drawn) != n - 1:
                raise ValueError(f"opponent sampler returned {len(drawn)} agents, expected {n - 1}")
        else:
            drawn = list(self._fixed or ())
        seats: list[Agent | None] = [None] * n
        for k, agent in enumerate(drawn, start=1):
            seats[(self.learner_seat + k) % n] = agent
        self._seat_agents = seats
        self._opponents = seated(self.agent_names, ((seat, a) for seat, a in enumerate(seats) if a is not None))
        self._steps = []
        observations, _ = self.parallel.reset(seed=int(rng.integers(2**63 - 1)), options=options)
        self._absorb(observations)
        self._done = False
        _, terminated = self._advance(0.0, False)
        if terminated:  # cannot happen with the rules of RULES.md: the learner plays every turn
            raise RuntimeError("the episode ended before the learner had a decision")
        return self._obs.copy(), self._info()

    def step(self, action: int | np.integer) -> tuple[np.ndarray, float, bool, bool, dict]:
        """Play the learner's ``action`` (and the opponents' simultaneous ones), then every
        opponent-only step up to the learner's next decision or the end of the episode.

        Returns:
            ``(observation, reward, terminated, truncated, info)``; the reward is the ParallelEnv's for the
            learner's seat summed over the steps played (minus its bullheads by default, <= 0).

        Raises:
            RuntimeError: stepping a finished episode without ``reset``.
            ValueError: an action that is not an integer, or an illegal action with ``illegal_action="raise"``
                (naming the learner's agent, the action and the legal actions); nothing changes.
        """
        if self._done:
            raise RuntimeError("the episode is over: call reset()")
        me = self.agent_names[self.learner_seat]
        a = integer_action(me, action, self._legal)
        if not is_legal(a, self._mask):
            if self.illegal_action == "raise":
                raise illegal_action_error(me, a, self._legal(), self.parallel.game_state.phase)
            self._steps = []
            self._done = True
            self._mask = _NOOP_MASK.copy()  # the episode is over: the no-op alone, as after the last step
            info = {
                "learner_seat": self.learner_seat,
                "illegal_action": True,
                "action_mask": self._mask.astype(np.int8),
            }
            return self._obs.copy(), illegal_reward(self.illegal_penalty), True, TRUNCATED, info
        self._steps = []
        reward, terminated = self._play(a)
        if not terminated:
            reward, terminated = self._advance(reward, terminated)
        self._done = terminated
        return self._obs.copy(), float(reward), terminated, TRUNCATED, self._info(final=terminated)

    def _legal(self) -> list[int]:
        """The learner's legal actions now (its mask's), for error messages."""
        return np.flatnonzero(self._mask).tolist()

    def action_masks(self) -> np.ndarray:
        """``bool`` array of shape ``(109,)``: True at the learner's legal actions now. Never all False: once
        the episode is over (and before the first reset) only the no-op 108 is True; any action sampled from it
        is ignored by the autoreset that follows."""
        return self._mask.copy()

    def render(self) -> str | np.ndarray | None:  # type: ignore[override]  # (Gymnasium's: a free TypeVar RenderFrame)
        """The table as the learner sees it: rows with their bullheads, scores, the cards revealed, who took
        which row and why, and the learner's hand (its own cards only, R4).

        Returns:
            the text (``render_mode="ansi"``); ``uint8 (H, W, 3)`` RGB picture (``"rgb_array"``); ``None``
            (``"human"`` prints the text; without a render mode a warning).
        """
        names = self.agent_names
        events = [line for step in self._steps if step is not None for line in step_events(step[0], step[1], names)]
        return render_table(self.parallel, self.render_mode, learner=self.learner_seat, events=events)

    def close(self) -> None:
        """Close the wrapped ParallelEnv."""
        self.parallel.close()

    # ------------------------------------------------------------------ internals

    def _absorb(self, observations: Mapping[str, Any]) -> None:
        me = self.agent_names[self.learner_seat]
        self._observations = observations
        if me in observations:
            ob = observations[me]
            self._obs = np.asarray(ob["observation"], np.float32)
            self._mask = np.asarray(ob["action_mask"]).astype(bool)

    def _learner_decides(self) -> bool:
        return bool(self._mask.any()) and not self._mask[NOOP]

    def _play(self, learner_action: int) -> tuple[float, bool]:
        """One ParallelEnv step: the learner's action and every opponent's (no-op without a decision).

        Opponents with a decision play as :func:`opponent_actions` says.
        """
        actions = dict.fromkeys(self.agent_names, NOOP)
        actions[self.agent_names[self.learner_seat]] = learner_action
        opponent_actions(self.parallel, self._observations, self._opponents, actions, self.np_random)
        observations, rewards, terminations, truncations, _ = self.parallel.step(actions)
        if self.render_mode is not None:
            self._steps.append(self.parallel.last_step())
        me = self.agent_names[self.learner_seat]
        self._absorb(observations)
        done = bool(terminations.get(me, False) or truncations.get(me, False)) or not self.parallel.agents
        return float(rewards.get(me, 0.0)), done

    def _advance(self, reward: float, terminated: bool) -> tuple[float, bool]:
        """Play opponent-only steps (the learner no-ops) until the learner must decide or the episode ends."""
        while not terminated and not self._learner_decides():
            r, terminated = self._play(NOOP)
            reward += r
        return reward, terminated

    def _info(self, final: bool = False) -> dict[str, Any]:
        info: dict[str, Any] = {
            "learner_seat": self.learner_seat,
            "illegal_action": False,
            "action_mask": self._mask.astype(np.int8),
        }
        if final:
            state = self.parallel.game_state
            info.update(episode_summary(state.totals, state.round_penalties, self.learner_seat))
        return info


def make_env(
    opponents: OpponentsArg | None = None,
    learner_seat: int | Literal["random"] = "random",
    illegal_action: Literal["terminate", "raise"] = "terminate",
    illegal_penalty: float = ILLEGAL_ACTION_PENALTY,
    render_mode: str | None = None,
    **config: Any,
) -> SingleSeatEnv:
    """A :class:`SingleSeatEnv` around :func:`sixnimmt_env.parallel_env` (the ``sixnimmt/SixNimmt-v0`` entry point).

    Args:
        opponents, learner_seat, illegal_action, illegal_penalty, render_mode: see :class:`SingleSeatEnv`.
        **config: every :class:`~sixnimmt_env.rules.engine.GameConfig` field
            (``num_players``, ``variant``, ``row_choice``, ``end_score``,
            ``end_rule``, ``max_rounds``, ``episode``) and the ParallelEnv's
            ``reward`` (``"penalty"``, default, or ``"relative"``).

    Raises:
        ValueError: a bad config field (from :class:`GameConfig`) or any error of :class:`SingleSeatEnv`.
    """
    return SingleSeatEnv(
        parallel_env(**config, illegal_action="raise", render_mode=render_mode),
        opponents=opponents,
        learner_seat=learner_seat,
        illegal_action=illegal_action,
        illegal_penalty=illegal_penalty,
        render_mode=render_mode,
    )
