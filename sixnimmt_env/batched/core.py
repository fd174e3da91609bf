"""The batched engine: B games of one :class:`~sixnimmt_env.engine.GameConfig` in lockstep (`RULES.md` R1-R14, V1, V2).

The reference engine (:mod:`sixnimmt_env.engine`) is the readable specification; this module is the fast
path. Every game lives in rows of preallocated numpy arrays and is advanced by numba-compiled kernels that
loop over the batch, so a step of B games costs one call from Python. Each game is in its own phase
(select, row choice, draft, done); one call to :meth:`BatchedGames.step` takes one action per seat of every
game, in the action encoding of the reference engine (``0..103`` card ``a + 1``, ``104..107`` take row
``a - 104``, ``108`` no-op).

Parity is the contract: with the same deals and the same actions, this engine gives the same hands, rows,
penalty piles, penalties, totals, phases, observations and masks as the reference engine after every step
(``tests/test_batched.py``). Only the deals differ: each game draws its new rounds from its own
counter-based generator (splitmix64, seeded per game), not from a ``numpy.random.Generator``, so the same
seed gives the same games here but not the same games as the reference engine. To replay the reference
engine's deals, pass them to :meth:`BatchedGames.reset` (``deals=``, see :func:`reference_deals`) or load
whole positions with :meth:`BatchedGames.set_state`.

State arrays (``B`` games, ``n`` seats; cards are 1..104, 0 = empty slot; scores in bullheads):

=================  ===============  ==========================================================
array              shape, dtype     meaning
=================  ===============  ==========================================================
``phase``          (B,) int8        0 select, 1 choose_row, 2 draft, 3 done (``engine.PHASES``)
``hand``           (B, n, 10) int16 each seat's cards ascending, then zeros
``hand_len``       (B, n) int8      cards in each hand
``rows``           (B, 4, 5) int16  the rows, each ascending, then zeros
``row_len``        (B, 4) int8      cards in each row (0 during the draft)
``pile``           (B, 105) int8    ``pile[b, c]``: seat whose penalty pile holds card c this round, else -1
``display``        (B, 105) bool    cards on the open draft display (V2)
``revealed``       (B, n) int16     as ``State.revealed``
``round_pen``      (B, n) int32     bullheads taken this round (R11)
``totals``         (B, n) int32     game totals (R12)
``chooser``        (B,) int8        as ``State.chooser`` (-1 if none)
``turn``           (B,) int8        turns completed this round
``round``          (B,) int32       rounds completed before this one
=================  ===============  ==========================================================
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numba import njit

from sixnimmt_env.engine import (
    BULLHEADS,
    HAND_SIZE,
    NOOP,
    NUM_ACTIONS,
    NUM_CARDS,
    NUM_ROWS,
    PHASES,
    ROW_ACTION,
    ROW_LIMIT,
    GameConfig,
    State,
    new_game,
)
from sixnimmt_env.observation import OBS_SIZE, SLICES

SELECT, CHOOSE_ROW, DRAFT, DONE = 0, 1, 2, 3
"""Phase codes of the ``phase`` array: indices into ``engine.PHASES``."""

BULL = np.array(BULLHEADS, dtype=np.int32)
"""``BULL[c]``: bullheads of card c (R2); index 0 is 0."""

# config vector layout (int64), built by _config_vector
C_N, C_DECK, C_LOGIC, C_CHEAPEST, C_END_SCORE, C_MORE_THAN, C_MAX_ROUNDS, C_ROUND_EPISODE = range(8)

# observation offsets, from the one layout table in sixnimmt_env.observation
O_HAND = SLICES["hand"].start
O_ROWS = SLICES["rows"].start
O_ROW_LEN = SLICES["row_lengths"].start
O_ROW_END = SLICES["row_ends"].start
O_ROW_BULL = SLICES["row_bullheads"].start
O_SEEN = SLICES["seen"].start
O_REVEALED = SLICES["revealed"].start
O_PHASE = SLICES["phase"].start
O_MUST_ACT = SLICES["must_act"].start
O_CHOOSER = SLICES["chooser"].start
O_DISPLAY = SLICES["display"].start
O_TOTALS = SLICES["totals"].start
O_ROUND_PEN = SLICES["round_penalties"].start
O_SEAT_PRESENT = SLICES["seat_present"].start
O_TURN = SLICES["turn"].start
O_ROUND = SLICES["round"].start
O_NUM_PLAYERS = SLICES["num_players"].start

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)


def _config_vector(config: GameConfig) -> np.ndarray:
    cfg = np.zeros(8, np.int64)
    cfg[C_N] = config.num_players
    cfg[C_DECK] = config.deck_size
    cfg[C_LOGIC] = config.variant == "logic"
    cfg[C_CHEAPEST] = config.row_choice == "cheapest"
    cfg[C_END_SCORE] = -1 if config.end_score is None else config.end_score
    cfg[C_MORE_THAN] = config.end_rule == "more_than"
    cfg[C_MAX_ROUNDS] = -1 if config.max_rounds is None else config.max_rounds
    cfg[C_ROUND_EPISODE] = config.episode == "round"
    return cfg


# --------------------------------------------------------------------------- random numbers


@njit(cache=True, inline="always")
def next_random(rng: np.ndarray, b: int) -> np.uint64:
    """Advance game ``b``'s splitmix64 counter and return 64 random bits."""
    rng[b] += _GOLDEN
    z = rng[b]
    z = (z ^ (z >> _S30)) * _MIX1
    z = (z ^ (z >> _S27)) * _MIX2
    return z ^ (z >> _S31)


