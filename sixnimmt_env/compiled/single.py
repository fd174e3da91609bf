"""One game at a time through the batched engine's kernels: the compiled backend of the ParallelEnv.

:class:`SingleGame` keeps one game in the state arrays of :mod:`sixnimmt_env.compiled.core` (batch size 1),
packed into one byte buffer (``_unpack``), and advances it with ONE compiled call per step
(:func:`step_and_observe`): check every action against the mask (nothing changes if one is illegal), apply the
joint action with the engine's inline kernel :func:`~sixnimmt_env.compiled.core.step_game` (`RULES.md` R5-R14,
V2), then fill fresh arrays passed in by the caller: every seat's observation (``float32 (n, OBS_SIZE)``, value for
value :func:`sixnimmt_env.observation.encode`), every seat's mask (``int8 (n, 109)``,
:func:`sixnimmt_env.observation.action_mask`) and a snapshot of the whole game (a byte copy of its buffer, in
extra rows of the observation array) from which :func:`state_from_snapshot` rebuilds the reference
:class:`~sixnimmt_env.rules.engine.State` on demand (for readable infos, ``state()`` and rendering). The state goes into
the arrays and back through the batched engine's one conversion (:func:`~sixnimmt_env.compiled.core.load_state`,
:func:`~sixnimmt_env.compiled.core.state_of`).

Why so: a compiled call costs about 0.07 µs per array argument and 0.5 µs per returned array, more than the
step itself, so the game crosses as one buffer and the outputs are allocated by the caller.

The buffer also records the order in which cards went into each penalty pile (``taken_at``: the batched engine
keeps only who holds a card), so the rebuilt state equals the reference engine's, piles in taken order included.

Deals come from the batched engine's per-game generator (splitmix64): the same seed gives the same games here,
but not the reference engine's games (see :mod:`sixnimmt_env.compiled.core`; :meth:`SingleGame.queue_deals`
replays given deals).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from sixnimmt_env.compiled.core import load_state, state_of
from sixnimmt_env.rules.engine import (
    HAND_SIZE,
    NOOP,
    NUM_ACTIONS,
    NUM_CARDS,
    NUM_ROWS,
    ROW_LIMIT,
    GameConfig,
    State,
)
from sixnimmt_env.rules.kernel import (
    C_LOGIC,
    C_N,
    DONE,
    GameArrays,
    config_vector,
    encode_drafted,
    encode_public,
    encode_seat,
    legal_mask,
    mask_all,
    new_games,
    random_below,
    step_game,
)
from sixnimmt_env.rules.observation_layout import MAX_SEATS, OBS_SIZE
from sixnimmt_env.rules.params import OK, OVER, PENALTIES  # the step codes of every env backend

_PILE_SIZE = NUM_CARDS + 1


# --------------------------------------------------------------------------- the packed game


@njit(cache=True, inline="always")
def _unpack(buf: np.ndarray) -> tuple:
    """The game's arrays as views of ``buf``: ``(S, cfg, actions, pen, deal_next, rng, taken_at, size)``, ``size``
    the bytes they span. This function is the buffer's layout, the one place it is written.

    The buffer holds, in groups by dtype, each group starting on 8 bytes: the config vector
    (:func:`~sixnimmt_env.rules.kernel.config_vector`, first: the seat count is read from it), the action buffer
    and the deal generator state (``rng``: ``int64`` viewed as ``uint64``); the ``int32``, ``int16``, ``int8`` and
    ``bool`` arrays of a :class:`~sixnimmt_env.rules.kernel.GameArrays` with batch size 1 (``S``), this step's
    penalties (``pen``), the deal cursor and ``taken_at`` (index 0: the step clock; ``taken_at[c]``: the step at
    which card c entered a penalty pile, -1 if it is in none). One buffer crosses into numba instead of twenty
    arrays (a compiled call costs about 0.07 µs per array argument). The Python side reads the layout from here
    (``_views``, :func:`buffer_size`); the compiled callers inline it, and numba drops what they leave unused.
    """
    n = buf[0:8].view(np.int64)[C_N]
    o = 0
    k = 8 + n + 1  # int64: cfg, actions, rng
    i64 = buf[o : o + 8 * k].view(np.int64)
    cfg = i64[0:8]
    actions = i64[8 : 8 + n].reshape((1, n))
    rng = buf[o + 8 * (8 + n) : o + 8 * k].view(np.uint64)
    o += 8 * k
    k = 3 * n + 2 + _PILE_SIZE + NUM_ROWS  # int32: round_pen, totals, round, penalties, deal_next, taken_at, row_bull
    i32 = buf[o : o + 4 * k].view(np.int32)
    round_pen = i32[0:n].reshape((1, n))
    totals = i32[n : 2 * n].reshape((1, n))
    rnd = i32[2 * n : 2 * n + 1]
    pen = i32[2 * n + 1 : 3 * n + 1].reshape((1, n))
    deal_next = i32[3 * n + 1 : 3 * n + 2]
    taken_at = i32[3 * n + 2 : 3 * n + 2 + _PILE_SIZE]
    row_bull = i32[3 * n + 2 + _PILE_SIZE : k].reshape((1, NUM_ROWS))
    o += (4 * k + 7) // 8 * 8
    k = HAND_SIZE * n + NUM_ROWS * ROW_LIMIT + n + NUM_ROWS  # int16: hand, rows, revealed, row_end
    i16 = buf[o : o + 2 * k].view(np.int16)
    hand = i16[0 : HAND_SIZE * n].reshape((1, n, HAND_SIZE))
    j = HAND_SIZE * n
    rows = i16[j : j + NUM_ROWS * ROW_LIMIT].reshape((1, NUM_ROWS, ROW_LIMIT))
    revealed = i16[j + NUM_ROWS * ROW_LIMIT : j + NUM_ROWS * ROW_LIMIT + n].reshape((1, n))
    row_end = i16[k - NUM_ROWS : k].reshape((1, NUM_ROWS))
    o += (2 * k + 7) // 8 * 8
    k = 1 + n + NUM_ROWS + 2 * _PILE_SIZE + 2  # int8: phase, hand_len, row_len, pile, chooser, turn, drafter
    i8 = buf[o : o + k].view(np.int8)
    phase = i8[0:1]
    hand_len = i8[1 : 1 + n].reshape((1, n))
    row_len = i8[1 + n : 1 + n + NUM_ROWS].reshape((1, NUM_ROWS))
    j = 1 + n + NUM_ROWS
    pile = i8[j : j + _PILE_SIZE].reshape((1, _PILE_SIZE))
    chooser = i8[j + _PILE_SIZE : j + _PILE_SIZE + 1]
    turn = i8[j + _PILE_SIZE + 1 : j + _PILE_SIZE + 2]
    drafter = i8[j + _PILE_SIZE + 2 : k].reshape((1, _PILE_SIZE))
    o += (k + 7) // 8 * 8
    display = buf[o : o + _PILE_SIZE].view(np.bool_).reshape((1, _PILE_SIZE))
    size = o + (_PILE_SIZE + 7) // 8 * 8
    S = GameArrays(
        phase, hand, hand_len, rows, row_len, row_end, row_bull, pile, display, revealed, round_pen, totals, chooser,
        turn, rnd, drafter,
    )  # fmt: skip
    return S, cfg, actions, pen, deal_next, rng, taken_at, size


@njit(cache=True)
def _unpacked(buf: np.ndarray) -> tuple:
    """``_unpack`` for the Python side (numpy views into ``buf``)."""
    return _unpack(buf)


PIECES: tuple[str, ...] = (*GameArrays._fields, "cfg", "actions", "penalties", "deal_next", "rng", "taken_at")
"""The names of the arrays in a game's buffer, as ``_unpack`` returns them (the fields of ``S`` first)."""

