"""The batched engine: B games of one :class:`~sixnimmt_env.rules.engine.GameConfig` in lockstep (`RULES.md`
R1-R14, V1, V2).

The reference engine (:mod:`sixnimmt_env.rules.engine`) is the readable specification; this module is the fast
path's Python face. Every game lives in rows of the preallocated arrays of a
:class:`~sixnimmt_env.rules.kernel.GameArrays` (the table of its fields is in :mod:`sixnimmt_env.rules.kernel`)
and is advanced by the kernel's compiled functions, looped over the batch, so a step of B games costs one call
from Python. Each game is in its own phase (select, row choice, draft, done); one call to
:meth:`BatchedGames.step` takes one action per seat of every game, in the action encoding of the reference
engine (``0..103`` card ``a + 1``, ``104..107`` take row ``a - 104``, ``108`` no-op).

Parity is the contract: with the same deals and the same actions, this engine gives the same hands, rows,
penalty piles, penalties, totals, phases, observations and masks as the reference engine after every step
(``tests/test_batched.py``). Only the deals differ: each game draws its new rounds from its own
counter-based generator (splitmix64, seeded per game), not from a ``numpy.random.Generator``, so the same
seed gives the same games here but not the same games as the reference engine. To replay the reference
engine's deals, pass them to :meth:`BatchedGames.reset` (``deals=``, see :func:`reference_deals`) or load
whole positions with :meth:`BatchedGames.set_state`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numba import njit

from sixnimmt_env.observation import OBS_SIZE
from sixnimmt_env.rules.engine import (
    HAND_SIZE,
    NUM_ACTIONS,
    NUM_CARDS,
    NUM_ROWS,
    PHASES,
    GameConfig,
    State,
    new_game,
)
from sixnimmt_env.rules.kernel import (
    BULL,
    CHOOSE_ROW,
    DONE,
    DRAFT,
    SELECT,
    GameArrays,
    config_vector,
    encode_all,
    legal_mask,
    mask_all,
    new_arrays,
    new_games,
    step_game,
)

__all__ = ["BULL", "CHOOSE_ROW", "DONE", "DRAFT", "SELECT", "BatchedGames", "load_state", "reference_deals", "state_of"]


# --------------------------------------------------------------------------- batch loops


@njit(cache=True)
def _first_illegal(
    S: GameArrays, cfg: np.ndarray, actions: np.ndarray, games: np.ndarray, seats: np.ndarray, masks: np.ndarray
) -> int:
    """The first ``b * n + s`` whose action ``actions[b, s]`` is illegal, else -1: every seat's mask written once by
    :func:`~sixnimmt_env.rules.kernel.mask_all` into ``masks`` (``int8 (B * n, 109)``; ``games``, ``seats``: the
    ``(B * n,)`` rows), then each action looked up in it. Actions of finished games are ignored."""
    mask_all(S, cfg, games, seats, masks)
    n = cfg[0]
    phase = S.phase
    for b in range(actions.shape[0]):
        if phase[b] == DONE:
            continue
        for s in range(n):
            a = actions[b, s]
            if a < 0 or a >= NUM_ACTIONS or masks[b * n + s, a] == 0:
                return b * n + s
    return -1


@njit(cache=True)
def _step(
    S: GameArrays,
    cfg: np.ndarray,
    actions: np.ndarray,
    pen: np.ndarray,
    deals: np.ndarray,
    deal_next: np.ndarray,
    rng: np.ndarray,
) -> None:
    """Advance every unfinished game by one joint action; ``pen`` receives this step's bullheads."""
    deck = np.zeros(NUM_CARDS, np.int16)
    for b in range(actions.shape[0]):
        step_game(S, cfg, b, actions, pen, deck, deals, deal_next, rng)


def _output(out: np.ndarray | None, shape: tuple[int, ...], dtypes: tuple[type, ...], what: str) -> np.ndarray:
    """``out``, checked to be an array of ``shape`` and one of ``dtypes`` that the compiled code may fill (a new
    one if ``None``, which the kernels fill entirely): they write without bounds checks.

    Raises:
        ValueError: naming ``what``, the shape and dtype expected and those given.
    """
    if out is None:
        return np.empty(shape, dtypes[0])
    if not isinstance(out, np.ndarray) or out.shape != shape or out.dtype.type not in dtypes:
        got = f"{out.dtype} array of shape {out.shape}" if isinstance(out, np.ndarray) else type(out).__name__
        allowed = " or ".join(np.dtype(d).name for d in dtypes)
        raise ValueError(f"{what}: out must be a {allowed} array of shape {shape}, got a {got}")
    return out