@njit(cache=True, inline="always")
def random_below(rng: np.ndarray, b: int, k: int) -> int:
    """A random integer in ``0..k-1`` from game ``b``'s generator (k <= 109; modulo bias below 1e-17)."""
    return np.int64(next_random(rng, b) % np.uint64(k))


# --------------------------------------------------------------------------- set-up


@njit(cache=True, inline="always")
def _sort_small(a: np.ndarray, k: int) -> None:
    for i in range(1, k):
        x = a[i]
        j = i - 1
        while j >= 0 and a[j] > x:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = x


@njit(cache=True, inline="always")
def _deal(
    S: tuple,
    cfg: np.ndarray,
    b: int,
    round_index: int,
    deck: np.ndarray,
    deals: np.ndarray,
    deal_next: np.ndarray,
    rng: np.ndarray,
) -> None:
    """Set up round ``round_index`` of game ``b`` (R3, R14; V1, V2); totals are kept."""
    phase, hand, hand_len, rows, row_len, pile, display, revealed, round_pen, _, chooser, turn, rnd = S
    n = cfg[C_N]
    size = cfg[C_DECK]
    for s in range(n):
        round_pen[b, s] = 0
        revealed[b, s] = 0
        for j in range(HAND_SIZE):
            hand[b, s, j] = 0
        hand_len[b, s] = 0
    for c in range(NUM_CARDS + 1):
        pile[b, c] = -1
        display[b, c] = False
    for r in range(NUM_ROWS):
        row_len[b, r] = 0
        for j in range(ROW_LIMIT):
            rows[b, r, j] = 0
    turn[b] = 0
    rnd[b] = round_index
    if cfg[C_LOGIC]:
        for c in range(1, size + 1):
            display[b, c] = True
        phase[b] = DRAFT
        chooser[b] = round_index % n
        return
    phase[b] = SELECT
    chooser[b] = -1
    k = n * HAND_SIZE
    d = deal_next[b]
    if d < deals.shape[1] and deals[b, d, 0] != 0:  # an injected deal
        for i in range(k + NUM_ROWS):
            deck[i] = deals[b, d, i]
        deal_next[b] = d + 1
    else:  # own generator: Fisher-Yates over 1..size
        for i in range(size):
            deck[i] = i + 1
        for i in range(size - 1, 0, -1):
            j = random_below(rng, b, i + 1)
            deck[i], deck[j] = deck[j], deck[i]
    for s in range(n):
        _sort_small(deck[s * HAND_SIZE : (s + 1) * HAND_SIZE], HAND_SIZE)
        for j in range(HAND_SIZE):
            hand[b, s, j] = deck[s * HAND_SIZE + j]
        hand_len[b, s] = HAND_SIZE
    for r in range(NUM_ROWS):
        rows[b, r, 0] = deck[k + r]
        row_len[b, r] = 1


