"""Parity of the batched engine with the reference engine (issue 5).

The contract: with the same deals and the same actions, :class:`BatchedGames` and :mod:`sixnimmt_env.rules.engine`
give identical hands, rows, penalty piles, penalties, totals, phases, observations and masks after every step,
and the vectorised heuristic agents choose exactly what the reference agents choose.
"""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from sixnimmt_env import agents as ref_agents
from sixnimmt_env.compiled import BatchedGames, core, reference_deals
from sixnimmt_env.compiled.heuristics import HeuristicPlayers, kind_codes
from sixnimmt_env.observation import OBS_SIZE, action_mask, encode
from sixnimmt_env.rules.engine import (
    DONE,
    NOOP,
    NUM_ACTIONS,
    GameConfig,
    State,
    from_position,
    legal_actions,
    new_game,
    step,
    view,
)
from sixnimmt_env.rules.kernel import random_below


@njit(cache=True)
def random_legal_actions(mask: np.ndarray, out: np.ndarray, rng: np.ndarray) -> None:
    """Uniformly random legal actions from masks: ``mask`` (B, n, 109) 0/1, ``out`` (B, n) int64, ``rng`` (B,) uint64
    (:func:`~sixnimmt_env.rules.kernel.random_below`); seats with an all-zero mask get the no-op 108."""
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


# (config, games): every variant and option, every player count; a few hundred games in all.
CONFIGS: list[tuple[GameConfig, int]] = [
    (GameConfig(num_players=2, episode="round"), 40),
    (GameConfig(num_players=3, variant="tactics"), 12),
    (GameConfig(num_players=4), 12),
    (GameConfig(num_players=4, row_choice="cheapest", episode="round"), 40),
    (GameConfig(num_players=5, variant="logic", episode="round"), 25),
    (GameConfig(num_players=6, end_rule="more_than", end_score=30), 12),
    (GameConfig(num_players=7, variant="tactics", row_choice="cheapest", max_rounds=2), 12),
    (GameConfig(num_players=8, end_score=None, max_rounds=2), 10),
    (GameConfig(num_players=9, variant="logic", row_choice="cheapest", end_score=25), 8),
    (GameConfig(num_players=10, episode="round"), 20),
    (GameConfig(num_players=3, variant="logic", max_rounds=2, end_score=None), 10),
]
MAX_INJECTED_ROUNDS = 40


def _sorted_piles(state: State) -> State:
    return state._replace(piles=tuple(tuple(sorted(p)) for p in state.piles))


def play_in_parity(config: GameConfig, games: int, seed: int, observe: bool = True) -> int:
    """Play ``games`` games with random legal actions in both engines, asserting parity after every step.

    Returns the number of steps compared (summed over games).
    """
    n = config.num_players
    states = [new_game(config, np.random.default_rng([seed, b])) for b in range(games)]
    ref_rngs = [np.random.default_rng([seed, b]) for b in range(games)]
    for rng in ref_rngs:  # the generators that deal later rounds, past the first deal
        new_game(config, rng)
    batch = BatchedGames(config, games, seed=seed)
    if config.variant != "logic":
        deals = reference_deals(config, [np.random.default_rng([seed, b]) for b in range(games)], MAX_INJECTED_ROUNDS)
        batch.reset(deals=deals)
    choose = np.random.default_rng(seed)
    obs, masks = np.empty((games, n, OBS_SIZE), np.float32), np.empty((games, n, 109), np.int8)
    compared = 0
    while True:
        for b, state in enumerate(states):
            assert _sorted_piles(batch.get_state(b)) == _sorted_piles(state), f"game {b}"
        if observe:
            batch.observe(obs)
            batch.legal_mask(masks)
            for b, state in enumerate(states):
                for s in range(n):
                    np.testing.assert_array_equal(obs[b, s], encode(state, s), err_msg=f"game {b} seat {s}")
                    np.testing.assert_array_equal(masks[b, s], action_mask(state, s), err_msg=f"game {b} seat {s}")
        live = [b for b, state in enumerate(states) if not state.done]
        assert list(np.flatnonzero(~batch.done)) == live
        if not live:
            return compared
        actions = np.full((games, n), NOOP, np.int64)
        expected = np.zeros((games, n), np.int64)
        for b in live:
            for s in range(n):
                legal = legal_actions(states[b], s)
                actions[b, s] = legal[int(choose.integers(len(legal)))]
            states[b], pen = step(states[b], actions[b].tolist(), ref_rngs[b])
            expected[b] = pen
            compared += 1
        np.testing.assert_array_equal(batch.step(actions), expected)


