"""``mc:N`` in compiled code (sixnimmt_env/compiled/mc.py): the same decision rule as the reference agent (issue 5)."""

from __future__ import annotations

import numpy as np
import pytest

from sixnimmt_env import agents as ref_agents
from sixnimmt_env.compiled import BatchedGames
from sixnimmt_env.compiled.heuristics import HeuristicPlayers, kind_codes
from sixnimmt_env.compiled.mc import MonteCarloPlayers, row_scores, select_scores
from sixnimmt_env.rules.engine import (
    CHOOSE_ROW,
    DONE,
    DRAFT,
    SELECT,
    GameConfig,
    State,
    legal_actions,
    new_game,
    step,
    view,
)


def _positions(
    config: GameConfig, count: int, seed: int, phases: tuple[str, ...] = (SELECT, CHOOSE_ROW)
) -> list[State]:
    """Positions of random legal play in ``phases`` (default: card selections and low-card row choices)."""
    rng = np.random.default_rng(seed)
    out: list[State] = []
    state = new_game(config, rng)
    while len(out) < count:
        if state.phase in phases:
            out.append(state)
        acts = [int(rng.choice(legal_actions(state, s))) for s in range(config.num_players)]
        state, _ = step(state, acts, rng)
        if state.phase == DONE:
            state = new_game(config, rng)
    return out


def _decider(state: State) -> int:
    return state.chooser if state.phase == CHOOSE_ROW else int(state.turn) % state.config.num_players


def _engine_score(config: GameConfig, hands: list[list[int]], rows: list[list[int]], first: list[int]) -> int:
    """``n * own - sum(all)`` bullheads from the joint action ``first`` (then everyone greedy) to the round's end, seat
    0 being the searching player: the reference engine plays it (low cards of the rollout take the cheapest row)."""
    from sixnimmt_env.rules.engine import ROW_ACTION, from_position

    n = config.num_players
    rollout = GameConfig(num_players=n, row_choice="cheapest", episode="round")
    greedy = ref_agents.GreedyAgent()
    if first[0] >= ROW_ACTION:  # a row choice: replay the turn with the player's choice, then the cheapest rule
        state = from_position(GameConfig(num_players=n, episode="round"), hands, rows)
        state, pen = step(state, first[1:])
        state, more = step(state, [first[0]] + [108] * (n - 1))
        total = [a + b for a, b in zip(pen, more, strict=True)]
        state = state._replace(config=rollout)
    else:
        state, pen = step(from_position(rollout, hands, rows), first)
        total = list(pen)
    while not state.done:
        state, pen = step(state, [greedy.act(view(state, s), None) for s in range(n)])
        total = [a + b for a, b in zip(total, pen, strict=True)]
    return n * total[0] - sum(total)


@pytest.mark.parametrize("num_players", [2, 4, 7])
@pytest.mark.parametrize("samples", [1, 3])
def test_compiled_rollouts_score_as_the_engine(num_players: int, samples: int) -> None:
    """select_scores / row_scores on the agent's sampled worlds == rollouts through engine.step, on random positions
    (card selections and low-card row choices)."""
    config = GameConfig(num_players=num_players, episode="round")
    positions = _positions(config, 40, seed=num_players)
    agent = ref_agents.MonteCarloAgent(samples)
    rows_checked = 0
    for i, state in enumerate(positions):
        seat = _decider(state)
        v = view(state, seat)
        hand, rows = v["hand"], v["rows"]
        if state.phase == SELECT and len(hand) == 1:
            continue
        worlds = agent._worlds(v, hand, np.random.default_rng(i))
        light = ([r[-1] for r in rows], [len(r) for r in rows], v["row_bullheads"])
        others = [s for s in range(num_players) if s != seat]
        if state.phase == SELECT:
            got = select_scores(hand, *light, worlds)
            expected = [0] * len(hand)
            for world in worlds.tolist():
                opp = [ref_agents.greedy_card(h, rows, v["row_bullheads"]) for h in world]
                for j, card in enumerate(hand):
                    first = [card - 1] + [c - 1 for c in opp]
                    expected[j] += _engine_score(config, [hand, *world], rows, first)
        else:
            own, revealed = v["revealed"][seat], v["revealed"]
            got = row_scores(own, [revealed[s] for s in others], hand, *light, worlds)
            expected = [0] * 4
            for world in worlds.tolist():
                hands = [[own, *hand]] + [[revealed[s], *h] for s, h in zip(others, world, strict=True)]
                for r in range(4):
                    first = [104 + r, own - 1] + [revealed[s] - 1 for s in others]
                    expected[r] += _engine_score(config, hands, rows, first)
            rows_checked += 1
        assert got.tolist() == expected, (i, state)
    assert rows_checked >= 2


