"""The observation layout: every piece's meaning on a known position, and the fast encoder against the reference."""

from __future__ import annotations

import random

import numpy as np
import pytest

from sixnimmt_env import observation
from sixnimmt_env.observation import (
    OBS_SIZE,
    PIECES,
    SLICES,
    BatchEncoder,
    action_mask,
    encode,
    pieces,
)
from sixnimmt_env.rules import engine
from sixnimmt_env.rules.engine import CHOOSE_ROW, DRAFT, SELECT, GameConfig, State


def encode_all(state: State) -> tuple[np.ndarray, np.ndarray]:
    """Every seat's observation and mask through a fresh :class:`BatchEncoder`: ``float32 (n, OBS_SIZE)``, ``int8
    (n, 109)``."""
    enc = BatchEncoder(state.config.num_players)
    enc.reset(state)
    return enc.observations(), enc.masks()


def card_vector(cards: list[int]) -> np.ndarray:
    out = np.zeros(104, np.float32)
    out[[c - 1 for c in cards]] = 1.0
    return out


def f32(values: list[float]) -> np.ndarray:
    return np.asarray(values, np.float64).astype(np.float32)


def test_layout_is_506_values_in_the_documented_order() -> None:
    assert OBS_SIZE == 506
    assert [name for name, _ in PIECES][:3] == ["hand", "rows", "row_lengths"]
    starts = [SLICES[name].start for name, _ in PIECES]
    assert starts == sorted(starts) and SLICES["drafted_by"].stop == OBS_SIZE
    assert SLICES["num_players"].stop == SLICES["drafted_by"].start == 402  # the piece was appended: no offset moved


@pytest.fixture
def e1_choose_row() -> State:
    """RULES.md E1 with a third player: rows [50] [60] [70] [80]; seat 0 plays 5, seat 1 71, seat 2 85."""
    config = GameConfig(num_players=3)
    start = engine.from_position(config, [[5, 90], [71, 95], [85, 99]], [[50], [60], [70], [80]], totals=[10, 20, 30])
    state, penalties = engine.step(start, [4, 70, 84])
    assert state.phase == CHOOSE_ROW and state.chooser == 0 and penalties == (0, 0, 0)
    return state


def test_every_piece_of_a_bystander_in_the_choose_row_phase(e1_choose_row: State) -> None:
    v = pieces(encode(e1_choose_row, 1))
    np.testing.assert_array_equal(v["hand"], card_vector([95]))
    expected_rows = np.zeros(20, np.float32)
    expected_rows[[0, 5, 10, 15]] = f32([50 / 104, 60 / 104, 70 / 104, 80 / 104])
    np.testing.assert_array_equal(v["rows"], expected_rows)
    np.testing.assert_array_equal(v["row_lengths"], f32([0.2] * 4))
    np.testing.assert_array_equal(v["row_ends"], f32([50 / 104, 60 / 104, 70 / 104, 80 / 104]))
    np.testing.assert_array_equal(v["row_bullheads"], f32([0.3] * 4))  # 50, 60, 70, 80: 3 bullheads each (R2)
    np.testing.assert_array_equal(v["seen"], card_vector([5, 50, 60, 70, 71, 80, 85]))  # rows + pending turn (R9a)
    # seat-relative: seat 1 first, then 2, then 0
    np.testing.assert_array_equal(v["revealed"], f32([71 / 104, 85 / 104, 5 / 104] + [0] * 7))
    np.testing.assert_array_equal(v["phase"], f32([0, 1, 0, 0]))
    np.testing.assert_array_equal(v["must_act"], f32([0]))
    np.testing.assert_array_equal(v["chooser"], f32([0, 0, 1] + [0] * 7))  # seat 0 is relative seat 2 of seat 1
    np.testing.assert_array_equal(v["display"], np.zeros(104, np.float32))
    np.testing.assert_array_equal(v["totals"], f32([20 / 66, 30 / 66, 10 / 66] + [0] * 7))
    np.testing.assert_array_equal(v["round_penalties"], np.zeros(10, np.float32))
    np.testing.assert_array_equal(v["seat_present"], f32([1, 1, 1] + [0] * 7))
    np.testing.assert_array_equal(v["turn"], f32([0.8]))  # hands of 2 cards: 8 turns done, the 9th is pending
    np.testing.assert_array_equal(v["round"], f32([0.0]))
    np.testing.assert_array_equal(v["num_players"], f32([0.3]))