@njit(cache=True)
def _new_games(
    S: tuple, cfg: np.ndarray, which: np.ndarray, deals: np.ndarray, deal_next: np.ndarray, rng: np.ndarray
) -> None:
    """Start a new game (round 0, totals 0) in every game ``b`` with ``which[b]``."""
    totals = S[9]
    deck = np.zeros(NUM_CARDS, np.int16)
    for b in range(which.shape[0]):
        if which[b]:
            for s in range(cfg[C_N]):
                totals[b, s] = 0
            _deal(S, cfg, b, 0, deck, deals, deal_next, rng)


# --------------------------------------------------------------------------- transitions


@njit(cache=True, inline="always")
def _row_cost(rows: np.ndarray, row_len: np.ndarray, b: int, r: int) -> int:
    cost = 0
    for j in range(row_len[b, r]):
        cost += BULL[rows[b, r, j]]
    return cost


@njit(cache=True, inline="always")
def _cheapest_row(rows: np.ndarray, row_len: np.ndarray, b: int) -> int:
    """The row with the fewest bullheads, ties to the lowest index (R9b)."""
    best, best_cost = 0, 1 << 30
    for r in range(NUM_ROWS):
        cost = _row_cost(rows, row_len, b, r)
        if cost < best_cost:
            best, best_cost = r, cost
    return best


@njit(cache=True, inline="always")
def _take_row(S: tuple, b: int, r: int, seat: int, pen: np.ndarray) -> None:
    """``seat`` takes row ``r`` into its pile (R8, R9); the row is left empty."""
    rows, row_len, pile = S[3], S[4], S[5]
    for j in range(row_len[b, r]):
        c = rows[b, r, j]
        pen[b, seat] += BULL[c]
        pile[b, c] = seat
        rows[b, r, j] = 0
    row_len[b, r] = 0


@njit(cache=True, inline="always")
def _place(S: tuple, b: int, card: int, seat: int, pen: np.ndarray) -> None:
    """Place one card that is not low (R7, R8)."""
    rows, row_len = S[3], S[4]
    best, best_end = -1, 0
    for r in range(NUM_ROWS):
        end = rows[b, r, row_len[b, r] - 1]
        if best_end < end < card:
            best, best_end = r, end
    if row_len[b, best] == ROW_LIMIT:  # R8: the sixth card takes the row
        _take_row(S, b, best, seat, pen)
    rows[b, best, row_len[b, best]] = card
    row_len[b, best] += 1


@njit(cache=True, inline="always")
def _game_over(cfg: np.ndarray, totals: np.ndarray, b: int, rounds_played: int) -> bool:
    """R12: a one-round episode, max rounds played, or the end score reached."""
    if cfg[C_ROUND_EPISODE]:
        return True
    if cfg[C_MAX_ROUNDS] >= 0 and rounds_played >= cfg[C_MAX_ROUNDS]:
        return True
    if cfg[C_END_SCORE] < 0:
        return False
    high = 0
    for s in range(cfg[C_N]):
        high = max(high, totals[b, s])
    if cfg[C_MORE_THAN]:
        return high > cfg[C_END_SCORE]
    return high >= cfg[C_END_SCORE]


