"""Explicit positions: :func:`from_position` builds valid states and rejects invalid ones with a clear message."""

from __future__ import annotations

import numpy as np
import pytest

from sixnimmt_env.rules.engine import DRAFT, NOOP, SELECT, GameConfig, from_position, legal_actions, step

TWO = GameConfig(num_players=2)
ROWS = [[10], [20], [30], [40]]


def test_position_fields() -> None:
    state = from_position(TWO, [[60, 5, 33], [41, 99, 7]], [[10], [20, 21], [30], [40, 44, 45]], totals=[12, 3])
    assert state.phase == SELECT
    assert state.hands == ((5, 33, 60), (7, 41, 99))  # sorted
    assert state.rows == ((10,), (20, 21), (30,), (40, 44, 45))
    assert state.totals == (12, 3)
    assert state.round_penalties == (0, 0)
    assert state.piles == ((), ())
    assert state.turn == 7  # 3 cards left: 7 turns are behind
    assert state.chooser == -1
    used = {5, 33, 60, 7, 41, 99, 10, 20, 21, 30, 40, 44, 45}
    assert state.stock == tuple(sorted(set(range(1, 105)) - used))
    assert legal_actions(state, 1) == (6, 40, 98)


def test_position_copies_the_lists_given() -> None:
    hands, rows, totals = [[5, 33], [7, 41]], [[10], [20], [30], [40]], [1, 2]
    state = from_position(TWO, hands, rows, totals)
    hands[0].append(50)
    rows[0].append(11)
    totals[0] = 99
    assert state.hands == ((5, 33), (7, 41))
    assert state.rows[0] == (10,)
    assert state.totals == (1, 2)


def test_position_accepts_numpy_cards() -> None:
    state = from_position(TWO, np.array([[5, 33], [7, 41]]), [np.array([10]), [20], [30], [40]], np.array([0, 4]))
    assert state.hands == ((5, 33), (7, 41))
    assert all(type(c) is int for h in state.hands for c in h)
    assert state.totals == (0, 4)


def test_draft_position_sets_the_next_picker() -> None:
    config = GameConfig(num_players=2, variant="logic")  # cards 1..24
    taken = [[1, 3], [2]]
    display = sorted(set(range(1, 25)) - {1, 2, 3})
    state = from_position(config, taken, display=display, round_index=0)
    assert state.phase == DRAFT
    assert state.chooser == 1  # seat 0 picked first, then 1, then 0: seat 1 is next
    assert legal_actions(state, 0) == (NOOP,)
    assert legal_actions(state, 1) == tuple(c - 1 for c in display)
    second = from_position(config, [[2], [1, 3]], display=display, round_index=1)
    assert second.chooser == 0  # seat 1 opens round 1 (V2 rotation)
    new, _ = step(second, [3, NOOP])  # seat 0 takes card 4
    assert new.hands == ((2, 4), (1, 3)) and new.chooser == 1


@pytest.mark.parametrize(
    ("config", "hands", "rows", "kwargs", "message"),
    [
        pytest.param(TWO, [[5]], ROWS, {}, r"expected 2 hands \(num_players=2\), got 1", id="hand-count"),
        pytest.param(TWO, 5, ROWS, {}, r"hands must be a list of 2 lists of cards", id="hands-not-a-list"),
        pytest.param(TWO, [[5, 5], [6, 7]], ROWS, {}, r"duplicate cards in the position: \[5\]",
                     id="duplicate-in-hand"),
        pytest.param(TWO, [[5], [10]], ROWS, {}, r"duplicate cards in the position: \[10\]", id="duplicate-hand-row"),
        pytest.param(TWO, [[5], [6]], [[10], [10], [30], [40]], {}, r"duplicate cards .*\[10\]", id="duplicate-rows"),
        pytest.param(TWO, [[5], [105]], ROWS, {}, r"card 105 is outside the deck 1\.\.104", id="card-105"),
        pytest.param(TWO, [[0], [6]], ROWS, {}, r"card 0 is outside the deck", id="card-0"),
        pytest.param(TWO, [[5], [6.5]], ROWS, {}, r"hand of seat 1 .*6\.5.*not an integer", id="card-float"),
        pytest.param(TWO, [[5], [6]], [[10], [20], [30]], {}, r"expected 4 rows, got 3", id="three-rows"),
        pytest.param(TWO, [[5], [6]], [*ROWS, [50]], {}, r"expected 4 rows, got 5", id="five-rows"),
        pytest.param(TWO, [[5], [6]], [[10], [], [30], [40]], {}, r"row 1 must hold 1\.\.5 cards", id="empty-row"),
        pytest.param(TWO, [[5], [6]], [[10, 11, 12, 13, 14, 15], [20], [30], [40]], {},
                     r"row 0 must hold 1\.\.5 cards, got \[10, 11, 12, 13, 14, 15\]", id="row-of-6"),
        pytest.param(TWO, [[5], [6]], [[10], [20], [31, 30], [40]], {}, r"row 2 must be ascending, got \[31, 30\]",
                     id="row-not-ascending"),
        pytest.param(TWO, [[5, 7], [6]], ROWS, {}, r"same number of cards, 1\.\.10; got lengths \[2, 1\]",
                     id="unequal-hands"),
        pytest.param(TWO, [[], []], ROWS, {}, r"same number of cards, 1\.\.10; got lengths \[0, 0\]", id="empty-hands"),
        pytest.param(TWO, [list(range(41, 52)), list(range(52, 63))], ROWS, {}, r"got lengths \[11, 11\]",
                     id="hands-of-11"),
        pytest.param(TWO, [[5], [6]], ROWS, {"totals": [1]}, r"totals must be 2 non-negative integers",
                     id="totals-count"),
        pytest.param(TWO, [[5], [6]], ROWS, {"totals": [1, -2]}, r"totals must be 2 non-negative .*\[1, -2\]",
                     id="totals-negative"),
        pytest.param(TWO, [[5], [6]], ROWS, {"totals": [1, 2.5]}, r"totals must be a list of bullhead totals",
                     id="totals-float"),
        pytest.param(TWO, [[5], [6]], ROWS, {"round_index": -1}, r"round_index must be a non-negative integer, got -1",
                     id="round-index"),
        pytest.param(TWO, [[5], [6]], [], {"display": [1, 2, 3, 4]}, r"a draft display needs variant='logic'",
                     id="display-not-logic"),
        pytest.param(GameConfig(num_players=2, variant="logic"), [[1], []], [[2], [3], [4], [5]],
                     {"display": list(range(6, 25))},
                     r"rows must be empty during the draft", id="display-with-rows"),
        pytest.param(GameConfig(num_players=2, variant="logic"), [[1], []], [], {"display": list(range(2, 24))},
                     r"the display must hold 4 cards plus the cards still to be drafted \(23\), got 22",
                     id="display-size"),
        pytest.param(GameConfig(num_players=2, variant="logic"), [[], [1]], [], {"display": list(range(2, 25))},
                     r"do not fit the pick order \(seat 0 first, V2\); expected \[1, 0\]", id="draft-order"),
    ],
)  # fmt: skip
def test_invalid_positions_raise(config, hands, rows, kwargs, message) -> None:
    with pytest.raises(ValueError, match=message):
        from_position(config, hands, rows, **kwargs)
