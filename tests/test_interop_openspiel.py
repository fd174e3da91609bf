"""OpenSpiel (issue 37's table row): ``python_sixnimmt`` against the real ``pyspiel``.

OpenSpiel's own checks (``random_sim_test`` with serialisation, ``rl_environment.Environment`` with its random
agent and its DQN, ``evaluate_bots``, the turn-based transform with its Python ``ISMCTSBot``), a game played
through OpenSpiel equal to the same game through the engine, no hidden information in any observation, and our
agents as OpenSpiel bots."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pyspiel
import pytest
from open_spiel.python import rl_environment
from open_spiel.python.algorithms import evaluate_bots, ismcts, mcts, random_agent
from open_spiel.python.bots import uniform_random

from sixnimmt_env import observation
from sixnimmt_env.agents import make_agent
from sixnimmt_env.openspiel import AgentBot, SixNimmtState, config_of, play, resampler, simultaneous_state
from sixnimmt_env.rewards import rewards
from sixnimmt_env.rules import engine

SIM = pyspiel.PlayerId.SIMULTANEOUS


def load(**params: object) -> pyspiel.Game:
    return pyspiel.load_game("python_sixnimmt", params)


def deal(state: pyspiel.State, cards: list[int]) -> None:
    """Apply chance outcomes: the cards (values) in slot order."""
    for c in cards:
        assert state.is_chance_node()
        state.apply_action(c - 1)


def test_importing_the_package_never_imports_openspiel() -> None:
    code = (
        "import sys, sixnimmt_env, sixnimmt_env.rules.engine\n"
        "print('pyspiel' in sys.modules, 'sixnimmt_env.openspiel' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_parameters_and_game_info() -> None:
    game = load()
    assert game.get_type().short_name == "python_sixnimmt"
    assert game.get_type().dynamics == pyspiel.GameType.Dynamics.SIMULTANEOUS
    assert game.get_type().utility == pyspiel.GameType.Utility.GENERAL_SUM
    assert game.num_players() == 4
    assert game.num_distinct_actions() == 108  # cards 0..103, rows 104..107
    assert game.max_chance_outcomes() == 104
    assert (game.min_utility(), game.max_utility()) == (-(65 + 171), 0.0)  # a total of at most 65 before the last round
    assert game.observation_tensor_shape() == [observation.OBS_SIZE]
    assert game.information_state_tensor_shape() == [observation.OBS_SIZE + 100 + 40]
    relative = load(players=3, variant="tactics", reward="relative", episode="round")
    assert relative.get_type().utility == pyspiel.GameType.Utility.ZERO_SUM
    assert (relative.min_utility(), relative.max_utility(), relative.utility_sum()) == (-171.0, 171.0, 0.0)
    assert config_of({"players": 3, "end_score": 0, "max_rounds": 2}) == (
        engine.GameConfig(num_players=3, end_score=None, max_rounds=2),
        "penalty",
    )


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"variant": "classic"}, r"variant must be one of 'standard', 'tactics', 'logic', got 'classic'"),
        ({"players": 11}, r"python_sixnimmt: players must be an integer 2..10 \(RULES.md R3\), got 11"),
        ({"end_score": -5}, r"end_score must be a positive integer or 0 \(none\), got -5"),
        ({"end_score": 0}, r"end_score and max_rounds cannot both be 0 when episode='game'"),
        ({"reward": "win"}, r"reward must be one of 'penalty', 'relative', got 'win'"),
    ],
)
def test_bad_parameters_name_the_value(params: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        load(**params)


def test_unknown_parameter_is_refused() -> None:
    with pytest.raises(pyspiel.SpielError, match="bogus"):
        load(bogus=1)
    with pytest.raises(ValueError, match=r"unknown parameters \['bogus'\]"):
        config_of({"bogus": 1})


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"players": 2, "variant": "tactics", "reward": "relative", "end_score": 20},
        {"players": 3, "variant": "logic", "episode": "round"},
        {"players": 5, "row_choice": "cheapest", "episode": "round"},
        {"players": 3, "end_score": 0, "max_rounds": 2, "end_rule": "more_than"},
    ],
)
def test_random_sim_test(params: dict[str, object]) -> None:
    pyspiel.random_sim_test(load(**params), num_sims=2, serialize=True, verbose=False)


def test_turn_based_random_sim_test() -> None:
    game = pyspiel.convert_to_turn_based(load(players=3, episode="round"))
    assert game.get_type().dynamics == pyspiel.GameType.Dynamics.SEQUENTIAL
    pyspiel.random_sim_test(game, num_sims=2, serialize=False, verbose=False)


def play_engine_and_openspiel(
    params: dict[str, object], specs: list[str], seed: int
) -> tuple[engine.State, SixNimmtState, int]:
    """Play one game with the engine and the same game through OpenSpiel (the engine's deals as chance outcomes,
    the same actions), checking the wrapped engine state after every step. Returns both and the rounds dealt."""
    game = load(**params)
    config, mode = config_of(params)
    rng = np.random.default_rng(seed)
    agents = [make_agent(s) for s in specs]
    agent_rng = np.random.default_rng(seed + 1)
    es = engine.new_game(config, rng)
    state = game.new_initial_state()
    returns = [0.0] * config.num_players
    rounds = 0
    while True:
        if state.is_chance_node():
            deal(state, [c for h in es.hands for c in h] + [r[0] for r in es.rows])
            rounds += 1
        assert state.engine_state == es
        assert state.returns() == pytest.approx(returns)
        if es.done:
            break
        joint = [agents[i].act(engine.view(es, i), agent_rng) for i in range(config.num_players)]
        before = es
        es, penalties = engine.step(es, joint, rng)
        returns = [a + b for a, b in zip(returns, rewards(penalties, mode), strict=True)]
        if before.phase == engine.SELECT:
            assert state.current_player() == SIM
            state.apply_actions(joint)
        else:
            assert state.current_player() == before.chooser
            assert state.legal_actions() == list(engine.legal_actions(before, before.chooser))
            state.apply_action(joint[before.chooser])
    assert state.is_terminal()
    return es, state, rounds


def test_a_game_through_openspiel_equals_the_engine() -> None:
    es, state, rounds = play_engine_and_openspiel({"players": 3, "end_score": 30}, ["greedy", "random", "lowest"], 5)
    assert rounds >= 2  # a deal mid-game through chance nodes
    assert max(es.totals) >= 30
    assert state.returns() == [-float(t) for t in es.totals]


def test_relative_rewards_and_row_choices_equal_the_engine() -> None:
    es, state, _ = play_engine_and_openspiel(
        {"players": 4, "episode": "round", "reward": "relative"}, ["lowest", "lowest", "random", "random"], 3
    )
    t = es.totals
    assert state.returns() == pytest.approx([(sum(t) - x) / 3 - x for x in t])
    assert sum(state.returns()) == pytest.approx(0.0)
    assert any(row >= 0 for row in state._taken)  # the lowest-card players met the R9 row choice


def test_logic_variant_drafts_through_decisions_without_chance() -> None:
    es, state, _ = play_engine_and_openspiel({"players": 3, "variant": "logic", "episode": "round"}, ["greedy"] * 3, 2)
    history = state.full_history()
    assert all(pa.player != pyspiel.PlayerId.CHANCE for pa in history)  # V2: the display is the deck, face up
    assert [pa.player for pa in history[:4]] == [0, 1, 2, 0]  # picks in seat order from seat 0 (round 0)
    assert state.returns() == [-float(t) for t in es.totals]


E1_HANDS = [list(range(1, 11)), list(range(11, 21)), list(range(21, 31))]


def test_chance_outcomes_and_the_low_card_node() -> None:
    """RULES.md E1's shape: the lowest card takes a chosen row (R9), through a sequential node."""
    state = load(players=3, episode="round").new_initial_state()
    outcomes = state.chance_outcomes()
    assert len(outcomes) == 104 and outcomes[0] == (0, pytest.approx(1 / 104))
    deal(state, [c for h in E1_HANDS for c in h] + [50, 60, 70, 80])
    assert state.current_player() == SIM
    assert state.legal_actions(1) == list(range(10, 20))
    state.apply_actions([4, 10, 20])  # cards 5, 11, 21: all below every row
    assert state.current_player() == 0
    assert state.legal_actions(0) == [104, 105, 106, 107]
    assert state.legal_actions(1) == []
    state.apply_action(106)  # seat 0 takes row [70]
    assert state.rewards() == [-3.0, 0.0, 0.0]
    assert state.engine_state.rows == ((50,), (60,), (5, 11, 21), (80,))
    with pytest.raises(ValueError, match=r"seat 1: action 3 is not legal in phase 'select'"):
        state.apply_actions([0, 3, 21])