@njit(cache=True, inline="always")
def _resolve(
    S: tuple,
    cfg: np.ndarray,
    b: int,
    low_seat: int,
    low_row: int,
    pen: np.ndarray,
    deck: np.ndarray,
    deals: np.ndarray,
    deal_next: np.ndarray,
    rng: np.ndarray,
) -> None:
    """Place the revealed cards ascending (R6-R9), book penalties, end the turn/round/game (R11, R12, R14).

    ``low_seat`` >= 0 takes ``low_row`` with its low card first (R9).
    """
    phase, hand_len, rows, row_len, revealed, round_pen, totals, chooser, turn, rnd = (
        S[0], S[2], S[3], S[4], S[7], S[8], S[9], S[10], S[11], S[12],
    )  # fmt: skip
    n = cfg[C_N]
    if low_seat >= 0:
        _take_row(S, b, low_row, low_seat, pen)
        rows[b, low_row, 0] = revealed[b, low_seat]
        row_len[b, low_row] = 1
    # the other cards ascending: pick the next smallest each time (n <= 10)
    last = 0
    for _ in range(n):
        best_seat, best_card = -1, 1 << 20
        for s in range(n):
            c = revealed[b, s]
            if s != low_seat and last < c < best_card:
                best_seat, best_card = s, c
        if best_seat < 0:
            break
        _place(S, b, best_card, best_seat, pen)
        last = best_card
    for s in range(n):
        round_pen[b, s] += pen[b, s]
        totals[b, s] += pen[b, s]
    phase[b] = SELECT
    chooser[b] = -1
    turn[b] += 1
    if hand_len[b, 0] > 0:
        return
    if _game_over(cfg, totals, b, rnd[b] + 1):
        phase[b] = DONE
        return
    _deal(S, cfg, b, rnd[b] + 1, deck, deals, deal_next, rng)


@njit(cache=True, inline="always")
def _select(
    S: tuple,
    cfg: np.ndarray,
    b: int,
    actions: np.ndarray,
    pen: np.ndarray,
    deck: np.ndarray,
    deals: np.ndarray,
    deal_next: np.ndarray,
    rng: np.ndarray,
) -> None:
    """Every seat plays a card at once (R5); a low card waits for its row choice (R9) or takes the cheapest."""
    phase, hand, hand_len, rows, row_len, revealed, chooser = S[0], S[1], S[2], S[3], S[4], S[7], S[10]
    n = cfg[C_N]
    low_seat, low_card = -1, 1 << 20
    for s in range(n):
        card = actions[b, s] + 1
        revealed[b, s] = card
        k = hand_len[b, s]
        j = 0
        while hand[b, s, j] != card:
            j += 1
        for i in range(j, k - 1):
            hand[b, s, i] = hand[b, s, i + 1]
        hand[b, s, k - 1] = 0
        hand_len[b, s] = k - 1
        if card < low_card:
            low_seat, low_card = s, card
    min_end = 1 << 20
    for r in range(NUM_ROWS):
        min_end = min(min_end, rows[b, r, row_len[b, r] - 1])
    if low_card < min_end:  # R9, R9a
        if cfg[C_CHEAPEST]:
            _resolve(S, cfg, b, low_seat, _cheapest_row(rows, row_len, b), pen, deck, deals, deal_next, rng)
        else:
            phase[b] = CHOOSE_ROW
            chooser[b] = low_seat
        return
    _resolve(S, cfg, b, -1, 0, pen, deck, deals, deal_next, rng)


@njit(cache=True, inline="always")
def _draft(S: tuple, cfg: np.ndarray, b: int, card: int) -> None:
    """The picker takes ``card`` from the display (V2); after the last pick the 4 cards left start the rows."""
    phase, hand, hand_len, rows, row_len, display, chooser = S[0], S[1], S[2], S[3], S[4], S[6], S[10]
    n = cfg[C_N]
    seat = chooser[b]
    display[b, card] = False
    k = hand_len[b, seat]
    j = k
    while j > 0 and hand[b, seat, j - 1] > card:
        hand[b, seat, j] = hand[b, seat, j - 1]
        j -= 1
    hand[b, seat, j] = card
    hand_len[b, seat] = k + 1
    left = 0
    for s in range(n):
        left += HAND_SIZE - hand_len[b, s]
    if left > 0:
        chooser[b] = (seat + 1) % n
        return
    r = 0
    for c in range(1, cfg[C_DECK] + 1):
        if display[b, c]:
            display[b, c] = False
            rows[b, r, 0] = c
            row_len[b, r] = 1
            r += 1
    phase[b] = SELECT
    chooser[b] = -1


