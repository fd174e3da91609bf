"""The compiled rules kernel: every fast path plays the rules through these functions (`RULES.md` R1-R14, V1, V2).

:mod:`sixnimmt_env.rules.engine` is the readable specification; this module is its one compiled twin. The batched engine
(:mod:`.core`), the compiled single-game backend (:mod:`.single`), the learner tables (:mod:`.learner`), the arena's
heuristic games (:mod:`~sixnimmt_env.compiled.fast_arena`), the ``mc:N`` rollouts (:mod:`.mc`), the vectorised agents
(:mod:`~sixnimmt_env.compiled.heuristics`) and the card features (:mod:`..card_features`) call it; none of them deals,
drafts, places a card, picks a target row, books a penalty or checks legality by itself. A rule changes in the
engine (the specification) and here (its compiled twin): the parity tests (``tests/test_batched.py``,
``tests/test_kernel.py``, ``tests/test_env_compiled.py``) compare the two and fail until both agree.

**Rows.** A table's rows are read through three arrays of 4 entries, the *light rows*: ``ends`` (last card of each
row), ``lens`` (cards in it, 1..5) and ``costs`` (its bullheads, R2). They are all that R7-R9 need:

- :func:`target_row` (R7), :func:`cheapest_row` (R9b), :func:`immediate_cost` (what a card would take now);
- :func:`take_row` (R8, R9) and :func:`add_card` (R7, R8) change one row, :func:`start_row` starts one;
- :func:`play_turn` places a whole turn ascending (R6-R9a); :func:`low_card_seat` (R9, R9a) and :func:`rule_row`
  (R9b) say whether a turn waits on a row choice;
- :func:`shuffle_deck` and :func:`hand_out` deal a round (R3), :func:`open_display`, :func:`first_picker`,
  :func:`draft_into`, :func:`next_picker` and :func:`rows_from_display` are the draft (V2), :func:`remove_at` plays a
  card from a hand (R5).

The batched engine also keeps every row's cards and who holds each taken card (``rows``, ``pile``): the functions
that change rows take them too; rollouts and the arena's games pass ``None`` for both and play on the light rows
alone (numba compiles the ``None`` case without the bookkeeping).

**Game state.** :class:`GameArrays` names the arrays of B games (``B`` games, ``n`` seats; cards 1..104, 0 = empty
slot; scores in bullheads):

=================  ================  ==========================================================
field              shape, dtype      meaning
=================  ================  ==========================================================
``phase``          (B,) int8         0 select, 1 choose_row, 2 draft, 3 done (``engine.PHASES``)
``hand``           (B, n, 10) int16  each seat's cards ascending, then zeros
``hand_len``       (B, n) int8       cards in each hand
``rows``           (B, 4, 5) int16   the rows, each ascending, then zeros
``row_len``        (B, 4) int8       cards in each row (0 during the draft): the light rows' ``lens``
``row_end``        (B, 4) int16      last card of each row (0 during the draft): ``ends``
``row_bull``       (B, 4) int32      bullheads in each row: ``costs``
``pile``           (B, 105) int8     ``pile[b, c]``: seat whose penalty pile holds card c this round, else -1
``display``        (B, 105) bool     cards on the open draft display (V2)
``revealed``       (B, n) int16      as ``State.revealed``
``round_pen``      (B, n) int32      bullheads taken this round (R11)
``totals``         (B, n) int32      game totals (R12)
``chooser``        (B,) int8         as ``State.chooser`` (-1 if none)
``turn``           (B,) int8         turns completed this round
``round``          (B,) int32        rounds completed before this one
``drafter``        (B, 105) int8     ``drafter[b, c]``: seat that took card c in this round's draft (V2), else -1
=================  ================  ==========================================================

:func:`step_game` applies one joint action to game ``b`` (R5-R14, V2); :func:`deal` sets up a round (R3, R14);
:func:`legal_mask` is the legal actions (:func:`mask_all` writes it for many seats; every check reads it);
:func:`encode_all` writes observations (the layout of :mod:`sixnimmt_env.rules.observation_layout`, as
:func:`sixnimmt_env.observation.encode`).

**Compiled-code cache.** Every function is compiled with ``cache=True`` and the kernel's functions are inlined into
their callers (``inline="always"``). Numba checks a cached function against its own source file only, so after
editing this module (or the constants it inlines: :mod:`.params`, :mod:`.kinds`, :mod:`sixnimmt_env.rules.engine`)
the callers in other modules would keep running the old inlined code: the arena's loop deletes numba's caches of
the package when these sources changed (:mod:`sixnimmt_env.compiled.loop_cache`), and so does ``make install``.

**Random numbers.** Each game draws from its own splitmix64 counter (:func:`next_random`, :func:`random_below`),
a ``uint64`` per game, so a game's deals do not depend on the batch it is played in. A bounded draw is
the high word of a product (no division); a deal draws only the cards it deals (:func:`shuffle_deck`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from sixnimmt_env.rules.engine import (
    BULLHEADS,
    HAND_SIZE,
    NOOP,
    NUM_CARDS,
    NUM_ROWS,
    ROW_ACTION,
    ROW_LIMIT,
)
from sixnimmt_env.rules.observation_layout import (
    BULLHEAD_ROW_SCALE,
    CARD_SCALE,
    COUNT_SCALE,
    O_CHOOSER,
    O_DISPLAY,
    O_DRAFTED_BY,
    O_HAND,
    O_MUST_ACT,
    O_NUM_PLAYERS,
    O_PHASE,
    O_REVEALED,
    O_ROUND,
    O_ROUND_PEN,
    O_ROW_BULL,
    O_ROW_END,
    O_ROW_LEN,
    O_ROWS,
    O_SEAT_PRESENT,
    O_SEEN,
    O_TOTALS,
    O_TURN,
    OBS_SIZE,
    ROW_LENGTH_SCALE,
    SCORE_SCALE,
)
from sixnimmt_env.rules.params import (  # re-exported: the kernel's public API
    C_CHEAPEST,
    C_DECK,
    C_END_SCORE,
    C_LOGIC,
    C_MAX_ROUNDS,
    C_MORE_THAN,
    C_N,
    C_ROUND_EPISODE,
    GOLDEN,
    LOW32,
    MIX1,
    MIX2,
    S27,
    S30,
    S31,
    S32,
)
from sixnimmt_env.rules.params import (
    config_vector as config_vector,
)
from sixnimmt_env.rules.params import (
    first_states as first_states,
)

SELECT, CHOOSE_ROW, DRAFT, DONE = 0, 1, 2, 3
"""Phase codes of the ``phase`` array: indices into ``engine.PHASES``."""

BULL = np.array(BULLHEADS, dtype=np.int32)
"""``BULL[c]``: bullheads of card c (R2); index 0 is 0."""


class GameArrays(NamedTuple):
    """The state arrays of B games (module docstring); a plain tuple of arrays that numba passes as one value."""

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


def new_arrays(batch_size: int, num_players: int) -> GameArrays:
    """Zeroed :class:`GameArrays` of ``batch_size`` finished games (phase done, no piles, no chooser)."""
    B, n = batch_size, num_players
    return GameArrays(
        phase=np.full(B, DONE, np.int8),
        hand=np.zeros((B, n, HAND_SIZE), np.int16),
        hand_len=np.zeros((B, n), np.int8),
        rows=np.zeros((B, NUM_ROWS, ROW_LIMIT), np.int16),
        row_len=np.zeros((B, NUM_ROWS), np.int8),
        row_end=np.zeros((B, NUM_ROWS), np.int16),
        row_bull=np.zeros((B, NUM_ROWS), np.int32),
        pile=np.full((B, NUM_CARDS + 1), -1, np.int8),
        display=np.zeros((B, NUM_CARDS + 1), np.bool_),
        revealed=np.zeros((B, n), np.int16),
        round_pen=np.zeros((B, n), np.int32),
        totals=np.zeros((B, n), np.int32),
        chooser=np.full(B, -1, np.int8),
        turn=np.zeros(B, np.int8),
        round=np.zeros(B, np.int32),
        drafter=np.full((B, NUM_CARDS + 1), -1, np.int8),
    )


# --------------------------------------------------------------------------- random numbers


@njit(cache=True, inline="always")
def next_random(rng: np.ndarray, b: int) -> np.uint64:
    """Advance game ``b``'s splitmix64 counter and return 64 random bits."""
    rng[b] += GOLDEN
    z = rng[b]
    z = (z ^ (z >> S30)) * MIX1
    z = (z ^ (z >> S27)) * MIX2
    return z ^ (z >> S31)