def two_deals(rng: np.random.Generator) -> tuple[list[int], list[int]]:
    """Two 3-seat deals with the same hand for seat 0, the same rows and the same first card for seats 1 and 2;
    the rest of seats 1 and 2's hands differ (drawn from the cards seat 0 cannot see)."""
    deck = [int(c) for c in rng.permutation(np.arange(1, 105))]
    own, rows, first1, first2, rest = deck[:10], deck[10:14], deck[14], deck[15], deck[16:]
    deals = []
    for k in (0, 1):
        others = rest[k * 18 : k * 18 + 18]
        deals.append([*own, first1, *others[:9], first2, *others[9:], *rows])
    return deals[0], deals[1]


def views(state: pyspiel.State, seat: int) -> tuple[list[float], list[float], str, str]:
    return (
        state.observation_tensor(seat),
        state.information_state_tensor(seat),
        state.observation_string(seat),
        state.information_state_string(seat),
    )


def test_no_hidden_information_in_tensors_or_strings() -> None:
    """E4: changing the cards seat 0 cannot see changes none of its observations, at a chance node mid-deal, at
    the card choice, after a turn, at a row choice; its own hand and the public cards do change them."""
    game = load(players=3, episode="round", variant="standard")
    rng = np.random.default_rng(7)
    for _ in range(3):
        deal_a, deal_b = two_deals(rng)
        a, b = game.new_initial_state(), game.new_initial_state()
        deal(a, deal_a[:15])
        deal(b, deal_b[:15])
        assert views(a, 0) == views(b, 0)
        assert views(a, 1)[0] != views(b, 1)[0]  # seat 1 does see its own different first cards
        deal(a, deal_a[15:])
        deal(b, deal_b[15:])
        assert views(a, 0) == views(b, 0)
        assert views(a, 1)[0] != views(b, 1)[0]
        joint = [deal_a[0] - 1, deal_a[10] - 1, deal_a[20] - 1]  # the cards common to both deals
        a.apply_actions(joint)
        b.apply_actions(joint)
        if a.current_player() >= 0:  # a low card: the same row choice in both
            a.apply_action(104)
            b.apply_action(104)
        assert views(a, 0) == views(b, 0)
        assert a.engine_state.hands[1] != b.engine_state.hands[1]
    state = game.new_initial_state()
    deal(state, deal_a)
    for i, j in ((0, 11), (30, 11)):  # a card of seat 0's hand, then a row card, swapped with one of seat 1
        other = list(deal_a)
        other[i], other[j] = other[j], other[i]
        changed = game.new_initial_state()
        deal(changed, other)
        assert all(x != y for x, y in zip(views(state, 0), views(changed, 0), strict=True))


