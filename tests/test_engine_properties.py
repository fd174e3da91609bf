"""Invariants of the engine over random games (hypothesis).

Whole games with random legal actions, over random seeds, 2..10 players, every
variant and both row-choice modes; after every step we check that each card of
the deck is in exactly one place, the rows are well formed, the bullheads taken
add up, every live seat can act, and that the same seeds replay the same game.
The default run is small for CI; ``-m slow`` runs many more examples.
"""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sixnimmt_env.rules.engine import (
    BULLHEADS,
    CHOOSE_ROW,
    DONE,
    DRAFT,
    NOOP,
    ROW_LIMIT,
    SELECT,
    GameConfig,
    State,
    legal_actions,
    new_game,
    step,
    step_unchecked,
    view,
)


def acting_seats(state: State) -> tuple[int, ...]:
    """Seats with a real decision: all in ``select``, the chooser in ``choose_row``/``draft``, none when done."""
    if state.phase == SELECT:
        return tuple(range(len(state.hands)))
    if state.phase == DONE:
        return ()
    return (state.chooser,)


configs = st.builds(
    GameConfig,
    num_players=st.integers(2, 10),
    variant=st.sampled_from(["standard", "tactics", "logic"]),
    row_choice=st.sampled_from(["player", "cheapest"]),
    end_score=st.sampled_from([66, 30, 10]),
    end_rule=st.sampled_from(["at_least", "more_than"]),
    max_rounds=st.sampled_from([1, 2]),  # keeps games short
    episode=st.sampled_from(["game", "round"]),
)


def check_invariants(state: State, round_start_totals: tuple[int, ...], round_taken: list[int]) -> None:
    """Every invariant of one state; ``round_taken`` sums the penalties returned this round."""
    n = state.config.num_players
    deck = state.config.deck_size
    # every card of the deck in exactly one place (piles count per round: they reset with each deal, R14)
    places = [c for h in state.hands for c in h]
    places += [c for r in state.rows for c in r]
    places += [c for p in state.piles for c in p]
    places += list(state.stock) + list(state.display)
    if state.phase == CHOOSE_ROW:  # the turn's cards left the hands and wait to be placed (R9a)
        places += list(state.revealed)
    assert Counter(places) == Counter(range(1, deck + 1))
    # rows ascend and hold 1..5 cards; empty during the draft
    if state.phase == DRAFT:
        assert state.rows == ()
    else:
        assert len(state.rows) == 4
        for row in state.rows:
            assert 1 <= len(row) <= ROW_LIMIT
            assert list(row) == sorted(set(row))
    # bullheads taken == penalties returned == pile bullheads == totals gained this round
    piles = [sum(BULLHEADS[c] for c in p) for p in state.piles]
    assert piles == round_taken == list(state.round_penalties)
    assert [t - s for t, s in zip(state.totals, round_start_totals, strict=True)] == round_taken
    # legal actions: every live seat has at least one; exactly the acting seats decide
    for seat in range(n):
        legal = legal_actions(state, seat)
        assert list(legal) == view(state, seat)["legal_actions"]
        if state.phase == DONE:
            assert legal == ()
        elif seat in acting_seats(state):
            assert legal and NOOP not in legal
        else:
            assert legal == (NOOP,)
    if state.phase == SELECT:
        assert len({len(h) for h in state.hands}) == 1
        assert len(state.hands[0]) == 10 - state.turn
        assert acting_seats(state) == tuple(range(n))
    if state.phase == DRAFT:
        assert max(len(h) for h in state.hands) - min(len(h) for h in state.hands) <= 1


def play_game(config: GameConfig, seed: int, unchecked: bool = False) -> list[tuple[State, tuple[int, ...]]]:
    """A whole game with random legal actions, checking invariants after every step; returns the trajectory."""
    rng, pick = np.random.default_rng(seed), random.Random(seed)
    state = new_game(config, rng)
    trajectory = [(state, ())]
    start_totals, taken = state.totals, [0] * config.num_players
    check_invariants(state, start_totals, taken)
    for _ in range(5000):
        if state.phase == DONE:
            break
        actions = [pick.choice(legal_actions(state, s)) for s in range(config.num_players)]
        before = state
        state, penalties = (step_unchecked if unchecked else step)(state, actions, rng)
        assert len(penalties) == config.num_players and min(penalties) >= 0
        assert [t - b for t, b in zip(state.totals, before.totals, strict=True)] == list(penalties)
        if state.round != before.round:  # a new deal (R14): piles and round penalties start again
            assert state.round == before.round + 1 and state.turn == 0
            start_totals, taken = state.totals, [0] * config.num_players
        else:
            taken = [a + b for a, b in zip(taken, penalties, strict=True)]
        check_invariants(state, start_totals, taken)
        trajectory.append((state, penalties))
    assert state.phase == DONE
    return trajectory


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(config=configs, seed=st.integers(0, 2**32 - 1))
def test_random_games_keep_every_invariant(config: GameConfig, seed: int) -> None:
    play_game(config, seed)


@settings(max_examples=15, deadline=None)
@given(config=configs, seed=st.integers(0, 2**32 - 1))
def test_same_seed_same_game(config: GameConfig, seed: int) -> None:
    first = play_game(config, seed)
    assert play_game(config, seed) == first
    assert play_game(config, seed, unchecked=True) == first  # step_unchecked agrees with step on legal play


@pytest.mark.slow
@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(config=configs, seed=st.integers(0, 2**32 - 1))
def test_random_games_keep_every_invariant_slow(config: GameConfig, seed: int) -> None:
    play_game(config, seed)


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(2, 10), seed=st.integers(0, 2**32 - 1))
def test_full_games_to_66_keep_every_invariant_slow(n: int, seed: int) -> None:
    play_game(GameConfig(num_players=n), seed)
