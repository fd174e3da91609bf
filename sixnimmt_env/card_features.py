"""What each card would do on the current rows, computed from an observation (numba, no torch).

The card policy (:mod:`training.policy`, ``algo.policy: card``) and the shipped ``champion``
agent (:mod:`sixnimmt_env.champion`) read these features; they live here so that playing the
champion needs neither torch nor SB3. Only the observation pieces ``hand``, ``row_lengths``,
``row_ends``, ``row_bullheads``, ``seen`` and ``num_players`` are read (no hidden information, `RULES.md` E4),
from the raw observation of :mod:`sixnimmt_env.observation`.

Per card ``c`` (8 values, :data:`CARD_FEATURES`; the held-card version adds ``value`` and three
features that look at the rest of the own hand and at the table size, :data:`HAND_FEATURES`):

=========  ================================================================
in_hand    1 if ``c`` is in the own hand
low        1 if ``c`` is below every row end (a low card, R9)
full       1 if its row already holds 5 cards (playing it takes the row, R8)
length     cards in its row / 5 (0 for a low card)
bullheads  bullheads in its row / 10 (0 for a low card)
unseen     unseen cards between its row's end and ``c`` / 10 (cards that
           another player could slip in first); below ``c`` for a low card
cost       its immediate cost / 10: the full row's bullheads, or the
           cheapest row's for a low card, else 0 (the ``greedy`` agent's cost)
distance   (``c`` - its row's end) / 104 (``c`` / 104 for a low card)
value      ``c`` / 104 (:data:`HAND_FEATURES` only)
own_below  other held cards of the same target row below ``c`` / 10 (for a
           low card: the held low cards below it); :data:`HAND_FEATURES` only
own_above  other held cards of the same target row above ``c`` / 10 (for a
           low card: the held low cards above it); :data:`HAND_FEATURES` only
take_risk  the chance that ``c``'s row fills before ``c`` this turn (so that ``c``
           or an earlier card takes it, R8) if each other player plays one
           uniformly drawn unseen card: P(Binomial(players - 1, unseen in the
           gap / all unseen) >= free places in the row); 1 for a low card or a
           full row, and in the logic draft (no rows: every card counts as
           low); :data:`HAND_FEATURES` only
=========  ================================================================
"""

from __future__ import annotations

import numpy as np
from numba import njit

from sixnimmt_env.observation import BULLHEAD_ROW_SCALE, CARD_SCALE, SLICES
from sixnimmt_env.rules.engine import HAND_SIZE, NUM_CARDS, NUM_ROWS, ROW_LIMIT
from sixnimmt_env.rules.kernel import target_row

__all__ = ["BASE_HAND_FEATURES", "CARD_FEATURES", "HAND_FEATURES", "card_features", "hand_features"]

CARD_FEATURES = ("in_hand", "low", "full", "length", "bullheads", "unseen", "cost", "distance")
"""Names of the per-card features, in order."""
HAND_FEATURES = (*CARD_FEATURES, "value", "own_below", "own_above", "take_risk")
"""Per held card: :data:`CARD_FEATURES`, the card / 104 and the three hand-and-table features (module docstring)."""
BASE_HAND_FEATURES = len(CARD_FEATURES) + 1
"""Length of the held-card features before ``own_below``, ``own_above`` and ``take_risk`` (weights trained on them
load with zero weights for the later three, :func:`sixnimmt_env.champion.read_weights`)."""

_HAND, _ENDS, _LENGTHS, _BULLS, _SEEN, _PLAYERS = (
    SLICES[name].start for name in ("hand", "row_ends", "row_lengths", "row_bullheads", "seen", "num_players")
)


@njit(cache=True)
def _card_features_kernel(
    obs: np.ndarray, cards: np.ndarray, out: np.ndarray, targets: np.ndarray, unseen_total: np.ndarray
) -> None:
    """Fill ``out[b, j, :8]`` with the :data:`CARD_FEATURES` of card index ``cards[b, j]`` in ``obs[b]``.

    Also fills ``targets`` (int64, the shape of ``cards``) with each card's row (R7; -1 for a low card, R9,
    and for every card in the draft, where there are no rows) and ``unseen_total`` (float64 ``(batch,)``)
    with the cards neither seen nor in the own hand; :func:`_hand_kernel` reads both."""
    counts = np.zeros(NUM_CARDS + 1)
    ends = np.zeros(NUM_ROWS, np.int64)
    for b in range(obs.shape[0]):
        has_rows, cheapest = False, np.inf
        for r in range(NUM_ROWS):
            ends[r] = int(np.rint(obs[b, _ENDS + r] * CARD_SCALE))  # card values, 0 = no row (the draft)
            has_rows |= ends[r] > 0
            cheapest = min(cheapest, obs[b, _BULLS + r] * BULLHEAD_ROW_SCALE)
        for k in range(NUM_CARDS):  # counts[k]: unseen cards among 1..k
            unseen = min(max(1.0 - obs[b, _SEEN + k] - obs[b, _HAND + k], 0.0), 1.0)
            counts[k + 1] = counts[k] + unseen
        unseen_total[b] = counts[NUM_CARDS]
        for j in range(cards.shape[1]):
            i = cards[b, j]
            target = target_row(ends, i + 1)  # the kernel's R7
            targets[b, j] = target
            low = target < 0  # R9
            t_end = 0 if low else ends[target]
            t_len = 0.0 if low else obs[b, _LENGTHS + target] * ROW_LIMIT
            t_bull = 0.0 if low else obs[b, _BULLS + target] * BULLHEAD_ROW_SCALE
            full = not low and t_len >= ROW_LIMIT - 0.5  # R8
            cost = (t_bull if full else 0.0) + (cheapest if low and has_rows else 0.0)
            out[b, j, 0] = obs[b, _HAND + i]
            out[b, j, 1] = low
            out[b, j, 2] = full
            out[b, j, 3] = t_len / ROW_LIMIT
            out[b, j, 4] = t_bull / BULLHEAD_ROW_SCALE
            out[b, j, 5] = (counts[i] - counts[t_end]) / 10.0  # unseen cards in (row end, card)
            out[b, j, 6] = cost / 10.0
            out[b, j, 7] = (i + 1 - t_end) / CARD_SCALE