_SCRATCH_BYTES = 4096
"""More than the buffer of a game of :data:`~sixnimmt_env.rules.observation_layout.MAX_SEATS` seats."""


_PLACES: dict[int, tuple[tuple[str, tuple[int, ...], np.dtype, int], ...]] = {}
"""Per seat count: each piece's name, shape, dtype and byte offset in the buffer, as ``_unpack`` places it (read
once from its views: cutting the views in Python costs a third of boxing ``_unpacked``'s twenty arrays)."""


def _views(buf: np.ndarray) -> dict[str, np.ndarray]:
    """Numpy views of the arrays of :data:`PIECES` into ``buf`` (``uint8``, C-contiguous), which starts with its
    config vector (``_unpack``)."""
    n = int(buf[0:8].view(np.int64)[C_N])
    places = _PLACES.get(n)
    if places is None:
        S, *others, _ = _unpacked(buf)
        start = buf.ctypes.data
        places = tuple(
            (name, a.shape, a.dtype, a.ctypes.data - start) for name, a in zip(PIECES, (*S, *others), strict=True)
        )
        _PLACES[n] = places
    return {name: np.ndarray(shape, dtype, buf, offset) for name, shape, dtype, offset in places}


def _arrays(views: dict[str, np.ndarray]) -> GameArrays:
    """The :class:`GameArrays` (batch size 1) among the ``_views``."""
    return GameArrays(*(views[name] for name in GameArrays._fields))


