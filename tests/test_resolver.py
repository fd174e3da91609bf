"""The reference tier's rules written once: the turn resolver (R6-R9), the legality rule, the deal (R3).

:func:`engine.resolve_turn` is the resolver :func:`engine.step` places every turn with; these tests pin its
placements on the rule tables of `RULES.md` (E1, E2) and check it against ``step`` on random turns. The legality
rule must accept in ``step`` exactly what ``legal_actions`` lists, and :func:`engine.deal_round` must lay out a
deck as :func:`engine.new_game` does.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from sixnimmt_env.rules import engine as E
from sixnimmt_env.rules.engine import Placement, deal_round, resolve_turn


def test_resolve_turn_e1_low_card_takes_the_chosen_row() -> None:
    turn = resolve_turn([[50], [60], [70], [80]], [5, 71], low_row=2)
    assert turn.placements == ((0, 5, 2, "low", (70,), 3), (1, 71, 1, "placed", (), 0))
    assert [p.rows for p in turn.placements] == [((50,), (60,), (5,), (80,)), ((50,), (60, 71), (5,), (80,))]
    assert turn.rows == ((50,), (60, 71), (5,), (80,))
    assert turn.penalties == (3, 0)


def test_resolve_turn_e2_sixth_card_takes_the_full_row() -> None:
    turn = resolve_turn([[10, 11, 12, 13, 14], [50], [60], [70]], [51, 61, 15])
    assert turn.placements == (
        (2, 15, 0, "full", (10, 11, 12, 13, 14), 11),
        (0, 51, 1, "placed", (), 0),
        (1, 61, 2, "placed", (), 0),
    )
    assert turn.rows == ((15,), (50, 51), (60, 61), (70,))
    assert turn.penalties == (0, 0, 11)


def test_resolve_turn_low_card_without_a_choice_takes_the_cheapest_row() -> None:
    # rows of 3, 1, 1 and 5 bullheads: rows 1 and 2 tie, the lower index is taken (R9b)
    turn = resolve_turn([[30], [41], [42], [55]], [7, 43, 8])
    assert turn.placements[0] == (0, 7, 1, "low", (41,), 1)
    assert turn.placements[1] == (2, 8, 1, "placed", (), 0)  # 8 joins the row the 7 started
    assert turn.placements[2] == (1, 43, 2, "placed", (), 0)
    assert turn.penalties == (1, 0, 0)


@pytest.mark.parametrize("low_row", [-1, 4])
def test_resolve_turn_refuses_a_row_outside_0_to_3(low_row: int) -> None:
    with pytest.raises(ValueError, match=r"low_row must be a row 0\.\.3"):
        resolve_turn([[50], [60], [70], [80]], [5, 71], low_row=low_row)


def test_placement_is_its_six_fields_with_the_rows_after_it() -> None:
    p = Placement(1, 71, 1, "placed", (), 0, ((50,), (60, 71), (5,), (80,)))
    assert p == (1, 71, 1, "placed", (), 0) and len(p) == 6
    assert p.kind == p.reason == "placed"
    assert p.rows == ((50,), (60, 71), (5,), (80,))
    again = pickle.loads(pickle.dumps(p))
    assert again == p and again.rows == p.rows


@pytest.mark.parametrize("num_players", [2, 4, 7, 10])
@pytest.mark.parametrize("row_choice", ["player", "cheapest"])
def test_resolve_turn_agrees_with_step_on_random_turns(num_players: int, row_choice: str) -> None:
    """Every turn of 30 random rounds: the placements' bullheads are ``step``'s penalties and they end on its
    rows; a low card's row is the owner's (``choose_row`` step) or the cheapest (R9b)."""
    rng = np.random.default_rng(num_players)
    config = E.GameConfig(num_players=num_players, episode="round", row_choice=row_choice)
    turns = lows = fulls = 0
    for _ in range(30):
        state = E.new_game(config, rng)
        while not state.done:
            actions = [int(rng.choice(E.legal_actions(state, s))) for s in range(num_players)]
            after, pen = E.step(state, actions, rng)
            if state.phase == E.SELECT and after.phase == E.CHOOSE_ROW:  # the owner chooses next
                before_rows, cards = state.rows, after.revealed
                state = after
                actions = [E.NOOP] * num_players
                actions[state.chooser] = int(rng.choice(E.legal_actions(state, state.chooser)))
                after, pen = E.step(state, actions, rng)
                turn = resolve_turn(before_rows, cards, actions[state.chooser] - E.ROW_ACTION)
            else:
                turn = resolve_turn(state.rows, [a + 1 for a in actions])
            assert turn.penalties == pen
            assert [sum(p.bullheads for p in turn.placements if p.seat == s) for s in range(num_players)] == list(pen)
            if not after.done:
                assert turn.rows == after.rows == turn.placements[-1].rows
            assert [p.card for p in turn.placements] == sorted(p.card for p in turn.placements)  # R6
            turns += 1
            lows += turn.placements[0].reason == "low"
            fulls += sum(p.reason == "full" for p in turn.placements)
            state = after
    assert turns == 300 and lows > 0 and fulls > 0


def test_step_accepts_exactly_the_legal_actions() -> None:
    """The legality rule is one: for every seat of states in every phase, ``step`` refuses an action (with
    ``IllegalActionError``) exactly when ``legal_actions`` does not list it."""
    rng = np.random.default_rng(5)
    configs = [E.GameConfig(num_players=3, episode="round"), E.GameConfig(num_players=4, variant="logic")]
    phases = set()
    for config in configs:
        state = E.new_game(config, rng)
        for _ in range(25):
            n = config.num_players
            legal = [E.legal_actions(state, s) for s in range(n)]
            base = [int(rng.choice(legal[s])) for s in range(n)]
            seat = int(rng.integers(n))
            for action in [-1, *range(E.NUM_ACTIONS), E.NUM_ACTIONS]:
                actions = list(base)
                actions[seat] = action
                if action in legal[seat]:
                    E.step(state, actions, np.random.default_rng(0))
                else:
                    with pytest.raises(E.IllegalActionError) as err:
                        E.step(state, actions, np.random.default_rng(0))
                    assert err.value.seat == seat and err.value.legal == legal[seat]
            phases.add(state.phase)
            state, _ = E.step(state, base, rng)
            if state.done:
                state = E.new_game(config, rng)
    assert phases == {E.SELECT, E.CHOOSE_ROW, E.DRAFT}


@pytest.mark.parametrize(
    "config",
    [E.GameConfig(num_players=4), E.GameConfig(num_players=10), E.GameConfig(num_players=3, variant="tactics")],
    ids=["standard4", "standard10", "tactics3"],
)
def test_deal_round_lays_out_a_deck_as_new_game_deals_it(config: E.GameConfig) -> None:
    dealt = E.new_game(config, np.random.default_rng(9))
    order = np.random.default_rng(9).permutation(np.arange(1, config.deck_size + 1))
    assert deal_round(config, order.tolist()) == dealt
    need = 10 * config.num_players + 4
    again = deal_round(config, order[:need].tolist(), totals=[7] * config.num_players, round_index=2)
    assert again == dealt._replace(totals=(7,) * config.num_players, round=2)
    assert again.stock == tuple(sorted(order[need:].tolist()))


def test_deal_round_refuses_a_bad_deal() -> None:
    config = E.GameConfig(num_players=2)
    cards = list(range(1, 25))
    with pytest.raises(ValueError, match="a deal needs 24 cards"):
        deal_round(config, cards[:23])
    with pytest.raises(ValueError, match=r"duplicate cards in the deal: \[3\]"):
        deal_round(config, [*cards[:23], 3])
    with pytest.raises(ValueError, match=r"cards \[105\] are outside the deck 1..104"):
        deal_round(config, [*cards[:23], 105])
    with pytest.raises(ValueError, match="drafts its hands"):
        deal_round(E.GameConfig(num_players=2, variant="logic"), cards)