def test_scores_by_hand() -> None:
    # Two players. Rows end 10, 20, 30, 40 (3, 3, 3 bullheads; the 40 row is full: 5 cards, 9 bullheads).
    # Own hand [35, 50]; the one world gives the opponent [60, 70]; its greedy card now is 60 (60 and 70 both
    # cost the full row, ties to the lower card).
    ends, lens, costs = [10, 20, 30, 40], [1, 1, 1, 5], [3, 3, 3, 9]
    own = np.full(2, -1, np.int64)
    scores = select_scores([35, 50], ends, lens, costs, np.array([[[60, 70]]]), own)
    # 35: it goes on 30; 60 takes the full row (9). Then 50 on 35, 70 on 60. Own 0, all 9: 2 * 0 - 9 = -9.
    # 50: it takes the full row (9); 60 goes on 50. Then 35 on 30, 70 on 60. Own 9, all 9: 2 * 9 - 9 = 9.
    assert scores.tolist() == [-9, 9]
    assert own.tolist() == [0, 9]  # the own bullheads alone
    # the low card 5, the other seat's 25 revealed, no cards left: take a 3-bullhead row or the full one
    own_rows = np.full(4, -1, np.int64)
    rows = row_scores(5, [25], [], ends, lens, costs, np.zeros((1, 1, 0), np.int64), own_rows)
    assert rows.tolist() == [2 * 3 - 3, 2 * 3 - 3, 2 * 3 - 3, 2 * 9 - 9]
    assert own_rows.tolist() == [3, 3, 3, 9]


def test_batched_player_prefers_the_same_card_on_clear_positions() -> None:
    config = GameConfig(num_players=4, episode="round")
    positions = [s for s in _positions(config, 600, seed=11) if s.phase == SELECT and len(s.hands[0]) >= 3]
    reference = ref_agents.MonteCarloAgent(2048)
    clear: list[tuple[State, int]] = []
    for i, state in enumerate(positions):
        v = view(state, 0)
        rows = v["rows"]
        worlds = reference._worlds(v, v["hand"], np.random.default_rng(i))
        scores = select_scores(
            v["hand"], [r[-1] for r in rows], [len(r) for r in rows], v["row_bullheads"], worlds
        ) / len(worlds)
        best, second = np.sort(scores)[:2]
        if second - best >= 6.0:  # clearly better: by 2 bullheads of own minus mean opponent penalty (2048 worlds)
            clear.append((state, v["hand"][int(np.argmin(scores))]))
    assert len(clear) >= 30
    batch = BatchedGames(config, len(clear), seed=0)
    for b, (state, _) in enumerate(clear):
        batch.set_state(b, state)
    seats = np.array([True, False, False, False])
    chosen = MonteCarloPlayers(batch, seats, 256, seed=1).act(np.zeros((len(clear), 4), np.int64))[:, 0] + 1
    agent = ref_agents.MonteCarloAgent(256)
    by_reference = [agent.act(view(state, 0), np.random.default_rng(b)) + 1 for b, (state, _) in enumerate(clear)]
    expected = [card for _, card in clear]
    assert chosen.tolist() == expected
    assert by_reference == expected


def test_batched_mc_plays_legal_games_and_beats_greedy() -> None:
    config = GameConfig(num_players=4, episode="round")
    B = 400
    games = BatchedGames(config, B, seed=3)
    mc_seat = np.arange(B) % 4
    seats = np.zeros((B, 4), bool)
    seats[np.arange(B), mc_seat] = True
    greedy = HeuristicPlayers(games, np.where(seats, -1, kind_codes(["greedy"])[0]))
    mc = MonteCarloPlayers(games, seats, 16, seed=4)
    actions = np.zeros((B, 4), np.int64)
    row_choices = 0
    while not games.done.all():
        row_choices += int(np.count_nonzero((games.phase == 1) & (games.chooser == mc_seat)))
        games.step(mc.act(greedy.act(actions)), check=True)  # every action checked legal
    own = games.totals[np.arange(B), mc_seat]
    others = (games.totals.sum(axis=1) - own) / 3
    assert row_choices > 20
    assert own.mean() < others.mean() - 1.0  # mc:16 takes clearly fewer bullheads than the greedy seats


def test_bad_arguments() -> None:
    games = BatchedGames(GameConfig(num_players=3), 2, seed=0)
    with pytest.raises(ValueError, match="mc samples must be a positive integer, got 0"):
        MonteCarloPlayers(games, [True, False, False], 0)
    with pytest.raises(ValueError, match=r"seats must have shape \(num_players=3,\)"):
        MonteCarloPlayers(games, [True, False], 8)


def test_batched_mc_drafts_as_the_reference_agent() -> None:
    config = GameConfig(num_players=5, variant="logic", episode="round")
    positions = _positions(config, 120, seed=2, phases=(DRAFT,))
    assert len(positions) >= 40
    batch = BatchedGames(config, len(positions), seed=0)
    for b, state in enumerate(positions):
        batch.set_state(b, state)
    chosen = MonteCarloPlayers(batch, np.ones(5, bool), 8, seed=0).act(np.zeros((len(positions), 5), np.int64))
    agent = ref_agents.MonteCarloAgent(8)
    rng = np.random.default_rng(0)
    expected = [[agent.act(view(state, s), rng) for s in range(5)] for state in positions]
    np.testing.assert_array_equal(chosen, expected)