def test_observation_is_our_layout_and_the_info_state_adds_the_round() -> None:
    game = load(players=3, episode="round")
    state = game.new_initial_state()
    deal(state, [c for h in E1_HANDS for c in h] + [35, 60, 70, 80])
    state.apply_actions([9, 10, 20])  # 10 below every row: the R9 choice; 11 and 21 wait for it
    state.apply_action(105)  # seat 0 takes [60]
    obs = np.array(state.observation_tensor(1), np.float32)
    np.testing.assert_array_equal(obs, observation.encode(state.engine_state, 1))
    info = np.array(state.information_state_tensor(1), np.float32)
    np.testing.assert_array_equal(info[: observation.OBS_SIZE], obs)
    plays = info[observation.OBS_SIZE : observation.OBS_SIZE + 100].reshape(10, 10)
    assert plays[0, :3].tolist() == pytest.approx([11 / 104, 21 / 104, 10 / 104])  # seat-relative: 1, 2, 0
    assert plays[1:].sum() == 0.0
    taken = info[observation.OBS_SIZE + 100 :].reshape(10, 4)
    assert taken[0].tolist() == [0.0, 1.0, 0.0, 0.0] and taken[1:].sum() == 0.0
    observer = game.make_py_observer(pyspiel.IIGObservationType(perfect_recall=True))
    assert list(observer.dict)[-2:] == ["plays", "rows_taken"]
    assert [k for k in observer.dict][: len(observation.PIECES)] == [name for name, _ in observation.PIECES]
    text = state.information_state_string(1)
    assert "hand [12 13 14 15 16 17 18 19 20]" in text
    assert "events: round 0: rows 35 60 70 80; plays 10 11 21; seat 0 takes row 1" in text
    assert "1 2 3" not in text  # seat 0's hand


