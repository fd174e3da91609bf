"""One learner seat per game of a batch, the other seats played inside the batch (issue 5).

:class:`LearnerTables` is the engine side of :class:`training.vec_env.SixNimmtVecEnv` (and of anything else that
asks one seat per game for its decisions, e.g. an evaluation loop): B games of a :class:`BatchedGames` batch, in
each a learner seat ``seat[b]``, and every other seat either a heuristic agent (kind code of
:mod:`sixnimmt_env.compiled.heuristics`, played by the compiled kernel) or an *external* agent (``ext[b, s] >= 0``, an
index into a list the caller holds, e.g. a policy network that decides for many games in one forward pass).

:meth:`LearnerTables.play` applies the learner's action of every active game together with its opponents'
simultaneous actions (R5), then plays every opponent-only step (a low-card row choice of an opponent, R9; an
opponent's draft pick, V2) up to the learner's next decision or the end of the episode, adding up the learner's
reward: :func:`sixnimmt_env.rewards.seat_reward` of the learner's seat in the tables' reward mode (``"penalty"``:
minus the bullheads it took, R8, R9, as :class:`sixnimmt_env.gym_env.SingleSeatEnv` sums them; ``"relative"``: plus
the mean of the other seats' bullheads) on the bullheads taken over the steps played, compiled by numba from that
one definition (``tests/test_rewards.py`` checks it against :func:`sixnimmt_env.rewards.rewards`). It stops early
in the games where an external agent must decide in an opponent-only step; :meth:`LearnerTables.pending` lists the
(game, seat) pairs whose external decision is due, :meth:`observe_pairs` / :meth:`mask_pairs` give their
observations and masks, and the caller calls :meth:`play` again with those games active.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from sixnimmt_env.compiled.core import BatchedGames
from sixnimmt_env.compiled.heuristics import HeuristicPlayers, heuristic_game_actions
from sixnimmt_env.observation import OBS_SIZE
from sixnimmt_env.rewards import check_reward_mode, seat_reward
from sixnimmt_env.rules.engine import NOOP, NUM_ACTIONS, NUM_CARDS, GameConfig
from sixnimmt_env.rules.kernel import (
    C_N,
    DONE,
    SELECT,
    GameArrays,
    decides,
    encode_all,
    mask_all,
    new_games,
    step_game,
)

_seat_reward = njit(cache=True, inline="always")(seat_reward)
"""numba's compilation of :func:`sixnimmt_env.rewards.seat_reward`, the one definition of a seat's reward."""

_AGENT_TAG = 0x5EA7


@njit(cache=True)
def _play(
    S: GameArrays,
    cfg: np.ndarray,
    kinds: np.ndarray,
    ext: np.ndarray,
    seat: np.ndarray,
    hrng: np.ndarray,
    actions: np.ndarray,
    active: np.ndarray,
    reward: np.ndarray,
    relative: bool,
    pen: np.ndarray,
    deals: np.ndarray,
    deal_next: np.ndarray,
    rng: np.ndarray,
) -> None:
    phase, chooser = S.phase, S.chooser
    deck = np.zeros(NUM_CARDS, np.int16)
    n = cfg[C_N]
    for b in range(active.shape[0]):
        if not active[b]:
            continue
        me = seat[b]
        own = total = 0  # the bullheads the learner, and the whole table, took in the steps played
        while True:
            heuristic_game_actions(S, cfg, kinds, actions, hrng, b)
            for s in range(n):
                if kinds[b, s] < 0 and not decides(S, b, s):
                    actions[b, s] = NOOP
            step_game(S, cfg, b, actions, pen, deck, deals, deal_next, rng)
            own += pen[b, me]
            for s in range(n):
                total += pen[b, s]
            if phase[b] == DONE or decides(S, b, me):
                active[b] = False
                break
            if ext[b, chooser[b]] >= 0:  # an opponent-only step whose chooser is external: the caller decides
                break
        reward[b] += _seat_reward(own, total, n, relative)


@njit(cache=True)
def _pending(S: GameArrays, ext: np.ndarray, active: np.ndarray, games: np.ndarray, seats: np.ndarray) -> int:
    k = 0
    for b in range(active.shape[0]):
        if not active[b]:
            continue
        for s in range(ext.shape[1]):
            if ext[b, s] >= 0 and decides(S, b, s):
                games[k] = b
                seats[k] = s
                k += 1
    return k


def _agent_streams(seed: int | None, count: int) -> np.ndarray:
    """``count`` splitmix64 states for the heuristic agents, apart from the deal streams of the same seed."""
    entropy = None if seed is None else [_AGENT_TAG, seed]
    return np.random.SeedSequence(entropy).generate_state(count, np.uint64)


class LearnerTables:
    """B games with one learner seat each; the other seats are heuristic (compiled) or external agents.

    Args:
        config: the rules in force in every game.
        batch_size: B (>= 1).
        seed: seeds the deals and the heuristic agents' streams (same seed, same games for the same actions).
        reward: the learner's reward mode, ``"penalty"`` or ``"relative"`` (:func:`sixnimmt_env.rewards.rewards`).

    Attributes:
        games: the :class:`BatchedGames` batch (its state arrays are read-only for callers).
        seat: ``int64 (B,)``: the learner's seat in each game (set by the caller, e.g. per episode).
        kinds: ``int8 (B, n)``: heuristic kind code per seat (:data:`sixnimmt_env.compiled.heuristics.KINDS`), -1 for
            the learner and external seats.
        ext: ``int16 (B, n)``: index of the external agent of each seat, -1 for the learner and heuristic seats.

    Raises:
        ValueError: if ``batch_size`` is not a positive integer, or ``reward`` is not a reward mode.
    """

    def __init__(self, config: GameConfig, batch_size: int, seed: int | None = None, reward: str = "penalty") -> None:
        check_reward_mode(reward)
        self.reward_mode = reward
        self.games = BatchedGames(config, batch_size, seed=seed)
        B, n = self.games.batch_size, self.games.num_players
        self.batch_size, self.num_players = B, n
        self.seat = np.zeros(B, np.int64)
        self.kinds = np.full((B, n), -1, np.int8)
        self.ext = np.full((B, n), -1, np.int16)
        self._heuristic = HeuristicPlayers(self.games, self.kinds)
        self._heuristic.rng[:] = _agent_streams(seed, B)
        self._pen = np.zeros((B, n), np.int32)
        self._pair_games = np.zeros(B * n, np.int64)
        self._pair_seats = np.zeros(B * n, np.int64)

    def reseed(self, seed: int | None) -> None:
        """Reseed the deal streams and the heuristic agents' streams, and start a new game in every slot."""
        self.games.reset(seed)
        self._heuristic.rng[:] = _agent_streams(seed, self.batch_size)

    def restart(self, which: np.ndarray) -> None:
        """Start a new game (a new deal from each game's stream) in every slot with ``which[b]`` (bool (B,))."""
        g = self.games
        new_games(g.arrays, g.cfg, np.ascontiguousarray(which, np.bool_), g.deals, g.deal_next, g.deal_rng)

    def learner_decides(self) -> np.ndarray:
        """``bool (B,)``: games whose learner has a real decision now (phase select, or it is the chooser)."""
        g = self.games
        return (g.phase == SELECT) | ((g.phase != DONE) & (g.chooser == self.seat))

    def play(self, actions: np.ndarray, active: np.ndarray, reward: np.ndarray) -> None:
        """Step every active game, then its opponent-only steps, until the learner decides or the game ends.

        Args:
            actions: ``int64 (B, n)``: the joint action; the caller sets the learner's action and the actions of
                the external seats that decide now (:meth:`pending`); heuristic seats and seats without a decision
                are filled here (the no-op 108). Actions are not checked: they must be legal.
            active: ``bool (B,)``, updated in place: on return True exactly in the games that wait on an external
                agent's decision in an opponent-only step (call again after filling it in).
            reward: ``float32 (B,)``, updated in place: the learner's reward for the steps played is added
                (:func:`sixnimmt_env.rewards.seat_reward` in the tables' reward mode, on the bullheads taken, R8, R9).
        """
        g = self.games
        _play(
            g.arrays, g.cfg, self.kinds, self.ext, self.seat, self._heuristic.rng, actions, active, reward,
            self.reward_mode == "relative", self._pen,
            g.deals, g.deal_next, g.deal_rng,
        )  # fmt: skip

    def pending(self, active: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The external decisions due now in the active games: ``(games, seats)``, two ``int64`` arrays."""
        k = _pending(self.games.arrays, self.ext, active, self._pair_games, self._pair_seats)
        return self._pair_games[:k].copy(), self._pair_seats[:k].copy()

    def observe_pairs(self, games: np.ndarray, seats: np.ndarray) -> np.ndarray:
        """``float32 (len(games), 506)``: the observation of seat ``seats[i]`` in game ``games[i]`` (= ``encode``)."""
        out = np.empty((len(games), OBS_SIZE), np.float32)
        encode_all(self.games.arrays, self.games.cfg, games, seats, out)
        return out

    def mask_pairs(self, games: np.ndarray, seats: np.ndarray) -> np.ndarray:
        """``bool (len(games), 109)``: the legal-action masks of those seats (= ``action_mask``)."""
        out = np.empty((len(games), NUM_ACTIONS), np.int8)
        mask_all(self.games.arrays, self.games.cfg, games, seats, out)
        return out.view(np.bool_)