@njit(cache=True, inline="always")
def random_below(rng: np.ndarray, b: int, k: int) -> int:
    """A random integer in ``0..k-1`` from game ``b``'s generator, ``1 <= k <= 2**32``: ``floor(x k / 2**64)`` of its
    next 64 random bits ``x`` (multiply and shift, no division; exact for such k; for k <= 109 the bias is below
    1e-17)."""
    x = next_random(rng, b)
    kk = np.uint64(k)
    high = (x >> S32) * kk + (((x & LOW32) * kk) >> S32)
    return int(np.int64(high >> S32))  # int64 in numba (int() keeps the type), an int in Python


# --------------------------------------------------------------------------- rows (R7-R9)


@njit(cache=True, inline="always")
def target_row(ends: np.ndarray, card: int) -> int:
    """R7: the row whose last card is the largest value below ``card``; -1 if there is none (a low card, R9).

    ``ends``: the 4 rows' last cards (0 for a missing row, which no card targets).
    """
    best, best_end = -1, 0
    for r in range(NUM_ROWS):
        end = ends[r]
        if best_end < end < card:
            best, best_end = r, end
    return best


@njit(cache=True, inline="always")
def cheapest_row(costs: np.ndarray) -> int:
    """R9b ``"cheapest"``: the row with the fewest bullheads, ties to the lowest index."""
    best = 0
    for r in range(1, NUM_ROWS):
        if costs[r] < costs[best]:
            best = r
    return best


