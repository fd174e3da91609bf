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

from sixnimmt_env.compiled.core import BatchedGames
from sixnimmt_env.compiled.kinds import EXTERNAL, GREEDY, HIGHEST, KINDS, LOWEST, RANDOM
from sixnimmt_env.rules.engine import NOOP, NUM_ROWS, ROW_ACTION, ROW_LIMIT
from sixnimmt_env.rules.kernel import (
    C_DECK,
    C_N,
    CHOOSE_ROW,
    DONE,
    DRAFT,
    SELECT,
    GameArrays,
    cheapest_row,
    random_below,
    target_row,
)

__all__ = ["EXTERNAL", "GREEDY", "HIGHEST", "KINDS", "LOWEST", "RANDOM", "HeuristicPlayers", "kind_codes"]


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
def greedy_index(hands: np.ndarray, s: int, k: int, ends: np.ndarray, lens: np.ndarray, costs: np.ndarray) -> int:
    """Index into the ascending hand ``hands[s, :k]`` of its card of lowest immediate cost, ties to the lower card.

    The cost is :func:`~sixnimmt_env.rules.kernel.immediate_cost` on the light rows ``ends``, ``lens``,
    ``costs`` (as :func:`sixnimmt_env.agents.greedy_card`), written out with the cheapest row computed once: the
    first card that takes nothing is played at once.
    """
    low = costs[cheapest_row(costs)]  # immediate_cost of every low card, computed once
    best, best_cost = 0, 1 << 30
    for i in range(k):
        r = target_row(ends, hands[s, i])
        if r < 0:
            cost = low
        elif lens[r] == ROW_LIMIT:
            cost = costs[r]
        else:
            return i
        if cost < best_cost:
            best, best_cost = i, cost
    return best


@njit(cache=True, inline="always")
def balanced_draft_low(hand: np.ndarray, k: int, deck_size: int) -> bool:
    """Whether the greedy draft rule (:func:`sixnimmt_env.agents.balanced_draft`, V2) takes the lowest display card:
    at most half of the hand ``hand[:k]`` is low (a card ``c`` with ``2 c <= deck_size``); else it takes the highest."""
    low = 0
    for j in range(k):
        if 2 * hand[j] <= deck_size:
            low += 1
    return 2 * low <= k


@njit(cache=True, inline="always")
def _display_card(display: np.ndarray, deck_size: int, kind: int, rng: np.ndarray, b: int) -> int:
    """The draft pick of ``kind`` (``random``, ``lowest`` or ``highest``) from the display (105,) (V2); a random
    pick draws from ``rng[b]``."""
    if kind == RANDOM:
        count = 0
        for c in range(1, deck_size + 1):
            count += display[c]
        k = random_below(rng, b, count)
        for c in range(1, deck_size + 1):
            if display[c]:
                if k == 0:
                    return c
                k -= 1
    if kind == LOWEST:
        for c in range(1, deck_size + 1):
            if display[c]:
                return c
    for c in range(deck_size, 0, -1):  # HIGHEST
        if display[c]:
            return c
    return 0


@njit(cache=True, inline="always")
def card_index(
    kind: int,
    hands: np.ndarray,
    s: int,
    k: int,
    ends: np.ndarray,
    lens: np.ndarray,
    costs: np.ndarray,
    rng: np.ndarray,
    b: int,
) -> int:
    """Card selection (R5) of a heuristic ``kind`` for seat ``s``: an index into its ascending hand ``hands[s, :k]``
    (k >= 1).

    ``random`` draws once from ``rng[b]``; ``greedy`` reads the light rows (:func:`greedy_index`).
    """
    j = 0  # LOWEST
    if kind == HIGHEST:
        j = k - 1
    elif kind == RANDOM:
        j = random_below(rng, b, k)
    elif kind == GREEDY:
        j = greedy_index(hands, s, k, ends, lens, costs)
    return j


@njit(cache=True, inline="always")
def row_index(kind: int, costs: np.ndarray, rng: np.ndarray, b: int) -> int:
    """Low-card row choice (R9) of a heuristic ``kind``: a random row (one draw from ``rng[b]``), else the
    cheapest row (:func:`~sixnimmt_env.rules.kernel.cheapest_row`)."""
    if kind == RANDOM:
        return random_below(rng, b, NUM_ROWS)
    return cheapest_row(costs)


@njit(cache=True, inline="always")
def draft_card(
    kind: int, hand: np.ndarray, k: int, display: np.ndarray, deck_size: int, rng: np.ndarray, b: int
) -> int:
    """Draft pick (V2) of a heuristic ``kind`` from ``display`` (105,) bool, holding ``hand[:k]``: a card value."""
    if kind == GREEDY:
        kind = LOWEST if balanced_draft_low(hand, k, deck_size) else HIGHEST
    return _display_card(display, deck_size, kind, rng, b)


@njit(cache=True)
def _heuristic_actions(S: GameArrays, cfg: np.ndarray, kinds: np.ndarray, out: np.ndarray, rng: np.ndarray) -> None:
    for b in range(out.shape[0]):
        heuristic_game_actions(S, cfg, kinds, out, rng, b)


@njit(cache=True, inline="always")
def heuristic_game_actions(
    S: GameArrays, cfg: np.ndarray, kinds: np.ndarray, out: np.ndarray, rng: np.ndarray, b: int
) -> None:
    """Write the action of every heuristic seat (``kinds[b, s] >= 0``) of game ``b`` into ``out[b]``.

    Seats are served in seat order, each ``random`` decision drawing once from ``rng[b]``.
    """
    phase, hand, hand_len, row_len, row_end, row_bull, display, chooser = (
        S.phase, S.hand, S.hand_len, S.row_len, S.row_end, S.row_bull, S.display, S.chooser
    )  # fmt: skip
    p = phase[b]
    for s in range(cfg[C_N]):
        kind = kinds[b, s]
        if kind < 0:
            continue
        if p == DONE or (p != SELECT and chooser[b] != s):
            out[b, s] = NOOP
        elif p == SELECT:
            j = card_index(kind, hand[b], s, hand_len[b, s], row_end[b], row_len[b], row_bull[b], rng, b)
            out[b, s] = hand[b, s, j] - 1
        elif p == CHOOSE_ROW:
            out[b, s] = ROW_ACTION + row_index(kind, row_bull[b], rng, b)
        elif p == DRAFT:
            out[b, s] = draft_card(kind, hand[b, s], hand_len[b, s], display[b], cfg[C_DECK], rng, b) - 1


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
        _heuristic_actions(g.arrays, g.cfg, self.kinds, out, self.rng)
        return out
