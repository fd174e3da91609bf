"""Rule table of the engine: every rule of `RULES.md` (R1-R14, V1, V2, E1-E4) has cases here.

Each case id starts with the rule it pins. Positions are built with
:func:`from_position`; plays are card values (select) or a row index (the
pending low-card choice of the chooser). The expected rows, penalties,
rewards (minus the penalties) and piles are written out by hand.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import numpy as np
import pytest

from sixnimmt_env.rules.engine import (
    BULLHEADS,
    CHOOSE_ROW,
    DONE,
    DRAFT,
    NOOP,
    ROW_ACTION,
    SELECT,
    GameConfig,
    IllegalActionError,
    State,
    bullheads,
    cheapest_row,
    from_position,
    legal_actions,
    new_game,
    row_bullheads,
    row_for,
    step,
    view,
    winners,
)

Step = Sequence[int] | int
"""One step of a case: the card each seat plays, or the row index the chooser takes."""


def actions_for(state: State, play: Step) -> list[int]:
    """The joint action of one case step (cards -> actions ``c - 1``; a row -> the chooser's row action)."""
    n = state.config.num_players
    if isinstance(play, int):
        assert state.phase == CHOOSE_ROW
        return [ROW_ACTION + play if s == state.chooser else NOOP for s in range(n)]
    assert state.phase == SELECT
    return [c - 1 for c in play]


def run(
    config: GameConfig, hands: list[list[int]], rows: list[list[int]], plays: Sequence[Step], totals=None, rng=None
) -> tuple[State, list[int], list[tuple[int, ...]]]:
    """Play ``plays`` from a position; return the last state, summed penalties and each step's penalties."""
    state = from_position(config, hands, rows, totals)
    summed = [0] * config.num_players
    per_step = []
    for play in plays:
        state, penalties = step(state, actions_for(state, play), rng)
        per_step.append(penalties)
        summed = [a + b for a, b in zip(summed, penalties, strict=True)]
    return state, summed, per_step


def random_legal(state: State, rng: random.Random) -> list[int]:
    return [rng.choice(legal_actions(state, s)) for s in range(state.config.num_players)]


# --------------------------------------------------------------------------- R1, R2: cards


def test_R1_the_deck_is_1_to_104_each_once() -> None:
    state = new_game(GameConfig(num_players=10), np.random.default_rng(0))
    cards = [c for h in state.hands for c in h] + [c for r in state.rows for c in r] + list(state.stock)
    assert sorted(cards) == list(range(1, 105))


@pytest.mark.parametrize(
    ("card", "expected"),
    [
        pytest.param(55, 7, id="R2-55-is-7"),
        pytest.param(11, 5, id="R2-multiple-of-11-is-5"),
        pytest.param(99, 5, id="R2-99-is-5"),
        pytest.param(10, 3, id="R2-multiple-of-10-is-3"),
        pytest.param(100, 3, id="R2-100-is-3"),
        pytest.param(5, 2, id="R2-multiple-of-5-is-2"),
        pytest.param(95, 2, id="R2-95-is-2"),
        pytest.param(1, 1, id="R2-other-is-1"),
        pytest.param(54, 1, id="R2-54-is-1"),
        pytest.param(104, 1, id="R2-104-is-1"),
    ],
)
def test_R2_bullheads_by_category(card: int, expected: int) -> None:
    assert bullheads(card) == expected
    assert BULLHEADS[card] == expected


def test_R2_deck_totals() -> None:
    assert sum(bullheads(c) for c in range(1, 105)) == 171
    assert row_bullheads((11, 22, 33, 44, 55)) == 27
    counts = {k: sum(1 for c in range(1, 105) if bullheads(c) == k) for k in (1, 2, 3, 5, 7)}
    assert counts == {7: 1, 5: 8, 3: 10, 2: 9, 1: 76}


@pytest.mark.parametrize("card", [0, 105, -1], ids=["R2-zero", "R2-105", "R2-negative"])
def test_R2_bullheads_outside_the_deck_raise(card: int) -> None:
    with pytest.raises(ValueError, match=r"outside the deck 1\.\.104"):
        bullheads(card)


# --------------------------------------------------------------------------- R3, V1: deals


@pytest.mark.parametrize(
    ("n", "unused"),
    [pytest.param(n, 104 - 10 * n - 4, id=f"R3-{n}-players") for n in range(2, 11)],
)
def test_R3_deal_sizes(n: int, unused: int) -> None:
    state = new_game(GameConfig(num_players=n), np.random.default_rng(n))
    assert state.phase == SELECT
    assert [len(h) for h in state.hands] == [10] * n
    assert [len(r) for r in state.rows] == [1, 1, 1, 1]
    assert len(state.stock) == unused
    assert all(list(h) == sorted(h) for h in state.hands)
    assert list(state.stock) == sorted(state.stock)


def test_R3_nine_players_leave_10_unused_ten_leave_none() -> None:
    assert len(new_game(GameConfig(num_players=9), np.random.default_rng(1)).stock) == 10
    assert new_game(GameConfig(num_players=10), np.random.default_rng(1)).stock == ()


@pytest.mark.parametrize("n", [pytest.param(n, id=f"V1-{n}-players") for n in range(2, 11)])
def test_V1_tactics_deck_is_10n_plus_4(n: int) -> None:
    config = GameConfig(num_players=n, variant="tactics")
    assert config.deck_size == 10 * n + 4
    state = new_game(config, np.random.default_rng(n))
    cards = [c for h in state.hands for c in h] + [c for r in state.rows for c in r]
    assert sorted(cards) == list(range(1, 10 * n + 5))
    assert state.stock == ()


def test_V1_card_beyond_the_tactics_deck_is_rejected() -> None:
    config = GameConfig(num_players=2, variant="tactics")  # cards 1..24
    with pytest.raises(ValueError, match=r"card 25 is outside the deck 1\.\.24"):
        from_position(config, [[1], [25]], [[3], [4], [5], [6]])


# --------------------------------------------------------------------------- R4-R10, E1, E2: the rule table

TWO = GameConfig(num_players=2)
THREE = GameConfig(num_players=3)
CHEAP2 = GameConfig(num_players=2, row_choice="cheapest")
ROUND2 = GameConfig(num_players=2, episode="round")

CASES = [
    # config, hands, rows, plays, expected rows, expected penalties, expected piles
    pytest.param(
        TWO, [[35, 90], [41, 91]], [[10], [20], [30], [40]], [[35, 41]],
        [[10], [20], [30, 35], [40, 41]], [0, 0], [[], []], id="R7-largest-end-below-the-card",
    ),
    pytest.param(
        TWO, [[25, 90], [24, 91]], [[10], [20], [30], [40]], [[25, 24]],
        [[10], [20, 24, 25], [30], [40]], [0, 0], [[], []], id="R7-card-follows-a-card-of-this-turn",
    ),
    pytest.param(
        TWO, [[26, 90], [25, 91]], [[20, 21, 22, 23], [60], [70], [80]], [[26, 25]],
        [[26], [60], [70], [80]], [12, 0], [[20, 21, 22, 23, 25], []], id="R6-ascending-order-seat-0-takes",
    ),
    pytest.param(
        TWO, [[15, 90], [51, 91]], [[10, 11, 12, 13, 14], [50], [60], [70]], [[15, 51]],
        [[15], [50, 51], [60], [70]], [11, 0], [[10, 11, 12, 13, 14], []], id="R8-sixth-card-takes-five",
    ),
    pytest.param(
        TWO, [[14, 90], [15, 91]], [[10, 11, 12, 13], [50], [60], [70]], [[14, 15]],
        [[15], [50], [60], [70]], [0, 11], [[], [10, 11, 12, 13, 14]], id="R8-fifth-then-sixth-in-one-turn",
    ),
    pytest.param(
        TWO, [[5, 90], [61, 91]], [[50, 51, 52, 53, 54], [60], [70], [80]], [[5, 61], 0],
        [[5], [60, 61], [70], [80]], [7, 0], [[50, 51, 52, 53, 54], []], id="R9-player-takes-a-long-row",
    ),
    pytest.param(
        TWO, [[5, 90], [61, 91]], [[50, 51, 52, 53, 54], [60], [70], [80]], [[5, 61], 2],
        [[50, 51, 52, 53, 54], [60, 61], [5], [80]], [3, 0], [[70], []], id="R9-player-takes-any-row",
    ),
    pytest.param(
        CHEAP2, [[5, 90], [34, 91]], [[55], [10], [20, 21], [33]], [[5, 34]],
        [[55], [5], [20, 21], [33, 34]], [3, 0], [[10], []], id="R9b-cheapest-fewest-bullheads",
    ),
    pytest.param(
        CHEAP2, [[5, 90], [45, 91]], [[10], [20], [30], [40]], [[5, 45]],
        [[5], [20], [30], [40, 45]], [3, 0], [[10], []], id="R9b-cheapest-tie-to-row-0",
    ),
    pytest.param(
        CHEAP2, [[5, 90], [34, 91]], [[55], [10], [20], [33]], [[5, 34]],
        [[55], [5], [20], [33, 34]], [3, 0], [[10], []], id="R9b-cheapest-tie-to-lowest-index",
    ),
    pytest.param(
        TWO, [[5, 90], [85, 91]], [[50], [60], [70], [80]], [[5, 85], 3],
        [[50], [60], [70, 85], [5]], [3, 0], [[80], []], id="R9a-choice-before-the-turn-is-placed",
    ),
    pytest.param(
        TWO, [[5, 90], [6, 91]], [[50], [60], [70], [80]], [[5, 6], 0],
        [[5, 6], [60], [70], [80]], [3, 0], [[50], []], id="R9a-only-the-lowest-card-is-low",
    ),
    pytest.param(
        CHEAP2, [[5, 90], [52, 91]], [[51], [60], [70], [80]], [[5, 52]],
        [[5, 52], [60], [70], [80]], [1, 0], [[51], []], id="R9a-cheapest-on-the-rows-at-turn-start",
    ),
    pytest.param(
        ROUND2, [[15], [71]], [[10, 11, 12, 13, 14], [50], [60], [70]], [[15, 71]],
        [[15], [50], [60], [70, 71]], [11, 0], [[10, 11, 12, 13, 14], []], id="R10-rows-left-score-nobody",
    ),
    pytest.param(
        TWO, [[5, 90], [71, 91]], [[50], [60], [70], [80]], [[5, 71], 2],
        [[50], [60, 71], [5], [80]], [3, 0], [[70], []], id="E1-low-card-takes-row-70",
    ),
    pytest.param(
        THREE, [[51, 90], [61, 91], [15, 92]], [[10, 11, 12, 13, 14], [50], [60], [70]], [[51, 61, 15]],
        [[15], [50, 51], [60, 61], [70]], [0, 0, 11], [[], [], [10, 11, 12, 13, 14]], id="E2-only-15-takes-11",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("config", "hands", "rows", "plays", "exp_rows", "exp_penalties", "exp_piles"), CASES)
def test_rule_table(
    config: GameConfig,
    hands: list[list[int]],
    rows: list[list[int]],
    plays: list[Step],
    exp_rows: list[list[int]],
    exp_penalties: list[int],
    exp_piles: list[list[int]],
) -> None:
    state, penalties, per_step = run(config, hands, rows, plays)
    assert [list(r) for r in state.rows] == exp_rows
    assert penalties == exp_penalties
    rewards = [-p for p in penalties]  # the environments' default reward (issue 2): minus the bullheads taken
    assert rewards == [-p for p in exp_penalties]
    assert [list(p) for p in state.piles] == exp_piles
    assert [sum(BULLHEADS[c] for c in p) for p in state.piles] == exp_penalties  # R11: round score = pile bullheads
    assert list(state.round_penalties) == exp_penalties
    assert list(state.totals) == exp_penalties
    played = [set(p) for p in zip(*[p for p in plays if not isinstance(p, int)], strict=True)]
    assert [set(h) for h in state.hands] == [set(h) - p for h, p in zip(hands, played, strict=True)]  # R10, E1
    assert all(isinstance(p, tuple) and len(p) == config.num_players for p in per_step)


# --------------------------------------------------------------------------- R5, R9, R9a: the pending choice


def test_R5_cards_are_revealed_together_and_leave_the_hands() -> None:
    state = from_position(THREE, [[20, 90], [35, 91], [41, 92]], [[10], [30], [40], [50]])
    new, _ = step(state, [19, 34, 40])
    assert new.revealed == (20, 35, 41)
    assert new.hands == ((90,), (91,), (92,))
    assert (state.turn, new.turn) == (8, 9)  # hands of 2 cards: turns 1..8 are behind
    assert state.hands == ((20, 90), (35, 91), (41, 92))  # the input state is unchanged


def test_R9_low_card_opens_a_choose_row_phase_for_its_owner() -> None:
    state = from_position(THREE, [[61, 90], [5, 91], [85, 92]], [[50, 51, 52, 53, 54], [60], [70], [80]])
    pending, penalties = step(state, [60, 4, 84])
    assert pending.phase == CHOOSE_ROW
    assert pending.chooser == 1
    assert penalties == (0, 0, 0)
    assert legal_actions(pending, 1) == (104, 105, 106, 107)  # any row, even the full one
    assert legal_actions(pending, 0) == (NOOP,)
    assert legal_actions(pending, 2) == (NOOP,)
    # R9a: the rows are still as at the start of the turn, every card of the turn is revealed
    assert pending.rows == state.rows
    assert pending.revealed == (61, 5, 85)
    assert dict(view(pending, 1))["revealed"] == [61, 5, 85]
    assert {61, 5, 85} <= set(view(pending, 1)["seen"])
    assert view(pending, 1)["must_act"] is True
    assert view(pending, 0)["must_act"] is False


def test_R9b_cheapest_needs_no_decision() -> None:
    state = from_position(CHEAP2, [[5, 90], [61, 91]], [[50], [60], [70], [80]])
    new, penalties = step(state, [4, 60])
    assert new.phase == SELECT
    assert penalties == (3, 0)


# --------------------------------------------------------------------------- R11, R12, E3: rounds and game end


def test_R11_a_round_is_ten_turns() -> None:
    config = GameConfig(num_players=4, row_choice="cheapest", max_rounds=1)
    state = new_game(config, np.random.default_rng(3))
    rng = random.Random(3)
    for turn in range(1, 11):
        assert state.phase == SELECT
        state, _ = step(state, random_legal(state, rng))
        assert state.turn == turn
        assert [len(h) for h in state.hands] == [10 - turn] * 4
    assert state.phase == DONE
    assert list(state.round_penalties) == [sum(BULLHEADS[c] for c in p) for p in state.piles]
    assert state.totals == state.round_penalties


E12_ROWS = [[10, 11, 12, 13, 14], [50], [60], [70]]  # seat 0 playing 15 takes 11 bullheads


R12_CASES = [
    # end_rule, the start total of seat 0 (which then takes 11), whether the game ends
    pytest.param("at_least", 55, True, id="R12-at_least-66-ends"),
    pytest.param("more_than", 55, False, id="R12-more_than-66-goes-on"),
    pytest.param("more_than", 56, True, id="R12-more_than-67-ends"),
    pytest.param("at_least", 54, False, id="R12-at_least-65-goes-on"),
]


@pytest.mark.parametrize(("end_rule", "start", "done"), R12_CASES)
def test_R12_end_score_comparison(end_rule: str, start: int, done: bool) -> None:
    config = GameConfig(num_players=2, end_rule=end_rule)
    state, penalties, _ = run(
        config, [[15], [71]], E12_ROWS, [[15, 71]], totals=[start, 0], rng=np.random.default_rng(0)
    )
    assert penalties == [11, 0]
    assert state.totals == (start + 11, 0)
    if done:
        assert state.phase == DONE
        assert state.round == 0
    else:  # a new round is dealt (R14) and the totals carry over
        assert state.phase == SELECT
        assert state.round == 1
        assert [len(h) for h in state.hands] == [10, 10]
        assert state.round_penalties == (0, 0)


def test_R12_max_rounds_ends_the_game_whatever_the_scores() -> None:
    config = GameConfig(num_players=2, max_rounds=1)
    state, _, _ = run(config, [[15], [71]], E12_ROWS, [[15, 71]])
    assert state.phase == DONE
    assert state.totals == (11, 0)


def test_R12_end_score_none_plays_exactly_max_rounds() -> None:
    config = GameConfig(num_players=3, row_choice="cheapest", end_score=None, max_rounds=2)
    rng, pick = np.random.default_rng(5), random.Random(5)
    state = new_game(config, rng)
    for i in range(20):
        assert state.phase == SELECT
        assert state.round == i // 10
        state, _ = step(state, random_legal(state, pick), rng)
    assert state.phase == DONE
    assert state.round == 1


def test_R12_episode_round_ends_after_one_round() -> None:
    config = GameConfig(num_players=2, episode="round", end_score=None)
    state, _, _ = run(config, [[15], [71]], E12_ROWS, [[15, 71]])
    assert state.phase == DONE


def test_E3_game_never_ends_mid_round() -> None:
    config = GameConfig(num_players=2)  # end score 66, at least
    hands = [[41, 42, 15, 43, 44, 45, 46, 47, 48, 49], [61, 62, 63, 64, 65, 66, 67, 68, 69, 90]]
    rows = [[10, 11, 12, 13, 14], [40], [60], [80]]
    state, penalties, _ = run(config, hands, rows, [[41, 61], [42, 62], [15, 63]], totals=[60, 0])
    assert penalties == [11, 0]
    assert state.totals == (71, 0)  # past the end score in turn 3
    assert state.phase == SELECT and state.turn == 3
    pick = random.Random(0)
    while state.phase != DONE:
        assert state.turn < 10 or state.phase == CHOOSE_ROW
        assert legal_actions(state, 0)
        state, _ = step(state, random_legal(state, pick), np.random.default_rng(0))
    assert state.turn == 10
    assert state.hands == ((), ())


# --------------------------------------------------------------------------- R13, R14


R13_ROWS = [[10, 11, 12, 13, 14], [20], [30], [40]]
R13_CASES = [
    # start totals, the last card of each of 4 seats (episode="round"), the winners
    pytest.param([10, 5, 5, 20], [41, 42, 43, 44], (1, 2), id="R13-equal-lowest-share"),
    pytest.param([0, 5, 9, 9], [15, 42, 43, 44], (1,), id="R13-last-round-counts"),
    pytest.param([3, 3, 3, 3], [41, 42, 43, 44], (0, 1, 2, 3), id="R13-all-tied"),
]


@pytest.mark.parametrize(("totals", "plays", "expected"), R13_CASES)
def test_R13_lowest_total_wins(totals: list[int], plays: list[int], expected: tuple[int, ...]) -> None:
    config = GameConfig(num_players=4, episode="round")
    hands = [[c] for c in plays]
    state, _, _ = run(config, hands, R13_ROWS, [plays], totals=totals)
    assert state.phase == DONE
    assert winners(state) == expected


def test_R14_each_round_deals_the_whole_deck_anew() -> None:
    config = GameConfig(num_players=4, row_choice="cheapest", end_score=None, max_rounds=3)
    rng, pick = np.random.default_rng(11), random.Random(11)
    state = new_game(config, rng)
    first_hands = state.hands
    for _ in range(10):
        state, _ = step(state, random_legal(state, pick), rng)
    assert state.round == 1 and state.turn == 0
    cards = [c for h in state.hands for c in h] + [c for r in state.rows for c in r] + list(state.stock)
    assert sorted(cards) == list(range(1, 105))  # rows and unused cards of round 1 are back in the deck
    assert state.piles == ((),) * 4
    assert state.round_penalties == (0,) * 4
    assert state.hands != first_hands
    assert state.revealed == (0,) * 4


def test_R14_step_without_rng_cannot_deal_the_next_round() -> None:
    config = GameConfig(num_players=2)
    state = from_position(config, [[15], [71]], E12_ROWS)
    with pytest.raises(ValueError, match="pass rng"):
        step(state, [14, 70])


# --------------------------------------------------------------------------- V2: the logic draft


def test_V2_draft_order_and_rows_from_the_four_left() -> None:
    config = GameConfig(num_players=3, variant="logic", max_rounds=2)
    state = new_game(config, np.random.default_rng(0))
    assert state.phase == DRAFT
    assert state.display == tuple(range(1, 35))
    assert state.rows == ()
    pick = random.Random(2)
    order = []
    for _ in range(30):
        assert state.phase == DRAFT
        order.append(state.chooser)
        assert [legal_actions(state, s) for s in range(3) if s != state.chooser] == [(NOOP,), (NOOP,)]
        assert legal_actions(state, state.chooser) == tuple(c - 1 for c in state.display)
        state, penalties = step(state, random_legal(state, pick))
        assert penalties == (0, 0, 0)
    assert order == [0, 1, 2] * 10
    assert state.phase == SELECT
    assert [len(h) for h in state.hands] == [10, 10, 10]
    left = sorted(set(range(1, 35)) - {c for h in state.hands for c in h})
    assert state.rows == tuple((c,) for c in left)
    assert state.display == ()
    # play the round out: the next draft starts with seat 1
    rng = np.random.default_rng(1)
    while state.phase != DRAFT:
        state, _ = step(state, random_legal(state, pick), rng)
    assert state.round == 1
    assert state.chooser == 1
    assert state.display == tuple(range(1, 35))


def test_V2_draft_pick_must_be_on_the_display() -> None:
    state = new_game(GameConfig(num_players=2, variant="logic"), np.random.default_rng(0))
    first, _ = step(state, [9, NOOP])  # seat 0 takes card 10
    assert first.hands == ((10,), ())
    with pytest.raises(IllegalActionError) as err:
        step(first, [NOOP, 9])  # card 10 is gone
    assert err.value.seat == 1


# --------------------------------------------------------------------------- R4, E4: private hands


def test_E4_a_view_never_reveals_another_hand() -> None:
    rows = [[10], [20], [30], [40]]
    a = from_position(TWO, [[5, 25, 60], [33, 77, 81]], rows)
    b = from_position(TWO, [[5, 25, 60], [34, 78, 99]], rows)
    assert dict(view(a, 0)) == dict(view(b, 0))
    assert view(a, 0)["hand"] == [5, 25, 60]
    assert set(view(a, 0)) >= {"hand", "rows", "totals", "round_penalties", "phase", "revealed", "legal_actions"}
    assert not {"hands", "stock"} & set(view(a, 0))
    # after a turn, only the revealed cards of the other seat become visible
    a2, _ = step(a, [24, 32])
    b2, _ = step(b, [24, 33])
    va, vb = dict(view(a2, 0)), dict(view(b2, 0))
    assert va["revealed"] == [25, 33] and vb["revealed"] == [25, 34]
    assert va["hand"] == vb["hand"] == [5, 60]


@pytest.mark.parametrize("seat", [-1, 2, True], ids=["R4-negative-seat", "R4-seat-too-high", "R4-bool-seat"])
def test_R4_view_of_a_seat_outside_the_game_raises(seat: int) -> None:
    state = from_position(TWO, [[5], [6]], [[10], [20], [30], [40]])
    with pytest.raises(ValueError, match=r"seat must be 0\.\.1"):
        view(state, seat)


# --------------------------------------------------------------------------- helpers used by agents


def test_row_for_and_cheapest_row() -> None:
    rows = [(10,), (20, 21), (30,), (40, 41, 42)]
    assert row_for(rows, 25) == 1
    assert row_for(rows, 43) == 3
    assert row_for(rows, 5) == -1
    assert cheapest_row([(55,), (10,), (20,), (33,)]) == 1


# --------------------------------------------------------------------------- config validation


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        pytest.param({"num_players": 1}, r"num_players must be an integer 2\.\.10.*got 1", id="R3-num_players-1"),
        pytest.param({"num_players": 11}, r"num_players must be an integer 2\.\.10.*got 11", id="R3-num_players-11"),
        pytest.param({"num_players": 2.0}, r"num_players .*got 2\.0", id="R3-num_players-float"),
        pytest.param({"num_players": True}, r"num_players .*got True", id="R3-num_players-bool"),
        pytest.param({"variant": "pro"}, r"variant must be one of 'standard', 'tactics', 'logic', got 'pro'",
                     id="V1-variant"),
        pytest.param({"row_choice": "random"}, r"row_choice must be one of 'player', 'cheapest', got 'random'",
                     id="R9b-row_choice"),
        pytest.param({"end_rule": "over"}, r"end_rule must be one of 'at_least', 'more_than', got 'over'",
                     id="R12-end_rule"),
        pytest.param({"episode": "turn"}, r"episode must be one of 'game', 'round', got 'turn'", id="R12-episode"),
        pytest.param({"end_score": 0}, r"end_score must be a positive integer or None, got 0", id="R12-end_score-0"),
        pytest.param({"end_score": "66"}, r"end_score must be a positive integer or None, got '66'",
                     id="R12-end_score-str"),
        pytest.param({"max_rounds": 0}, r"max_rounds must be a positive integer or None, got 0", id="R12-max_rounds-0"),
        pytest.param({"max_rounds": 1.5}, r"max_rounds must be a positive integer or None, got 1\.5",
                     id="R12-max_rounds-float"),
        pytest.param({"end_score": None}, r"end_score and max_rounds cannot both be None", id="R12-never-ends"),
    ],
)  # fmt: skip
def test_config_validation(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        GameConfig(**kwargs)


def test_config_accepts_numpy_integers_and_end_score_none_with_max_rounds() -> None:
    config = GameConfig(num_players=np.int64(5), end_score=None, max_rounds=np.int32(3))
    assert config.num_players == 5 and type(config.num_players) is int
    assert config.max_rounds == 3 and config.end_score is None
    assert GameConfig(end_score=None, episode="round").end_score is None


# --------------------------------------------------------------------------- illegal actions


ILLEGAL_SELECT = [
    pytest.param([4, 40], 1, 40, id="R5-card-not-in-hand"),
    pytest.param([104, 60], 0, 104, id="R5-row-action-in-select"),
    pytest.param([NOOP, 60], 0, NOOP, id="R5-noop-in-select"),
    pytest.param([4, -1], 1, -1, id="R5-negative"),
    pytest.param([4, 109], 1, 109, id="R5-out-of-range"),
    pytest.param([4.0, 60], 0, 4.0, id="R5-float"),
    pytest.param([True, 60], 0, True, id="R5-bool"),
    pytest.param(["4", 60], 0, "4", id="R5-string"),
]


@pytest.mark.parametrize(("actions", "seat", "action"), ILLEGAL_SELECT)
def test_illegal_select_action_raises_and_changes_nothing(actions: list, seat: int, action: object) -> None:
    state = from_position(TWO, [[5, 90], [61, 91]], [[50], [60], [70], [80]])
    before = tuple(state)
    with pytest.raises(IllegalActionError) as err:
        step(state, actions)
    assert err.value.seat == seat
    assert err.value.action == action
    assert err.value.legal == legal_actions(state, seat)
    assert f"seat {seat}" in str(err.value) and "legal actions" in str(err.value)
    assert tuple(state) == before


@pytest.mark.parametrize(
    ("actions", "seat", "legal"),
    [
        pytest.param([104, 105], 1, (NOOP,), id="R9-non-chooser-gives-a-row"),
        pytest.param([104, 60], 1, (NOOP,), id="R9-non-chooser-plays-a-card"),
        pytest.param([89, NOOP], 0, (104, 105, 106, 107), id="R9-chooser-plays-a-card"),
        pytest.param([NOOP, NOOP], 0, (104, 105, 106, 107), id="R9-chooser-gives-noop"),
        pytest.param([108 + 1, NOOP], 0, (104, 105, 106, 107), id="R9-chooser-out-of-range"),
    ],
)
def test_illegal_row_choice_raises_and_changes_nothing(actions: list, seat: int, legal: tuple[int, ...]) -> None:
    state = from_position(TWO, [[5, 90], [61, 91]], [[50], [60], [70], [80]])
    pending, _ = step(state, [4, 60])
    before = tuple(pending)
    with pytest.raises(IllegalActionError) as err:
        step(pending, actions)
    assert (err.value.seat, err.value.legal) == (seat, legal)
    assert tuple(pending) == before
    after, penalties = step(pending, [104, NOOP])  # still usable
    assert penalties == (3, 0)
    assert after.rows == ((5,), (60, 61), (70,), (80,))


def test_wrong_number_of_actions_and_finished_game() -> None:
    state = from_position(ROUND2, [[15], [71]], E12_ROWS)
    with pytest.raises(ValueError, match=r"expected 2 actions \(one per seat\), got 3"):
        step(state, [14, 70, 1])
    done, _ = step(state, [14, 70])
    assert done.phase == DONE
    assert legal_actions(done, 0) == ()
    with pytest.raises(ValueError, match="the game is over"):
        step(done, [NOOP, NOOP])


def test_numpy_integer_actions_are_accepted() -> None:
    state = from_position(TWO, [[5, 90], [61, 91]], [[50], [60], [70], [80]])
    a, pa = step(state, np.array([4, 60]))
    b, pb = step(state, [4, 60])
    assert a == b and pa == pb