def test_the_chooser_sees_it_must_act_and_only_row_actions_are_legal(e1_choose_row: State) -> None:
    v = pieces(encode(e1_choose_row, 0))
    np.testing.assert_array_equal(v["hand"], card_vector([90]))
    np.testing.assert_array_equal(v["must_act"], f32([1]))
    np.testing.assert_array_equal(v["chooser"], f32([1] + [0] * 9))
    np.testing.assert_array_equal(v["revealed"][:3], f32([5 / 104, 71 / 104, 85 / 104]))
    assert np.flatnonzero(action_mask(e1_choose_row, 0)).tolist() == [104, 105, 106, 107]
    assert np.flatnonzero(action_mask(e1_choose_row, 1)).tolist() == [108]


def test_after_the_row_choice_rows_penalties_and_turn_move(e1_choose_row: State) -> None:
    state, penalties = engine.step(e1_choose_row, [106, 108, 108])  # seat 0 takes row 2 = [70] (E1)
    assert penalties == (3, 0, 0)
    v = pieces(encode(state, 0))
    assert state.rows == ((50,), (60, 71), (5,), (80, 85))
    np.testing.assert_array_equal(v["rows"][[0, 5, 6, 10, 15, 16]], f32([50, 60, 71, 5, 80, 85]) / np.float32(104))
    np.testing.assert_array_equal(v["row_lengths"], f32([0.2, 0.4, 0.2, 0.4]))
    np.testing.assert_array_equal(v["row_bullheads"], f32([0.3, 0.4, 0.2, 0.5]))  # +71: 1, 5: 2, 80+85: 3+2
    np.testing.assert_array_equal(v["totals"][:3], f32([13 / 66, 20 / 66, 30 / 66]))
    np.testing.assert_array_equal(v["round_penalties"][:3], f32([3 / 66, 0, 0]))
    np.testing.assert_array_equal(v["phase"], f32([1, 0, 0, 0]))
    np.testing.assert_array_equal(v["must_act"], f32([1]))
    np.testing.assert_array_equal(v["chooser"], np.zeros(10, np.float32))
    np.testing.assert_array_equal(v["turn"], f32([0.9]))
    assert np.flatnonzero(action_mask(state, 0)).tolist() == [89]  # card 90 is the only card left


def test_draft_display_and_round_pieces() -> None:
    config = GameConfig(num_players=2, variant="logic")
    display = [c for c in range(1, 25) if c not in (3, 17)]
    state = engine.from_position(config, [[3], [17]], display=display, round_index=1)
    assert state.phase == DRAFT and state.chooser == 1  # round 1: seat 1 picks first (V2); 2 picks made
    v = pieces(encode(state, 1))
    np.testing.assert_array_equal(v["display"], card_vector(display))
    np.testing.assert_array_equal(v["phase"], f32([0, 0, 1, 0]))
    np.testing.assert_array_equal(v["must_act"], f32([1]))
    np.testing.assert_array_equal(v["round"], f32([0.1]))
    np.testing.assert_array_equal(v["rows"], np.zeros(20, np.float32))
    assert np.flatnonzero(action_mask(state, 1)).tolist() == [c - 1 for c in display]
    assert np.flatnonzero(action_mask(state, 0)).tolist() == [108]


def _random_games(config: GameConfig, seed: int, games: int) -> list[list[State]]:
    rng = np.random.default_rng(seed)
    pick = random.Random(seed)
    out = []
    for _ in range(games):
        state = engine.new_game(config, rng)
        states = [state]
        while not state.done:
            actions = []
            for seat in range(config.num_players):
                legal = engine.legal_actions(state, seat)
                actions.append(legal[pick.randrange(len(legal))])
            state, _ = engine.step(state, actions, rng)
            states.append(state)
        out.append(states)
    return out