def _config_id(config: GameConfig) -> str:
    return "-".join(str(v) for v in (config.num_players, config.variant, config.row_choice, config.episode))


@pytest.mark.parametrize(("config", "games"), CONFIGS, ids=[_config_id(c) for c, _ in CONFIGS])
def test_parity_with_reference_engine(config: GameConfig, games: int) -> None:
    steps = play_in_parity(config, games, seed=games * 31 + config.num_players)
    draft = config.num_players * 10 if config.variant == "logic" else 0
    assert steps >= games * (10 + draft)  # every game was played through at least one round


@pytest.mark.slow
def test_parity_ten_thousand_games() -> None:
    configs = [c for c, _ in CONFIGS]
    total = 0
    for i in range(10_000 // 500):
        total += play_in_parity(configs[i % len(configs)], 500, seed=1000 + i, observe=i % 4 == 0)
    assert total > 10_000 * 10


def test_cheapest_row_choice_and_full_row_penalties() -> None:
    """E1/E2 through the batched engine: a low card with the player's choice, then a sixth card."""
    config = GameConfig(num_players=3)
    state = from_position(config, [[5, 90], [71, 91], [15, 92]], [[50], [60], [70], [80]])
    batch = BatchedGames(config, 1, seed=0)
    batch.set_state(0, state)
    assert batch.step(np.array([[4, 70, 14]])).tolist() == [[0, 0, 0]]  # 5 is low: seat 0 chooses (R9)
    assert batch.get_state(0).phase == "choose_row"
    assert batch.legal_mask_of(0, 0).nonzero()[0].tolist() == [104, 105, 106, 107]
    assert batch.step(np.array([[106, NOOP, NOOP]])).tolist() == [[3, 0, 0]]  # E1: row [70] costs 3
    assert batch.get_state(0).rows == ((50,), (60, 71), (5, 15), (80,))  # then 15 and 71 placed ascending (R6, R7)
    config = GameConfig(num_players=3, episode="round")
    state = from_position(config, [[51], [61], [15]], [[10, 11, 12, 13, 14], [50], [60], [70]])
    batch = BatchedGames(config, 1, seed=0)
    batch.set_state(0, state)
    assert batch.step(np.array([[50, 60, 14]])).tolist() == [[0, 0, 11]]  # E2
    assert batch.done.tolist() == [True]


def test_illegal_action_is_a_clear_error_and_changes_nothing() -> None:
    config = GameConfig(num_players=2)
    batch = BatchedGames(config, 3, seed=4)
    before = batch.get_state(1)
    actions = np.array([[batch.hand[b, s, 0] - 1 for s in range(2)] for b in range(3)], np.int64)
    actions[1, 1] = NOOP
    with pytest.raises(ValueError, match=r"game 1, seat 1: action 108 is not legal in phase 'select'"):
        batch.step(actions)
    assert batch.get_state(1) == before
    with pytest.raises(ValueError, match=r"actions must have shape \(batch_size=3, num_players=2\)"):
        batch.step(actions[:, :1])


@pytest.mark.parametrize("variant", ["standard", "logic"])
def test_step_refuses_exactly_what_the_masks_leave_out(variant: str) -> None:
    """``step``'s check (the masks of ``kernel.mask_all``) against ``legal_mask``: in every phase each action the
    mask leaves out (and -1, 109) is refused naming its game and seat, with nothing changed; the masks' actions
    are taken, and the actions of finished games are ignored."""
    config = GameConfig(num_players=3, variant=variant, episode="round")  # type: ignore[arg-type]
    B = 4
    batch = BatchedGames(config, B, seed=7)
    rng = np.random.default_rng(3)
    phases_seen: set[int] = set()
    refused = 0
    finished_steps = 0
    for _ in range(60):
        masks = batch.legal_mask()
        actions = np.full((B, 3), -5, np.int64)  # -5 stays in the rows of finished games
        for b in range(B):
            if batch.phase[b] == core.DONE:
                continue
            for s in range(3):
                actions[b, s] = rng.choice(np.flatnonzero(masks[b, s]))
        b = int(rng.integers(B))
        if batch.phase[b] != core.DONE:
            phases_seen.add(int(batch.phase[b]))
            s = int(rng.integers(3))
            before = [batch.get_state(g) for g in range(B)]
            illegal = [*np.flatnonzero(masks[b, s] == 0)[::7].tolist(), -1, NUM_ACTIONS]
            for a in illegal:
                wrong = actions.copy()
                wrong[b, s] = a
                with pytest.raises(ValueError, match=rf"^game {b}, seat {s}: action {a} is not legal"):
                    batch.step(wrong)
                refused += 1
            assert [batch.get_state(g) for g in range(B)] == before
        finished_steps += int(batch.done.any())
        batch.step(actions)  # legal where a game goes on, -5 where it is over
        if batch.done.all():
            batch.reset_done()
    assert refused > 100
    assert finished_steps > 0
    assert phases_seen >= ({core.SELECT, core.CHOOSE_ROW} if variant == "standard" else {core.SELECT, core.DRAFT})


def test_same_seed_same_games_and_reset_done() -> None:
    config = GameConfig(num_players=4, episode="round")
    a, b = BatchedGames(config, 64, seed=9), BatchedGames(config, 64, seed=9)
    c = BatchedGames(config, 64, seed=10)
    np.testing.assert_array_equal(a.hand, b.hand)
    assert not np.array_equal(a.hand, c.hand)
    players = HeuristicPlayers(a, kind_codes(["greedy", "lowest", "random", "highest"]), seed=1)
    actions = np.zeros((64, 4), np.int64)
    steps = 0
    while not a.done.all() and steps < 21:  # 10 turns, plus at most one row choice per turn (R9)
        a.step(players.act(actions))
        steps += 1
    assert a.done.all() and steps > 10  # with 64 games, some turn somewhere needs a row choice
    assert (a.round_pen.sum(axis=1) > 0).all()  # someone takes a row in every 10-turn round
    first = a.hand.copy()
    assert a.reset_done().sum() == 64
    assert (a.phase == 0).all() and (a.hand_len == 10).all() and (a.totals == 0).all()
    assert not np.array_equal(first, a.hand)  # the streams continue: new deals


def test_deals_are_shuffled_decks() -> None:
    config = GameConfig(num_players=9, variant="tactics")
    batch = BatchedGames(config, 200, seed=3)
    dealt = np.concatenate([batch.hand.reshape(200, -1), batch.rows[:, :, 0]], axis=1)
    assert (np.sort(dealt, axis=1) == np.arange(1, 95)).all()  # V1: cards 1..94, each once
    counts = np.bincount(batch.rows[:, :, 0].ravel(), minlength=95)[1:]
    assert counts.max() < 30  # 800 row starters spread over 94 cards (mean 8.5)


def test_bad_deals_are_rejected() -> None:
    config = GameConfig(num_players=2)
    batch = BatchedGames(config, 2, seed=0)
    deals = np.zeros((2, 1, 24), np.int64)
    deals[0, 0] = np.arange(1, 25)
    deals[1, 0] = np.arange(1, 25)
    deals[1, 0, 5] = 1
    with pytest.raises(ValueError, match=r"deals\[1, 0\] must hold 24 distinct cards"):
        batch.reset(deals=deals)
    with pytest.raises(ValueError, match=r"deals must have shape"):
        batch.reset(deals=deals[:, :, :10])


# --------------------------------------------------------------------------- agents


def _positions(config: GameConfig, count: int, seed: int) -> list[State]:
    """Reference states met in random play, every phase included."""
    rng = np.random.default_rng(seed)
    out: list[State] = []
    state = new_game(config, rng)
    while len(out) < count:
        out.append(state)
        acts = [int(rng.choice(legal_actions(state, s))) for s in range(config.num_players)]
        state, _ = step(state, acts, rng)
        if state.phase == DONE:
            state = new_game(config, rng)
    return out


@pytest.mark.parametrize(
    "config",
    [GameConfig(num_players=4), GameConfig(num_players=6, variant="logic"), GameConfig(num_players=2)],
    ids=["standard4", "logic6", "standard2"],
)
@pytest.mark.parametrize("spec", ["lowest", "highest", "greedy"])
def test_heuristic_agents_match_reference(config: GameConfig, spec: str) -> None:
    positions = _positions(config, 400, seed=len(spec) + config.num_players)
    batch = BatchedGames(config, len(positions), seed=0)
    for b, state in enumerate(positions):
        batch.set_state(b, state)
    n = config.num_players
    chosen = HeuristicPlayers(batch, kind_codes([spec] * n)).act(np.zeros((len(positions), n), np.int64))
    agent = ref_agents.make_agent(spec)
    rng = np.random.default_rng(0)
    expected = [[agent.act(view(state, s), rng) for s in range(n)] for state in positions]
    np.testing.assert_array_equal(chosen, expected)
    phases = {state.phase for state in positions}
    assert phases >= {"select", "draft"} or phases >= {"select", "choose_row"}


def test_random_agent_is_uniform_over_legal_actions() -> None:
    config = GameConfig(num_players=4)
    state = from_position(config, [[3, 20, 33, 40, 99], [4, 5, 6, 7, 8], [9, 10, 11, 12, 13], [50, 51, 52, 53, 54]],
                          [[1], [30], [60], [70]])  # fmt: skip
    batch = BatchedGames(config, 5000, seed=0)
    for b in range(5000):
        batch.set_state(b, state)
    chosen = HeuristicPlayers(batch, kind_codes(["random"] * 4), seed=7).act(np.zeros((5000, 4), np.int64))
    counts = np.bincount(chosen[:, 0], minlength=109)
    assert counts[[2, 19, 32, 39, 98]].sum() == 5000
    assert counts[[2, 19, 32, 39, 98]].min() > 850  # 1000 expected each; sd 28
    # random play from masks, as the benchmark does it: legal and spread over the whole hand
    out = np.zeros((5000, 4), np.int64)
    random_legal_actions(batch.legal_mask(), out, np.arange(1, 5001, dtype=np.uint64))
    counts = np.bincount(out[:, 3], minlength=109)
    assert counts[[49, 50, 51, 52, 53]].min() > 850 and counts[[49, 50, 51, 52, 53]].sum() == 5000


def test_single_seat_observations_and_masks_match_all_seats() -> None:
    config = GameConfig(num_players=5, variant="logic")
    batch = BatchedGames(config, 64, seed=2)
    players = HeuristicPlayers(batch, kind_codes(["random"] * 5), seed=3)
    actions = np.zeros((64, 5), np.int64)
    seats = np.arange(64) % 5
    for _ in range(60):  # through the draft (50 picks) into the card play
        batch.step(players.act(actions))
        obs, masks = batch.observe(), batch.legal_mask()
        np.testing.assert_array_equal(batch.observe(seats=seats), obs[np.arange(64), seats])
        np.testing.assert_array_equal(batch.legal_mask(seats=seats), masks[np.arange(64), seats])
    assert (batch.phase != 2).all() and not batch.display.any()  # every draft is over (V2)
    assert (batch.hand_len < 10).any() and (batch.row_len.sum(axis=1) > 4).any()


def test_fast_arena_games_are_reproducible_and_rotate_seats() -> None:
    from sixnimmt_env.compiled.fast_arena import play_games, supports

    assert supports(["greedy", "random", ref_agents.LowestAgent()]) and not supports(["greedy", "mc:8"])
    config = GameConfig(num_players=4, episode="round")
    specs = ["greedy", "lowest", "random", "random"]
    start, pen, rounds, tables = play_games(config, specs, seed=5, start=0, stop=400)
    assert start == 0 and (rounds == 1).all() and pen.shape == (400, 4)
    assert tables[7].tolist() == [3, 0, 1, 2]  # position (i + g) mod n sits in seat i
    # the round's 4 * 10 cards minus the row starters' survivors: every game hands out some bullheads
    assert (pen.sum(axis=1) > 0).all()
    again = play_games(config, specs, seed=5, start=100, stop=300)[1]
    np.testing.assert_array_equal(again, pen[100:300])  # game g depends on (seed, g) only
    by_position = np.take_along_axis(pen, np.argsort(tables, axis=1), axis=1).mean(axis=0)
    assert by_position[0] < by_position[2] and by_position[0] < by_position[3]  # greedy beats random
    with pytest.raises(ValueError, match=r"no batched version"):
        play_games(config, ["greedy", "mc:8", "random", "random"], seed=0, start=0, stop=4)


def test_batched_games_are_a_drop_in_for_the_arena_games() -> None:
    from sixnimmt_env import seeding
    from sixnimmt_env.arena import play
    from sixnimmt_env.arena import pool as arena_pool
    from sixnimmt_env.compiled import fast_arena as fast

    assert (fast.DEAL_TAG, fast.AGENT_TAG, arena_pool.TABLE_TAG) == (play.DEAL_TAG, play.AGENT_TAG, seeding.TABLE_TAG)
    config = GameConfig(num_players=3, episode="round")
    pool = [ref_agents.GreedyAgent(), "lowest", "highest", "random", "greedy"]
    job = arena_pool.Job(config, seed=1, num_agents=5, duplicate=False, league=True)
    start, pen, rounds, tables = arena_pool.batched_games(job, pool, 10, 60)
    assert start == 10 and pen.shape == (50, 3) and (rounds == 1).all()
    expected = np.random.default_rng([arena_pool.TABLE_TAG, 1, 12]).permutation(5)[:3]
    assert tables[2].tolist() == expected.tolist()
    assert arena_pool.batched_games(job, [*pool, ref_agents.MonteCarloAgent(4)], 0, 4) is None
    job = arena_pool.Job(config, seed=1, num_agents=3, duplicate=True, league=False)
    pen = arena_pool.batched_games(job, ["greedy", "greedy", "greedy"], 0, 30)[1]
    # duplicate: games 3k..3k+2 replay one deal with rotated seats; identical agents take identical penalties
    np.testing.assert_array_equal(pen[0::3], pen[1::3])
    assert not np.array_equal(pen[0::3][0], pen[0::3][1]) or not np.array_equal(pen[0::3][1], pen[0::3][2])


def test_observe_and_legal_mask_refuse_an_output_array_they_would_overrun() -> None:
    games = BatchedGames(GameConfig(num_players=4), 8, seed=0)
    before = games.observe().copy()
    with pytest.raises(ValueError, match=r"observe: out must be a float32 array of shape \(8, 4, 506\), got a "
                       r"float32 array of shape \(8, 4, 402\)"):  # fmt: skip
        games.observe(np.zeros((8, 4, 402), np.float32))
    with pytest.raises(ValueError, match=r"observe: out must be a float32 array of shape \(8, 506\), got a float64"):
        games.observe(np.zeros((8, OBS_SIZE)), seats=np.zeros(8, np.int64))
    with pytest.raises(ValueError, match=r"legal_mask: out must be a int8 or bool array of shape \(8, 4, 109\)"):
        games.legal_mask(np.zeros((8, 4, 108), np.int8))
    with pytest.raises(ValueError, match=r"seats must be in 0\.\.3, got 4"):
        games.observe(np.zeros((8, OBS_SIZE), np.float32), seats=np.full(8, 4))
    with pytest.raises(ValueError, match=r"seats must have shape \(8,\), got \(3,\)"):
        games.legal_mask(np.zeros((8, 109), np.int8), seats=np.zeros(3, np.int64))
    np.testing.assert_array_equal(games.observe(), before)  # nothing was written or changed
    out = np.zeros((8, 4, OBS_SIZE), np.float32)
    assert games.observe(out) is out and out.any()
    masks = games.legal_mask(np.zeros((8, 4, 109), np.bool_))
    assert masks.dtype == np.bool_ and masks[:, :, :104].sum(axis=2).tolist() == [[10] * 4] * 8