@njit(cache=True, inline="always")
def immediate_cost(ends: np.ndarray, lens: np.ndarray, costs: np.ndarray, card: int) -> int:
    """Bullheads ``card`` would take now, the other cards of the turn ignored: its row's if that row is full (R8),
    the cheapest row's if it is a low card (R9), else 0. The ``greedy`` agent's cost."""
    r = target_row(ends, card)
    if r < 0:
        return costs[cheapest_row(costs)]
    if lens[r] == ROW_LIMIT:
        return costs[r]
    return 0


@njit(cache=True, inline="always")
def take_row(
    ends: np.ndarray,
    lens: np.ndarray,
    costs: np.ndarray,
    rows: np.ndarray | None,
    pile: np.ndarray | None,
    r: int,
    card: int,
    seat: int,
) -> int:
    """``seat`` takes row ``r`` into its penalty pile and ``card`` starts the row afresh (R8, R9).

    Returns the bullheads taken. Unless they are ``None``, ``rows`` (4, 5) and ``pile`` (105,) are kept too: the
    row's cards go to ``pile[c] = seat``.
    """
    taken = costs[r]
    if rows is not None and pile is not None:  # compile-time branches: both None for the light rows alone
        for j in range(lens[r]):
            pile[rows[r, j]] = seat
            rows[r, j] = 0
        rows[r, 0] = card
    ends[r] = card
    lens[r] = 1
    costs[r] = BULL[card]
    return taken


@njit(cache=True, inline="always")
def add_card(
    ends: np.ndarray,
    lens: np.ndarray,
    costs: np.ndarray,
    rows: np.ndarray | None,
    pile: np.ndarray | None,
    r: int,
    card: int,
    seat: int,
) -> int:
    """Put ``card`` on its target row ``r`` (R7); the sixth card takes the row (R8). Returns the bullheads taken."""
    if lens[r] == ROW_LIMIT:
        return take_row(ends, lens, costs, rows, pile, r, card, seat)
    if rows is not None:  # a compile-time branch: None for the light rows alone
        rows[r, lens[r]] = card
    ends[r] = card
    lens[r] += 1
    costs[r] += BULL[card]
    return 0


@njit(cache=True, inline="always")
def lowest_play(plays: np.ndarray, n: int) -> int:
    """The seat of the lowest of the ``n`` cards ``plays`` (distinct, > 0)."""
    low = 0
    for s in range(1, n):
        if plays[s] < plays[low]:
            low = s
    return low


@njit(cache=True, inline="always")
def low_card_seat(ends: np.ndarray, plays: np.ndarray, n: int) -> int:
    """The seat whose card of ``plays`` (one per seat 0..n-1, distinct) is a low card (R9), or -1: only the lowest
    card of a turn can be one (R9a)."""
    low = lowest_play(plays, n)
    return low if target_row(ends, plays[low]) < 0 else -1


@njit(cache=True, inline="always")
def rule_row(cfg: np.ndarray, costs: np.ndarray) -> int:
    """The row a low card takes when the rules choose it (R9b ``row_choice="cheapest"``: :func:`cheapest_row`), else
    -1: its owner chooses (a decision of the player)."""
    return cheapest_row(costs) if cfg[C_CHEAPEST] else -1