def _seats(seats: np.ndarray, batch_size: int, num_players: int) -> np.ndarray:
    """``seats`` as ``int64 (batch_size,)`` of seats ``0..num_players-1``.

    Raises:
        ValueError: another shape, or a seat out of range (the kernels index with it unchecked).
    """
    seats = np.asarray(seats, np.int64)
    if seats.shape != (batch_size,):
        raise ValueError(f"seats must have shape ({batch_size},), got {seats.shape}")
    if batch_size and (seats.min() < 0 or seats.max() >= num_players):
        bad = seats[(seats < 0) | (seats >= num_players)][0]
        raise ValueError(f"seats must be in 0..{num_players - 1}, got {int(bad)}")
    return seats


# --------------------------------------------------------------------------- the Python face


def reference_deals(config: GameConfig, rngs: Sequence[np.random.Generator], rounds: int) -> np.ndarray:
    """The first ``rounds`` deals the reference engine would make from each generator, for ``reset(deals=...)``.

    Each deal is drawn with :func:`sixnimmt_env.rules.engine.new_game`, which consumes a generator exactly as a
    new round of :func:`sixnimmt_env.rules.engine.step` does, so a copy of the reference game's generator yields the
    deals of its rounds 0, 1, 2, ... in order.

    Args:
        config: the rules in force (not the logic variant: its draft deals nothing at random).
        rngs: one generator per game, each in the state the reference game's generator starts in; consumed.
        rounds: deals per game.

    Returns:
        ``int16`` array of shape ``(len(rngs), rounds, 10 * n + 4)``: the hands of seats 0..n-1 (10 cards
        each, ascending), then the first card of rows 0..3.

    Raises:
        ValueError: for the logic variant.
    """
    if config.variant == "logic":
        raise ValueError("variant='logic' deals nothing at random (V2): no deals to inject")
    n = config.num_players
    out = np.zeros((len(rngs), rounds, n * HAND_SIZE + NUM_ROWS), np.int16)
    for b, rng in enumerate(rngs):
        for r in range(rounds):
            state = new_game(config, rng)
            out[b, r, : n * HAND_SIZE] = np.concatenate(state.hands)
            out[b, r, n * HAND_SIZE :] = [row[0] for row in state.rows]
    return out


def load_state(S: GameArrays, b: int, state: State) -> None:
    """Write the reference-engine ``state`` (any phase) into game ``b`` of the arrays ``S``: the one conversion from
    a :class:`State` to the kernel's arrays (the batched engine's :meth:`BatchedGames.set_state` and the compiled
    backend's :meth:`sixnimmt_env.compiled.single.SingleGame.load` call it). ``state`` must be a state of the rules
    the arrays are played under; nothing is checked."""
    S.phase[b] = PHASES.index(state.phase)
    S.hand[b] = 0
    S.rows[b] = 0
    S.row_len[b] = 0
    S.row_end[b] = 0
    S.row_bull[b] = 0
    S.pile[b] = -1
    S.display[b] = False
    S.drafter[b] = -1
    for s, cards in enumerate(state.drafted):
        S.drafter[b, list(cards)] = s
    for s, h in enumerate(state.hands):
        S.hand[b, s, : len(h)] = h
        S.hand_len[b, s] = len(h)
        for c in state.piles[s]:
            S.pile[b, c] = s
    for r, row in enumerate(state.rows):
        S.rows[b, r, : len(row)] = row
        S.row_len[b, r] = len(row)
        S.row_end[b, r] = row[-1]
        S.row_bull[b, r] = sum(BULL[c] for c in row)
    S.display[b, list(state.display)] = True
    S.revealed[b] = state.revealed
    S.round_pen[b] = state.round_penalties
    S.totals[b] = state.totals
    S.chooser[b] = state.chooser
    S.turn[b] = state.turn
    S.round[b] = state.round


