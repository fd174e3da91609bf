"""The league's promotion rule (lab.promote): a significant win against the incumbent, no loss against any
league member, the incumbent's level held at baselines, a win at the strong tables (the candidate among incumbents,
the incumbent among candidates, paired by deal); the verdict's exit code; results never replaced."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lab.promote import StrongTables, hold_table, judge, main, play_table, strong_tables
from sixnimmt_env.arena import run_arena
from sixnimmt_env.stats import mean_ci95, win_shares


def test_a_table_is_the_arena_table_of_the_candidate_and_copies_of_the_other() -> None:
    table = play_table("greedy", "lowest", "incumbent", 400, 1, 4, "round", 1)
    row = run_arena(["greedy", "lowest", "lowest", "lowest"], 400, 1)["agents"]
    assert table.win_share == row[0]["win_share"] and table.win_ci == row[0]["win_share_ci95"]
    assert table.penalty == row[0]["mean_penalty"] and table.games == 400 and table.parity == 0.25
    assert table.opponent_penalty == pytest.approx(sum(r["mean_penalty"] for r in row[1:]) / 3)
    assert table.win_share - table.win_ci > 0.25 and table.passed  # greedy beats three lowest: a significant win


def test_the_rules_significant_win_against_the_incumbent_no_loss_against_the_league() -> None:
    verdict = judge("greedy", "lowest", ["random", "mc:4"], 400, 1)
    roles = [(t.opponent, t.role, t.passed) for t in verdict.tables]
    assert roles == [("lowest", "incumbent", True), ("random", "league", True), ("mc:4", "league", False)]
    mc4 = verdict.tables[2]
    assert mc4.win_share + mc4.win_ci < 0.25 and not verdict.promote  # significantly below parity: a loss
    assert judge("greedy", "lowest", ["random"], 400, 1).promote
    # level is no loss, but it is no win either: the incumbent's table needs the interval above parity
    level = play_table("greedy", "greedy", "league", 400, 1, 4, "round", 1)
    assert level.win_share - level.win_ci < 0.25 <= level.win_share + level.win_ci and level.passed
    assert not play_table("greedy", "greedy", "incumbent", 400, 1, 4, "round", 1).passed


def test_a_hold_table_needs_the_incumbents_level_not_only_parity(capsys) -> None:
    # lowest wins 31.5 % against three random (above parity, no loss) but greedy, the incumbent, wins 52.2 % there
    drop = hold_table("lowest", "greedy", "random", 400, 1, 4, "round", 1)
    inc = run_arena(["greedy", "random", "random", "random"], 400, 1)["agents"][0]
    assert (drop.reference, drop.reference_ci) == (inc["win_share"], inc["win_share_ci95"])
    assert drop.role == "hold" and drop.win_share == pytest.approx(0.315, abs=0.001)
    assert drop.reference == pytest.approx(0.5225, abs=0.001) and not drop.passed
    assert play_table("lowest", "random", "league", 400, 1, 4, "round", 1).passed  # parity alone would pass it
    # greedy (42.7 %) holds mc:4's level (38.7 %) against three lowest
    held = hold_table("greedy", "mc:4", "lowest", 400, 1, 4, "round", 1)
    assert held.reference is not None  # a hold table has the incumbent's figures
    assert held.passed and held.win_share > held.reference
    verdict = judge("lowest", "random", ["random"], 400, 1, hold=["random"])
    assert [t.role for t in verdict.tables] == ["incumbent", "league", "hold"]
    assert main(["lowest", "--incumbent", "greedy", "--hold", "random", "--games", "400", "--seed", "1"]) == 1
    text = capsys.readouterr().out
    assert "| hold | `random` | 400 | 31.5 ± 4.5 % | incumbent 52.2 ± 4.8 % (paired difference -20.7 ± 5.8) |" in text
    assert "holds the incumbent's level: NO" in text and "failed: greedy (incumbent), random (hold)" in text


def test_the_hold_rule_pairs_the_two_agents_games_deal_by_deal() -> None:
    # the interval is over the per-game differences of the win shares at the same deals and seats
    runs = [run_arena([a, "random", "random", "random"], 400, 1, keep_games=True) for a in ("lowest", "greedy")]
    wins = [win_shares(np.asarray(r["per_game"]["penalties"]))[:, 0] for r in runs]
    diff, diff_ci = mean_ci95(wins[0] - wins[1])
    drop = hold_table("lowest", "greedy", "random", 400, 1, 4, "round", 1)
    assert drop.reference is not None and drop.reference_ci is not None and drop.difference_ci is not None
    assert drop.win_share - drop.reference == pytest.approx(diff) == pytest.approx(-0.2071, abs=0.0001)
    assert drop.difference_ci == pytest.approx(diff_ci) == pytest.approx(0.0584, abs=0.0001)
    assert drop.difference_ci < math.hypot(drop.win_ci, drop.reference_ci)  # the deals are shared: corr 0.21
    assert hold_table("lowest", "greedy", "random", 400, 1, 4, "round", 2) == drop  # game g is deal g on any workers
    # an agent against itself: every game's difference is 0, so the interval is 0 and the rule holds
    same = hold_table("greedy", "greedy", "random", 400, 1, 4, "round", 1)
    assert (same.win_share, same.difference_ci, same.passed) == (same.reference, 0.0, True)
    assert all(t.difference_ci is None for t in judge("greedy", "lowest", ["random"], 400, 1).tables)


def test_a_baseline_in_both_the_league_and_hold_plays_its_table_once(monkeypatch: pytest.MonkeyPatch) -> None:
    import sixnimmt_env.arena as arena

    line_ups: list[list[str]] = []

    def counted(agents: list[str], *args: Any, **kwargs: Any) -> dict[str, Any]:
        line_ups.append(list(agents))
        return run_arena(agents, *args, **kwargs)

    monkeypatch.setattr(arena, "run_arena", counted)
    verdict = judge("lowest", "random", ["random", "greedy"], 400, 1, hold=["greedy", "random"], strong=False)
    # five rows, seven tables asked for (a hold row asks for the incumbent's too), four played: lowest against
    # random (the incumbent's row, the league's, the second hold's), against greedy (the league's, the first hold's);
    # random, the incumbent, against greedy and against random
    assert line_ups == [
        ["lowest", "random", "random", "random"],
        ["lowest", "greedy", "greedy", "greedy"],
        ["random", "greedy", "greedy", "greedy"],
        ["random", "random", "random", "random"],
    ]
    league_greedy, hold_greedy = verdict.tables[2], verdict.tables[3]
    assert (league_greedy.win_share, league_greedy.games) == (hold_greedy.win_share, 400)
    assert verdict.tables[0].win_share == verdict.tables[1].win_share == pytest.approx(0.315, abs=0.001)
    assert [t.role for t in verdict.tables] == ["incumbent", "league", "league", "hold", "hold"]


def test_the_command_exits_0_to_promote_1_to_keep_and_never_replaces_its_json(tmp_path: Path, capsys) -> None:
    out = tmp_path / "verdict.json"
    assert main(["greedy", "--incumbent", "lowest", "--league", "random", "--games", "400", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "verdict: promote" in text and "| incumbent | `lowest` | 400 |" in text
    saved = json.loads(out.read_text())
    assert saved["promote"] is True and [t["opponent"] for t in saved["tables"]] == ["lowest", "random"]
    assert (saved["games"], saved["seed"], saved["players"], saved["episode"]) == (400, 0, 4, "round")
    assert main(["greedy", "--incumbent", "lowest", "--games", "400", "--out", str(out)]) == 2
    assert "already exists; choose a new file (results are never overwritten)" in capsys.readouterr().err
    assert json.loads(out.read_text()) == saved
    assert main(["random", "--incumbent", "greedy", "--games", "400", "--no-strong"]) == 1
    assert "verdict: keep the incumbent (failed: greedy (incumbent))" in capsys.readouterr().out
    # the strong tables are on by default: random among three greedy, and greedy among three random
    assert main(["random", "--incumbent", "greedy", "--games", "400"]) == 1
    assert "verdict: keep the incumbent (failed: greedy (incumbent), greedy (strong tables))" in capsys.readouterr().out


def test_an_out_that_cannot_be_written_is_refused_before_any_game(tmp_path: Path, capsys) -> None:
    for out, message in ((tmp_path, "is a folder"), (tmp_path / "no" / "v.json", "does not exist")):
        assert main(["greedy", "--incumbent", "lowest", "--games", "400000000", "--out", str(out)]) == 2
        assert message in capsys.readouterr().err  # refused at once: 400 M games would take minutes


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["bogus"], "unknown agent spec 'bogus'"),
        (["greedy", "--games", "1"], "games"),
        # refused before any game: 400 M games of the incumbent's table would take minutes
        (["greedy", "--hold", "random,gredy", "--games", "400000000"], "--hold 'random,gredy': unknown agent spec"),
        (["greedy", "--league", "random,,lowest", "--games", "400000000"], "--league 'random,,lowest' has an empty"),
        (["greedy", "--strong-target", "0.3", "--games", "400000000"], "--strong-target '0.3': give AT_LEAST,AT_MOST"),
        (["greedy", "--strong-target", "0.3,1.2", "--games", "400000000"], "two win shares in 0..1"),
        (["greedy", "--strong-target", "0.3,x", "--games", "400000000"], "--strong-target '0.3,x'"),
        (["greedy", "--no-strong", "--strong-target", "0.3,0.2", "--games", "400000000"], "drop --no-strong"),
    ],
)
def test_bad_input_is_exit_code_2_with_the_arenas_error(args: list[str], message: str, capsys) -> None:
    assert main(args) == 2
    assert message in capsys.readouterr().err


def _seat0_wins(line_up: list[str], games: int, seed: int) -> tuple[dict[str, Any], np.ndarray]:
    """The arena's results row of the first listed agent and its share of each game's win (an independent count)."""
    results = run_arena(line_up, games, seed, keep_games=True)
    return results["agents"][0], win_shares(np.asarray(results["per_game"]["penalties"]))[:, 0]


def test_the_strong_tables_are_the_candidate_among_incumbents_and_the_incumbent_among_candidates() -> None:
    pair = strong_tables("greedy", "lowest", 400, 1, 4, "round", 1)
    a_row, a_wins = _seat0_wins(["greedy", "lowest", "lowest", "lowest"], 400, 1)  # table A
    b_row, b_wins = _seat0_wins(["lowest", "greedy", "greedy", "greedy"], 400, 1)  # table B, the same deals
    assert (pair.candidate_share, pair.candidate_ci) == (a_row["win_share"], a_row["win_share_ci95"])
    assert (pair.incumbent_share, pair.incumbent_ci) == (b_row["win_share"], b_row["win_share_ci95"])
    assert (pair.candidate_penalty, pair.incumbent_penalty) == (a_row["mean_penalty"], b_row["mean_penalty"])
    assert pair.candidate_share == pytest.approx(0.4275) and pair.incumbent_share == pytest.approx(0.05875)
    # paired by game: the mean of the per-game differences is the difference of the shares, its interval theirs
    diff, diff_ci = mean_ci95(a_wins - b_wins)
    assert pair.difference == pytest.approx(diff) == pytest.approx(pair.candidate_share - pair.incumbent_share)
    assert pair.difference == pytest.approx(0.36875) and pair.difference_ci == pytest.approx(diff_ci)
    assert pair.difference_ci == pytest.approx(0.0523, abs=0.0001) and pair.passed  # 36.9 ± 5.2 points: above 0
    assert (pair.games, pair.parity, pair.target, pair.target_met) == (400, 0.25, None, None)
    # the mirror: the incumbent as the candidate gives the same two tables with the roles swapped
    mirror = strong_tables("lowest", "greedy", 400, 1, 4, "round", 1)
    assert (mirror.candidate_share, mirror.incumbent_share) == (pair.incumbent_share, pair.candidate_share)
    assert mirror.difference == -pair.difference and mirror.difference_ci == pair.difference_ci and not mirror.passed


def test_identical_agents_at_the_strong_tables_differ_by_exactly_0_and_do_not_pass() -> None:
    # the same spec: tables A and B are one table
    same = strong_tables("greedy", "greedy", 400, 1, 4, "round", 1)
    assert (same.difference, same.difference_ci, same.passed) == (0.0, 0.0, False)
    assert same.candidate_share == same.incumbent_share == pytest.approx(0.2525)  # parity within ± 4.2 points
    # two specs of the same weights at 4 players: two line-ups, every game played alike, so every difference is 0
    twins = strong_tables("champion", "champion:stage-8", 400, 1, 4, "round", 1)
    assert (twins.difference, twins.difference_ci, twins.passed) == (0.0, 0.0, False)
    assert twins.candidate_share == twins.incumbent_share and abs(twins.candidate_share - 0.25) < twins.candidate_ci


def test_the_paired_strong_tables_tell_apart_what_the_incumbents_table_alone_does_not() -> None:
    # mc:4 wins 27.8 ± 4.3 % among three greedy: no significant win at the incumbent's table; but greedy wins only
    # 16.8 % among three mc:4 on the same deals, and the paired difference, +11.0 ± 5.5 points, lies above 0
    verdict = judge("mc:4", "greedy", [], 400, 1)
    assert [(t.role, t.passed) for t in verdict.tables] == [("incumbent", False)]
    strong = verdict.strong
    assert isinstance(strong, StrongTables) and strong.passed and not verdict.promote
    assert strong.candidate_share == verdict.tables[0].win_share == pytest.approx(0.27833, abs=0.00001)
    assert strong.incumbent_share == pytest.approx(0.16792, abs=0.00001)
    assert strong.difference == pytest.approx(0.11042, abs=0.00001)
    assert strong.difference_ci == pytest.approx(0.0547, abs=0.0001)


def test_a_strong_target_is_checked_on_the_point_estimates_and_is_part_of_the_verdict() -> None:
    met = judge("greedy", "lowest", [], 400, 1, strong_target=(0.30, 0.20))
    assert met.strong is not None and (met.strong.target, met.strong.target_met, met.promote) == (
        (0.3, 0.2),
        True,
        True,
    )
    # 42.75 % is below a target of 45 % although the rule (the paired interval above 0) holds
    missed = judge("greedy", "lowest", [], 400, 1, strong_target=(0.45, 0.20))
    assert missed.strong is not None and missed.strong.passed and missed.strong.target_met is False
    assert not missed.promote
    assert judge("greedy", "lowest", [], 400, 1, strong=False).strong is None
    with pytest.raises(ValueError, match="needs the strong tables"):
        judge("greedy", "lowest", [], 400, 1, strong=False, strong_target=(0.3, 0.2))
    with pytest.raises(ValueError, match=r"two win shares in 0\.\.1"):
        strong_tables("greedy", "lowest", 400, 1, 4, "round", 1, target=(0.3, 1.5))
    with pytest.raises(ValueError, match=r"two win shares in 0\.\.1"):  # before any game: 400 M would take minutes
        judge("greedy", "lowest", [], 400_000_000, 1, strong_target=(-0.1, 0.2))


def test_the_strong_tables_add_one_table_to_the_incumbents(monkeypatch: pytest.MonkeyPatch) -> None:
    import sixnimmt_env.arena as arena

    line_ups: list[list[str]] = []

    def counted(agents: list[str], *args: Any, **kwargs: Any) -> dict[str, Any]:
        line_ups.append(list(agents))
        return run_arena(agents, *args, **kwargs)

    monkeypatch.setattr(arena, "run_arena", counted)
    verdict = judge("lowest", "random", [], 400, 1)  # table A is the incumbent's table, played once
    assert line_ups == [["lowest", "random", "random", "random"], ["random", "lowest", "lowest", "lowest"]]
    assert verdict.strong is not None and verdict.strong.candidate_share == verdict.tables[0].win_share


def test_the_command_prints_the_strong_rows_and_writes_them_as_json(tmp_path: Path, capsys) -> None:
    out = tmp_path / "verdict.json"
    argv = ["greedy", "--incumbent", "lowest", "--games", "400", "--seed", "1", "--strong-target", "0.45,0.20"]
    assert main([*argv, "--out", str(out)]) == 1
    text = capsys.readouterr().out
    assert "| strong A: candidate among incumbents | `lowest` | 400 | 42.7 ± 4.8 % | 25.0 % | 9.49 ± 0.74 |" in text
    assert "target ≥ 45.0 % (point estimate, not a test): NO |" in text
    assert "| strong B: incumbent among candidates | `greedy` | 400 | 5.9 ± 2.3 % (the incumbent's) |" in text
    assert "target ≤ 20.0 % (point estimate, not a test): yes |" in text
    assert "| strong A − B, paired by deal | | 400 | +36.9 ± 5.2 points | 0 | | | " in text
    assert "a win at strong tables (interval above 0): yes |" in text
    assert "verdict: keep the incumbent (failed: lowest (strong target))" in text
    saved = json.loads(out.read_text())["strong"]
    assert saved["candidate_share"] == pytest.approx(0.4275) and saved["incumbent_share"] == pytest.approx(0.05875)
    assert saved["difference"] == pytest.approx(0.36875) and saved["difference_ci"] == pytest.approx(0.0523, abs=1e-4)
    assert (saved["passed"], saved["target"], saved["target_met"], saved["games"]) == (True, [0.45, 0.2], False, 400)
    skipped = tmp_path / "skipped.json"
    assert main(["greedy", "--incumbent", "lowest", "--games", "400", "--no-strong", "--out", str(skipped)]) == 0
    assert "strong" not in capsys.readouterr().out and json.loads(skipped.read_text())["strong"] is None