@njit(cache=True, inline="always")
def play_turn(
    ends: np.ndarray,
    lens: np.ndarray,
    costs: np.ndarray,
    rows: np.ndarray | None,
    pile: np.ndarray | None,
    plays: np.ndarray,
    n: int,
    pen: np.ndarray,
    low_row: int,
) -> None:
    """Place one turn's revealed cards ``plays`` (one per seat 0..n-1, distinct) ascending (R6-R9a); ``pen[s]`` +=
    the bullheads seat ``s`` takes.

    Each card joins its target row (:func:`add_card`, R7, R8). Only the first, lowest card can be a low card
    (R9a): then it takes row ``low_row`` (R9), the choice its owner (or the rule R9b) made on the rows as they
    stand at the start of the turn. ``rows`` and ``pile`` are kept unless ``None`` (see :func:`take_row`).
    """
    last = 0
    for _ in range(n):  # the next smallest card each time (n <= 10)
        seat, card = -1, 1 << 20
        for s in range(n):
            c = plays[s]
            if last < c < card:
                seat, card = s, c
        r = target_row(ends, card)
        if r < 0:
            pen[seat] += take_row(ends, lens, costs, rows, pile, low_row, card, seat)
        else:
            pen[seat] += add_card(ends, lens, costs, rows, pile, r, card, seat)
        last = card


# --------------------------------------------------------------------------- set-up (R3, R14, V1, V2)


@njit(cache=True, inline="always")
def sort_small(a: np.ndarray, k: int) -> None:
    """Sort ``a[:k]`` ascending in place (insertion sort: k <= 10)."""
    for i in range(1, k):
        x = a[i]
        j = i - 1
        while j >= 0 and a[j] > x:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = x


@njit(cache=True, inline="always")
def partial_shuffle(cards: np.ndarray, m: int, count: int, rng: np.ndarray, b: int) -> None:
    """``cards[:count]`` = the first ``count`` entries of a uniform permutation of ``cards[:m]`` (the first ``count``
    steps of a Fisher-Yates shuffle from game ``b``'s stream: one draw per entry), ``count <= m``."""
    for i in range(count):
        j = i + random_below(rng, b, m - i)
        cards[i], cards[j] = cards[j], cards[i]


@njit(cache=True, inline="always")
def shuffle_deck(deck: np.ndarray, size: int, count: int, rng: np.ndarray, b: int) -> None:
    """``deck[:count]`` = the first ``count`` cards of a uniform permutation of the cards 1..size
    (:func:`partial_shuffle`: one draw per card dealt), ``count <= size`` (R3: ``10 n + 4`` cards dealt from a deck
    of at least that many, V1)."""
    for i in range(size):
        deck[i] = i + 1
    partial_shuffle(deck, size, count, rng, b)


@njit(cache=True, inline="always")
def sort_hands(deck: np.ndarray, n: int) -> None:
    """Sort each seat's 10 cards ``deck[10 s : 10 s + 10]`` of a dealt deck ascending (R3: hands of 10, seats in
    order, then the 4 row cards)."""
    for s in range(n):
        sort_small(deck[s * HAND_SIZE : (s + 1) * HAND_SIZE], HAND_SIZE)


@njit(cache=True, inline="always")
def start_row(
    ends: np.ndarray, lens: np.ndarray, costs: np.ndarray, rows: np.ndarray | None, r: int, card: int
) -> None:
    """Row ``r`` becomes ``[card]`` on an empty table (a new round, R3, or the end of the draft, V2); ``rows`` (4, 5),
    zeros in row ``r``, is kept too unless ``None``."""
    if rows is not None:  # a compile-time branch: None for the light rows alone
        rows[r, 0] = card
    ends[r] = card
    lens[r] = 1
    costs[r] = BULL[card]


@njit(cache=True, inline="always")
def hand_out(
    deck: np.ndarray,
    n: int,
    hands: np.ndarray,
    ends: np.ndarray,
    lens: np.ndarray,
    costs: np.ndarray,
    rows: np.ndarray | None,
) -> None:
    """Hand out a dealt deck (R3): seat ``s`` gets ``deck[10 s : 10 s + 10]``, ascending, in ``hands[s]`` (n, >= 10),
    and the 4 cards after the hands start the rows (:func:`start_row`; ``rows`` unless ``None``)."""
    sort_hands(deck, n)
    for s in range(n):
        for j in range(HAND_SIZE):
            hands[s, j] = deck[s * HAND_SIZE + j]
    k = n * HAND_SIZE
    for r in range(NUM_ROWS):
        start_row(ends, lens, costs, rows, r, deck[k + r])


