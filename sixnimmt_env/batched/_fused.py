"""The compiled loop behind :func:`sixnimmt_env.batched.fast_arena.play_games` (imported on first use: it loads numba).

A game is held in a few small local arrays (hands, the light rows, the draft display) and played turn after turn
with the kernel's rules (:func:`~sixnimmt_env.batched.kernel.play_turn`, :func:`~.kernel.target_row`, the deal of
:func:`~.kernel.shuffle_deck`) and the agents' decisions (:func:`~sixnimmt_env.batched.agents.card_index`,
:func:`~.agents.row_index`, :func:`~.agents.draft_card`): the same calls, in the same order, with the same random
draws, as :class:`~sixnimmt_env.batched.core.BatchedGames` stepped by
:class:`~sixnimmt_env.batched.agents.HeuristicPlayers`, so the same games (tested), without keeping what only an
observation needs (the rows' cards, the penalty piles).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from sixnimmt_env.batched.agents import draft_card, greedy_index, row_index
from sixnimmt_env.batched.kernel import (
    BULL,
    C_CHEAPEST,
    C_DECK,
    C_LOGIC,
    C_N,
    cheapest_row,
    game_over,
    lowest_play,
    play_turn,
    random_below,
    shuffle_deck,
    sort_hands,
    target_row,
)
from sixnimmt_env.batched.kinds import HIGHEST, LOWEST, RANDOM
from sixnimmt_env.engine import HAND_SIZE, NUM_CARDS, NUM_ROWS


@njit(cache=True, inline="always")
def _draft_round(
    cfg: np.ndarray,
    kinds: np.ndarray,
    g: int,
    first: int,
    hand: np.ndarray,
    display: np.ndarray,
    ends: np.ndarray,
    lens: np.ndarray,
    costs: np.ndarray,
    rng: np.ndarray,
) -> None:
    """The logic variant's draft (V2): picks in seat order from ``first`` until every hand holds 10; the 4 cards
    left start the rows."""
    n = cfg[C_N]
    size = cfg[C_DECK]
    for c in range(1, size + 1):
        display[c] = True
    seat = first
    for pick in range(n * HAND_SIZE):
        k = pick // n
        card = draft_card(kinds[g, seat], hand[seat], k, display, size, rng, g)
        display[card] = False
        j = k
        while j > 0 and hand[seat, j - 1] > card:
            hand[seat, j] = hand[seat, j - 1]
            j -= 1
        hand[seat, j] = card
        seat = (seat + 1) % n
    r = 0
    for c in range(1, size + 1):
        if display[c]:
            display[c] = False
            ends[r], lens[r], costs[r] = c, 1, BULL[c]
            r += 1


@njit(cache=True, inline="always")
def cheapest_row_or_choice(
    cfg: np.ndarray, kinds: np.ndarray, g: int, seat: int, costs: np.ndarray, rng: np.ndarray
) -> int:
    """The row a low card takes: the cheapest with ``row_choice="cheapest"`` (R9b), else its owner's choice."""
    if cfg[C_CHEAPEST]:
        return cheapest_row(costs)
    return row_index(kinds[g, seat], costs, rng, g)


@njit(cache=True)
def play_chunk(
    cfg: np.ndarray,
    kinds: np.ndarray,
    deal_rng: np.ndarray,
    agent_rng: np.ndarray,
    penalties: np.ndarray,
    rounds: np.ndarray,
) -> None:
    """Play one game per row of ``kinds`` to its end, every seat a heuristic agent, in one compiled call.

    Args:
        cfg: the rules (:func:`~sixnimmt_env.batched.kernel.config_vector`).
        kinds: ``int8 (G, n)``: the kind code of each seat of each game (:data:`~sixnimmt_env.batched.kinds.KINDS`).
        deal_rng, agent_rng: ``uint64 (G,)``: each game's deal stream and its agents' stream (consumed).
        penalties: ``int64 (G, n)``, filled with each seat's bullheads over the episode (R11, R12).
        rounds: ``int64 (G,)``, filled with the rounds each game played.
    """
    n = cfg[C_N]
    size = cfg[C_DECK]
    k_dealt = n * HAND_SIZE
    deck = np.zeros(NUM_CARDS, np.int64)
    hand = np.zeros((n, HAND_SIZE), np.int64)
    ends = np.zeros(NUM_ROWS, np.int64)
    lens = np.zeros(NUM_ROWS, np.int64)
    costs = np.zeros(NUM_ROWS, np.int64)
    display = np.zeros(NUM_CARDS + 1, np.bool_)
    plays = np.zeros(n, np.int64)
    totals = np.zeros(n, np.int64)
    for g in range(kinds.shape[0]):
        for s in range(n):
            totals[s] = 0
        played = 0
        while True:  # one round (R3, R11, R14)
            if cfg[C_LOGIC]:
                _draft_round(cfg, kinds, g, played % n, hand, display, ends, lens, costs, agent_rng)
            else:
                shuffle_deck(deck, size, k_dealt + NUM_ROWS, deal_rng, g)
                sort_hands(deck, n)
                for s in range(n):
                    for j in range(HAND_SIZE):
                        hand[s, j] = deck[s * HAND_SIZE + j]
                for r in range(NUM_ROWS):
                    c = deck[k_dealt + r]
                    ends[r], lens[r], costs[r] = c, 1, BULL[c]
            for t in range(HAND_SIZE):  # a turn (R5-R9)
                k = HAND_SIZE - t
                for s in range(n):
                    # agents.card_index written out: inlined as a call, its array arguments cost refcount
                    # operations on every turn (half the loop's time); the tests hold the two to the same games
                    kind = kinds[g, s]
                    if kind == LOWEST:
                        j = 0
                    elif kind == HIGHEST:
                        j = k - 1
                    elif kind == RANDOM:
                        j = random_below(agent_rng, g, k)
                    else:
                        j = greedy_index(hand, s, k, ends, lens, costs)
                    plays[s] = hand[s, j]
                    # the cards after j move up one place: a loop of fixed length (a mispredicted exit of a loop of
                    # k - 1 - j steps cost more than the moves); the places from k on hold played cards, never read
                    for i in range(HAND_SIZE - 1):
                        hand[s, i] = hand[s, i + (i >= j)]
                low = lowest_play(plays, n)
                r = 0
                if target_row(ends, plays[low]) < 0:  # a low card: its row (R9, R9a, R9b)
                    r = cheapest_row_or_choice(cfg, kinds, g, low, costs, agent_rng)
                play_turn(ends, lens, costs, None, None, plays, n, totals, r)
            played += 1
            if game_over(cfg, totals, played):  # R12
                break
        for s in range(n):
            penalties[g, s] = totals[s]
        rounds[g] = played
