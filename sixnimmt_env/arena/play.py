"""The play loop: one game of the arena on the reference engine, and who sits where.

:func:`play_game` plays game ``g`` of a run seeded with ``seed``: its deal comes from
``numpy.random.default_rng([DEAL_TAG, seed, deal])`` and its agents draw from one
``default_rng([AGENT_TAG, seed, g])``, called in seat order (:mod:`sixnimmt_env.seeding`), so every game is
reproducible from ``(seed, g)`` alone. :func:`seat_positions` is the arena's rotation: in game ``g`` the agent
listed at position ``(i + g) mod n`` sits in seat ``i``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from sixnimmt_env.agents import Agent
from sixnimmt_env.rules.engine import DONE, NOOP, SELECT, GameConfig, IllegalActionError, PlayerView, new_game, step
from sixnimmt_env.seeding import AGENT_TAG, DEAL_TAG

if TYPE_CHECKING:  # the game records are imported where a run keeps them (--save-games)
    from sixnimmt_env.records import GameRecorder

__all__ = ["GameResult", "check_seed", "play_game", "seat_positions"]


class GameResult(NamedTuple):
    """The outcome of one game (or one round with ``episode="round"``).

    Attributes:
        penalties: per seat, bullheads taken over the episode (R11, R12).
        rounds: rounds played, >= 1.
    """

    penalties: tuple[int, ...]
    rounds: int


def seat_positions(num_agents: int, game_index: int) -> tuple[int, ...]:
    """For each seat ``i``, the listed agent position ``(i + game_index) mod num_agents`` that sits there."""
    return tuple((i + game_index) % num_agents for i in range(num_agents))


def check_seed(seed: object) -> int:
    """``seed`` as an ``int``; ValueError unless it is a non-negative integer."""
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    return int(seed)


def _play(
    config: GameConfig,
    agents: Sequence[Agent],
    deal_rng: np.random.Generator,
    rng: np.random.Generator,
    game_index: int | None = None,
    recorder: GameRecorder | None = None,
) -> GameResult:
    """Play one episode with ``agents[seat]`` in each seat; only seats with a decision are asked.

    ``recorder`` (optional) observes every step (:class:`sixnimmt_env.records.GameRecorder`).

    Raises:
        IllegalActionError: an agent's illegal action, naming the agent (its spec), the seat and the game.
    """
    state = new_game(config, deal_rng)
    n = config.num_players
    seats = range(n)
    while True:
        phase = state.phase
        if phase == SELECT:
            actions = [agents[s].act(PlayerView(state, s), rng) for s in seats]
        elif phase == DONE:
            return GameResult(state.totals, state.round + 1)
        else:
            actions = [NOOP] * n
            c = state.chooser
            actions[c] = agents[c].act(PlayerView(state, c), rng)
        try:
            before = state
            state, penalties = step(state, actions, deal_rng)
            if recorder is not None:
                recorder.observe(before, actions, penalties, state)
        except IllegalActionError as e:
            agent = agents[e.seat]
            name = f"agent {getattr(agent, 'spec', None) or type(agent).__name__}"
            if game_index is not None:
                name += f" in game {game_index}"
            raise IllegalActionError(e.seat, e.action, e.legal, state.phase, agent=name) from None


def play_game(
    config: GameConfig,
    agents: Sequence[Agent],
    seed: int,
    game_index: int,
    deal_index: int | None = None,
    recorder: GameRecorder | None = None,
) -> GameResult:
    """Play game ``game_index`` of a run seeded with ``seed``; ``agents[i]`` sits in seat ``i``.

    Args:
        config: the rules in force (``episode="round"`` for single rounds).
        agents: one :class:`~sixnimmt_env.agents.Agent` per seat, in seat order.
        seed: the run's seed (non-negative).
        game_index: the game's index in the run (the agents' random stream).
        deal_index: the deal to play (default ``game_index``; duplicate runs
            replay one deal in several games).
        recorder: if given, it observes every step (:class:`sixnimmt_env.records.GameRecorder`);
            call its ``finish()`` afterwards for the game record.

    Returns:
        A :class:`GameResult`: per-seat penalties in bullheads and rounds played.

    Raises:
        ValueError: for a wrong number of agents, a bad seed, or an agent's illegal action
            (:class:`~sixnimmt_env.rules.engine.IllegalActionError` names the seat and the legal actions).
    """
    if len(agents) != config.num_players:
        raise ValueError(f"play_game needs one agent per seat: num_players={config.num_players}, got {len(agents)}")
    seed = check_seed(seed)
    deal = game_index if deal_index is None else deal_index
    deal_rng = np.random.default_rng([DEAL_TAG, seed, deal])
    rng = np.random.default_rng([AGENT_TAG, seed, game_index])
    return _play(config, agents, deal_rng, rng, game_index, recorder)
