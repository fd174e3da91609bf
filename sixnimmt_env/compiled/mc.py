"""``mc:N`` in compiled code: the rollouts of the reference Monte Carlo agent, and a batched player (issue 5).

The decision rule is the one of :class:`sixnimmt_env.agents.MonteCarloAgent` (its docstring is the definition):
sample N worlds by dealing the unseen cards to the opponents (as many each as the own hand holds); for every
candidate (a card of the hand in card selection, R5; a row for a low card, R9) play the turn (opponents greedy
against the current rows) and then the rest of the round with every seat greedy (a low card takes the cheapest
row); score each candidate by the sum over worlds of ``n * own - sum(all)`` bullheads (``(n - 1)`` times own minus
mean opponent, exact in integers); play the lowest score, ties to the lower card or row.

- :func:`select_scores` and :func:`row_scores`: the scores of every candidate on given worlds; the reference agent
  calls them for its rollouts. The rollouts play on the kernel's light rows (:func:`~.kernel.play_turn`, the
  ``greedy`` pick of :func:`~.agents.greedy_index`); ``tests/test_batched_mc.py`` compares their scores with
  rollouts through :func:`sixnimmt_env.rules.engine.step` on random positions.
- :class:`MonteCarloPlayers`: ``mc:N`` for chosen seats of a :class:`~sixnimmt_env.compiled.core.BatchedGames` batch,
  worlds sampled in compiled code from each game's splitmix64 stream (so not the reference agent's worlds for the
  same seed: the same rule, other samples).

Rows are given as ``ends`` (last card), ``lens`` (cards) and ``costs`` (bullheads, R2), one entry per row.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from sixnimmt_env.compiled.core import BatchedGames
from sixnimmt_env.compiled.heuristics import draft_card, greedy_index
from sixnimmt_env.compiled.kinds import GREEDY
from sixnimmt_env.rules.engine import HAND_SIZE, NOOP, NUM_ACTIONS, NUM_CARDS, NUM_ROWS, ROW_ACTION
from sixnimmt_env.rules.kernel import (
    C_DECK,
    C_N,
    CHOOSE_ROW,
    DONE,
    DRAFT,
    SELECT,
    GameArrays,
    cheapest_row,
    partial_shuffle,
    play_turn,
    remove_at,
    sort_small,
)

# --------------------------------------------------------------------------- rollouts on the kernel's light rows


@njit(cache=True, inline="always")
def _turn(
    ends: np.ndarray,
    lens: np.ndarray,
    costs: np.ndarray,
    plays: np.ndarray,
    n: int,
    pen: np.ndarray,
) -> None:
    """One turn of ``plays`` (one card per local seat) on the light rows; a low card takes the cheapest row (R6-R9)."""
    play_turn(ends, lens, costs, None, None, plays, n, pen, cheapest_row(costs))


@njit(cache=True, inline="always")
def _rollout(
    ends: np.ndarray,
    lens: np.ndarray,
    costs: np.ndarray,
    hands: np.ndarray,
    k: int,
    n: int,
    pen: np.ndarray,
) -> None:
    """Play the ``k`` remaining turns with every local seat greedy (``hands`` (n, >= k) ascending, consumed)."""
    plays = np.empty(n, np.int64)
    for t in range(k):
        left = k - t
        for s in range(n):
            j = greedy_index(hands, s, left, ends, lens, costs)
            plays[s] = hands[s, j]
            remove_at(hands[s], j)
        _turn(ends, lens, costs, plays, n, pen)


@njit(cache=True)
def _select_scores(
    hand: np.ndarray,
    ends0: np.ndarray,
    lens0: np.ndarray,
    costs0: np.ndarray,
    worlds: np.ndarray,
    out: np.ndarray,
    own_out: np.ndarray,
) -> None:
    k = hand.shape[0]
    n = worlds.shape[1] + 1
    ends, lens, costs = np.empty(NUM_ROWS, np.int64), np.empty(NUM_ROWS, np.int64), np.empty(NUM_ROWS, np.int64)
    opp_plays = np.empty(n - 1, np.int64)
    plays = np.empty(n, np.int64)
    hands = np.empty((n, max(k - 1, 1)), np.int64)
    pen = np.empty(n, np.int64)
    out[:] = 0
    own_out[:] = 0
    for w in range(worlds.shape[0]):
        for j in range(n - 1):
            opp_plays[j] = worlds[w, j, greedy_index(worlds[w], j, k, ends0, lens0, costs0)]
        for i in range(k):
            ends[:] = ends0
            lens[:] = lens0
            costs[:] = costs0
            pen[:] = 0
            plays[0] = hand[i]
            plays[1:] = opp_plays
            _turn(ends, lens, costs, plays, n, pen)
            m = 0
            for q in range(k):
                if q != i:
                    hands[0, m] = hand[q]
                    m += 1
            for j in range(n - 1):
                m = 0
                for q in range(k):
                    if worlds[w, j, q] != opp_plays[j]:
                        hands[j + 1, m] = worlds[w, j, q]
                        m += 1
            _rollout(ends, lens, costs, hands, k - 1, n, pen)
            out[i] += n * pen[0] - pen.sum()
            own_out[i] += pen[0]


@njit(cache=True)
def _row_scores(
    own: int,
    others: np.ndarray,
    hand: np.ndarray,
    ends0: np.ndarray,
    lens0: np.ndarray,
    costs0: np.ndarray,
    worlds: np.ndarray,
    out: np.ndarray,
    own_out: np.ndarray,
) -> None:
    k = hand.shape[0]
    n = others.shape[0] + 1
    ends, lens, costs = np.empty(NUM_ROWS, np.int64), np.empty(NUM_ROWS, np.int64), np.empty(NUM_ROWS, np.int64)
    hands = np.empty((n, max(k, 1)), np.int64)
    pen = np.empty(n, np.int64)
    plays = np.empty(n, np.int64)
    plays[0] = own
    plays[1:] = others
    out[:] = 0
    own_out[:] = 0
    for w in range(worlds.shape[0]):
        for r in range(NUM_ROWS):
            ends[:] = ends0
            lens[:] = lens0
            costs[:] = costs0
            pen[:] = 0
            play_turn(ends, lens, costs, None, None, plays, n, pen, r)  # the low card takes row r (R9)
            hands[0, :k] = hand
            for j in range(n - 1):
                hands[j + 1, :k] = worlds[w, j, :k]
            _rollout(ends, lens, costs, hands, k, n, pen)
            out[r] += n * pen[0] - pen.sum()
            own_out[r] += pen[0]


def _rows(ends: object, lens: object, costs: object) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return np.asarray(ends, np.int64), np.asarray(lens, np.int64), np.asarray(costs, np.int64)


def select_scores(
    hand: object,
    ends: object,
    lens: object,
    costs: object,
    worlds: np.ndarray,
    own_out: np.ndarray | None = None,
) -> np.ndarray:
    """Scores of playing each card of ``hand`` (R5), summed over ``worlds``.

    Args:
        hand: the own cards, ascending (k >= 1 of 1..104).
        ends, lens, costs: the 4 rows (last card, length 1..5, bullheads).
        worlds: ``(N, n - 1, k)`` integer array: per world, each opponent's hand, ascending.
        own_out: if given, an ``int64 (k,)`` array filled with, per card, the sum over worlds of the own
            bullheads alone from this turn to the end of the round.

    Returns:
        ``int64 (k,)``: per card, the sum over worlds of ``n * own - sum(all)`` bullheads from this turn to the end
        of the round (lower is better), exactly as :class:`sixnimmt_env.agents.MonteCarloAgent` sums them.
    """
    hand = np.asarray(hand, np.int64)
    out = np.zeros(len(hand), np.int64)
    own = np.zeros(len(hand), np.int64) if own_out is None else own_out
    _select_scores(hand, *_rows(ends, lens, costs), np.asarray(worlds, np.int64), out, own)
    return out


def row_scores(
    own: int,
    others: object,
    hand: object,
    ends: object,
    lens: object,
    costs: object,
    worlds: np.ndarray,
    own_out: np.ndarray | None = None,
) -> np.ndarray:
    """Scores of taking each row with the low card ``own`` (R9, R9a), summed over ``worlds``.

    Args:
        own: the chooser's revealed (low) card.
        others: the other seats' revealed cards this turn (any order).
        hand: the chooser's remaining hand, ascending (k >= 0).
        ends, lens, costs: the 4 rows as they stood at the start of the turn.
        worlds: ``(N, n - 1, k)``: per world, each opponent's remaining hand, ascending.
        own_out: if given, an ``int64 (4,)`` array filled with, per row, the sum over worlds of the chooser's own
            bullheads alone (the row taken included) to the end of the round.

    Returns:
        ``int64 (4,)``: per row, the sum over worlds of ``n * own - sum(all)`` bullheads to the end of the round.
    """
    out = np.zeros(NUM_ROWS, np.int64)
    opponents = np.asarray(others, np.int64)
    _row_scores(
        int(own),
        opponents,
        np.asarray(hand, np.int64),
        *_rows(ends, lens, costs),
        np.asarray(worlds, np.int64).reshape(len(worlds), len(opponents), -1),  # k = 0: an empty third axis
        out,
        np.zeros(NUM_ROWS, np.int64) if own_out is None else own_out,
    )
    return out


# --------------------------------------------------------------------------- batched player


@njit(cache=True)
def _mc_actions(
    S: GameArrays,
    cfg: np.ndarray,
    mc: np.ndarray,
    samples: int,
    out: np.ndarray,
    rng: np.ndarray,
    scores_out: np.ndarray,
    own_out: np.ndarray,
) -> None:
    phase, hand, hand_len, rows, row_len, row_end, row_bull, pile, display, revealed, chooser = (
        S.phase, S.hand, S.hand_len, S.rows, S.row_len, S.row_end, S.row_bull, S.pile, S.display, S.revealed, S.chooser
    )  # fmt: skip
    phase, hand, hand_len, rows, row_len, pile, display, revealed, chooser = (
        phase, hand, hand_len, rows, row_len, pile, display, revealed, chooser,
    )  # fmt: skip
    n = cfg[C_N]
    size = cfg[C_DECK]
    known = np.zeros(NUM_CARDS + 1, np.bool_)
    unseen = np.empty(NUM_CARDS, np.int64)
    worlds = np.empty((samples, n - 1, HAND_SIZE), np.int64)
    ends, lens, costs = np.empty(NUM_ROWS, np.int64), np.empty(NUM_ROWS, np.int64), np.empty(NUM_ROWS, np.int64)
    scores = np.empty(HAND_SIZE, np.int64)
    own_scratch = np.empty(HAND_SIZE, np.int64)
    row_totals = np.empty(NUM_ROWS, np.int64)
    others = np.empty(n - 1, np.int64)
    keep = scores_out.shape[0] > 0  # also write every candidate's mean score and own bullheads
    for b in range(out.shape[0]):
        p = phase[b]
        for s in range(n):
            if not mc[b, s]:
                continue
            if p == DONE or (p != SELECT and chooser[b] != s):
                out[b, s] = NOOP
                continue
            if p == DRAFT:  # the greedy draft rule (balanced_draft, V2; it draws no random number)
                out[b, s] = draft_card(GREEDY, hand[b, s], hand_len[b, s], display[b], size, rng, b) - 1
                continue
            k = hand_len[b, s]
            if p == SELECT and k == 1:
                out[b, s] = hand[b, s, 0] - 1
                continue
            # the cards this seat has not seen (its hand, the rows, the piles, a pending turn's cards: R4)
            known[:] = False
            for j in range(k):
                known[hand[b, s, j]] = True
            for r in range(NUM_ROWS):
                for j in range(row_len[b, r]):
                    known[rows[b, r, j]] = True
                ends[r] = row_end[b, r]
                lens[r] = row_len[b, r]
                costs[r] = row_bull[b, r]
            if p == CHOOSE_ROW:
                for q in range(n):
                    known[revealed[b, q]] = True
            m = 0
            for c in range(1, size + 1):
                if not known[c] and pile[b, c] < 0:
                    unseen[m] = c
                    m += 1
            need = (n - 1) * k
            nw = samples if k > 0 else 1
            for w in range(nw):  # a uniform deal of the unseen cards
                partial_shuffle(unseen, m, need, rng, b)
                for q in range(n - 1):
                    for i in range(k):
                        worlds[w, q, i] = unseen[q * k + i]
                    sort_small(worlds[w, q], k)
            own_hand = hand[b, s, :k].astype(np.int64)
            if p == SELECT:
                _select_scores(own_hand, ends, lens, costs, worlds[:nw, :, :k], scores[:k], own_scratch[:k])
                best = 0
                for i in range(1, k):
                    if scores[i] < scores[best]:
                        best = i
                out[b, s] = hand[b, s, best] - 1
                if keep:
                    for i in range(k):
                        scores_out[b, s, hand[b, s, i] - 1] = scores[i] / (nw * (n - 1))
                        own_out[b, s, hand[b, s, i] - 1] = own_scratch[i] / nw
            else:
                m = 0
                for q in range(n):
                    if q != s:
                        others[m] = revealed[b, q]
                        m += 1
                _row_scores(
                    revealed[b, s],
                    others,
                    own_hand,
                    ends,
                    lens,
                    costs,
                    worlds[:nw, :, :k],
                    row_totals,
                    own_scratch[:NUM_ROWS],
                )
                out[b, s] = ROW_ACTION + cheapest_row(row_totals)
                if keep:
                    for r in range(NUM_ROWS):
                        scores_out[b, s, ROW_ACTION + r] = row_totals[r] / (nw * (n - 1))
                        own_out[b, s, ROW_ACTION + r] = own_scratch[r] / nw


class MonteCarloPlayers:
    """``mc:N`` at chosen seats of a batch: card selection (R5), low-card row choice (R9) and draft pick (V2, the
    greedy rule :func:`sixnimmt_env.agents.balanced_draft`), by the reference agent's rules.

    Args:
        games: the batch they play in.
        seats: ``bool`` array of shape ``(n,)`` or ``(B, n)``: where ``mc:N`` sits.
        samples: N, worlds per decision (>= 1).
        seed: seeds the per-game streams that deal the worlds.

    Raises:
        ValueError: a bad ``samples`` or a ``seats`` array of the wrong shape.
    """

    def __init__(self, games: BatchedGames, seats: np.ndarray, samples: int, seed: int | None = None) -> None:
        if isinstance(samples, bool) or not isinstance(samples, int | np.integer) or samples < 1:
            raise ValueError(f"mc samples must be a positive integer, got {samples!r}")
        B, n = games.batch_size, games.num_players
        seats = np.asarray(seats, np.bool_)
        if seats.shape == (n,):
            seats = np.broadcast_to(seats, (B, n))
        if seats.shape != (B, n):
            raise ValueError(f"seats must have shape (num_players={n},) or (batch_size={B}, {n}), got {seats.shape}")
        self.games = games
        self.seats = np.ascontiguousarray(seats)
        self.samples = int(samples)
        self.rng = np.random.SeedSequence(seed).generate_state(B, np.uint64)

    def act(self, out: np.ndarray, scores: np.ndarray | None = None, own: np.ndarray | None = None) -> np.ndarray:
        """Write the action of every ``mc:N`` seat into ``out`` (``int64 (B, n)``) and return it; others untouched.

        ``scores`` and ``own`` (``float64 (B, n, 109)``, both or neither): where given, the searched candidates of
        each ``mc:N`` seat's decision get their mean score over the worlds, in bullheads of the own penalty minus
        the opponents' mean from this turn to the end of the round (lower is better; the action played is the
        lowest), and their mean own bullheads; other entries are left as they are (no score for the draft, a
        forced last card or a seat without a decision). These are the labels of search distillation
        (``training/distill.py``).
        """
        g = self.games
        if (scores is None) != (own is None):
            raise ValueError("give both scores and own, or neither")
        if scores is None or own is None:
            scores = own = np.zeros((0, 0, 0), np.float64)
        else:
            shape = (g.batch_size, g.num_players, NUM_ACTIONS)
            for name, a in (("scores", scores), ("own", own)):
                if a.shape != shape or a.dtype != np.float64:
                    raise ValueError(f"{name} must be a float64 array of shape {shape}, got {a.dtype} {a.shape}")
        _mc_actions(g.arrays, g.cfg, self.seats, self.samples, out, self.rng, scores, own)
        return out