@njit(cache=True, inline="always")
def remove_at(hand: np.ndarray, j: int) -> None:
    """Take the card at place ``j`` out of the ascending ``hand``: the cards after it move up one place (a loop of
    fixed length: a mispredicted exit of a loop of ``k - 1 - j`` steps cost more than the moves); the last place
    keeps its old card (callers that read it zero it, the others never read past the hand's length)."""
    for i in range(hand.shape[0] - 1):
        hand[i] = hand[i + (i >= j)]


@njit(cache=True, inline="always")
def open_display(display: np.ndarray, size: int) -> None:
    """V2: the deck 1..size is laid out face up on the draft display (105,)."""
    for c in range(1, size + 1):
        display[c] = True


@njit(cache=True, inline="always")
def first_picker(round_index: int, n: int) -> int:
    """V2: the seat that drafts first in round ``round_index`` (the first player rotates, seat 0 in round 0)."""
    return round_index % n


@njit(cache=True, inline="always")
def next_picker(seat: int, n: int) -> int:
    """V2: the seat that drafts after ``seat`` (seat order)."""
    return (seat + 1) % n


@njit(cache=True, inline="always")
def draft_into(display: np.ndarray, hand: np.ndarray, k: int, card: int) -> None:
    """V2: take ``card`` from the display (105,) into the ascending ``hand[:k]`` (it becomes ``hand[:k + 1]``)."""
    display[card] = False
    j = k
    while j > 0 and hand[j - 1] > card:
        hand[j] = hand[j - 1]
        j -= 1
    hand[j] = card


@njit(cache=True, inline="always")
def rows_from_display(
    display: np.ndarray,
    size: int,
    ends: np.ndarray,
    lens: np.ndarray,
    costs: np.ndarray,
    rows: np.ndarray | None,
) -> None:
    """V2, after the last pick: the 4 cards left on the display start the rows, ascending (:func:`start_row`)."""
    r = 0
    for c in range(1, size + 1):
        if display[c]:
            display[c] = False
            start_row(ends, lens, costs, rows, r, c)
            r += 1


@njit(cache=True, inline="always")
def deal(
    S: GameArrays,
    cfg: np.ndarray,
    b: int,
    round_index: int,
    deck: np.ndarray,
    deals: np.ndarray,
    deal_next: np.ndarray,
    rng: np.ndarray,
) -> None:
    """Set up round ``round_index`` of game ``b`` (R3, R14; V1, V2); totals are kept.

    The deal is ``deals[b, deal_next[b]]`` if that is an injected deal (not all zeros), else drawn from the
    game's generator; ``deck`` is scratch space of 104 int16.
    """
    phase, hand, hand_len, rows, row_len, row_end, row_bull = (
        S.phase,
        S.hand,
        S.hand_len,
        S.rows,
        S.row_len,
        S.row_end,
        S.row_bull,
    )
    pile, display, revealed, round_pen, chooser, turn, rnd = (
        S.pile,
        S.display,
        S.revealed,
        S.round_pen,
        S.chooser,
        S.turn,
        S.round,
    )
    n = cfg[C_N]
    size = cfg[C_DECK]
    for s in range(n):
        round_pen[b, s] = 0
        revealed[b, s] = 0
        for j in range(HAND_SIZE):
            hand[b, s, j] = 0
        hand_len[b, s] = 0
    drafter = S.drafter
    for c in range(NUM_CARDS + 1):
        pile[b, c] = -1
        display[b, c] = False
        drafter[b, c] = -1
    for r in range(NUM_ROWS):
        row_len[b, r] = 0
        row_end[b, r] = 0
        row_bull[b, r] = 0
        for j in range(ROW_LIMIT):
            rows[b, r, j] = 0
    turn[b] = 0
    rnd[b] = round_index
    if cfg[C_LOGIC]:
        open_display(display[b], size)
        phase[b] = DRAFT
        chooser[b] = first_picker(round_index, n)
        return
    phase[b] = SELECT
    chooser[b] = -1
    k = n * HAND_SIZE
    d = deal_next[b]
    if d < deals.shape[1] and deals[b, d, 0] != 0:  # an injected deal
        for i in range(k + NUM_ROWS):
            deck[i] = deals[b, d, i]
        deal_next[b] = d + 1
    else:
        shuffle_deck(deck, size, k + NUM_ROWS, rng, b)
    hand_out(deck, n, hand[b], row_end[b], row_len[b], row_bull[b], rows[b])
    for s in range(n):
        hand_len[b, s] = HAND_SIZE


