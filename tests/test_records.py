"""Game records: recorded arena games replay exactly through the engine, load back typed, print move by move."""

from __future__ import annotations

import dataclasses
import json

import pytest

from sixnimmt_env.arena import main as arena_main
from sixnimmt_env.arena import run_arena, run_league
from sixnimmt_env.records import (
    FORMAT,
    VERSION,
    GameRecord,
    ReplayError,
    describe_turn,
    iter_turns,
    read_records,
    replay,
    write_records,
)
from sixnimmt_env.records_text import format_game
from sixnimmt_env.records_text import main as replay_main
from sixnimmt_env.rules import engine as E


def _arena_records(tmp_path, agents, games, config, **kw):
    path = tmp_path / "games.jsonl"
    results = run_arena(agents, games, 3, config, save_games=path, keep_games=True, **kw)
    return results, read_records(path)


@pytest.mark.parametrize(
    "config",
    [
        E.GameConfig(num_players=4, episode="round"),
        E.GameConfig(num_players=3, episode="game"),
        E.GameConfig(num_players=4, episode="round", row_choice="cheapest"),
        E.GameConfig(num_players=3, variant="logic", episode="game", end_score=30),
        E.GameConfig(num_players=5, variant="tactics", episode="round"),
    ],
    ids=["round", "game", "cheapest", "logic-game", "tactics"],
)
def test_saved_arena_games_replay_every_penalty(tmp_path, config):
    agents = ["greedy", "random", "lowest", "highest", "random"][: config.num_players]
    results, records = _arena_records(tmp_path, agents, 12, config)
    assert len(records) == 12
    per_game = results["per_game"]["penalties"]  # by listed position
    for g, record in enumerate(records):
        assert record.game == g and record.deal == g and record.seed == 3
        assert record.config == config
        assert list(record.positions) == [(i + g) % config.num_players for i in range(config.num_players)]
        assert list(record.agents) == [agents[p] for p in record.positions]
        frames = replay(record)
        # every step's penalties came out of the engine equal to the recorded ones; their sum is the totals
        summed = [sum(f.penalties[s] for f in frames) for s in range(config.num_players)]
        assert summed == list(record.totals)
        assert [sum(f.step.penalties[s] for f in frames) for s in range(config.num_players)] == summed
        # the arena's own result for this game agrees
        assert [record.totals[record.positions.index(p)] for p in range(config.num_players)] == per_game[g]
        assert frames[-1].after.phase == E.DONE
        assert sum(len(r.steps) for r in record.rounds) == len(frames)
        if config.variant == "logic":
            drafts = [f for f in frames if f.step.phase == E.DRAFT]
            assert len(drafts) == len(record.rounds) * 10 * config.num_players
            assert all(len(h) == 10 for r in record.rounds for h in r.hands)


def test_record_round_trip_and_format(tmp_path):
    _, records = _arena_records(tmp_path, ["greedy", "random", "random"], 4, E.GameConfig(num_players=3))
    line = json.loads((tmp_path / "games.jsonl").read_text().splitlines()[0])
    assert list(line)[:3] == ["format", "version", "config"]
    assert line["format"] == FORMAT and line["version"] == VERSION == 1
    assert set(line["config"]) == set(E.GameConfig.field_names())
    first = line["rounds"][0]
    assert len(first["hands"]) == 3 and all(len(h) == 10 for h in first["hands"])
    assert len(first["rows"]) == 4 and all(len(r) == 1 for r in first["rows"])
    assert first["steps"][0]["phase"] == "select" and len(first["steps"][0]["cards"]) == 3
    # write and read back: equal typed records
    again = tmp_path / "again.jsonl"
    write_records(again, records)
    assert read_records(again) == records
    assert isinstance(records[0], GameRecord)


def test_damaged_records_are_refused(tmp_path):
    _, records = _arena_records(tmp_path, ["greedy", "random", "random"], 2, E.GameConfig(num_players=3))
    record = records[0]
    rnd = record.rounds[0]
    step0 = rnd.steps[0]
    wrong = dataclasses.replace(step0, penalties=tuple(p + 1 for p in step0.penalties))
    bad = dataclasses.replace(record, rounds=(dataclasses.replace(rnd, steps=(wrong, *rnd.steps[1:])),))
    with pytest.raises(ReplayError, match=r"game 0, round 0, step 0 \(select\): the engine gives penalties"):
        replay(bad)
    other_card = dataclasses.replace(step0, cards=(105, *step0.cards[1:]))
    bad = dataclasses.replace(record, rounds=(dataclasses.replace(rnd, steps=(other_card, *rnd.steps[1:])),))
    with pytest.raises(ReplayError, match=r"step 0 \(select\): seat 0: card 105 is not legal; legal: card \d+, card"):
        replay(bad)
    bad = dataclasses.replace(record, totals=(0, 0, 0))
    with pytest.raises(ReplayError, match="totals"):
        replay(bad)
    path = tmp_path / "bad.jsonl"
    path.write_text('{"format": "something-else", "version": 1}\n')
    with pytest.raises(ValueError, match=r"bad.jsonl, line 1: not a game record"):
        read_records(path)
    path.write_text("{not json\n")
    with pytest.raises(ValueError, match=r"line 1: not JSON"):
        read_records(path)


