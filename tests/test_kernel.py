"""The compiled rules kernel (sixnimmt_env/rules/kernel.py) against the reference engine, and the arena's fused
loop against the batched engine stepped from Python."""

from __future__ import annotations

import numpy as np
import pytest

from sixnimmt_env import agents as ref_agents
from sixnimmt_env.compiled import BatchedGames
from sixnimmt_env.compiled.fast_arena import play_games, streams
from sixnimmt_env.compiled.heuristics import HeuristicPlayers, kind_codes
from sixnimmt_env.rules import engine as E
from sixnimmt_env.rules import kernel as K
from sixnimmt_env.seeding import AGENT_TAG, DEAL_TAG


def _random_rows(rng: np.random.Generator) -> list[list[int]]:
    """Four ascending rows of 1..5 distinct cards of 1..104."""
    lengths = rng.integers(1, 6, size=4)
    cards = rng.choice(np.arange(1, 105), size=int(lengths.sum()), replace=False)
    rows, i = [], 0
    for k in lengths:
        rows.append(sorted(cards[i : i + k].tolist()))
        i += k
    return rows


def _light(rows: list[list[int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    ends = np.array([r[-1] for r in rows], np.int64)
    lens = np.array([len(r) for r in rows], np.int64)
    costs = np.array([E.row_bullheads(r) for r in rows], np.int64)
    return ends, lens, costs


def test_row_functions_match_the_engine_on_random_positions() -> None:
    rng = np.random.default_rng(0)
    lows = fulls = 0
    for _ in range(3000):
        rows = _random_rows(rng)
        ends, lens, costs = _light(rows)
        assert K.cheapest_row(costs) == E.cheapest_row(rows)
        for card in rng.integers(1, 105, size=5).tolist():
            if any(card in r for r in rows):
                continue
            target = E.row_for(rows, card)
            assert K.target_row(ends, card) == target
            higher = [c for c in range(card + 1, 105) if all(c not in r for r in rows)]
            if higher:  # a second card placed after the own one: the own card takes its immediate cost
                cfg = E.GameConfig(num_players=2, row_choice="cheapest", episode="round")
                state = E.from_position(cfg, [[card], [higher[-1]]], rows)
                _, pen = E.step(state, [card - 1, higher[-1] - 1])
                assert K.immediate_cost(ends, lens, costs, card) == pen[0], (rows, card)
            lows += target < 0
            fulls += target >= 0 and len(rows[target]) == E.ROW_LIMIT
    assert lows > 500 and fulls > 500


@pytest.mark.parametrize("num_players", [2, 4, 7, 10])
def test_play_turn_matches_the_engine_on_random_positions(num_players: int) -> None:
    """The rows (light and full), piles and penalties after one turn are the engine's."""
    rng = np.random.default_rng(num_players)
    cfg = E.GameConfig(num_players=num_players, row_choice="cheapest", episode="round")
    checked_low = 0
    for _ in range(400):
        rows = _random_rows(rng)
        free = [c for c in range(1, 105) if all(c not in r for r in rows)]
        plays = rng.choice(free, size=num_players, replace=False)
        state = E.from_position(cfg, [[int(c)] for c in plays], rows)
        after, pen = E.step(state, [int(c) - 1 for c in plays])
        ends, lens, costs = _light(rows)
        full = np.zeros((4, 5), np.int16)
        for r, row in enumerate(rows):
            full[r, : len(row)] = row
        pile = np.full(105, -1, np.int8)
        got = np.zeros(num_players, np.int64)
        low = K.lowest_play(plays, num_players)
        if K.target_row(ends, plays[low]) < 0:
            checked_low += 1
        K.play_turn(ends, lens, costs, full, pile, plays.astype(np.int64), num_players, got, K.cheapest_row(costs))
        assert got.tolist() == list(pen)
        assert [full[r, : lens[r]].tolist() for r in range(4)] == [list(r) for r in after.rows]
        assert ends.tolist() == [r[-1] for r in after.rows]
        assert costs.tolist() == [E.row_bullheads(r) for r in after.rows]
        for s in range(num_players):
            assert sorted(np.flatnonzero(pile == s).tolist()) == sorted(after.piles[s])
    assert checked_low > 20


CONFIGS = [
    E.GameConfig(num_players=4, episode="round"),
    E.GameConfig(num_players=2, episode="round"),
    E.GameConfig(num_players=5, row_choice="cheapest", episode="round"),
    E.GameConfig(num_players=3),
    E.GameConfig(num_players=6, variant="tactics", end_rule="more_than", end_score=30),
    E.GameConfig(num_players=4, variant="logic", episode="round"),
    E.GameConfig(num_players=5, variant="logic", max_rounds=2, end_score=None, row_choice="cheapest"),
    E.GameConfig(num_players=10, episode="round"),
]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: f"{c.num_players}p-{c.variant}-{c.row_choice}-{c.episode}")
def test_fused_arena_loop_plays_the_games_of_the_stepped_engine(config: E.GameConfig) -> None:
    """play_games (one compiled call per chunk) == BatchedGames stepped with HeuristicPlayers from the same streams."""
    n = config.num_players
    specs = ["greedy", "lowest", "random", "highest", "random", "greedy", "lowest", "random", "greedy", "highest"][:n]
    start, stop, seed = 30, 330, 9
    _, pen, rounds, tables = play_games(config, specs, seed, start, stop)
    games = np.arange(start, stop)
    batch = BatchedGames(config, len(games), seed=0)
    batch.reset(streams=streams(DEAL_TAG, seed, games))
    players = HeuristicPlayers(batch, kind_codes(specs)[tables])
    players.rng[:] = streams(AGENT_TAG, seed, games)
    actions = np.zeros((len(games), n), np.int64)
    while not batch.done.all():
        batch.step(players.act(actions), check=True)
    np.testing.assert_array_equal(pen, batch.totals)
    np.testing.assert_array_equal(rounds, batch.round + 1)
    assert pen.sum() > 0 and (config.episode == "round" or rounds.max() > 1)


def test_heuristic_kernels_agree_with_the_reference_agents_on_the_light_rows() -> None:
    """greedy_index on light rows picks the reference greedy card on random positions."""
    from sixnimmt_env.compiled.heuristics import greedy_index

    rng = np.random.default_rng(5)
    for _ in range(2000):
        rows = _random_rows(rng)
        free = [c for c in range(1, 105) if all(c not in r for r in rows)]
        hand = sorted(rng.choice(free, size=int(rng.integers(1, 11)), replace=False).tolist())
        ends, lens, costs = _light(rows)
        j = greedy_index(np.array([hand], np.int64), 0, len(hand), ends, lens, costs)
        assert hand[j] == ref_agents.greedy_card(hand, rows, [E.row_bullheads(r) for r in rows])


def test_first_states_are_next_random_applied_once_to_key_xor_id() -> None:
    from numba import njit

    @njit
    def advanced_once(key: np.uint64, ids: np.ndarray) -> np.ndarray:
        rng = np.empty(ids.shape[0], np.uint64)
        for b in range(ids.shape[0]):
            rng[b] = key ^ np.uint64(ids[b])
            rng[b] = K.next_random(rng, b)
        return rng

    ids = np.array([0, 1, 2, 7, 2**40, 2**62 + 3], np.int64)
    key = np.uint64(0xDEADBEEFCAFEBABE)
    got = K.first_states(key, ids)
    assert got.dtype == np.uint64 and got.shape == (6,)
    assert np.array_equal(got, advanced_once(key, ids))
    assert len(set(got.tolist())) == 6
    # the arena's streams: a hash of (tag, seed, id), the same for an id whatever the batch around it
    assert np.array_equal(streams(DEAL_TAG, 5, np.array([3, 9]))[1:], streams(DEAL_TAG, 5, np.array([9])))