def test_rl_environment_with_openspiel_random_agents() -> None:
    game = load(players=3, episode="round")
    env = rl_environment.Environment(game, enable_legality_check=True)
    env.seed(3)
    np.random.seed(3)
    agents = [random_agent.RandomAgent(p, game.num_distinct_actions()) for p in range(3)]
    for _ in range(2):
        time_step = env.reset()
        totals = np.zeros(3)
        steps = 0
        while not time_step.last():
            player = time_step.observations["current_player"]
            acting = range(3) if player == SIM else [player]
            actions = [0, 0, 0]  # a seat without a legal action at a row choice gives any placeholder
            for p in acting:
                actions[p] = int(agents[p].step(time_step).action)
            time_step = env.step(actions)
            totals += time_step.rewards
            steps += 1
        assert 10 <= steps <= 20  # 10 card choices and at most 10 row choices
        assert len(time_step.observations["info_state"][0]) == observation.OBS_SIZE + 140
        assert totals.tolist() == env.get_state.returns()
        assert totals.sum() < 0


def test_rl_environment_with_openspiel_dqn() -> None:
    import torch
    from open_spiel.python.pytorch import dqn

    torch.set_num_threads(1)
    game = load(players=2, variant="tactics", episode="round")
    env = rl_environment.Environment(game)
    size = env.observation_spec()["info_state"][0]
    learner = dqn.DQN(0, size, game.num_distinct_actions(), hidden_layers_sizes=[32], replay_buffer_capacity=500,
                      batch_size=16, min_buffer_size_to_learn=16, learn_every=4)  # fmt: skip
    opponent = random_agent.RandomAgent(1, game.num_distinct_actions())
    for _ in range(8):
        time_step = env.reset()
        while not time_step.last():
            player = time_step.observations["current_player"]
            actions = [0, 0]
            if player in (SIM, 0):
                actions[0] = int(learner.step(time_step).action)
            if player in (SIM, 1):
                actions[1] = int(opponent.step(time_step).action)
            time_step = env.step(actions)
        learner.step(time_step)
    assert learner.loss is not None and np.isfinite(float(learner.loss))
    assert len(learner.replay_buffer) >= 8 * 10


def test_evaluate_bots_with_our_agents_and_openspiel_random() -> None:
    game = load(players=4, episode="round")
    bots = [
        AgentBot("champion", 0, seed=1),
        AgentBot("mc:8", 1, seed=2),
        AgentBot("greedy", 2),
        uniform_random.UniformRandomBot(3, np.random.RandomState(4)),
    ]
    returns = evaluate_bots.evaluate_bots(game.new_initial_state(), bots, np.random.RandomState(5))
    assert len(returns) == 4 and all(r <= 0 for r in returns) and sum(returns) < 0


