"""The compiled loop behind :func:`sixnimmt_env.compiled.fast_arena.play_games` (imported on first use: it loads numba).

A game is held in a few small local arrays (hands, the light rows, the draft display) and played round after round
through the kernel's functions and the batched agents' decisions, with no rule of its own:

- a round's set-up: :func:`~sixnimmt_env.rules.kernel.shuffle_deck` and :func:`~.kernel.hand_out` (R3, R14), or
  the draft (V2: :func:`~.kernel.open_display`, :func:`~.kernel.first_picker`, :func:`~.kernel.draft_into`,
  :func:`~.kernel.next_picker`, :func:`~.kernel.rows_from_display`) with the agents'
  :func:`~sixnimmt_env.compiled.heuristics.draft_card`;
- a turn: each seat's card (the agents' choice, :func:`~sixnimmt_env.compiled.heuristics.greedy_index` for ``greedy``)
  and :func:`~.kernel.remove_at` (R5), the low card's row (:func:`~.kernel.lowest_play`, :func:`~.kernel.target_row`,
  :func:`~.kernel.cheapest_row`, the agents' :func:`~sixnimmt_env.compiled.heuristics.row_index`; R9, R9a, R9b) and
  :func:`~.kernel.play_turn` (R6-R9);
- the end of the game: :func:`~.kernel.game_over` (R12).

Numba inlines every call (``inline="always"``). Two short compositions are written out as their calls, where going
through the composed function measured slower: :func:`~sixnimmt_env.compiled.heuristics.card_index`'s choice of a kind
(twice as slow through it: refcount operations on its array arguments) and the turn's low-card check
(:func:`~.kernel.low_card_seat` and :func:`~.kernel.rule_row`, 12 % slower). These are the calls
:class:`~sixnimmt_env.compiled.core.BatchedGames` makes, in the same order and with the same random draws, when
:class:`~sixnimmt_env.compiled.heuristics.HeuristicPlayers` plays it, so the same games (``tests/test_batched.py``); the
loop only leaves out what an observation needs (the rows' cards, the penalty piles, the phases).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from sixnimmt_env.compiled.heuristics import draft_card, greedy_index, row_index
from sixnimmt_env.compiled.kinds import HIGHEST, LOWEST, RANDOM
from sixnimmt_env.rules.engine import HAND_SIZE, NUM_CARDS, NUM_ROWS
from sixnimmt_env.rules.kernel import (
    C_CHEAPEST,
    C_DECK,
    C_LOGIC,
    C_N,
    cheapest_row,
    draft_into,
    first_picker,
    game_over,
    hand_out,
    lowest_play,
    next_picker,
    open_display,
    play_turn,
    random_below,
    remove_at,
    rows_from_display,
    shuffle_deck,
    target_row,
)


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
        cfg: the rules (:func:`~sixnimmt_env.rules.kernel.config_vector`).
        kinds: ``int8 (G, n)``: the kind code of each seat of each game (:data:`~sixnimmt_env.compiled.kinds.KINDS`).
        deal_rng, agent_rng: ``uint64 (G,)``: each game's deal stream and its agents' stream (consumed).
        penalties: ``int64 (G, n)``, filled with each seat's bullheads over the episode (R11, R12).
        rounds: ``int64 (G,)``, filled with the rounds each game played.
    """
    n = cfg[C_N]
    size = cfg[C_DECK]
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
            if cfg[C_LOGIC]:  # the draft (V2)
                open_display(display, size)
                seat = first_picker(played, n)
                for pick in range(n * HAND_SIZE):
                    k = pick // n
                    card = draft_card(kinds[g, seat], hand[seat], k, display, size, agent_rng, g)
                    draft_into(display, hand[seat], k, card)
                    seat = next_picker(seat, n)
                rows_from_display(display, size, ends, lens, costs, None)
            else:
                shuffle_deck(deck, size, n * HAND_SIZE + NUM_ROWS, deal_rng, g)
                hand_out(deck, n, hand, ends, lens, costs, None)
            for t in range(HAND_SIZE):  # a turn (R5-R9)
                k = HAND_SIZE - t
                for s in range(n):
                    # agents.card_index written out: called here (inlined), its array arguments cost refcount
                    # operations on every turn (half the loop's time, measured); the tests hold the two to the same
                    # games
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
                    remove_at(hand[s], j)
                # kernel.low_card_seat and kernel.rule_row written out as their calls: through those two functions
                # the loop ran 12 % slower (measured)
                low = lowest_play(plays, n)
                r = 0
                if target_row(ends, plays[low]) < 0:  # a low card: its row (R9, R9a, R9b)
                    r = cheapest_row(costs) if cfg[C_CHEAPEST] else row_index(kinds[g, low], costs, agent_rng, g)
                play_turn(ends, lens, costs, None, None, plays, n, totals, r)
            played += 1
            if game_over(cfg, totals, played):  # R12
                break
        for s in range(n):
            penalties[g, s] = totals[s]
        rounds[g] = played