@njit(cache=True, inline="always")
def _is_legal(S: tuple, cfg: np.ndarray, b: int, seat: int, a: int) -> bool:
    phase, hand, hand_len, display, chooser = S[0], S[1], S[2], S[6], S[10]
    p = phase[b]
    if p == DONE:
        return True  # actions of finished games are ignored
    if p == SELECT:
        if a < 0 or a >= NUM_CARDS:
            return False
        for j in range(hand_len[b, seat]):  # noqa: SIM110 (numba: no generator in any())
            if hand[b, seat, j] == a + 1:
                return True
        return False
    if seat != chooser[b]:
        return a == NOOP
    if p == CHOOSE_ROW:
        return ROW_ACTION <= a < ROW_ACTION + NUM_ROWS
    return 0 <= a < NUM_CARDS and display[b, a + 1]


@njit(cache=True)
def _first_illegal(S: tuple, cfg: np.ndarray, actions: np.ndarray) -> int:
    n = cfg[C_N]
    for b in range(actions.shape[0]):
        for s in range(n):
            if not _is_legal(S, cfg, b, s, actions[b, s]):
                return b * n + s
    return -1


@njit(cache=True)
def _step(
    S: tuple,
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


@njit(cache=True, inline="always")
def step_game(
    S: tuple,
    cfg: np.ndarray,
    b: int,
    actions: np.ndarray,
    pen: np.ndarray,
    deck: np.ndarray,
    deals: np.ndarray,
    deal_next: np.ndarray,
    rng: np.ndarray,
) -> None:
    """Advance game ``b`` by the joint action ``actions[b]`` (nothing if it is over); ``pen[b]`` gets its bullheads.

    ``deck`` is scratch space of ``NUM_CARDS`` int16 for a new deal.
    """
    phase, chooser = S[0], S[10]
    for s in range(cfg[C_N]):
        pen[b, s] = 0
    p = phase[b]
    if p == SELECT:
        _select(S, cfg, b, actions, pen, deck, deals, deal_next, rng)
    elif p == CHOOSE_ROW:
        _resolve(S, cfg, b, chooser[b], actions[b, chooser[b]] - ROW_ACTION, pen, deck, deals, deal_next, rng)
    elif p == DRAFT:
        _draft(S, cfg, b, actions[b, chooser[b]] + 1)


# --------------------------------------------------------------------------- observations and masks


@njit(cache=True, inline="always")
def _encode_public(S: tuple, cfg: np.ndarray, b: int, o: np.ndarray) -> None:
    """Write the pieces every seat of game ``b`` shares into the zeroed vector ``o`` (see observation.PIECES)."""
    phase, _, _, rows, row_len, pile, display, revealed, _, _, _, turn, rnd = S
    n = cfg[C_N]
    p = phase[b]
    for r in range(NUM_ROWS):
        k = row_len[b, r]
        if k == 0:
            continue
        cost = 0
        for j in range(k):
            c = rows[b, r, j]
            o[O_ROWS + r * ROW_LIMIT + j] = c / 104.0
            o[O_SEEN + c - 1] = 1.0
            cost += BULL[c]
        o[O_ROW_LEN + r] = k / 5.0
        o[O_ROW_END + r] = rows[b, r, k - 1] / 104.0
        o[O_ROW_BULL + r] = cost / 10.0
    for c in range(1, NUM_CARDS + 1):
        if pile[b, c] >= 0:
            o[O_SEEN + c - 1] = 1.0
    if p == CHOOSE_ROW:
        for s in range(n):
            o[O_SEEN + revealed[b, s] - 1] = 1.0
    o[O_PHASE + p] = 1.0
    if p == DRAFT:
        for c in range(1, cfg[C_DECK] + 1):
            if display[b, c]:
                o[O_DISPLAY + c - 1] = 1.0
    o[O_TURN] = turn[b] / 10.0
    o[O_ROUND] = rnd[b] / 10.0
    o[O_NUM_PLAYERS] = n / 10.0


@njit(cache=True, inline="always")
def _encode_seat(S: tuple, cfg: np.ndarray, b: int, seat: int, o: np.ndarray) -> None:
    """Write the pieces of ``seat``'s own view (hand, seat-relative pieces, must_act) into ``o``.

    ``o`` holds the public pieces and zeros in ``hand`` and ``chooser``.
    """
    phase, hand, hand_len, _, _, _, _, revealed, round_pen, totals, chooser, _, _ = S
    n = cfg[C_N]
    p = phase[b]
    for j in range(hand_len[b, seat]):
        o[O_HAND + hand[b, seat, j] - 1] = 1.0
    for k in range(n):
        s = (seat + k) % n
        o[O_REVEALED + k] = revealed[b, s] / 104.0
        o[O_TOTALS + k] = totals[b, s] / 66.0
        o[O_ROUND_PEN + k] = round_pen[b, s] / 66.0
        o[O_SEAT_PRESENT + k] = 1.0
    ch = chooser[b]
    o[O_MUST_ACT] = 1.0 if (p == SELECT or (p != DONE and ch == seat)) else 0.0
    if ch >= 0:
        o[O_CHOOSER + (ch - seat) % n] = 1.0


@njit(cache=True)
def _observe_all(S: tuple, cfg: np.ndarray, out: np.ndarray) -> None:
    n = cfg[C_N]
    for b in range(out.shape[0]):
        base = out[b, 0]
        base[:] = 0.0
        _encode_public(S, cfg, b, base)
        for s in range(1, n):
            o = out[b, s]
            for i in range(OBS_SIZE):  # an explicit loop: slice assignment would check for overlap and copy
                o[i] = base[i]
        for s in range(n):
            _encode_seat(S, cfg, b, s, out[b, s])


@njit(cache=True)
def _observe_seats(S: tuple, cfg: np.ndarray, seats: np.ndarray, out: np.ndarray) -> None:
    for b in range(out.shape[0]):
        o = out[b]
        o[:] = 0.0
        _encode_public(S, cfg, b, o)
        _encode_seat(S, cfg, b, seats[b], o)


@njit(cache=True, inline="always")
def _mask(S: tuple, cfg: np.ndarray, b: int, seat: int, m: np.ndarray) -> None:
    """Write the 0/1 legal-action mask of ``seat`` in game ``b`` into the zeroed vector ``m`` (= action_mask)."""
    phase, hand, hand_len, display, chooser = S[0], S[1], S[2], S[6], S[10]
    p = phase[b]
    if p == SELECT:
        for j in range(hand_len[b, seat]):
            m[hand[b, seat, j] - 1] = 1
    elif p == DONE:
        return
    elif seat != chooser[b]:
        m[NOOP] = 1
    elif p == CHOOSE_ROW:
        for r in range(NUM_ROWS):
            m[ROW_ACTION + r] = 1
    else:
        for c in range(1, cfg[C_DECK] + 1):
            if display[b, c]:
                m[c - 1] = 1


@njit(cache=True)
def _mask_all(S: tuple, cfg: np.ndarray, out: np.ndarray) -> None:
    for b in range(out.shape[0]):
        for s in range(cfg[C_N]):
            m = out[b, s]
            m[:] = 0
            _mask(S, cfg, b, s, m)


@njit(cache=True)
def _mask_seats(S: tuple, cfg: np.ndarray, seats: np.ndarray, out: np.ndarray) -> None:
    for b in range(out.shape[0]):
        m = out[b]
        m[:] = 0
        _mask(S, cfg, b, seats[b], m)


# --------------------------------------------------------------------------- the Python face


def reference_deals(config: GameConfig, rngs: Sequence[np.random.Generator], rounds: int) -> np.ndarray:
    """The first ``rounds`` deals the reference engine would make from each generator, for ``reset(deals=...)``.

    Each deal is drawn with :func:`sixnimmt_env.engine.new_game`, which consumes a generator exactly as a
    new round of :func:`sixnimmt_env.engine.step` does, so a copy of the reference game's generator yields the
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


class BatchedGames:
    """B games of one :class:`GameConfig`, advanced together by compiled kernels (`RULES.md`, V1, V2).

    Args:
        config: the rules in force in every game.
        batch_size: B, the number of games (>= 1).
        seed: seeds the per-game deal generators (same seed, same games; see the module docstring).

    Attributes:
        config, batch_size (B), num_players (n), and the state arrays of the module docstring
        (``phase``, ``hand``, ``hand_len``, ``rows``, ``row_len``, ``pile``, ``display``, ``revealed``,
        ``round_pen``, ``totals``, ``chooser``, ``turn``, ``round``); treat them as read-only.

    Raises:
        ValueError: if ``batch_size`` is not a positive integer.
    """

    def __init__(self, config: GameConfig, batch_size: int, seed: int | None = None) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int | np.integer) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        self.config = config
        self.batch_size = B = int(batch_size)
        self.num_players = n = config.num_players
        self._cfg = _config_vector(config)
        self.phase = np.full(B, DONE, np.int8)
        self.hand = np.zeros((B, n, HAND_SIZE), np.int16)
        self.hand_len = np.zeros((B, n), np.int8)
        self.rows = np.zeros((B, NUM_ROWS, ROW_LIMIT), np.int16)
        self.row_len = np.zeros((B, NUM_ROWS), np.int8)
        self.pile = np.full((B, NUM_CARDS + 1), -1, np.int8)
        self.display = np.zeros((B, NUM_CARDS + 1), np.bool_)
        self.revealed = np.zeros((B, n), np.int16)
        self.round_pen = np.zeros((B, n), np.int32)
        self.totals = np.zeros((B, n), np.int32)
        self.chooser = np.full(B, -1, np.int8)
        self.turn = np.zeros(B, np.int8)
        self.round = np.zeros(B, np.int32)
        self._penalties = np.zeros((B, n), np.int32)
        self._rng = np.zeros(B, np.uint64)
        self._deals = np.zeros((B, 0, n * HAND_SIZE + NUM_ROWS), np.int16)
        self._deal_next = np.zeros(B, np.int32)
        self.reset(seed)

    @property
    def _S(self) -> tuple[np.ndarray, ...]:
        return (
            self.phase, self.hand, self.hand_len, self.rows, self.row_len, self.pile, self.display,
            self.revealed, self.round_pen, self.totals, self.chooser, self.turn, self.round,
        )  # fmt: skip

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
            self._rng[:] = streams
        elif seed is not None or not self._rng.any():
            self._rng[:] = np.random.SeedSequence(seed).generate_state(B, np.uint64)
        if deals is None:
            self._deals = np.zeros((B, 0, n * HAND_SIZE + NUM_ROWS), np.int16)
        else:
            self._deals = self._check_deals(deals)
        self._deal_next[:] = 0
        _new_games(self._S, self._cfg, np.ones(B, np.bool_), self._deals, self._deal_next, self._rng)

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
            _new_games(self._S, self._cfg, which, self._deals, self._deal_next, self._rng)
        return which

    def set_state(self, b: int, state: State) -> None:
        """Load a reference-engine state (any phase) into slot ``b``, e.g. a hand-made position.

        Raises:
            ValueError: if ``state.config`` differs from this batch's config, or ``b`` is out of range.
        """
        if state.config != self.config:
            raise ValueError(f"state.config {state.config!r} differs from the batch's config {self.config!r}")
        if not 0 <= b < self.batch_size:
            raise ValueError(f"game index {b} is outside 0..{self.batch_size - 1}")
        self.phase[b] = PHASES.index(state.phase)
        self.hand[b] = 0
        self.rows[b] = 0
        self.row_len[b] = 0
        self.pile[b] = -1
        self.display[b] = False
        for s, h in enumerate(state.hands):
            self.hand[b, s, : len(h)] = h
            self.hand_len[b, s] = len(h)
            for c in state.piles[s]:
                self.pile[b, c] = s
        for r, row in enumerate(state.rows):
            self.rows[b, r, : len(row)] = row
            self.row_len[b, r] = len(row)
        self.display[b, list(state.display)] = True
        self.revealed[b] = state.revealed
        self.round_pen[b] = state.round_penalties
        self.totals[b] = state.totals
        self.chooser[b] = state.chooser
        self.turn[b] = state.turn
        self.round[b] = state.round

    def get_state(self, b: int) -> State:
        """Slot ``b`` as a reference-engine :class:`State` (each penalty pile sorted ascending)."""
        n = self.num_players
        phase = int(self.phase[b])
        hands = tuple(tuple(int(c) for c in self.hand[b, s, : self.hand_len[b, s]]) for s in range(n))
        rows = tuple(tuple(int(c) for c in self.rows[b, r, : self.row_len[b, r]]) for r in range(NUM_ROWS))
        rows = rows if all(rows) else ()
        piles = tuple(tuple(int(c) for c in np.flatnonzero(self.pile[b] == s)) for s in range(n))
        display = tuple(int(c) for c in np.flatnonzero(self.display[b]))
        revealed = tuple(int(c) for c in self.revealed[b])
        used = {c for h in hands for c in h} | {c for r in rows for c in r} | {c for p in piles for c in p}
        used |= set(display)
        if phase == CHOOSE_ROW:
            used |= set(revealed)
        stock = tuple(c for c in range(1, self.config.deck_size + 1) if c not in used)
        return State(
            self.config,
            PHASES[phase],
            hands,
            rows,
            piles,
            tuple(int(x) for x in self.round_pen[b]),
            tuple(int(x) for x in self.totals[b]),
            stock,
            display,
            revealed,
            int(self.chooser[b]),
            int(self.turn[b]),
            int(self.round[b]),
        )

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
            bad = _first_illegal(self._S, self._cfg, actions)
            if bad >= 0:
                b, s = divmod(bad, n)
                legal = np.flatnonzero(self.legal_mask_of(b, s)).tolist()
                raise ValueError(
                    f"game {b}, seat {s}: action {int(actions[b, s])} is not legal in phase "
                    f"{PHASES[self.phase[b]]!r}; legal actions: {legal}"
                )
        _step(self._S, self._cfg, actions, self._penalties, self._deals, self._deal_next, self._rng)
        return self._penalties

    # ----------------------------------------------------------------- observations

    def observe(self, out: np.ndarray | None = None, seats: np.ndarray | None = None) -> np.ndarray:
        """Observations, value for value those of :func:`sixnimmt_env.observation.encode`.

        Args:
            out: optional ``float32`` array to fill: shape ``(B, n, 402)`` (every seat, absolute seat order)
                or, with ``seats``, ``(B, 402)``.
            seats: optional integer array of shape ``(B,)``: observe only seat ``seats[b]`` of game b.

        Returns:
            ``out`` (allocated if not given).
        """
        B, n = self.batch_size, self.num_players
        if seats is None:
            out = np.empty((B, n, OBS_SIZE), np.float32) if out is None else out
            _observe_all(self._S, self._cfg, out)
        else:
            out = np.empty((B, OBS_SIZE), np.float32) if out is None else out
            _observe_seats(self._S, self._cfg, np.asarray(seats, np.int64), out)
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
            out = np.empty((B, n, NUM_ACTIONS), np.int8) if out is None else out
            _mask_all(self._S, self._cfg, out)
        else:
            out = np.empty((B, NUM_ACTIONS), np.int8) if out is None else out
            _mask_seats(self._S, self._cfg, np.asarray(seats, np.int64), out)
        return out

    def legal_mask_of(self, b: int, seat: int) -> np.ndarray:
        """The ``int8`` mask of shape ``(109,)`` of one seat of one game."""
        m = np.zeros(NUM_ACTIONS, np.int8)
        _mask(self._S, self._cfg, b, seat, m)
        return m