def test_describe_turn_rules_e1_e2():
    # RULES.md E2: rows [10 11 12 13 14] [50] [60] [70]; plays 51, 61, 15: the 15 takes 11 bullheads (R8)
    placements, rows = describe_turn([[10, 11, 12, 13, 14], [50], [60], [70]], [51, 61, 15])
    full = [p for p in placements if p.reason == "full"]
    assert [(p.seat, p.card, p.row, p.taken, p.bullheads) for p in full] == [(2, 15, 0, (10, 11, 12, 13, 14), 11)]
    assert rows == [(15,), (50, 51), (60, 61), (70,)]
    # E1: rows [50] [60] [70] [80]; A plays 5 and takes row 2 (70, 3 bullheads), B plays 71
    placements, rows = describe_turn([[50], [60], [70], [80]], [5, 71], chosen_row=2)
    assert placements[0] == (0, 5, 2, "low", (70,), 3)
    assert rows == [(50,), (60, 71), (5,), (80,)]


def test_iter_turns_matches_engine(tmp_path):
    _, records = _arena_records(tmp_path, ["greedy", "random", "lowest", "highest"], 6, E.GameConfig())
    for record in records:
        taken = [0, 0, 0, 0]
        for _frame, placements, _rows in iter_turns(record):
            for p in placements:
                taken[p.seat] += p.bullheads
        assert taken == list(record.totals)


def test_league_and_workers_record_in_game_order(tmp_path):
    path = tmp_path / "league.jsonl"
    run_league(["greedy", "lowest", "highest", "random", "random"], 8, 1, workers=2, save_games=path)
    records = read_records(path)
    assert [r.game for r in records] == list(range(8))
    for r in records:
        replay(r)
        assert len(set(r.positions)) == 4


@pytest.mark.parametrize(
    "config",
    [
        E.GameConfig(num_players=4, episode="round"),
        E.GameConfig(num_players=3, variant="logic", episode="game", end_score=30),
        E.GameConfig(num_players=4, row_choice="cheapest", episode="game", end_score=40),
    ],
    ids=["round", "logic-game", "cheapest-game"],
)
def test_batched_engine_games_are_recorded_with_the_same_results(tmp_path, config):
    """Recording on the batched engine changes nothing in its results, and every game it recorded replays
    exactly through the reference engine."""
    agents = ["greedy", "lowest", "highest", "random"][: config.num_players]
    plain = run_arena(agents, 30, 5, config, keep_games=True, engine="batched")
    path = tmp_path / "b.jsonl"
    recorded = run_arena(agents, 30, 5, config, keep_games=True, engine="batched", save_games=path)
    assert recorded["per_game"] == plain["per_game"]
    records = read_records(path)
    assert [r.game for r in records] == list(range(30))
    for g, record in enumerate(records):
        replay(record)
        by_position = [record.totals[record.positions.index(p)] for p in range(config.num_players)]
        assert by_position == plain["per_game"]["penalties"][g]
    with pytest.raises(ValueError, match="already exists"):
        run_arena(agents, 6, 0, config, save_games=path)


def test_replay_command_prints_the_game(tmp_path, capsys):
    games = tmp_path / "g.jsonl"
    arena_main(
        ["--agents", "greedy,lowest,random,highest", "--games", "4", "--out", str(tmp_path / "p"), "--save-games",
         str(games), "--quiet"]
    )  # fmt: skip
    assert "wrote 4 game records" in capsys.readouterr().out
    assert replay_main([str(games)]) == 0
    assert "4 game(s)" in capsys.readouterr().out
    assert replay_main([str(games), "--game", "1"]) == 0
    text = capsys.readouterr().out
    record = read_records(games)[1]
    assert text == format_game(record) + "\n"
    assert text.startswith("Game 1 (seed 0, deal 1): 4 players, variant standard, row choice player, a single round")
    assert "Seats: lowest (seat 0), random (seat 1), highest (seat 2), greedy (seat 3)" in text
    assert text.count("  Turn ") == 10
    for frame, placements, _ in iter_turns(record):
        cards = ", ".join(f"{record.agents[s]} {c}" for s, c in enumerate(frame.step.cards))
        assert f"Turn {frame.before.turn + 1}: {cards}" in text
        for p in placements:
            if p.reason == "full":
                assert f"sixth card of row {p.row}, takes {list(p.taken)}" in text
            if p.reason == "low":
                assert f"lower than every row, chose row {p.row}, takes {list(p.taken)}" in text
    totals = ", ".join(f"{record.agents[s]} (seat {s}) {t}" for s, t in enumerate(record.totals))
    assert totals.split(",")[0] in text.splitlines()[-1]
    assert replay_main([str(games), "--game", "9"]) == 2
    assert "--game must be 0..3" in capsys.readouterr().err