def test_agent_bot_plays_what_the_agent_plays() -> None:
    game = load(players=3, episode="round")
    state = game.new_initial_state()
    deal(state, [c for h in E1_HANDS for c in h] + [35, 60, 70, 80])
    greedy = make_agent("greedy")
    for seat in range(3):
        expected = greedy.act(engine.view(state.engine_state, seat), np.random.default_rng(0))
        assert AgentBot("greedy", seat).step(state) == expected
    assert AgentBot("highest", 2).step(state) == 29  # card 30
    state.apply_actions([9, 10, 20])
    assert AgentBot("lowest", 0).step(state) == 104 + engine.cheapest_row(state.engine_state.rows)
    with pytest.raises(ValueError, match=r"seat 1 has no decision"):
        AgentBot("greedy", 1).step(state)
    with pytest.raises(ValueError, match=r"unknown agent spec 'nobody'"):
        AgentBot("nobody", 0)


@pytest.mark.parametrize(("players", "variant", "games"), [(3, "standard", 2), (2, "logic", 1)])
def test_ismcts_plays_legal_games_on_the_turn_based_form(players: int, variant: str, games: int) -> None:
    game = pyspiel.convert_to_turn_based(load(players=players, variant=variant, episode="round"))
    for seed in range(games):
        bot = ismcts.ISMCTSBot(game, mcts.RandomRolloutEvaluator(1, np.random.RandomState(seed)), uct_c=10.0,
                               max_simulations=20, random_state=np.random.RandomState(seed))  # fmt: skip
        bot.set_resampler(resampler(seed))
        state = game.new_initial_state()
        others = [AgentBot("greedy", 1), AgentBot("random", 2, seed=seed)][: players - 1]
        returns = play(state, [bot, *others], np.random.RandomState(seed))
        decisions = sum(pa.player >= 0 for pa in state.full_history())
        picks = 10 * players if variant == "logic" else 0
        assert 10 * players + picks <= decisions <= 10 * players + picks + 10  # cards, draft picks, row choices
        sim, pending = simultaneous_state(state)
        assert pending == [] and sim.is_terminal()
        assert returns == [-float(t) for t in sim.engine_state.totals]


def test_play_refuses_an_illegal_bot_action() -> None:
    class Stubborn(pyspiel.Bot):
        def step(self, state: pyspiel.State) -> int:
            return 103  # card 104, not in a 3-player tactics deck

    game = load(players=3, variant="tactics", episode="round")
    bots = [AgentBot("greedy", 0), Stubborn(), AgentBot("greedy", 2)]
    with pytest.raises(ValueError, match=r"the bot of seat 1 chose action 103, not legal; legal actions: \["):
        play(game.new_initial_state(), bots, np.random.RandomState(0))
    returns = play(game.new_initial_state(), [AgentBot("lowest", s) for s in range(3)], np.random.RandomState(0))
    assert len(returns) == 3 and sum(returns) < 0


def test_resampler_keeps_the_information_of_the_seat_to_move() -> None:
    game = pyspiel.convert_to_turn_based(load(players=3, episode="round"))
    state = game.new_initial_state()
    deal(state, [*range(41, 71), 1, 2, 3, 4])  # hands 41..50, 51..60, 61..70
    for a in (49, 50, 69):  # turn 1: cards 50, 51, 70 (no low card)
        state.apply_action(a)
    state.apply_action(40)  # turn 2: seat 0 chooses card 41, hidden from seat 1
    assert state.current_player() == 1
    key = state.information_state_string(1)
    sample = resampler(11)
    seen_hands, seen_pending = set(), set()
    for _ in range(12):
        world = sample(state, 1)
        assert world.current_player() == 1
        assert world.information_state_string(1) == key
        sim, pending = simultaneous_state(world)
        hands = sim.engine_state.hands
        assert hands[1] == tuple(range(52, 61))  # seat 1's own hand is kept
        assert len(pending) == 1 and pending[0] + 1 in hands[0]
        assert 50 not in hands[0] and 70 not in hands[2]  # revealed cards stay played
        assert sim._plays == ((50, 51, 70),)
        seen_hands.add(hands[2])
        seen_pending.add(pending[0])
    assert len(seen_hands) > 1 and len(seen_pending) > 1
