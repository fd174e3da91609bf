"""One game at a time through the batched engine's kernels: the compiled backend of the ParallelEnv.

:class:`SingleGame` keeps one game in a :class:`~sixnimmt_env.batched.core.BatchedGames` of batch size 1 and
advances it with ONE compiled call per step (:func:`step_and_observe`): check every action against the mask
(nothing changes if one is illegal), apply the joint action with the engine's inline kernel
:func:`~sixnimmt_env.batched.core.step_game` (`RULES.md` R5-R14, V2), then write fresh arrays: every seat's
observation (``float32 (n, 402)``, value for value :func:`sixnimmt_env.observation.encode`), every seat's mask
(``int8 (n, 109)``, :func:`sixnimmt_env.observation.action_mask`) and a snapshot of the whole game
(:data:`SNAPSHOT` layout, in extra rows of the observation array) from which :func:`state_from_snapshot`
rebuilds the reference :class:`~sixnimmt_env.engine.State` on demand (for readable infos, ``state()`` and
rendering).

The snapshot also records the order in which cards went into each penalty pile (the batched engine keeps only
who holds a card), so the rebuilt state equals the reference engine's, piles in taken order included.

Deals come from the batched engine's per-game generator (splitmix64): the same seed gives the same games here,
but not the reference engine's games (see :mod:`sixnimmt_env.batched.core`; :meth:`SingleGame.queue_deals`
replays given deals).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from sixnimmt_env.batched.core import (
    C_N,
    CHOOSE_ROW,
    DONE,
    BatchedGames,
    _encode_public,
    _encode_seat,
    _is_legal,
    _mask,
    _new_games,
    step_game,
)
from sixnimmt_env.engine import (
    HAND_SIZE,
    NUM_ACTIONS,
    NUM_CARDS,
    NUM_ROWS,
    PHASES,
    ROW_LIMIT,
    GameConfig,
    State,
)
from sixnimmt_env.observation import OBS_SIZE

OK = -1
"""Code of :func:`step_and_observe` for a step that was applied; ``>= 0`` is the first seat with an illegal action."""
PENALTIES = -2
"""Code of :func:`step_and_observe` for an applied step in which some seat took bullheads."""
OVER = -3
"""Code of :func:`step_and_observe` for an applied step that ended the game (or round episode)."""

# snapshot layout (int32), for n seats
_PHASE, _CHOOSER, _TURN, _ROUND, _ROWS = 0, 1, 2, 3, 4
_ROW_LEN = _ROWS + NUM_ROWS * ROW_LIMIT
_HANDS = _ROW_LEN + NUM_ROWS
_PILE_SIZE = NUM_CARDS + 1

SNAPSHOT = (
    ("phase", 1),
    ("chooser", 1),
    ("turn", 1),
    ("round", 1),
    ("rows", NUM_ROWS * ROW_LIMIT),
    ("row_lengths", NUM_ROWS),
    ("hands", "10 n"),
    ("hand_lengths", "n"),
    ("revealed", "n"),
    ("round_penalties", "n"),
    ("totals", "n"),
    ("pile", NUM_CARDS + 1),
    ("taken_at", NUM_CARDS + 1),
    ("display", NUM_CARDS + 1),
)
"""Layout of a game snapshot (integers, length :func:`snapshot_size`, stored exactly as ``float32`` below the
observations, read with :func:`snapshot_of`): the state arrays of game 0 of
:class:`BatchedGames` in this order (``pile[c]``: seat holding card c in its penalty pile, -1; ``taken_at[c]``:
the step at which it was taken, which orders each pile; ``display[c]``: 1 if card c is on the draft display)."""


def snapshot_size(num_players: int) -> int:
    """Length of a snapshot of a game of ``num_players`` seats (see :data:`SNAPSHOT`)."""
    return _HANDS + HAND_SIZE * num_players + 4 * num_players + 3 * _PILE_SIZE


# --------------------------------------------------------------------------- kernels


@njit(cache=True, inline="always")
def _track_piles(pile: np.ndarray, taken_at: np.ndarray) -> None:
    """Stamp the cards that entered a penalty pile since the last call with the clock ``taken_at[0]``."""
    clock = taken_at[0] + 1
    taken_at[0] = clock
    for c in range(1, NUM_CARDS + 1):
        if pile[0, c] < 0:
            taken_at[c] = -1
        elif taken_at[c] < 0:
            taken_at[c] = clock


@njit(cache=True, inline="always")
def _outputs(S: tuple, cfg: np.ndarray, taken_at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Fresh observations with the snapshot below them (see :func:`step_and_observe`) and masks of game 0."""
    phase, hand, hand_len, rows, row_len, pile, display, revealed, round_pen, totals, chooser, turn, rnd = S
    n = cfg[C_N]
    size = _HANDS + HAND_SIZE * n + 4 * n + 3 * _PILE_SIZE
    obs = np.zeros((n + (size + OBS_SIZE - 1) // OBS_SIZE, OBS_SIZE), np.float32)
    snap = obs[n:].reshape(-1)
    base = obs[0]
    _encode_public(S, cfg, 0, base)
    for s in range(1, n):
        o = obs[s]
        for i in range(OBS_SIZE):
            o[i] = base[i]
    for s in range(n):
        _encode_seat(S, cfg, 0, s, obs[s])
    masks = np.zeros((n, NUM_ACTIONS), np.int8)
    for s in range(n):
        _mask(S, cfg, 0, s, masks[s])
    snap[_PHASE] = phase[0]
    snap[_CHOOSER] = chooser[0]
    snap[_TURN] = turn[0]
    snap[_ROUND] = rnd[0]
    for r in range(NUM_ROWS):
        snap[_ROW_LEN + r] = row_len[0, r]
        for j in range(ROW_LIMIT):
            snap[_ROWS + r * ROW_LIMIT + j] = rows[0, r, j]
    k = _HANDS
    for s in range(n):
        for j in range(HAND_SIZE):
            snap[k] = hand[0, s, j]
            k += 1
    for s in range(n):
        snap[k + s] = hand_len[0, s]
        snap[k + n + s] = revealed[0, s]
        snap[k + 2 * n + s] = round_pen[0, s]
        snap[k + 3 * n + s] = totals[0, s]
    k += 4 * n
    for c in range(_PILE_SIZE):
        snap[k + c] = pile[0, c]
        snap[k + _PILE_SIZE + c] = taken_at[c]
        snap[k + 2 * _PILE_SIZE + c] = display[0, c]
    return obs, masks


@njit(cache=True)
def step_and_observe(
    S: tuple,
    cfg: np.ndarray,
    actions: np.ndarray,
    pen: np.ndarray,
    deals: np.ndarray,
    deal_next: np.ndarray,
    rng: np.ndarray,
    taken_at: np.ndarray,
) -> tuple[int, np.ndarray, np.ndarray]:
    """Check, apply and observe one joint action of game 0 (one compiled call per env step).

    Args:
        S, cfg, pen, deals, deal_next, rng: the state arrays, config vector, penalty buffer ``(1, n)`` and deal
            generator of a :class:`BatchedGames` of batch size 1 (game 0 must not be over).
        actions: ``int64 (1, n)``, one action per seat.
        taken_at: ``int32 (105,)``: the step clock at index 0, then when each card entered a penalty pile.

    Returns:
        ``(code, observations, masks)``: ``code`` is the first seat (``>= 0``, in seat order) whose action is
        illegal, and then nothing changed and the arrays are empty; else :data:`OVER` if the game is over,
        :data:`PENALTIES` if a seat took bullheads, else :data:`OK` (``pen[0]`` holds the bullheads each seat took,
        R8, R9), with fresh arrays: ``float32 (n + k, 402)``,
        whose rows ``0..n-1`` are the seats' observations and whose other rows hold the :data:`SNAPSHOT` after
        the step (read it with :func:`snapshot_of`; one allocation instead of two), and masks ``int8 (n, 109)``.
    """
    n = cfg[C_N]
    for s in range(n):
        if not _is_legal(S, cfg, 0, s, actions[0, s]):
            return s, np.empty((0, 0), np.float32), np.empty((0, 0), np.int8)
    deck = np.empty(NUM_CARDS, np.int16)
    step_game(S, cfg, 0, actions, pen, deck, deals, deal_next, rng)
    _track_piles(S[5], taken_at)
    code = OK
    for s in range(n):
        if pen[0, s] != 0:
            code = PENALTIES
    if S[0][0] == DONE:
        code = OVER
    obs, masks = _outputs(S, cfg, taken_at)
    return code, obs, masks


@njit(cache=True)
def new_game_and_observe(
    S: tuple, cfg: np.ndarray, deals: np.ndarray, deal_next: np.ndarray, rng: np.ndarray, taken_at: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Deal a new game in slot 0 from its generator (R3; V1, V2); return observations and masks as
    :func:`step_and_observe` does."""
    _new_games(S, cfg, np.ones(1, np.bool_), deals, deal_next, rng)
    taken_at[:] = -1
    taken_at[0] = 0
    return _outputs(S, cfg, taken_at)


@njit(cache=True)
def observe(S: tuple, cfg: np.ndarray, taken_at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Observations (snapshot below them) and masks of game 0 as it stands, as :func:`step_and_observe`."""
    return _outputs(S, cfg, taken_at)


# --------------------------------------------------------------------------- the Python face


def snapshot_of(obs: np.ndarray, num_players: int) -> np.ndarray:
    """The ``int32`` :data:`SNAPSHOT` stored below the observations ``obs`` returned by the kernels."""
    return obs[num_players:].reshape(-1)[: snapshot_size(num_players)].astype(np.int32)


def state_from_snapshot(config: GameConfig, obs: np.ndarray) -> State:
    """The reference :class:`State` after the step that returned ``obs`` (piles in the order cards were taken).

    Args:
        config: the game's rules.
        obs: the observations array of :func:`step_and_observe` (``float32 (n + k, 402)``, snapshot below).

    The stock holds the cards of the deck that are nowhere else, sorted, as the reference engine keeps it.
    """
    n = config.num_players
    v = snapshot_of(obs, n).tolist()
    phase = v[_PHASE]
    rows = tuple(tuple(v[_ROWS + r * ROW_LIMIT : _ROWS + r * ROW_LIMIT + v[_ROW_LEN + r]]) for r in range(NUM_ROWS))
    rows = rows if all(rows) else ()
    k = _HANDS + HAND_SIZE * n
    hand_len, revealed = v[k : k + n], tuple(v[k + n : k + 2 * n])
    round_pen, totals = tuple(v[k + 2 * n : k + 3 * n]), tuple(v[k + 3 * n : k + 4 * n])
    hands = tuple(tuple(v[_HANDS + HAND_SIZE * s : _HANDS + HAND_SIZE * s + hand_len[s]]) for s in range(n))
    k += 4 * n
    pile, taken_at = v[k : k + _PILE_SIZE], v[k + _PILE_SIZE : k + 2 * _PILE_SIZE]
    display = tuple(c for c, on in enumerate(v[k + 2 * _PILE_SIZE : k + 3 * _PILE_SIZE]) if on)
    held = sorted((taken_at[c], c, pile[c]) for c in range(1, _PILE_SIZE) if pile[c] >= 0)
    piles: list[list[int]] = [[] for _ in range(n)]
    for _, c, seat in held:
        piles[seat].append(c)
    used = {c for h in hands for c in h} | {c for r in rows for c in r} | {c for _, c, _ in held} | set(display)
    if phase == CHOOSE_ROW:
        used |= set(revealed)
    stock = tuple(c for c in range(1, config.deck_size + 1) if c not in used)
    return State(
        config,
        PHASES[phase],
        hands,
        rows,
        tuple(map(tuple, piles)),
        round_pen,
        totals,
        stock,
        display,
        revealed,
        v[_CHOOSER],
        v[_TURN],
        v[_ROUND],
    )


class SingleGame:
    """One game advanced by compiled kernels, one call per step (the ParallelEnv's ``backend="compiled"``).

    Args:
        config: the rules in force (`RULES.md`, V1, V2).
        seed: seeds the game's deal generator (same seed, same games; not the reference engine's deals).

    Each of :meth:`new_game`, :meth:`load` and :meth:`step` returns fresh arrays that are never written again:
    observations ``float32 (n + k, 402)`` (rows ``n..`` hold the :data:`SNAPSHOT`) and masks ``int8 (n, 109)``.
    """

    def __init__(self, config: GameConfig, seed: int | None = None) -> None:
        self.config = config
        self.games = BatchedGames(config, 1, seed)
        self.num_players = config.num_players
        self.actions = np.zeros((1, self.num_players), np.int64)
        """The action buffer :meth:`step` reads: fill ``actions[0, seat]``."""
        self._taken_at = np.full(_PILE_SIZE, -1, np.int32)
        self._taken_at[0] = 0

    @property
    def done(self) -> bool:
        """Whether the game (or round, with ``episode="round"``) is over."""
        return bool(self.games.phase[0] == DONE)

    @property
    def penalties(self) -> np.ndarray:
        """``int32 (n,)``: bullheads each seat took in the last step (a view, rewritten by the next step)."""
        return self.games._penalties[0]

    def seed(self, seed: int | None) -> None:
        """Restart the deal generator from ``seed`` (as ``BatchedGames.reset(seed)`` seeds game 0), without dealing."""
        self.games._rng[:] = np.random.SeedSequence(seed).generate_state(1, np.uint64)

    def new_game(self, seed: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Deal a new game: from a fresh stream of ``seed``, else continuing the current stream."""
        g = self.games
        if seed is not None:
            self.seed(seed)
        return new_game_and_observe(g._S, g._cfg, g._deals, g._deal_next, g._rng, self._taken_at)

    def load(self, state: State) -> tuple[np.ndarray, np.ndarray]:
        """Start from the reference ``state`` (any phase, e.g. :func:`engine.from_position`); later deals come
        from the game's generator."""
        self.games.set_state(0, state)
        self._taken_at[:] = -1
        for pile in state.piles:
            for i, c in enumerate(pile):
                self._taken_at[c] = i
        self._taken_at[0] = HAND_SIZE * NUM_ROWS
        return observe(self.games._S, self.games._cfg, self._taken_at)

    def queue_deals(self, deals: np.ndarray) -> None:
        """Use ``deals`` (``(R, 10 n + 4)``, see :func:`~sixnimmt_env.batched.core.reference_deals`) for the next R
        rounds dealt, e.g. to replay the reference engine's games (testing).

        Raises:
            ValueError: a deal that is not a set of distinct cards of the deck, or the wrong shape.
        """
        g = self.games
        g._deals = g._check_deals(np.asarray(deals)[None])
        g._deal_next[:] = 0

    def step(self) -> tuple[int, np.ndarray, np.ndarray]:
        """Apply :attr:`actions` (see :func:`step_and_observe`; nothing changes if the code is a seat)."""
        g = self.games
        return step_and_observe(
            g._S, g._cfg, self.actions, g._penalties, g._deals, g._deal_next, g._rng, self._taken_at
        )

    def legal_actions(self, seat: int) -> list[int]:
        """The legal actions of ``seat`` now."""
        return np.flatnonzero(self.games.legal_mask_of(0, seat)).tolist()