def state_of(S: GameArrays, config: GameConfig, b: int, taken_at: np.ndarray | None = None) -> State:
    """Game ``b`` of the arrays ``S`` as a reference-engine :class:`State`: the one conversion back (the batched
    engine's :meth:`BatchedGames.get_state` and the compiled backend's snapshots call it).

    Args:
        S: the arrays; config: the rules they are played under; b: the game.
        taken_at: optional ``int (105,)``: ``taken_at[c]`` the step at which card ``c`` entered its penalty pile (the
            compiled backend keeps it); each pile is then in that order (ties ascending), else ascending.

    The stock holds the cards of the deck that are nowhere else, ascending, as the reference engine keeps it.
    """
    n = config.num_players
    phase = int(S.phase[b])
    hands = tuple([tuple(h[:k]) for h, k in zip(S.hand[b].tolist(), S.hand_len[b].tolist(), strict=True)])
    rows = tuple([tuple(r[:k]) for r, k in zip(S.rows[b].tolist(), S.row_len[b].tolist(), strict=True)])
    rows = rows if all(rows) else ()
    pile = S.pile[b]
    held = np.flatnonzero(pile >= 0)
    if taken_at is not None:
        held = held[np.lexsort((held, taken_at[held]))]  # by the step taken, then ascending within a row
    piles: list[list[int]] = [[] for _ in range(n)]
    held_cards = held.tolist()
    for c, seat in zip(held_cards, pile[held].tolist(), strict=True):
        piles[seat].append(c)
    display = tuple(np.flatnonzero(S.display[b]).tolist())
    revealed = tuple(S.revealed[b].tolist())
    used = {c for h in hands for c in h}
    used.update(*rows, held_cards, display)
    if phase == CHOOSE_ROW:
        used.update(revealed)
    stock = tuple([c for c in range(1, config.deck_size + 1) if c not in used])
    drafted: list[list[int]] = [[] for _ in range(n)]
    for c, seat in enumerate(S.drafter[b].tolist()):
        if seat >= 0:
            drafted[seat].append(c)
    return State(
        config,
        PHASES[phase],
        hands,
        rows,
        tuple(map(tuple, piles)),
        tuple(S.round_pen[b].tolist()),
        tuple(S.totals[b].tolist()),
        stock,
        display,
        revealed,
        int(S.chooser[b]),
        int(S.turn[b]),
        int(S.round[b]),
        tuple(map(tuple, drafted)),
    )


