"""The heuristic agents of :mod:`sixnimmt_env.agents`, vectorised over a :class:`~.core.BatchedGames` batch.

One compiled call picks the action of every (game, seat) whose agent is a heuristic one, with exactly the
rules and tie-breaks of the reference agents (``tests/test_batched.py`` compares them position by position):

===========  ==========================  ======================  =======================================
kind         card selection (R5)         low-card row (R9)       logic-variant draft (V2)
===========  ==========================  ======================  =======================================
``random``   a uniformly random card     a uniformly random row  a uniformly random display card
``lowest``   its lowest card             the cheapest row        the lowest display card
``highest``  its highest card            the cheapest row        the highest display card
``greedy``   the lowest immediate cost   the cheapest row        balanced: lowest or highest card (*)
===========  ==========================  ======================  =======================================

(*) :func:`sixnimmt_env.agents.balanced_draft`: the lowest display card while at most half of the hand is low
(``2 c <= deck_size``), else the highest.

``random`` draws from a per-game splitmix64 stream (see :mod:`.core`), not from a ``numpy.random.Generator``:
the same seed gives the same choices here, but not the reference agent's choices.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numba import njit

from sixnimmt_env.batched.core import (
    C_DECK,
    C_N,
    CHOOSE_ROW,
    DONE,
    DRAFT,
    SELECT,
    BatchedGames,
    _cheapest_row,
    _row_cost,
    random_below,
)
from sixnimmt_env.engine import NOOP, NUM_ROWS, ROW_ACTION, ROW_LIMIT

EXTERNAL, RANDOM, LOWEST, HIGHEST, GREEDY = -1, 0, 1, 2, 3
KINDS: dict[str, int] = {"random": RANDOM, "lowest": LOWEST, "highest": HIGHEST, "greedy": GREEDY}
"""Agent spec -> kind code of the ``kinds`` arrays; ``EXTERNAL`` (-1) marks a seat whose action comes from elsewhere."""


def kind_codes(specs: Sequence[str]) -> np.ndarray:
    """``int8`` kind codes of heuristic agent specs, e.g. ``["greedy", "random"] -> [3, 0]``.

    Raises:
        ValueError: for a spec that is not one of ``random``, ``lowest``, ``highest``, ``greedy``.
    """
    out = []
    for spec in specs:
        if spec not in KINDS:
            raise ValueError(f"agent spec {spec!r} has no batched version; batched agents: {', '.join(KINDS)}")
        out.append(KINDS[spec])
    return np.array(out, np.int8)


@njit(cache=True, inline="always")
def greedy_index(hand: np.ndarray, hand_len: np.ndarray, rows: np.ndarray, row_len: np.ndarray, b: int, s: int) -> int:
    """Index into seat ``s``'s ascending hand of its card of lowest immediate cost (ties to the lower card).

    Cost (as :func:`sixnimmt_env.agents.greedy_card`): the bullheads of the card's row if it holds 5 cards
    (R8), the cheapest row's bullheads for a low card (R9), else 0.
    """
    low = 1 << 30
    for r in range(NUM_ROWS):
        low = min(low, _row_cost(rows, row_len, b, r))
    best, best_cost = 0, 1 << 30
    for k in range(hand_len[b, s]):
        c = hand[b, s, k]
        row, row_end = -1, 0
        for r in range(NUM_ROWS):
            end = rows[b, r, row_len[b, r] - 1]
            if row_end < end < c:
                row, row_end = r, end
        if row < 0:
            cost = low
        elif row_len[b, row] == ROW_LIMIT:
            cost = _row_cost(rows, row_len, b, row)
        else:
            return k
        if cost < best_cost:
            best, best_cost = k, cost
    return best


@njit(cache=True, inline="always")
def balanced_draft_low(hand: np.ndarray, hand_len: np.ndarray, deck_size: int, b: int, s: int) -> bool:
    """Whether the greedy draft rule (:func:`sixnimmt_env.agents.balanced_draft`, V2) takes the lowest display card:
    at most half of seat ``s``'s hand is low (a card ``c`` with ``2 c <= deck_size``); else it takes the highest."""
    k = hand_len[b, s]
    low = 0
    for j in range(k):
        if 2 * hand[b, s, j] <= deck_size:
            low += 1
    return 2 * low <= k


@njit(cache=True, inline="always")
def _display_card(display: np.ndarray, deck_size: int, kind: int, b: int, rng: np.ndarray) -> int:
    """The draft pick of ``kind`` (``random``, ``lowest`` or ``highest``) from game ``b``'s display (V2)."""
    if kind == RANDOM:
        count = 0
        for c in range(1, deck_size + 1):
            count += display[b, c]
        k = random_below(rng, b, count)
        for c in range(1, deck_size + 1):
            if display[b, c]:
                if k == 0:
                    return c
                k -= 1
    if kind == LOWEST:
        for c in range(1, deck_size + 1):
            if display[b, c]:
                return c
    for c in range(deck_size, 0, -1):  # HIGHEST
        if display[b, c]:
            return c
    return 0