@njit(cache=True)
def new_games(
    S: GameArrays, cfg: np.ndarray, which: np.ndarray, deals: np.ndarray, deal_next: np.ndarray, rng: np.ndarray
) -> None:
    """Start a new game (round 0, totals 0) in every game ``b`` with ``which[b]``."""
    totals = S.totals
    deck = np.zeros(NUM_CARDS, np.int16)
    for b in range(which.shape[0]):
        if which[b]:
            for s in range(cfg[C_N]):
                totals[b, s] = 0
            deal(S, cfg, b, 0, deck, deals, deal_next, rng)


# --------------------------------------------------------------------------- transitions (R5-R14, V2)


@njit(cache=True, inline="always")
def game_over(cfg: np.ndarray, totals: np.ndarray, rounds_played: int) -> bool:
    """R12, after a round: a one-round episode, the last of ``max_rounds``, or a total (``totals`` (n,)) at the end
    score."""
    if cfg[C_ROUND_EPISODE]:
        return True
    if cfg[C_MAX_ROUNDS] >= 0 and rounds_played >= cfg[C_MAX_ROUNDS]:
        return True
    if cfg[C_END_SCORE] < 0:
        return False
    high = 0
    for s in range(cfg[C_N]):
        high = max(high, totals[s])
    if cfg[C_MORE_THAN]:
        return high > cfg[C_END_SCORE]
    return high >= cfg[C_END_SCORE]


@njit(cache=True, inline="always")
def _resolve(
    S: GameArrays,
    cfg: np.ndarray,
    b: int,
    low_row: int,
    pen: np.ndarray,
    deck: np.ndarray,
    deals: np.ndarray,
    deal_next: np.ndarray,
    rng: np.ndarray,
) -> None:
    """Place the revealed cards (:func:`play_turn`), book penalties, end the turn/round/game (R11, R12, R14)."""
    phase, hand_len, rows, row_len, row_end, row_bull = S.phase, S.hand_len, S.rows, S.row_len, S.row_end, S.row_bull
    pile, revealed, round_pen, totals, chooser, turn, rnd = (
        S.pile,
        S.revealed,
        S.round_pen,
        S.totals,
        S.chooser,
        S.turn,
        S.round,
    )
    n = cfg[C_N]
    play_turn(row_end[b], row_len[b], row_bull[b], rows[b], pile[b], revealed[b], n, pen[b], low_row)
    for s in range(n):
        round_pen[b, s] += pen[b, s]
        totals[b, s] += pen[b, s]
    phase[b] = SELECT
    chooser[b] = -1
    turn[b] += 1
    if hand_len[b, 0] > 0:
        return
    if game_over(cfg, totals[b], rnd[b] + 1):
        phase[b] = DONE
        return
    deal(S, cfg, b, rnd[b] + 1, deck, deals, deal_next, rng)


@njit(cache=True, inline="always")
def _select(S: GameArrays, cfg: np.ndarray, b: int, actions: np.ndarray) -> int:
    """Every seat plays a card at once (R5); returns the row a low card takes (R9: 0 when no card is low, the
    rule's row under R9b), or -1 when the low card's player must choose it (the game waits in ``CHOOSE_ROW``).

    The actions must be legal (each seat's card in its hand: :func:`legal_mask`, which ``BatchedGames.step`` checks
    unless ``check=False``): the card's place is counted, not searched, so a card not held removes another.
    """
    hand = S.hand
    phase, hand_len, row_end = S.phase, S.hand_len, S.row_end
    row_bull, revealed, chooser = S.row_bull, S.revealed, S.chooser
    n = cfg[C_N]
    for s in range(n):
        card = actions[b, s] + 1
        revealed[b, s] = card
        k = hand_len[b, s]
        j = 0  # the card's place in the ascending hand: how many held cards are lower (legal: it is held)
        for i in range(HAND_SIZE):
            j += (hand[b, s, i] < card) & (i < k)
        remove_at(hand[b, s], j)
        hand[b, s, k - 1] = 0  # places >= the hand's length stay 0
        hand_len[b, s] = k - 1
    low = low_card_seat(row_end[b], revealed[b], n)  # R9, R9a
    if low < 0:
        return 0
    r = rule_row(cfg, row_bull[b])  # R9b
    if r < 0:
        phase[b] = CHOOSE_ROW
        chooser[b] = low
    return r