class BatchedGames:
    """B games of one :class:`GameConfig`, advanced together by compiled kernels (`RULES.md`, V1, V2).

    Args:
        config: the rules in force in every game.
        batch_size: B, the number of games (>= 1).
        seed: seeds the per-game deal generators (same seed, same games; see the module docstring).

    Attributes:
        config, batch_size (B), num_players (n);
        arrays: the :class:`~sixnimmt_env.rules.kernel.GameArrays` of the batch, also reachable one by one
            (``phase``, ``hand``, ``hand_len``, ``rows``, ``row_len``, ``row_end``, ``row_bull``, ``pile``,
            ``display``, ``revealed``, ``round_pen``, ``totals``, ``chooser``, ``turn``, ``round``, ``drafter``);
            treat them as read-only;
        cfg: the rules as the kernels' ``int64`` config vector (:func:`~sixnimmt_env.rules.kernel.config_vector`);
        deal_rng: ``uint64 (B,)``, each game's deal generator; deals, deal_next: the injected deals and the
            cursor into them (:meth:`reset`). Code that drives the kernels itself (the learner tables, the
            vectorised agents) passes these to them.

    Raises:
        ValueError: if ``batch_size`` is not a positive integer.
    """

    def __init__(self, config: GameConfig, batch_size: int, seed: int | None = None) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int | np.integer) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        self.config = config
        self.batch_size = B = int(batch_size)
        self.num_players = n = config.num_players
        self.cfg = config_vector(config)
        self.arrays = new_arrays(B, n)
        self.phase, self.hand, self.hand_len, self.rows, self.row_len, self.row_end, self.row_bull = self.arrays[:7]
        self.pile, self.display, self.revealed, self.round_pen, self.totals, self.chooser = self.arrays[7:13]
        self.turn, self.round, self.drafter = self.arrays[13:]
        self._penalties = np.zeros((B, n), np.int32)
        self._games = np.arange(B, dtype=np.int64)  # the (game, seat) rows of observe() and legal_mask()
        self._every_game = np.repeat(self._games, n)
        self._every_seat = np.tile(np.arange(n, dtype=np.int64), B)
        self._check_masks: np.ndarray | None = None  # step()'s masks to check the actions against (made at first use)
        self.deal_rng = np.zeros(B, np.uint64)
        self.deals = np.zeros((B, 0, n * HAND_SIZE + NUM_ROWS), np.int16)
        self.deal_next = np.zeros(B, np.int32)
        self.reset(seed)

    # ----------------------------------------------------------------- set-up

    def reset(
        self, seed: int | None = None, deals: np.ndarray | None = None, streams: np.ndarray | None = None
    ) -> None:
        """Start a new game in every slot.

        Args:
            seed: reseeds the per-game generators (game b gets the b-th word of
                ``numpy.random.SeedSequence(seed)``); ``None`` keeps the current streams (fresh entropy on the
                first call).
            deals: optional ``(B, R, 10 * n + 4)`` integer array of explicit deals (see
                :func:`reference_deals`): game b's rounds 0..R-1 use ``deals[b, r]`` (a row of zeros means
                "draw it"), later rounds come from the game's own generator. Ignored in the logic variant.
            streams: optional ``uint64`` array of shape ``(B,)``: the generator state of each game (overrides
                ``seed``), e.g. derived from a game index so that a game does not depend on its batch.

        Raises:
            ValueError: if ``deals`` has the wrong shape or holds a deal that is not a set of distinct cards
                of the deck.
        """
        B, n = self.batch_size, self.num_players
        if streams is not None:
            streams = np.asarray(streams)
            if streams.shape != (B,) or streams.dtype != np.uint64:
                raise ValueError(f"streams must be a uint64 array of shape ({B},), got {streams.dtype} {streams.shape}")
            self.deal_rng[:] = streams
        elif seed is not None or not self.deal_rng.any():
            self.deal_rng[:] = np.random.SeedSequence(seed).generate_state(B, np.uint64)
        if deals is None:
            self.deals = np.zeros((B, 0, n * HAND_SIZE + NUM_ROWS), np.int16)
        else:
            self.deals = self._check_deals(deals)
        self.deal_next[:] = 0
        new_games(self.arrays, self.cfg, np.ones(B, np.bool_), self.deals, self.deal_next, self.deal_rng)

    def _check_deals(self, deals: np.ndarray) -> np.ndarray:
        B, n = self.batch_size, self.num_players
        width = n * HAND_SIZE + NUM_ROWS
        deals = np.asarray(deals)
        if deals.ndim != 3 or deals.shape[0] != B or deals.shape[2] != width:
            raise ValueError(f"deals must have shape (batch_size={B}, rounds, 10 * n + 4 = {width}), got {deals.shape}")
        for b, r in zip(*np.nonzero(deals.any(axis=2)), strict=True):
            d = deals[b, r]
            if len(set(d.tolist())) != width or d.min() < 1 or d.max() > self.config.deck_size:
                raise ValueError(
                    f"deals[{b}, {r}] must hold {width} distinct cards of 1..{self.config.deck_size}, got {d.tolist()}"
                )
        return deals.astype(np.int16)

    def reset_done(self) -> np.ndarray:
        """Start a new game (new deal from each game's generator) in every finished slot.

        Returns:
            ``bool`` array of shape ``(B,)``: the games that were restarted.
        """
        which = self.phase == DONE
        if which.any():
            new_games(self.arrays, self.cfg, which, self.deals, self.deal_next, self.deal_rng)
        return which

    def set_state(self, b: int, state: State) -> None:
        """Load a reference-engine state (any phase) into slot ``b``, e.g. a hand-made position (:func:`load_state`).

        Raises:
            ValueError: if ``state.config`` differs from this batch's config, or ``b`` is out of range.
        """
        if state.config != self.config:
            raise ValueError(f"state.config {state.config!r} differs from the batch's config {self.config!r}")
        if not 0 <= b < self.batch_size:
            raise ValueError(f"game index {b} is outside 0..{self.batch_size - 1}")
        load_state(self.arrays, b, state)

    def get_state(self, b: int) -> State:
        """Slot ``b`` as a reference-engine :class:`State` (each penalty pile sorted ascending, :func:`state_of`)."""
        return state_of(self.arrays, self.config, b)

    # ----------------------------------------------------------------- play

    @property
    def done(self) -> np.ndarray:
        """``bool`` array of shape ``(B,)``: games that are over (phase ``done``)."""
        return self.phase == DONE

    def step(self, actions: np.ndarray, check: bool = True) -> np.ndarray:
        """Apply one joint action in every unfinished game (R5-R14, V2).

        Args:
            actions: integer array of shape ``(B, n)``, one action per seat (encoding in the module
                docstring; seats without a decision give the no-op 108). Rows of finished games are ignored.
            check: validate every action first (a compiled pass; ``False`` skips it when the actions come
                from the masks, e.g. the vectorised agents).

        Returns:
            ``int32`` array of shape ``(B, n)``: the bullheads each seat took in this step (R8, R9); a view
            reused by the next call.

        Raises:
            ValueError: wrong shape, or an illegal action (naming the game, the seat, the action and the legal
                actions); nothing changes.
        """
        B, n = self.batch_size, self.num_players
        actions = np.asarray(actions)
        if actions.shape != (B, n):
            raise ValueError(f"actions must have shape (batch_size={B}, num_players={n}), got {actions.shape}")
        if actions.dtype != np.int64:
            actions = actions.astype(np.int64)
        if check:
            if self._check_masks is None:
                self._check_masks = np.empty((B * n, NUM_ACTIONS), np.int8)
            bad = _first_illegal(self.arrays, self.cfg, actions, self._every_game, self._every_seat, self._check_masks)
            if bad >= 0:
                b, s = divmod(bad, n)
                legal = np.flatnonzero(self.legal_mask_of(b, s)).tolist()
                raise ValueError(
                    f"game {b}, seat {s}: action {int(actions[b, s])} is not legal in phase "
                    f"{PHASES[self.phase[b]]!r}; legal actions: {legal}"
                )
        _step(self.arrays, self.cfg, actions, self._penalties, self.deals, self.deal_next, self.deal_rng)
        return self._penalties

    # ----------------------------------------------------------------- observations

    def observe(self, out: np.ndarray | None = None, seats: np.ndarray | None = None) -> np.ndarray:
        """Observations, value for value those of :func:`sixnimmt_env.observation.encode`.

        Args:
            out: optional ``float32`` array to fill: shape ``(B, n, OBS_SIZE)`` (every seat, absolute seat order)
                or, with ``seats``, ``(B, OBS_SIZE)``.
            seats: optional integer array of shape ``(B,)``: observe only seat ``seats[b]`` of game b.

        Returns:
            ``out`` (allocated if not given).
        """
        B, n = self.batch_size, self.num_players
        if seats is None:
            out = _output(out, (B, n, OBS_SIZE), (np.float32,), "observe")
            encode_all(self.arrays, self.cfg, self._every_game, self._every_seat, out.reshape(B * n, OBS_SIZE))
        else:
            out = _output(out, (B, OBS_SIZE), (np.float32,), "observe")
            encode_all(self.arrays, self.cfg, self._games, _seats(seats, B, n), out)
        return out

    def legal_mask(self, out: np.ndarray | None = None, seats: np.ndarray | None = None) -> np.ndarray:
        """Legal-action masks, value for value those of :func:`sixnimmt_env.observation.action_mask`.

        Args:
            out: optional ``int8`` (or ``bool``) array to fill: ``(B, n, 109)`` or, with ``seats``, ``(B, 109)``.
            seats: optional integer array of shape ``(B,)``: only seat ``seats[b]`` of game b.

        Returns:
            ``out`` (allocated if not given); all zeros for finished games.
        """
        B, n = self.batch_size, self.num_players
        if seats is None:
            out = _output(out, (B, n, NUM_ACTIONS), (np.int8, np.bool_), "legal_mask")
            mask_all(self.arrays, self.cfg, self._every_game, self._every_seat, out.reshape(B * n, NUM_ACTIONS))
        else:
            out = _output(out, (B, NUM_ACTIONS), (np.int8, np.bool_), "legal_mask")
            mask_all(self.arrays, self.cfg, self._games, _seats(seats, B, n), out)
        return out

    def legal_mask_of(self, b: int, seat: int) -> np.ndarray:
        """The ``int8`` mask of shape ``(109,)`` of one seat of one game."""
        m = np.zeros(NUM_ACTIONS, np.int8)
        legal_mask(self.arrays, self.cfg, b, seat, m)
        return m
