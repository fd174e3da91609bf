"""Arena: statistics on hand-computed examples, seat rotation, reproducibility, workers, league, CLI."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest

from sixnimmt_env.agents import make_agent
from sixnimmt_env.arena import main, markdown_table, play_game, run_arena, run_league, seat_positions
from sixnimmt_env.arena.summary import arena_rows, part_summary, rows_from_parts
from sixnimmt_env.rules import engine as E
from sixnimmt_env.stats import (
    Z95,
    fractional_ranks,
    mean_ci95,
    mean_ranks,
    merge_moments,
    moments,
    moments_ci95,
    win_shares,
)

HEURISTIC_TABLE = "greedy,lowest,random,random"

# --------------------------------------------------------------------------- statistics by hand


def test_mean_ci95_by_hand():
    mean, half = mean_ci95(np.array([1.0, 2.0, 3.0, 4.0]))
    # s^2 = (2.25 + 0.25 + 0.25 + 2.25) / 3 = 5/3; half-width = 1.959964 * sqrt(5/3) / 2
    assert mean == 2.5
    assert half == pytest.approx(1.959964 * math.sqrt(5 / 3) / 2, rel=1e-6)
    assert pytest.approx(1.959964, abs=1e-6) == Z95
    mean, half = mean_ci95(np.array([[0, 10], [2, 10], [4, 10]]))
    assert mean.tolist() == [2.0, 10.0]
    assert half.tolist() == pytest.approx([Z95 * 2 / math.sqrt(3), 0.0])
    with pytest.raises(ValueError, match="at least 2 samples"):
        mean_ci95(np.array([3.0]))


def test_win_shares_split_ties():
    shares = win_shares(np.array([[0, 0, 5, 3], [4, 2, 2, 2], [7, 1, 9, 8]]))
    assert shares.tolist() == [[0.5, 0.5, 0, 0], [0, 1 / 3, 1 / 3, 1 / 3], [0, 1, 0, 0]]


def test_fractional_ranks_share_tied_places():
    ranks = fractional_ranks(np.array([[0, 0, 5, 3], [4, 2, 2, 2], [1, 2, 3, 4], [6, 6, 6, 6]]))
    assert ranks.tolist() == [[1.5, 1.5, 4, 3], [4, 2, 2, 2], [1, 2, 3, 4], [2.5, 2.5, 2.5, 2.5]]


def test_moments_by_hand_and_merged_from_parts():
    m = moments(np.array([1.0, 2.0, 3.0, 4.0]))
    assert m.tolist() == [4.0, 2.5, 5.0]  # count, mean, squared deviations 2.25 + 0.25 + 0.25 + 2.25
    parts = [moments(np.array([1.0])), moments(np.array([2.0, 3.0])), moments(np.array([4.0]))]
    np.testing.assert_allclose(merge_moments(parts), [4.0, 2.5, 5.0], rtol=1e-15)
    mean, half = moments_ci95(m)
    assert mean == 2.5 and half == pytest.approx(Z95 * math.sqrt(5.0 / 3.0) / 2.0, rel=1e-15)
    with pytest.raises(ValueError, match="at least 2 samples"):
        moments_ci95(moments(np.array([3.0])))
    x = np.random.default_rng(5).normal(10.0, 4.0, size=(5001, 3))
    cuts = [0, 1, 700, 701, 3000, 5001]
    merged = merge_moments([moments(x[a:b]) for a, b in itertools.pairwise(cuts)])
    np.testing.assert_allclose(moments_ci95(merged), mean_ci95(x), rtol=1e-12)


@pytest.mark.parametrize(("episode", "duplicate"), [("round", False), ("game", False), ("round", True)])
def test_the_summary_of_parts_is_the_summary_of_all_games(episode: str, duplicate: bool):
    """The arena summarises chunk by chunk: any cut into parts (whole deals with duplicate) gives the rows of
    the whole run."""
    rng = np.random.default_rng(7)
    pen = rng.integers(0, 40, size=(4000, 4))
    rounds = rng.integers(1, 6, size=4000) if episode == "game" else np.ones(4000, np.int64)
    whole = arena_rows(pen, rounds, list("abcd"), episode, duplicate)
    cuts = [0, 4, 1000, 1004, 2400, 4000]
    parts = [part_summary(pen[a:b], rounds[a:b], episode, duplicate) for a, b in itertools.pairwise(cuts)]
    rows = rows_from_parts(parts[::-1], list("abcd"), episode)  # in any order
    assert [r.keys() for r in rows] == [r.keys() for r in whole]
    for r, w in zip(rows, whole, strict=True):
        for key, value in w.items():
            assert r[key] == (pytest.approx(value, rel=1e-12) if isinstance(value, float) else value), key
    assert len(whole[0]) == (9 if episode == "game" else 7)


def test_mean_ranks_are_the_mean_fractional_ranks():
    games = np.array([[0, 0, 5, 3], [4, 2, 2, 2], [1, 2, 3, 4], [6, 6, 6, 6]])
    assert mean_ranks(games).tolist() == [9 / 4, 8 / 4, 11.5 / 4, 11.5 / 4]
    rng = np.random.default_rng(3)
    for n in (2, 5, 10):
        penalties = rng.integers(0, 8, size=(3000, n))
        np.testing.assert_allclose(mean_ranks(penalties), fractional_ranks(penalties).mean(axis=0), atol=1e-12)


# --------------------------------------------------------------------------- seats and games


def test_seat_positions_rotate():
    assert seat_positions(4, 0) == (0, 1, 2, 3)
    assert seat_positions(4, 1) == (1, 2, 3, 0)
    assert seat_positions(4, 6) == (2, 3, 0, 1)
    assert seat_positions(3, 5) == (2, 0, 1)


class _SeatRecorder:
    """Deterministic agent (lowest card, cheapest row) that records the seat it is asked for."""

    def __init__(self) -> None:
        self.spec = "recorder"
        self.inner = make_agent("lowest")
        self.seats: list[int] = []

    def act(self, view, rng) -> int:
        if view["phase"] == E.SELECT and view["turn"] == 0:
            self.seats.append(view["seat"])
        return self.inner.act(view, rng)


def test_arena_rotates_seats_game_by_game():
    recorders = [_SeatRecorder() for _ in range(3)]
    run_arena(recorders, 6, seed=1)
    # position p sits in seat (p - g) mod 3 in game g
    assert recorders[0].seats == [0, 2, 1, 0, 2, 1]
    assert recorders[1].seats == [1, 0, 2, 1, 0, 2]
    assert recorders[2].seats == [2, 1, 0, 2, 1, 0]


def test_play_game_is_reproducible_and_depends_on_the_game_index():
    cfg = E.GameConfig(num_players=4, episode="round")
    agents = [make_agent(s) for s in HEURISTIC_TABLE.split(",")]
    a = play_game(cfg, agents, 3, 10)
    assert a == play_game(cfg, agents, 3, 10)
    assert len(a.penalties) == 4 and a.rounds == 1
    others = {play_game(cfg, agents, 3, g).penalties for g in range(11, 16)}
    assert len(others | {a.penalties}) > 1
    whole = play_game(E.GameConfig(num_players=4, end_score=30), agents, 3, 10)
    assert whole.rounds >= 2 and max(whole.penalties) >= 30
    with pytest.raises(ValueError, match="one agent per seat"):
        play_game(cfg, agents[:3], 3, 10)


def test_arena_statistics_match_the_per_game_penalties():
    res = run_arena(HEURISTIC_TABLE, 40, seed=5, keep_games=True, engine="reference")
    pen = np.array(res["per_game"]["penalties"])
    assert pen.shape == (40, 4) and res["per_game"]["rounds"] == [1] * 40
    cfg = E.GameConfig(num_players=4, episode="round")
    agents = [make_agent(s) for s in HEURISTIC_TABLE.split(",")]
    for g in (0, 1, 2, 3, 17):
        seats = seat_positions(4, g)
        result = play_game(cfg, [agents[p] for p in seats], 5, g)
        for seat, p in enumerate(seats):
            assert pen[g, p] == result.penalties[seat]
    mean, ci = mean_ci95(pen)
    shares = win_shares(pen).mean(axis=0)
    ranks = fractional_ranks(pen).mean(axis=0)
    for p, row in enumerate(res["agents"]):
        assert row["position"] == p and row["agent"] == HEURISTIC_TABLE.split(",")[p]
        assert row["mean_penalty"] == pytest.approx(mean[p])
        assert row["ci95"] == pytest.approx(ci[p])
        assert row["win_share"] == pytest.approx(shares[p])
        assert row["mean_rank"] == pytest.approx(ranks[p])
    assert sum(r["win_share"] for r in res["agents"]) == pytest.approx(1.0)
    assert sum(r["mean_rank"] for r in res["agents"]) == pytest.approx(10.0)
    assert res["games"] == 40 and res["rounds"] == 40 and res["games_per_s"] > 0


def test_same_seed_same_results_other_seed_other_results():
    a = run_arena(HEURISTIC_TABLE, 60, seed=11, keep_games=True)
    b = run_arena(HEURISTIC_TABLE, 60, seed=11, keep_games=True)
    c = run_arena(HEURISTIC_TABLE, 60, seed=12, keep_games=True)
    assert a["agents"] == b["agents"] and a["per_game"] == b["per_game"]
    assert a["per_game"] != c["per_game"]


def test_greedy_beats_random_over_many_rounds():
    res = run_arena("greedy,random,random,random", 400, seed=0)
    greedy, rand = res["agents"][0], res["agents"][1]
    assert greedy["mean_penalty"] + greedy["ci95"] < rand["mean_penalty"] - rand["ci95"]
    assert greedy["win_share"] > 0.25 > rand["win_share"]


def test_two_workers_give_the_same_results_as_one():
    one = run_arena("greedy,mc:2,random", 30, seed=2, keep_games=True)
    two = run_arena("greedy,mc:2,random", 30, seed=2, workers=2, keep_games=True)
    assert one["agents"] == two["agents"] and one["per_game"] == two["per_game"]
    assert two["settings"]["workers"] == 2


@pytest.mark.parametrize(
    ("agents", "games", "options"),
    [
        (HEURISTIC_TABLE, 3000, {"workers": 2}),
        (HEURISTIC_TABLE, 3000, {"duplicate": True}),
        ("greedy,lowest,random", 300, {"config": E.GameConfig(num_players=3, episode="game"), "workers": 2}),
        ("greedy,mc:2,random", 60, {"engine": "reference", "duplicate": True}),
    ],
)
def test_run_arena_rows_are_arena_rows_of_its_games(agents: str, games: int, options: dict):
    """The rows summarised chunk by chunk while the games are played equal arena_rows over all the games."""
    res = run_arena(agents, games, seed=5, keep_games=True, **options)
    pen, rounds = np.array(res["per_game"]["penalties"]), np.array(res["per_game"]["rounds"])
    episode, duplicate = res["settings"]["episode"], res["settings"]["duplicate"]
    whole = arena_rows(pen, rounds, [r["agent"] for r in res["agents"]], episode, duplicate)
    assert len(whole) == len(res["agents"]) == len(agents.split(","))
    for got, want in zip(res["agents"], whole, strict=True):
        assert got.keys() == want.keys()
        for key, value in want.items():
            assert got[key] == (pytest.approx(value, rel=1e-12) if isinstance(value, float) else value), key


def test_duplicate_deals_cancel_the_luck_of_the_cards():
    """Four identical deterministic agents: each deal is played in all 4 rotations, so every position
    sees exactly the same penalties and win shares."""
    res = run_arena("greedy,greedy,greedy,greedy", 40, seed=3, duplicate=True, keep_games=True)
    pen = np.array(res["per_game"]["penalties"])
    means = {round(r["mean_penalty"], 12) for r in res["agents"]}
    shares = {round(r["win_share"], 12) for r in res["agents"]}
    assert len(means) == 1 and len(shares) == 1
    for d in range(10):  # the 4 games of a deal are rotations of each other
        block = pen[4 * d : 4 * d + 4]
        assert sorted(block[0].tolist()) == sorted(block[1].tolist()) == sorted(block[3].tolist())
    plain = run_arena("greedy,greedy,greedy,greedy", 40, seed=3)
    assert len({r["mean_penalty"] for r in plain["agents"]}) > 1
    with pytest.raises(ValueError, match="multiple of num_players=4"):
        run_arena("greedy,greedy,greedy,greedy", 42, duplicate=True)


def test_whole_game_episodes_report_per_game_penalties():
    cfg = E.GameConfig(num_players=3, end_score=25)
    res = run_arena("greedy,lowest,random", 20, seed=4, config=cfg, keep_games=True)
    pen = np.array(res["per_game"]["penalties"], dtype=float)
    rounds = np.array(res["per_game"]["rounds"])
    assert rounds.min() >= 1 and res["rounds"] == rounds.sum()
    assert (pen.max(axis=1) >= 25).all()  # every game ran to its end score (R12)
    per_round, _ = mean_ci95(pen / rounds[:, None])
    per_game, ci_game = mean_ci95(pen)
    for p, row in enumerate(res["agents"]):
        assert row["mean_penalty"] == pytest.approx(per_round[p])
        assert row["mean_penalty_per_game"] == pytest.approx(per_game[p])
        assert row["ci95_per_game"] == pytest.approx(ci_game[p])
    assert "penalty / game" in markdown_table(res)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"agents": "greedy,lowest,random", "config": E.GameConfig(num_players=4)}, "3 agents .* num_players=4"),
        ({"agents": "greedy,grredy"}, "unknown agent spec 'grredy'; known: random, lowest, highest, greedy, mc:N"),
        ({"agents": "", "games": 4}, "at least one agent"),
        ({"agents": "greedy,lowest", "games": 1}, "games must be an integer >= 2"),
        ({"agents": "greedy,lowest", "seed": -1}, "seed must be a non-negative integer"),
        ({"agents": "greedy,lowest", "workers": 0}, "workers must be a positive integer"),
        ({"agents": ["greedy", 3]}, "neither a spec string nor an object"),
    ],
)
def test_arena_input_errors(kwargs, message):
    kwargs = {"games": 4, **kwargs}
    with pytest.raises(ValueError, match=message):
        run_arena(**kwargs)


# --------------------------------------------------------------------------- league


def test_league_ratings_and_ranking():
    pool = "greedy,random,lowest,random,highest"
    res = run_league(pool, 3000, seed=0)
    again = run_league(pool, 3000, seed=0, workers=2)
    assert res["agents"] == again["agents"] and res["ranking"] == again["ranking"]
    rows = res["agents"]
    assert sum(r["games"] for r in rows) == 3000 * 4  # tables of 4 (the default) from a pool of 5
    assert sorted(res["ranking"]) == list(range(5))
    ordinals = [rows[p]["ordinal"] for p in res["ranking"]]
    assert ordinals == sorted(ordinals, reverse=True)
    assert [rows[p]["league_rank"] for p in res["ranking"]] == [1, 2, 3, 4, 5]
    for r in rows:
        assert r["ordinal"] == pytest.approx(r["mu"] - 3 * r["sigma"])
    assert rows[0]["ordinal"] > rows[1]["ordinal"] and rows[0]["ordinal"] > rows[3]["ordinal"]
    assert res["ranking"][0] == 0  # greedy leads this pool
    table = markdown_table(res)
    assert table.splitlines()[4].startswith("| 1 | 0 | `greedy` |")
    with pytest.raises(ValueError, match="smaller than num_players=4"):
        run_league("greedy,random,lowest", 10, config=E.GameConfig(num_players=4, episode="round"))


# --------------------------------------------------------------------------- command line


def test_cli_writes_json_markdown_and_png(tmp_path, capsys):
    out = tmp_path / "arena"
    main(["--agents", "greedy,lowest,random", "--games", "30", "--seed", "0", "--out", str(out), "--quiet"])
    printed = capsys.readouterr().out
    data = json.loads((out / "results.json").read_text())
    assert [r["agent"] for r in data["agents"]] == ["greedy", "lowest", "random"]
    for r in data["agents"]:
        assert {"agent", "mean_penalty", "ci95", "win_share", "mean_rank"} <= set(r)
        assert 0 <= r["win_share"] <= 1 and 1 <= r["mean_rank"] <= 3 and r["ci95"] > 0
    assert data["settings"]["num_players"] == 3 and data["settings"]["episode"] == "round"
    assert data["settings"]["row_choice"] == "player" and data["games_per_s"] > 0
    md = (out / "results.md").read_text()
    assert md in printed and "| 0 | `greedy` |" in md
    assert (out / "results.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_prints_the_tables_before_the_plot_and_no_plot_writes_none(tmp_path, capsys):
    """The tables are on stdout before the plot is asked for; --no-plot writes no results.png (an overwritten
    folder keeps none of an earlier run) and the same tables."""
    from sixnimmt_env.arena.report import plot_results

    seen = {}

    class Spy:
        def draft(self, labels, num_players):
            seen["draft"] = (labels, num_players)

        def plot(self, results, path):
            seen["printed before the plot"] = capsys.readouterr().out
            return plot_results(results, path)

    argv = ["--agents", "greedy,lowest,random", "--games", "30", "--quiet"]
    main([*argv, "--out", str(tmp_path / "a")], plotter=Spy())
    after = capsys.readouterr().out
    md = (tmp_path / "a" / "results.md").read_text()
    assert md in seen["printed before the plot"] and "wrote" not in seen["printed before the plot"]
    assert after == f"wrote {tmp_path / 'a' / 'results.json'}, {tmp_path / 'a' / 'results.md'}, " + (
        f"{tmp_path / 'a' / 'results.png'}\n"
    )
    assert seen["draft"] == (["greedy", "lowest", "random"], 3)
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "results.png").write_bytes(b"old")
    main([*argv, "--out", str(tmp_path / "b"), "--no-plot", "--overwrite"])
    printed = capsys.readouterr().out
    assert sorted(p.name for p in (tmp_path / "b").iterdir()) == ["results.json", "results.md"]
    assert printed.endswith(f"wrote {tmp_path / 'b' / 'results.json'}, {tmp_path / 'b' / 'results.md'}\n")
    a, b = (json.loads((tmp_path / d / "results.json").read_text()) for d in "ab")
    assert a["agents"] == b["agents"] and a["games"] == b["games"] == 30


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--agents", "greedy,lowest,random", "--players", "4"], "3 agents"),
        (["--agents", "greedy,bogus"], "unknown agent spec 'bogus'"),
        (["--agents", "greedy,lowest", "--variant", "tactic"], "variant must be one of"),
        (["--agents", "greedy,lowest", "--row-choice", "any"], "row_choice must be one of"),
        (["--agents", "greedy,lowest,random", "--league", "--duplicate"], "cannot be combined"),
    ],
)
def test_cli_errors_are_clear(argv, message, tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main([*argv, "--games", "4", "--out", str(tmp_path), "--quiet"])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_engine_option_chooses_the_path_and_both_agree_statistically():
    from sixnimmt_env.arena import run_arena

    specs = "greedy,lowest,random,random"
    fast = run_arena(specs, 4000, seed=3, engine="batched")
    ref = run_arena(specs, 4000, seed=3, engine="reference")
    auto = run_arena(specs, 4000, seed=3)
    assert fast["settings"]["engine"] == "batched" and ref["settings"]["engine"] == "reference"
    # auto takes the batched path for heuristic agents: identical numbers
    assert [a["mean_penalty"] for a in auto["agents"]] == [a["mean_penalty"] for a in fast["agents"]]
    # other deals, same rules and agents: the means agree within their intervals
    for f, r in zip(fast["agents"], ref["agents"], strict=True):
        assert abs(f["mean_penalty"] - r["mean_penalty"]) < 1.5 * (f["ci95"] + r["ci95"])
    assert fast["agents"][0]["mean_penalty"] < fast["agents"][1]["mean_penalty"] < fast["agents"][2]["mean_penalty"]


def test_engine_batched_refuses_agents_without_a_batched_version():
    from sixnimmt_env.arena import run_arena

    with pytest.raises(ValueError, match="engine='batched' needs every agent"):
        run_arena("mc:2,greedy", 4, seed=0, engine="batched")
    with pytest.raises(ValueError, match="engine must be one of"):
        run_arena("greedy,greedy", 4, seed=0, engine="fast")


@pytest.mark.parametrize("engine", ["batched", "reference"])
def test_a_run_without_workers_starts_no_other_process(engine: str) -> None:
    """One worker takes its chunks without a shared counter: no semaphore, so multiprocessing's resource tracker
    (a Python process of its own, about 30 ms of the command's start-up) is never started."""
    import subprocess
    import sys

    code = (
        "import multiprocessing.resource_tracker as tracker\n"
        "from sixnimmt_env.arena import run_arena\n"
        f"results = run_arena('greedy,lowest,random,random', 64, seed=3, workers=1, engine={engine!r})\n"
        "print(results['games'], results['settings']['engine'], tracker._resource_tracker._pid)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["64", engine, "None"]