CONFIGS = [
    GameConfig(num_players=n, variant=variant, row_choice=row_choice, end_score=25)
    for n, variant, row_choice in [
        (2, "standard", "player"),
        (3, "tactics", "cheapest"),
        (4, "standard", "player"),
        (4, "logic", "player"),
        (5, "standard", "cheapest"),
        (7, "logic", "cheapest"),
        (10, "standard", "player"),
        (10, "tactics", "player"),
    ]
]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: f"{c.num_players}p-{c.variant}-{c.row_choice}")
def test_batch_encoder_agrees_with_encode_bit_for_bit(config: GameConfig) -> None:
    encoder = BatchEncoder(config.num_players)
    phases = set()
    for states in _random_games(config, seed=config.num_players, games=2):
        encoder.reset(states[0])
        for i, state in enumerate(states):
            if i:
                encoder.update(state)
            obs, masks = encoder.observations(), encoder.masks()
            assert obs.shape == (config.num_players, OBS_SIZE) and obs.dtype == np.float32
            assert masks.shape == (config.num_players, 109) and masks.dtype == np.int8
            phases.add(state.phase)
            for seat in range(config.num_players):
                np.testing.assert_array_equal(obs[seat].view(np.uint32), encode(state, seat).view(np.uint32))
                np.testing.assert_array_equal(masks[seat], action_mask(state, seat))
    expected = {SELECT, "done"} | ({DRAFT} if config.variant == "logic" else set())
    if config.row_choice == "player":
        expected.add(CHOOSE_ROW)
    assert phases == expected


def test_encode_all_matches_and_returns_fresh_arrays(e1_choose_row: State) -> None:
    obs, masks = encode_all(e1_choose_row)
    for seat in range(3):
        np.testing.assert_array_equal(obs[seat], encode(e1_choose_row, seat))
        np.testing.assert_array_equal(masks[seat], action_mask(e1_choose_row, seat))
    encoder = BatchEncoder(3)
    encoder.reset(e1_choose_row)
    first = encoder.observations()
    encoder.update(engine.step(e1_choose_row, [104, 108, 108])[0])
    np.testing.assert_array_equal(first, obs)  # handed-out arrays never change


def test_masks_mark_exactly_the_legal_actions() -> None:
    config = GameConfig(num_players=4, variant="logic")
    for states in _random_games(config, seed=5, games=1):
        for state in states[:-1]:
            for seat in range(4):
                legal = engine.legal_actions(state, seat)
                assert np.flatnonzero(action_mask(state, seat)).tolist() == list(legal)
                assert legal, "a live seat always has a legal action"


def test_batch_encoder_masks_are_fresh_and_follow_the_rule_past_its_kept_masks(monkeypatch: pytest.MonkeyPatch) -> None:
    """``masks()`` writes the options of ``engine.choices`` (the draft displays, the chooser's rows, nothing when
    done): a handed-out mask changed by its caller changes no later one, and the kept masks start afresh."""
    monkeypatch.setattr(observation, "_OPTION_MASKS_KEPT", 3)
    config = GameConfig(num_players=3, variant="logic", row_choice="player", end_score=25)
    encoder = BatchEncoder(3)
    phases = set()
    for states in _random_games(config, seed=11, games=2):
        encoder.reset(states[0])
        for state in states:
            encoder.update(state)
            phases.add(state.phase)
            first = encoder.masks()
            first[:] = 7
            masks = encoder.masks()
            for seat in range(3):
                assert np.flatnonzero(masks[seat]).tolist() == list(engine.legal_actions(state, seat))
            assert len(encoder._option_masks) <= 3
    assert phases == {SELECT, CHOOSE_ROW, DRAFT, "done"}
    done = encoder.masks()
    assert done.shape == (3, 109) and not done.any()  # a finished game: no legal action


def test_batch_encoder_rejects_a_state_of_another_size() -> None:
    with pytest.raises(ValueError, match="serves 3 players"):
        BatchEncoder(3).reset(engine.new_game(GameConfig(num_players=4), np.random.default_rng(0)))