@njit(cache=True)
def _heuristic_actions(S: tuple, cfg: np.ndarray, kinds: np.ndarray, out: np.ndarray, rng: np.ndarray) -> None:
    for b in range(out.shape[0]):
        heuristic_game_actions(S, cfg, kinds, out, rng, b)


@njit(cache=True, inline="always")
def heuristic_game_actions(
    S: tuple, cfg: np.ndarray, kinds: np.ndarray, out: np.ndarray, rng: np.ndarray, b: int
) -> None:
    """Write the action of every heuristic seat (``kinds[b, s] >= 0``) of game ``b`` into ``out[b]``."""
    phase, hand, hand_len, rows, row_len, display, chooser = S[0], S[1], S[2], S[3], S[4], S[6], S[10]
    p = phase[b]
    for s in range(cfg[C_N]):
        kind = kinds[b, s]
        if kind < 0:
            continue
        if p == DONE or (p != SELECT and chooser[b] != s):
            out[b, s] = NOOP
        elif p == SELECT:
            k = hand_len[b, s]
            if kind == RANDOM:
                j = random_below(rng, b, k)
            elif kind == LOWEST:
                j = 0
            elif kind == HIGHEST:
                j = k - 1
            else:
                j = greedy_index(hand, hand_len, rows, row_len, b, s)
            out[b, s] = hand[b, s, j] - 1
        elif p == CHOOSE_ROW:
            if kind == RANDOM:
                out[b, s] = ROW_ACTION + random_below(rng, b, NUM_ROWS)
            else:
                out[b, s] = ROW_ACTION + _cheapest_row(rows, row_len, b)
        elif p == DRAFT:
            if kind == GREEDY:
                kind = LOWEST if balanced_draft_low(hand, hand_len, cfg[C_DECK], b, s) else HIGHEST
            out[b, s] = _display_card(display, cfg[C_DECK], kind, b, rng) - 1


class HeuristicPlayers:
    """The heuristic agents of every (game, seat) of a batch, with their own random streams.

    Args:
        games: the batch they play in.
        kinds: ``int`` array of shape ``(n,)`` (the same agent per seat in every game) or ``(B, n)``, of kind
            codes (:data:`KINDS`, :func:`kind_codes`); ``EXTERNAL`` (-1) seats are left to the caller.
        seed: seeds the per-game streams of the ``random`` agents.

    Raises:
        ValueError: if ``kinds`` has the wrong shape or holds an unknown code.
    """

    def __init__(self, games: BatchedGames, kinds: np.ndarray, seed: int | None = None) -> None:
        B, n = games.batch_size, games.num_players
        kinds = np.asarray(kinds)
        if kinds.shape == (n,):
            kinds = np.broadcast_to(kinds, (B, n))
        if kinds.shape != (B, n):
            raise ValueError(f"kinds must have shape (num_players={n},) or (batch_size={B}, {n}), got {kinds.shape}")
        if kinds.size and (kinds.min() < EXTERNAL or kinds.max() > GREEDY):
            raise ValueError(f"kinds must be codes {EXTERNAL}..{GREEDY} ({KINDS}, -1 external), got {np.unique(kinds)}")
        self.games = games
        self.kinds = np.ascontiguousarray(kinds, np.int8)
        self.rng = np.random.SeedSequence(seed).generate_state(B, np.uint64)

    def act(self, out: np.ndarray) -> np.ndarray:
        """Write the action of every heuristic seat into ``out`` (``int64``, shape ``(B, n)``) and return it.

        Seats without a decision get the no-op 108; ``EXTERNAL`` seats are not touched.
        """
        g = self.games
        _heuristic_actions(g._S, g._cfg, self.kinds, out, self.rng)
        return out


@njit(cache=True)
def random_legal_actions(mask: np.ndarray, out: np.ndarray, rng: np.ndarray) -> None:
    """Uniformly random legal actions from masks: ``mask`` (B, n, 109) 0/1, ``out`` (B, n) int64, ``rng`` (B,) uint64.

    Seats with an all-zero mask (finished games) get the no-op 108.
    """
    for b in range(mask.shape[0]):
        for s in range(mask.shape[1]):
            count = 0
            for a in range(mask.shape[2]):
                count += mask[b, s, a]
            if count == 0:
                out[b, s] = NOOP
                continue
            k = random_below(rng, b, count)
            for a in range(mask.shape[2]):
                if mask[b, s, a]:
                    if k == 0:
                        out[b, s] = a
                        break
                    k -= 1