def _new_buffer(cfg: np.ndarray) -> np.ndarray:
    """A zeroed ``uint8`` buffer for a game of the config vector ``cfg``, which it starts with."""
    scratch = np.zeros(_SCRATCH_BYTES, np.uint8)
    scratch[: cfg.nbytes] = cfg.view(np.uint8)
    size = _unpacked(scratch)[-1]
    buf = np.zeros(size, np.uint8)
    buf[: cfg.nbytes] = cfg.view(np.uint8)
    return buf


def buffer_size(num_players: int) -> int:
    """Bytes of the buffer of a game of ``num_players`` seats (a multiple of 8; ``_unpack``)."""
    cfg = np.zeros(8, np.int64)
    cfg[C_N] = num_players
    return len(_new_buffer(cfg))


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


_GAME_0 = np.zeros(MAX_SEATS, np.int64)
_SEATS = np.arange(MAX_SEATS, dtype=np.int64)
"""Every seat of game 0: the rows :func:`_outputs` masks (numba compiles global arrays in as constants)."""


@njit(cache=True, inline="always")
def _outputs(buf: np.ndarray, S: GameArrays, cfg: np.ndarray, obs: np.ndarray, masks: np.ndarray) -> None:
    """Write the observations and the masks, and a copy of the game's buffer ``buf`` (the snapshot that
    :func:`state_from_snapshot` reads) as bytes in the rows of ``obs`` below the observations (zeros after it)."""
    n = cfg[C_N]
    # kernel.encode_all's sequence written out for the one game: through encode_all the compiled env's step took
    # 0.7 µs (about 10 %) longer (measured); tests/test_env_compiled.py holds both to observation.encode
    base = obs[0]
    base[:] = 0.0
    encode_public(S, cfg, 0, base)
    for s in range(1, n):
        o = obs[s]
        for i in range(OBS_SIZE):
            o[i] = base[i]
    for s in range(n):
        encode_seat(S, cfg, 0, s, obs[s])
    if cfg[C_LOGIC]:  # a pass of its own (see kernel.encode_drafted)
        for s in range(n):
            encode_drafted(S, cfg, 0, s, obs[s])
    mask_all(S, cfg, _GAME_0[:n], _SEATS[:n], masks)
    # copied as int64 words (the buffer's size is a multiple of 8, :func:`buffer_size`): a loop of words measured
    # 0.1 µs where the slice assignment of bytes took 0.35 µs
    snap = obs[n:].reshape(-1).view(np.int64)
    words = buf.view(np.int64)
    k = words.shape[0]
    for i in range(k):
        snap[i] = words[i]
    snap[k:] = 0