def test_drafted_by_says_who_took_each_card_seat_relative_and_persists() -> None:
    """V2: the draft picks are public; ``drafted_by`` gives (k + 1) / 10 for relative seat k, 0 otherwise."""
    from sixnimmt_env.compiled.core import BatchedGames
    from sixnimmt_env.pettingzoo_env import SixNimmtParallelEnv

    config = GameConfig(num_players=3, variant="logic", episode="round")  # deck 1..34; seat 0 picks first
    state = engine.new_game(config, np.random.default_rng(0))
    # seat s takes the lowest display card on its turn: seat 0 gets 1, 4, 7, ...; seat 1 2, 5, ...; seat 2 3, 6, ...
    while state.phase == DRAFT:
        acts = [engine.NOOP] * 3
        acts[state.chooser] = state.display[0] - 1
        state, _ = engine.step(state, acts)
    assert state.drafted == tuple(tuple(range(s + 1, 31, 3)) for s in range(3))
    expected = {  # observer -> value of cards 1, 2, 3 (taken by seats 0, 1, 2)
        0: [0.1, 0.2, 0.3],
        2: [0.2, 0.3, 0.1],
    }
    for seat, values in expected.items():
        v = pieces(encode(state, seat))["drafted_by"]
        np.testing.assert_array_equal(v[:3], f32(values))
        np.testing.assert_array_equal(v[3:6], f32(values))
        assert not v[30:].any()  # 31..34 start the rows, never drafted
    # played cards stay marked; every backend agrees
    env = SixNimmtParallelEnv(num_players=3, variant="logic", episode="round", backend="compiled")
    env.reset(options={"hands": state.hands, "rows": state.rows, "drafted": state.drafted})
    games = BatchedGames(config, 1, seed=0)
    games.set_state(0, state)
    played = state
    for _ in range(4):
        played, _ = engine.step(played, [played.hands[s][0] - 1 for s in range(3)])
        while played.phase == CHOOSE_ROW:
            acts = [engine.NOOP] * 3
            acts[played.chooser] = engine.ROW_ACTION
            played, _ = engine.step(played, acts)
    assert played.turn == 4 and played.drafted == state.drafted
    for seat in (0, 2):
        np.testing.assert_array_equal(
            pieces(encode(played, seat))["drafted_by"], pieces(encode(state, seat))["drafted_by"]
        )
    compiled = env.step({f"player_{s}": state.hands[s][0] - 1 for s in range(3)})[0]
    games.step(np.array([[state.hands[s][0] - 1 for s in range(3)]]))
    after = engine.step(state, [state.hands[s][0] - 1 for s in range(3)])[0]
    batched = games.observe()
    for seat in range(3):
        reference = encode(after, seat)
        np.testing.assert_array_equal(compiled[f"player_{seat}"]["observation"], reference)
        np.testing.assert_array_equal(batched[0, seat], reference)
    # no draft, no picks: standard and tactics leave the piece 0
    for variant in ("standard", "tactics"):
        other = engine.new_game(GameConfig(num_players=3, variant=variant), np.random.default_rng(1))
        assert other.drafted == ((), (), ()) and not pieces(encode(other, 1))["drafted_by"].any()


def test_from_position_checks_draft_picks() -> None:
    logic = GameConfig(num_players=2, variant="logic")  # deck 1..24
    hands = [[1, 2], [3]]
    display = [c for c in range(4, 25) if c not in (1, 2, 3)]
    state = engine.from_position(logic, hands, display=display, round_index=0)
    assert state.drafted == ((1, 2), (3,))  # default: the hands are the picks
    with pytest.raises(ValueError, match="drafted cards \\[24\\] are still on the display"):
        engine.from_position(logic, hands, display=display, drafted=[[1, 2], [3, 24]])
    rows = [[21], [22], [23], [24]]
    picks = [list(range(1, 11)), list(range(11, 21))]
    select = engine.from_position(logic, [[2, 3], [12, 15]], rows, drafted=picks)
    assert select.drafted == (tuple(range(1, 11)), tuple(range(11, 21)))
    with pytest.raises(ValueError, match="holds \\[12\\] but did not draft them"):
        engine.from_position(logic, [[2, 3], [12, 15]], rows, drafted=[picks[0], [15]])
    with pytest.raises(ValueError, match="drafted by both seat 0 and seat 1"):
        engine.from_position(logic, [[2, 3], [12, 15]], rows, drafted=[picks[0], [*picks[1][:-1], 1]])
    with pytest.raises(ValueError, match="need variant='logic'"):
        engine.from_position(GameConfig(num_players=2), [[2], [12]], rows, drafted=[[2], [12]])
    with pytest.raises(ValueError, match="expected 2 lists of drafted cards"):
        engine.from_position(logic, [[2, 3], [12, 15]], rows, drafted=[picks[0]])