@njit(cache=True, inline="always")
def _draft(S: GameArrays, cfg: np.ndarray, b: int, card: int) -> None:
    """The picker takes ``card`` from the display (V2); after the last pick the 4 cards left start the rows."""
    hand = S.hand
    phase, hand_len, display, chooser = S.phase, S.hand_len, S.display, S.chooser
    n = cfg[C_N]
    seat = chooser[b]
    draft_into(display[b], hand[b, seat], hand_len[b, seat], card)
    S.drafter[b, card] = seat
    hand_len[b, seat] += 1
    left = 0
    for s in range(n):
        left += HAND_SIZE - hand_len[b, s]
    if left > 0:
        chooser[b] = next_picker(seat, n)
        return
    rows_from_display(display[b], cfg[C_DECK], S.row_end[b], S.row_len[b], S.row_bull[b], S.rows[b])
    phase[b] = SELECT
    chooser[b] = -1


@njit(cache=True, inline="always")
def step_game(
    S: GameArrays,
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

    The actions must be legal (:func:`legal_mask`). ``deck`` is scratch space of ``NUM_CARDS`` int16 for a new deal.
    """
    phase, chooser = S.phase, S.chooser
    for s in range(cfg[C_N]):
        pen[b, s] = 0
    p = phase[b]
    if p == SELECT:
        low_row = _select(S, cfg, b, actions)
        if low_row < 0:  # the low card's player chooses its row next
            return
    elif p == CHOOSE_ROW:
        low_row = actions[b, chooser[b]] - ROW_ACTION
    else:
        if p == DRAFT:
            _draft(S, cfg, b, actions[b, chooser[b]] + 1)
        return
    # one call site: numba inlines _resolve (and the deal inside it) once, so a caller of step_game compiles in
    # about 10 s on a fresh checkout instead of 27 s with a copy per branch
    _resolve(S, cfg, b, low_row, pen, deck, deals, deal_next, rng)


# --------------------------------------------------------------------------- legal actions


@njit(cache=True, inline="always")
def legal_mask(S: GameArrays, cfg: np.ndarray, b: int, seat: int, m: np.ndarray) -> None:
    """Write the 0/1 legal-action mask of ``seat`` in game ``b`` into the zeroed vector ``m`` (109,) (as
    ``observation.action_mask``; all zeros when the game is over)."""
    phase, hand, hand_len, display, chooser = S.phase, S.hand, S.hand_len, S.display, S.chooser
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


@njit(cache=True, inline="always")
def decides(S: GameArrays, b: int, s: int) -> bool:
    """Whether seat ``s`` of game ``b`` has a real decision now (every seat in card selection, else the chooser)."""
    phase, chooser = S.phase, S.chooser
    p = phase[b]
    if p == DONE:
        return False
    return p == SELECT or chooser[b] == s


# --------------------------------------------------------------------------- observations


@njit(cache=True, inline="always")
def encode_public(S: GameArrays, cfg: np.ndarray, b: int, o: np.ndarray) -> None:
    """Write the pieces every seat of game ``b`` shares into the zeroed vector ``o`` (OBS_SIZE,) (``PIECES``)."""
    rows, row_len, row_end, row_bull, pile, display = S.rows, S.row_len, S.row_end, S.row_bull, S.pile, S.display
    phase, revealed, turn, rnd = S.phase, S.revealed, S.turn, S.round
    n = cfg[C_N]
    p = phase[b]
    for r in range(NUM_ROWS):
        k = row_len[b, r]
        if k == 0:
            continue
        for j in range(k):
            c = rows[b, r, j]
            o[O_ROWS + r * ROW_LIMIT + j] = c / CARD_SCALE
            o[O_SEEN + c - 1] = 1.0
        o[O_ROW_LEN + r] = k / ROW_LENGTH_SCALE
        o[O_ROW_END + r] = row_end[b, r] / CARD_SCALE
        o[O_ROW_BULL + r] = row_bull[b, r] / BULLHEAD_ROW_SCALE
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
    o[O_TURN] = turn[b] / COUNT_SCALE
    o[O_ROUND] = rnd[b] / COUNT_SCALE
    o[O_NUM_PLAYERS] = n / COUNT_SCALE


@njit(cache=True, inline="always")
def encode_seat(S: GameArrays, cfg: np.ndarray, b: int, seat: int, o: np.ndarray) -> None:
    """Write the pieces of ``seat``'s own view (hand, seat-relative pieces, must_act) into ``o``.

    ``o`` holds the public pieces (:func:`encode_public`) and zeros in ``hand`` and ``chooser``; the
    ``drafted_by`` piece of the logic variant is :func:`encode_drafted`'s.
    """
    hand, revealed, totals, round_pen = S.hand, S.revealed, S.totals, S.round_pen
    phase, hand_len, chooser = S.phase, S.hand_len, S.chooser
    n = cfg[C_N]
    p = phase[b]
    for j in range(hand_len[b, seat]):
        o[O_HAND + hand[b, seat, j] - 1] = 1.0
    for k in range(n):
        s = (seat + k) % n
        o[O_REVEALED + k] = revealed[b, s] / CARD_SCALE
        o[O_TOTALS + k] = totals[b, s] / SCORE_SCALE
        o[O_ROUND_PEN + k] = round_pen[b, s] / SCORE_SCALE
        o[O_SEAT_PRESENT + k] = 1.0
    ch = chooser[b]
    o[O_MUST_ACT] = 1.0 if (p == SELECT or (p != DONE and ch == seat)) else 0.0
    if ch >= 0:
        o[O_CHOOSER + (ch - seat) % n] = 1.0


@njit(cache=True)
def encode_drafted(S: GameArrays, cfg: np.ndarray, b: int, seat: int, o: np.ndarray) -> None:
    """Write ``seat``'s ``drafted_by`` piece of game ``b`` into ``o`` (zeros there): for each card drafted in this
    round, ``(k + 1) / 10`` with ``k`` the picker's place after ``seat`` (V2). Only the logic variant drafts.

    The encoders call it in a pass of its own after their main loop, and only in the logic variant: inside
    :func:`encode_seat`'s body, even behind a branch never taken, it made the compiled encoders of every variant
    about twice as slow.
    """
    n = cfg[C_N]
    drafter = S.drafter
    for c in range(1, cfg[C_DECK] + 1):
        d = drafter[b, c]
        if d >= 0:
            o[O_DRAFTED_BY + c - 1] = ((d - seat) % n + 1) / COUNT_SCALE


@njit(cache=True, inline="always")
def encode_all(S: GameArrays, cfg: np.ndarray, games: np.ndarray, seats: np.ndarray, out: np.ndarray) -> None:
    """Write the observation of seat ``seats[i]`` of game ``games[i]`` into ``out[i]`` for every ``i``: value for
    value :func:`sixnimmt_env.observation.encode` (the layout of :mod:`sixnimmt_env.rules.observation_layout`).

    ``games``, ``seats``: integer arrays ``(K,)``; ``out``: ``float32 (K, OBS_SIZE)``, every entry written. The
    compiled encoder's one call sequence: every fast path observes through it. Rows of one game that follow one
    another share that game's public pieces: :func:`encode_public` writes them once, the other rows copy them,
    then :func:`encode_seat` adds each seat's own pieces (and, in the logic variant, :func:`encode_drafted` in a
    pass of its own).
    """
    K = games.shape[0]
    i = 0
    while i < K:
        b = games[i]
        j = i + 1
        while j < K and games[j] == b:
            j += 1
        base = out[i]
        base[:] = 0.0
        encode_public(S, cfg, b, base)
        for r in range(i + 1, j):
            o = out[r]
            for x in range(OBS_SIZE):  # an explicit loop: slice assignment would check for overlap and copy
                o[x] = base[x]
        for r in range(i, j):
            encode_seat(S, cfg, b, seats[r], out[r])
        i = j
    if cfg[C_LOGIC]:  # a pass of its own (see encode_drafted)
        for r in range(K):
            encode_drafted(S, cfg, games[r], seats[r], out[r])


@njit(cache=True, inline="always")
def mask_all(S: GameArrays, cfg: np.ndarray, games: np.ndarray, seats: np.ndarray, out: np.ndarray) -> None:
    """Write the legal-action mask of seat ``seats[i]`` of game ``games[i]`` into ``out[i]`` (``int8`` or ``bool``
    ``(K, 109)``, every entry written) for every ``i``: :func:`legal_mask` on each row."""
    for i in range(games.shape[0]):
        m = out[i]
        m[:] = 0
        legal_mask(S, cfg, games[i], seats[i], m)