@njit(cache=True)
def step_and_observe(buf: np.ndarray, deals: np.ndarray, obs: np.ndarray, masks: np.ndarray) -> int:
    """Check, apply and observe one joint action of a packed game (one compiled call per env step).

    Args:
        buf: the game's ``uint8`` buffer (``_unpack``), its ``actions`` holding one action per seat; the
            game must not be over.
        deals: ``int16 (1, R, 10 n + 4)`` deals to use before the game's own generator (``R`` may be 0).
        obs: ``float32 (n + k, OBS_SIZE)`` (:func:`output_shapes`), filled after the step: rows ``0..n-1`` with the
            seats' observations, the others with a copy of ``buf`` (read it with :func:`state_from_snapshot`).
        masks: ``int8 (n, 109)``, filled with the seats' masks after the step.

    Returns:
        The first seat (``>= 0``, in seat order) whose action is illegal: then nothing changed, ``obs`` is not
        written and ``masks`` holds the masks the actions were checked against (the position before the step).
        Else :data:`OVER` if the game is over, :data:`PENALTIES` if a seat took bullheads, else :data:`OK`
        (``penalties`` holds the bullheads each seat took, R8, R9).

    Output arrays are passed in rather than returned: numba boxes a returned array in about 0.5 µs.
    """
    S, cfg, actions, pen, deal_next, rng, taken_at, _ = _unpack(buf)
    n = cfg[C_N]
    if S.phase[0] != DONE:
        mask_all(S, cfg, _GAME_0[:n], _SEATS[:n], masks)  # the legal actions now (overwritten after the step)
        for s in range(n):
            a = actions[0, s]
            if a < 0 or a >= NUM_ACTIONS or masks[s, a] == 0:
                return s
    # (one mask per seat written and zeroed inside the loop measured 1.5 µs slower here)
    deck = np.empty(NUM_CARDS, np.int16)
    step_game(S, cfg, 0, actions, pen, deck, deals, deal_next, rng)
    _track_piles(S.pile, taken_at)
    code = OK
    for s in range(n):
        if pen[0, s] != 0:
            code = PENALTIES
    if S.phase[0] == DONE:
        code = OVER
    _outputs(buf, S, cfg, obs, masks)
    return code


@njit(cache=True)
def new_game_and_observe(buf: np.ndarray, deals: np.ndarray, obs: np.ndarray, masks: np.ndarray) -> None:
    """Deal a new game from the game's generator (or ``deals``) (R3; V1, V2); write ``obs`` and ``masks`` as
    :func:`step_and_observe` does."""
    S, cfg, _, _, deal_next, rng, taken_at, _ = _unpack(buf)
    new_games(S, cfg, np.ones(1, np.bool_), deals, deal_next, rng)
    taken_at[:] = -1
    taken_at[0] = 0
    _outputs(buf, S, cfg, obs, masks)


@njit(cache=True)
def observe(buf: np.ndarray, obs: np.ndarray, masks: np.ndarray) -> None:
    """Write the observations (snapshot below them) and masks of the packed game as :func:`step_and_observe`."""
    S, cfg, _, _, _, _, _, _ = _unpack(buf)
    _outputs(buf, S, cfg, obs, masks)


@njit(cache=True)
def play_random(buf: np.ndarray, deals: np.ndarray, policy_rng: np.ndarray, steps: int) -> tuple[int, int]:
    """Play ``steps`` steps of random legal play in the packed game (the bare compiled engine, for benchmarks).

    Every seat picks uniformly among the 1s of its mask (from ``policy_rng``, ``uint64 (1,)``); a finished game
    is replaced by a new deal (R3). Returns ``(decisions, games finished)``, a decision being one seat choosing
    a real action (every seat in ``select``, the chooser in ``choose_row`` and ``draft``; no-ops do not count).
    """
    S, cfg, actions, pen, deal_next, rng, _, _ = _unpack(buf)
    n = cfg[C_N]
    phase = S.phase
    m = np.empty(NUM_ACTIONS, np.int8)
    deck = np.empty(NUM_CARDS, np.int16)
    which = np.ones(1, np.bool_)
    decisions = 0
    finished = 0
    for _ in range(steps):
        if phase[0] == DONE:
            new_games(S, cfg, which, deals, deal_next, rng)
            finished += 1
        for s in range(n):
            m[:] = 0
            legal_mask(S, cfg, 0, s, m)
            count = 0
            for a in range(NUM_ACTIONS):
                count += m[a]
            k = random_below(policy_rng, 0, count)
            for a in range(NUM_ACTIONS):
                if m[a]:
                    if k == 0:
                        actions[0, s] = a
                        break
                    k -= 1
            if actions[0, s] != NOOP:
                decisions += 1
        step_game(S, cfg, 0, actions, pen, deck, deals, deal_next, rng)
    return decisions, finished