@njit(cache=True)
def _hand_kernel(obs: np.ndarray, held: np.ndarray, out: np.ndarray) -> None:
    """Fill ``held (batch, 10)`` with the held card indices (lowest first, then distinct cards not in hand)
    and ``out (batch, 10, 12)`` with their :data:`HAND_FEATURES` (zero rows for the cards not in hand)."""
    for b in range(obs.shape[0]):
        n = 0
        for k in range(NUM_CARDS):
            if obs[b, _HAND + k] > 0 and n < HAND_SIZE:
                held[b, n] = k
                n += 1
        k = 0
        while n < HAND_SIZE:
            if obs[b, _HAND + k] <= 0:
                held[b, n] = k
                n += 1
            k += 1
    targets = np.empty(held.shape, np.int64)
    unseen_total = np.empty(obs.shape[0])
    _card_features_kernel(obs, held, out, targets, unseen_total)
    base = len(CARD_FEATURES)
    for b in range(obs.shape[0]):
        unseen_all = unseen_total[b]
        others = max(int(np.rint(obs[b, _PLAYERS] * 10.0)) - 1, 0)
        for j in range(HAND_SIZE):
            out[b, j, base] = (held[b, j] + 1) / CARD_SCALE
            if out[b, j, 0] == 0:
                out[b, j, :] = 0.0
                continue
            below, above = 0.0, 0.0
            for i in range(HAND_SIZE):  # held cards come first, in ascending order
                if i != j and out[b, i, 0] > 0 and targets[b, i] == targets[b, j]:
                    if held[b, i] < held[b, j]:
                        below += 1.0
                    else:
                        above += 1.0
            out[b, j, base + 1] = below / 10.0
            out[b, j, base + 2] = above / 10.0
            if out[b, j, 1] > 0 or out[b, j, 2] > 0:  # a low card (R9; every card in the draft) or a full row (R8)
                risk = 1.0
            else:
                free = int(np.rint(ROW_LIMIT - out[b, j, 3] * ROW_LIMIT))  # places before the row is full
                p = min(out[b, j, 5] * 10.0 / unseen_all, 1.0) if unseen_all > 0 else 0.0
                risk = _binomial_tail(others, p, free)
            out[b, j, base + 3] = risk


@njit(cache=True)
def _binomial_tail(n: int, p: float, k: int) -> float:
    """P(X >= k) for X ~ Binomial(n, p) (1 for k <= 0, 0 for k > n)."""
    if k <= 0:
        return 1.0
    if k > n:
        return 0.0
    total, term = 0.0, (1.0 - p) ** n  # P(X = 0)
    for x in range(n + 1):
        if x >= k:
            total += term
        if x < n:
            term = term * (n - x) / (x + 1) * (p / (1.0 - p)) if p < 1.0 else (1.0 if x + 1 == n else 0.0)
    return min(total, 1.0)


def hand_features(obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The held cards' :data:`HAND_FEATURES` for observations ``(batch, 506)`` (the card policy's ``HandFeatures``).

    Returns:
        ``(features float32 (batch, 10, 12), held card indices int64 (batch, 10))``: the held cards in
        ascending order (card - 1), then distinct cards not in hand whose feature rows are 0.
    """
    held = np.empty((len(obs), HAND_SIZE), np.int64)
    out = np.empty((len(obs), HAND_SIZE, len(HAND_FEATURES)), np.float32)
    _hand_kernel(np.asarray(obs, np.float32), held, out)
    return out, held


def card_features(obs: np.ndarray, cards: np.ndarray) -> np.ndarray:
    """``float32 (batch, K, 8)``: the :data:`CARD_FEATURES` of card indices ``cards`` ``(batch, K)`` (card - 1)
    in observations ``obs`` ``(batch, 506)``, in numba (the features extractors of ``training.features`` call it)."""
    out = np.empty((*cards.shape, len(CARD_FEATURES)), np.float32)
    targets = np.empty(cards.shape, np.int64)  # scratch: the kernel fills it, only the hand features read it
    _card_features_kernel(
        np.asarray(obs, np.float32), np.ascontiguousarray(cards, np.int64), out, targets, np.empty(len(obs))
    )
    return out