# --------------------------------------------------------------------------- the Python face


def output_shapes(num_players: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """Shapes of the observation array (observations, then the rows that hold a copy of the game's buffer) and of
    the mask array."""
    n = num_players
    return (n + (buffer_size(n) + 4 * OBS_SIZE - 1) // (4 * OBS_SIZE), OBS_SIZE), (n, NUM_ACTIONS)


def state_from_snapshot(config: GameConfig, obs: np.ndarray) -> State:
    """The reference :class:`State` after the step that returned ``obs`` (piles in the order cards were taken).

    Args:
        config: the game's rules.
        obs: the observations array of :func:`step_and_observe` (``float32 (n + k, OBS_SIZE)``, the copy of the
            game's buffer below the seats' rows).

    The buffer's arrays are read back by the batched engine's conversion
    (:func:`~sixnimmt_env.compiled.core.state_of`, the piles ordered by ``taken_at``).
    """
    n = config.num_players
    raw = np.ascontiguousarray(obs[n:]).reshape(-1).view(np.uint8).copy()  # the buffer, then zeros
    views = _views(raw)
    return state_of(_arrays(views), config, 0, views["taken_at"])


class SingleGame:
    """One game in a packed buffer (``_unpack``), advanced by one compiled call per step (the ParallelEnv's
    ``backend="compiled"``).

    Args:
        config: the rules in force (`RULES.md`, V1, V2).
        seed: seeds the game's deal generator as ``BatchedGames(config, 1, seed)`` seeds its game (same seed,
            same games; not the reference engine's deals); ``None``: fresh entropy.

    Its attributes:
        config, num_players, buffer (``uint8``), and one numpy view per array of :data:`PIECES` (``actions``:
        fill ``actions[0, seat]`` before :meth:`step`; ``penalties``; the state arrays; treat the others as
        read-only); ``deals`` (the queued deals, ``int16 (1, R, 10 n + 4)``), ``obs_shape`` and ``mask_shape``
        (:func:`output_shapes`) for callers of the kernels.

    Each of :meth:`new_game`, :meth:`load` and :meth:`step` returns fresh arrays that are never written again:
    observations ``float32 (n + k, OBS_SIZE)`` (rows ``n..`` hold a copy of the buffer) and masks ``int8 (n, 109)``.
    """

    # the views of PIECES (set per game by setattr, from ``_views``), declared for the type checker
    phase: np.ndarray
    hand: np.ndarray
    hand_len: np.ndarray
    rows: np.ndarray
    row_len: np.ndarray
    row_end: np.ndarray
    row_bull: np.ndarray
    pile: np.ndarray
    display: np.ndarray
    revealed: np.ndarray
    round_pen: np.ndarray
    totals: np.ndarray
    chooser: np.ndarray
    turn: np.ndarray
    round: np.ndarray
    drafter: np.ndarray
    cfg: np.ndarray
    actions: np.ndarray
    penalties: np.ndarray
    deal_next: np.ndarray
    rng: np.ndarray
    taken_at: np.ndarray

    def __init__(self, config: GameConfig, seed: int | None = None) -> None:
        self.config = config
        self.num_players = n = config.num_players
        self.buffer = _new_buffer(config_vector(config))
        self._views = _views(self.buffer)
        for name, view in self._views.items():
            setattr(self, name, view)
        self._views["phase"][:] = DONE
        self._views["pile"][:] = -1
        self._views["chooser"][:] = -1
        self._views["drafter"][:] = -1
        self._views["taken_at"][:] = -1
        self.deals = np.zeros((1, 0, n * HAND_SIZE + NUM_ROWS), np.int16)
        self.obs_shape, self.mask_shape = output_shapes(n)
        self.seed(seed)

    def __getstate__(self) -> dict[str, Any]:
        """Pickle the config, the buffer and the queued deals; the views into the buffer are cut afresh."""
        return {"config": self.config, "buffer": self.buffer, "deals": self.deals}

    def __setstate__(self, saved: dict[str, Any]) -> None:
        """Rebuild the game from a pickled buffer (the copy continues exactly as the original)."""
        self.config = config = saved["config"]
        self.num_players = n = config.num_players
        self.buffer = np.array(saved["buffer"], np.uint8)  # own memory, 8-byte aligned like a fresh buffer
        self._views = _views(self.buffer)
        for name, view in self._views.items():
            setattr(self, name, view)
        self.deals = saved["deals"]
        self.obs_shape, self.mask_shape = output_shapes(n)

    def _outputs(self) -> tuple[np.ndarray, np.ndarray]:
        return np.empty(self.obs_shape, np.float32), np.empty(self.mask_shape, np.int8)

    @property
    def done(self) -> bool:
        """Whether the game (or round, with ``episode="round"``) is over."""
        return bool(self._views["phase"][0] == DONE)

    def seed(self, seed: int | None) -> None:
        """Restart the deal generator from ``seed`` (fresh entropy for ``None``), without dealing."""
        self._views["rng"][:] = np.random.SeedSequence(seed).generate_state(1, np.uint64)

    def new_game(self, seed: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Deal a new game: from a fresh stream of ``seed``, else continuing the current stream."""
        if seed is not None:
            self.seed(seed)
        obs, masks = self._outputs()
        new_game_and_observe(self.buffer, self.deals, obs, masks)
        return obs, masks

    def load(self, state: State) -> tuple[np.ndarray, np.ndarray]:
        """Start from the reference ``state`` (any phase, e.g. :func:`engine.from_position`); later deals come
        from the game's generator.

        Raises:
            ValueError: if ``state.config`` differs from this game's.
        """
        if state.config != self.config:
            raise ValueError(f"state.config {state.config!r} differs from the game's config {self.config!r}")
        load_state(_arrays(self._views), 0, state)
        taken_at = self._views["taken_at"]
        taken_at[:] = -1
        for pile in state.piles:
            for i, c in enumerate(pile):  # the pile's order: its cards' ranks
                taken_at[c] = i
        taken_at[0] = HAND_SIZE * NUM_ROWS  # later takes come after every card in a pile
        obs, masks = self._outputs()
        observe(self.buffer, obs, masks)
        return obs, masks

    def queue_deals(self, deals: np.ndarray) -> None:
        """Use ``deals`` (``(R, 10 n + 4)``, see :func:`~sixnimmt_env.compiled.core.reference_deals`) for the next R
        rounds dealt, e.g. to replay the reference engine's games (testing).

        Raises:
            ValueError: the wrong shape, or a deal that is not a set of distinct cards of the deck.
        """
        width = self.num_players * HAND_SIZE + NUM_ROWS
        deals = np.asarray(deals)
        if deals.ndim != 2 or deals.shape[1] != width:
            raise ValueError(f"deals must have shape (rounds, 10 * n + 4 = {width}), got {deals.shape}")
        for r, d in enumerate(deals.tolist()):
            if len(set(d)) != width or min(d) < 1 or max(d) > self.config.deck_size:
                raise ValueError(f"deals[{r}] must hold {width} distinct cards of 1..{self.config.deck_size}, got {d}")
        self.deals = deals[None].astype(np.int16)
        self._views["deal_next"][:] = 0

    def step(self) -> tuple[int, np.ndarray, np.ndarray]:
        """Apply :attr:`actions`: ``(code, observations, masks)`` as :func:`step_and_observe` (fresh arrays; if
        the code is a seat, nothing changed and the arrays hold garbage)."""
        obs = np.empty(self.obs_shape, np.float32)
        masks = np.empty(self.mask_shape, np.int8)
        return step_and_observe(self.buffer, self.deals, obs, masks), obs, masks

    def play_random(self, steps: int, policy_rng: np.ndarray) -> tuple[int, int]:
        """:func:`play_random` on this game (``policy_rng``: ``uint64 (1,)``, advanced); ``(decisions, games)``."""
        return play_random(self.buffer, self.deals, policy_rng, steps)
