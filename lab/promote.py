"""Promotion of a candidate over the incumbent champion, by the league's rule.

Usage (from the repository's root)::

    python -m lab.promote champion:runs/new.npz --incumbent champion \\
        --league champion:lab/weights/champion_v7.npz,champion:lab/weights/exploiter_1.npz \\
        --hold mc:64,champion:default-ppo,greedy --games 4000 --seed 2 --workers 2
    python -m lab.promote champion:runs/new.npz --incumbent champion:stage-8 --hold mc:64 \\
        --strong-target 0.30,0.20 --games 4000 --seed 2 --workers 2

The candidate sits at tables of itself and ``n - 1`` copies of one other agent (seats rotated, the arena's rule;
single rounds at 4 players unless ``--players``/``--episode`` say otherwise):

* against the incumbent, its win share's 95 % interval must lie above parity (``1 / n``): a **significant win**;
* against every league member, its win share's interval must reach parity: **no loss** (not significantly below);
* at the table of every ``--hold`` baseline, the incumbent plays the same deals too (the same seats), and the 95 %
  interval of the candidate's win share minus the incumbent's, paired by deal, must reach 0: **holds the incumbent's
  level** (not significantly below it). Parity is a low bar at a baseline the incumbent beats by far (the incumbent
  wins 37.6 % against three ``mc:64``): without this rule a candidate that gives away three points there is
  promoted.

The strong tables (on unless ``--no-strong``) tell strong agents apart where a baseline cannot (stages 4 to 8 of
``champion`` all win 36 to 38 % against three ``mc:64``): table A is the candidate among ``n - 1`` incumbents (the
incumbent's table above), table B the incumbent among ``n - 1`` candidates, game ``g`` the same deal and seating at
both. The 95 % interval of the mean of the per-game differences, the candidate's win share at A minus the incumbent's
at B (paired by deal), must lie above 0: a **win at strong tables**. ``--strong-target A,B`` also asks the point
estimates for the candidate's share at A to be at least ``A`` and the incumbent's at B at most ``B`` (a target, not a
significance test).

All hold: the verdict is *promote* (exit code 0); else *keep the incumbent* (exit code 1), with the tables that
failed, each with its role (a spec can sit at two tables). Every table plays the same deals (the same ``--seed``).
``--out FILE`` writes the settings, the tables, the strong tables (``strong``; ``null`` with ``--no-strong``) and the
verdict as JSON (a new file; never replaced; checked before any game).

Each rule is a one-sided test at the 2.5 % level (the arena's normal-approximation interval), with no correction for
the number of tables: a candidate exactly as strong as every member fails at least one of ``L`` league tables by
chance about ``1 - 0.975 ** L`` of the time (10 % for 4 members). More games narrow the intervals, not that rate.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from sixnimmt_env.stats import mean_ci95, win_shares

__all__ = [
    "Episode",
    "StrongTables",
    "Table",
    "TablePlayer",
    "Verdict",
    "hold_table",
    "judge",
    "main",
    "play_table",
    "strong_tables",
]

Episode = Literal["round", "game"]
"""What one game of a table is: a single round, or a whole game to the end score (``GameConfig.episode``)."""


@dataclass(frozen=True)
class Table:
    """The candidate at a table of itself and ``players - 1`` copies of ``opponent``.

    Attributes:
        opponent: the other agents' spec.
        role: ``"incumbent"``, ``"league"`` or ``"hold"``.
        games: games played.
        win_share: the candidate's share of wins (ties split), 0..1, with ``win_ci`` its 95 % half-width.
        penalty: the candidate's mean bullheads per round, with ``penalty_ci`` its 95 % half-width.
        opponent_penalty: the mean bullheads per round of the opponent's seats (all ``players - 1`` of them).
        parity: ``1 / players``.
        passed: the rule of ``role`` holds (significant win; no loss; holds the incumbent's level).
        reference: for ``role == "hold"``, the incumbent's win share at the same table (same deals), with
            ``reference_ci`` its 95 % half-width; ``None`` for the other roles.
        difference_ci: for ``role == "hold"``, the 95 % half-width of ``win_share - reference`` paired by deal
            (the mean of the per-game differences); ``None`` for the other roles.
    """

    opponent: str
    role: str
    games: int
    win_share: float
    win_ci: float
    penalty: float
    penalty_ci: float
    opponent_penalty: float
    parity: float
    passed: bool
    reference: float | None = None
    reference_ci: float | None = None
    difference_ci: float | None = None


@dataclass(frozen=True)
class StrongTables:
    """The strong tables: A, the candidate among ``players - 1`` incumbents; B, the incumbent among ``players - 1``
    candidates; game ``g`` the same deal and seating at both (the same settings).

    Attributes:
        games: games played at each table.
        candidate_share: the candidate's share of wins at A (ties split), 0..1, with ``candidate_ci`` its 95 %
            half-width; ``candidate_penalty`` (± ``candidate_penalty_ci``) its mean bullheads per round there and
            ``incumbents_penalty`` the incumbents' (all ``players - 1`` seats).
        incumbent_share: the incumbent's share of wins at B, with ``incumbent_ci``; ``incumbent_penalty``
            (± ``incumbent_penalty_ci``) its mean bullheads there and ``candidates_penalty`` the candidates'.
        difference: the mean of the per-game differences, the candidate's share at A minus the incumbent's at B in
            the same game (equal to ``candidate_share - incumbent_share``), with ``difference_ci`` its 95 %
            half-width.
        parity: ``1 / players``.
        passed: the rule *a win at strong tables*: ``difference - difference_ci > 0``.
        target: ``(at_least, at_most)`` from ``--strong-target``, or ``None``: the candidate's share at A at least
            ``at_least`` and the incumbent's at B at most ``at_most``, as point estimates (not a test).
        target_met: whether both hold (``None`` without a target); part of the verdict when a target is given.
    """

    games: int
    candidate_share: float
    candidate_ci: float
    incumbent_share: float
    incumbent_ci: float
    difference: float
    difference_ci: float
    candidate_penalty: float
    candidate_penalty_ci: float
    incumbents_penalty: float
    incumbent_penalty: float
    incumbent_penalty_ci: float
    candidates_penalty: float
    parity: float
    passed: bool
    target: tuple[float, float] | None = None
    target_met: bool | None = None


@dataclass(frozen=True)
class Verdict:
    """The tables and the decision: ``promote`` is true when every table passed and, when played, the strong
    tables did (their rule, and their target when one was given); the settings they were played with (``games``
    per table, ``seed``, ``players``, ``episode``). ``strong`` is ``None`` when the strong tables were skipped."""

    candidate: str
    incumbent: str
    promote: bool
    tables: list[Table]
    games: int
    seed: int
    players: int
    episode: Episode
    strong: StrongTables | None = None


@dataclass
class TablePlayer:
    """Plays promotion tables with one set of settings (``games`` per table, the arena's ``seed``, ``players`` at a
    table, ``episode`` ``"round"`` or ``"game"``, ``workers`` processes), each table once: a table asked for again
    (the same agent and the same others) is answered from ``played``, keyed by ``(agent, opponent)``: the results
    row of the agent, the others' rows, the games played, and the agent's share of each game's win
    (``float64 (games,)``, ties split; R13)."""

    games: int
    seed: int
    players: int = 4
    episode: Episode = "round"
    workers: int = 1
    played: dict[tuple[str, str], tuple[dict[str, Any], list[dict[str, Any]], int, np.ndarray]] = field(
        default_factory=dict
    )

    def play(self, agent: str, opponent: str) -> tuple[dict[str, Any], list[dict[str, Any]], int, np.ndarray]:
        """The arena's results row of ``agent`` at a table with ``players - 1`` copies of ``opponent``, the others'
        rows, the games played, and the agent's share of each game's win (``float64 (games,)``; game ``g`` is the
        same deal and seating for every agent at the same settings) (:func:`sixnimmt_env.arena.run.run_arena`).

        Raises:
            ValueError: an unknown spec, or games/seed out of range (the arena's errors).
        """
        if (agent, opponent) not in self.played:
            from sixnimmt_env.arena import run_arena
            from sixnimmt_env.rules.engine import GameConfig

            config = GameConfig(num_players=self.players, episode=self.episode)
            line_up = [agent] + [opponent] * (self.players - 1)
            results = run_arena(line_up, self.games, self.seed, config, workers=self.workers, keep_games=True)
            rows = results["agents"]
            wins = win_shares(np.asarray(results["per_game"]["penalties"]))[:, 0]
            self.played[agent, opponent] = (rows[0], rows[1:], int(results["games"]), wins)
        return self.played[agent, opponent]

    def rule_table(self, candidate: str, opponent: str, role: str) -> Table:
        """The table of ``candidate`` and copies of ``opponent`` with the rule of ``role`` (``"incumbent"``: a
        significant win; ``"league"``: no loss) applied.

        Raises:
            ValueError: an unknown role, or the arena's errors (:meth:`play`).
        """
        if role not in ("incumbent", "league"):
            raise ValueError(f"role must be 'incumbent' or 'league', got {role!r}")
        me, others, games_played, _ = self.play(candidate, opponent)
        share, ci = float(me["win_share"]), float(me["win_share_ci95"])
        parity = 1.0 / self.players
        passed = share - ci > parity if role == "incumbent" else share + ci >= parity
        return _table(opponent, role, games_played, me, others, self.players, passed)

    def hold_table(self, candidate: str, incumbent: str, baseline: str) -> Table:
        """The table of ``candidate`` and copies of ``baseline``, and ``incumbent``'s at the same deals, with the rule
        *holds the incumbent's level* applied (:func:`hold_table`): the 95 % interval of the mean per-game difference
        of their win shares reaches 0.

        Raises:
            ValueError: the arena's errors (:meth:`play`).
        """
        me, others, games_played, wins = self.play(candidate, baseline)
        inc, _, _, inc_wins = self.play(incumbent, baseline)
        diff, diff_ci = (float(x) for x in mean_ci95(wins - inc_wins))
        passed = diff + diff_ci >= 0.0
        ref, ref_ci = float(inc["win_share"]), float(inc["win_share_ci95"])
        return _table(baseline, "hold", games_played, me, others, self.players, passed, ref, ref_ci, diff_ci)

    def strong_tables(self, candidate: str, incumbent: str, target: tuple[float, float] | None = None) -> StrongTables:
        """Table A (``candidate`` among copies of ``incumbent``: the incumbent's table, played once) and table B
        (``incumbent`` among copies of ``candidate``), paired by game, with the rule *a win at strong tables* (the
        95 % interval of the mean per-game difference of their win shares lies above 0) and ``target`` checked
        (:class:`StrongTables`).

        Raises:
            ValueError: a target outside 0..1, or the arena's errors (:meth:`play`).
        """
        _check_target(target)
        me, others, games_played, wins = self.play(candidate, incumbent)
        inc, cands, _, inc_wins = self.play(incumbent, candidate)
        diff, diff_ci = (float(x) for x in mean_ci95(wins - inc_wins))
        share, ci = float(me["win_share"]), float(me["win_share_ci95"])
        inc_share, inc_ci = float(inc["win_share"]), float(inc["win_share_ci95"])
        met = None if target is None else share >= target[0] and inc_share <= target[1]
        return StrongTables(
            games=games_played,
            candidate_share=share,
            candidate_ci=ci,
            incumbent_share=inc_share,
            incumbent_ci=inc_ci,
            difference=diff,
            difference_ci=diff_ci,
            candidate_penalty=float(me["mean_penalty"]),
            candidate_penalty_ci=float(me["ci95"]),
            incumbents_penalty=sum(float(r["mean_penalty"]) for r in others) / len(others),
            incumbent_penalty=float(inc["mean_penalty"]),
            incumbent_penalty_ci=float(inc["ci95"]),
            candidates_penalty=sum(float(r["mean_penalty"]) for r in cands) / len(cands),
            parity=1.0 / self.players,
            passed=diff - diff_ci > 0.0,
            target=target,
            target_met=met,
        )


def _check_target(target: tuple[float, float] | None) -> None:
    """Raises ValueError unless ``target`` is ``None`` or two win shares in 0..1."""
    if target is not None and (len(target) != 2 or not all(0.0 <= t <= 1.0 for t in target)):
        raise ValueError(f"a strong target is two win shares in 0..1, got {target}")


def play_table(
    candidate: str, opponent: str, role: str, games: int, seed: int, players: int, episode: Episode, workers: int
) -> Table:
    """Play one table (:func:`sixnimmt_env.arena.run.run_arena`) and apply the rule of ``role``
    (``"incumbent"`` or ``"league"``; :func:`hold_table` plays the ``"hold"`` tables).

    Raises:
        ValueError: an unknown spec or role, or games/seed out of range (the arena's errors).
    """
    return TablePlayer(games, seed, players, episode, workers).rule_table(candidate, opponent, role)


def _table(
    opponent: str,
    role: str,
    games: int,
    me: dict[str, Any],
    others: list[dict[str, Any]],
    players: int,
    passed: bool,
    reference: float | None = None,
    reference_ci: float | None = None,
    difference_ci: float | None = None,
) -> Table:
    """A :class:`Table` from the candidate's results row ``me`` and the others' rows."""
    return Table(
        opponent=opponent,
        role=role,
        games=games,
        win_share=float(me["win_share"]),
        win_ci=float(me["win_share_ci95"]),
        penalty=float(me["mean_penalty"]),
        penalty_ci=float(me["ci95"]),
        opponent_penalty=sum(float(r["mean_penalty"]) for r in others) / len(others),
        parity=1.0 / players,
        passed=passed,
        reference=reference,
        reference_ci=reference_ci,
        difference_ci=difference_ci,
    )


def hold_table(
    candidate: str, incumbent: str, baseline: str, games: int, seed: int, players: int, episode: Episode, workers: int
) -> Table:
    """Play ``candidate`` and then ``incumbent`` at a table of ``players - 1`` copies of ``baseline`` (the same
    deals and seats: the same ``seed``) and apply the rule *holds the incumbent's level*: the 95 % interval of the
    mean of the per-game differences of their win shares (paired by deal; the arena's normal approximation)
    reaches 0.

    Raises:
        ValueError: an unknown spec, or games/seed out of range (the arena's errors).
    """
    return TablePlayer(games, seed, players, episode, workers).hold_table(candidate, incumbent, baseline)


def strong_tables(
    candidate: str,
    incumbent: str,
    games: int,
    seed: int,
    players: int,
    episode: Episode,
    workers: int,
    target: tuple[float, float] | None = None,
) -> StrongTables:
    """Play ``candidate`` among ``players - 1`` copies of ``incumbent`` (table A) and ``incumbent`` among copies of
    ``candidate`` (table B) on the same deals and seats (the same ``seed``) and apply the rule *a win at strong
    tables*: the 95 % interval of the mean of the per-game differences of the two win shares (paired by deal; the
    arena's normal approximation) lies above 0. ``target`` is checked on the point estimates
    (:class:`StrongTables`).

    Raises:
        ValueError: a target outside 0..1, an unknown spec, or games/seed out of range (the arena's errors).
    """
    return TablePlayer(games, seed, players, episode, workers).strong_tables(candidate, incumbent, target)


def judge(
    candidate: str,
    incumbent: str,
    league: Sequence[str],
    games: int,
    seed: int,
    players: int = 4,
    episode: Episode = "round",
    workers: int = 1,
    hold: Sequence[str] = (),
    strong: bool = True,
    strong_target: tuple[float, float] | None = None,
) -> Verdict:
    """Play the incumbent's table, each league member's, each ``hold`` baseline's (the candidate and the
    incumbent) and, with ``strong``, the strong tables (:meth:`TablePlayer.strong_tables`, with ``strong_target``),
    and decide (the module docstring's rules). A table is played once (:class:`TablePlayer`): a baseline named both
    in ``league`` and in ``hold`` reuses the candidate's results at its table, and the strong tables' table A is the
    incumbent's table.

    Raises:
        ValueError: a ``strong_target`` without ``strong`` or outside 0..1, or the arena's errors.
    """
    if strong_target is not None and not strong:
        raise ValueError("a strong target needs the strong tables (strong=True)")
    _check_target(strong_target)  # before any game
    player = TablePlayer(games, seed, players, episode, workers)
    tables = [player.rule_table(candidate, incumbent, "incumbent")]
    tables += [player.rule_table(candidate, m, "league") for m in league]
    tables += [player.hold_table(candidate, incumbent, b) for b in hold]
    pair = player.strong_tables(candidate, incumbent, strong_target) if strong else None
    promote = all(t.passed for t in tables) and (pair is None or (pair.passed and pair.target_met is not False))
    return Verdict(candidate, incumbent, promote, tables, games, seed, players, episode, pair)


def _line(t: Table) -> str:
    rule = {"incumbent": "significant win", "league": "no loss", "hold": "holds the incumbent's level"}[t.role]
    mark = "yes" if t.passed else "NO"
    bar = f"{100 * t.parity:.1f} %"
    if t.reference is not None and t.reference_ci is not None and t.difference_ci is not None:
        diff = 100 * (t.win_share - t.reference)
        bar = f"incumbent {100 * t.reference:.1f} ± {100 * t.reference_ci:.1f} % (paired difference "
        bar += f"{diff:+.1f} ± {100 * t.difference_ci:.1f})"
    return (
        f"| {t.role} | `{t.opponent}` | {t.games:,} | {100 * t.win_share:.1f} ± {100 * t.win_ci:.1f} % "
        f"| {bar} | {t.penalty:.2f} ± {t.penalty_ci:.2f} | {t.opponent_penalty:.2f} | {rule}: {mark} |"
    )


def _strong_lines(s: StrongTables, candidate: str, incumbent: str) -> list[str]:
    """The verdict table's rows of the strong tables: A, B and their paired difference."""
    parity = f"{100 * s.parity:.1f} %"

    def target(i: int, sign: str) -> str:
        if s.target is None:
            return "(see the paired row)"
        ok = s.candidate_share >= s.target[0] if i == 0 else s.incumbent_share <= s.target[1]
        return f"target {sign} {100 * s.target[i]:.1f} % (point estimate, not a test): {'yes' if ok else 'NO'}"

    a = f"{100 * s.candidate_share:.1f} ± {100 * s.candidate_ci:.1f} %"
    b = f"{100 * s.incumbent_share:.1f} ± {100 * s.incumbent_ci:.1f} % (the incumbent's)"
    diff = f"{100 * s.difference:+.1f} ± {100 * s.difference_ci:.1f} points"
    rule = f"a win at strong tables (interval above 0): {'yes' if s.passed else 'NO'}"
    return [
        f"| strong A: candidate among incumbents | `{incumbent}` | {s.games:,} | {a} | {parity} "
        f"| {s.candidate_penalty:.2f} ± {s.candidate_penalty_ci:.2f} | {s.incumbents_penalty:.2f} | {target(0, '≥')} |",
        f"| strong B: incumbent among candidates | `{candidate}` | {s.games:,} | {b} | {parity} "
        f"| {s.incumbent_penalty:.2f} ± {s.incumbent_penalty_ci:.2f} | {s.candidates_penalty:.2f} "
        f"| {target(1, '≤')} |",
        f"| strong A − B, paired by deal | | {s.games:,} | {diff} | 0 | | | {rule} |",
    ]


EXAMPLES = (
    "champion:mine.npz --incumbent champion --league champion:lab/weights/champion_v7.npz,mc:64 --games 4000 "
    "--workers 2",
    "champion:mine.npz --incumbent champion:stage-8 --hold mc:64 --strong-target 0.30,0.20 --games 4000 --seed 2 "
    "--workers 2",
)
"""Typical arguments of the command, shown by its ``--help``."""


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point: 0 promote, 1 keep the incumbent, 2 a bad argument."""
    from sixnimmt_env.cli import parser_kwargs

    p = argparse.ArgumentParser(**parser_kwargs("lab.promote", EXAMPLES), description=__doc__.split("\n\n")[0])
    p.add_argument("candidate", help="the candidate's agent spec (e.g. champion:runs/new.npz)")
    p.add_argument("--incumbent", default="champion", help="the incumbent's spec (default: %(default)s)")
    p.add_argument("--league", default="", help="comma-separated league members' specs")
    p.add_argument(
        "--hold",
        default="",
        help="comma-separated baselines at whose tables the candidate must hold the incumbent's win share",
    )
    p.add_argument(
        "--no-strong",
        action="store_true",
        help="skip the strong tables (the candidate among incumbents, the incumbent among candidates, paired)",
    )
    p.add_argument(
        "--strong-target",
        help="AT_LEAST,AT_MOST: the candidate's win share among incumbents at least AT_LEAST and the incumbent's "
        "among candidates at most AT_MOST (point estimates, 0..1; e.g. 0.30,0.20), part of the verdict",
    )
    p.add_argument("--games", type=int, default=4000, help="games per table (default: %(default)s)")
    p.add_argument("--seed", type=int, default=0, help="the arena's seed: every table plays the same deals")
    p.add_argument("--players", type=int, default=4, help="players at a table (default: %(default)s)")
    p.add_argument("--episode", choices=("round", "game"), default="round", help="single rounds or whole games")
    p.add_argument("--workers", type=int, default=1, help="processes the games are played on")
    p.add_argument("--out", help="write the settings, tables and verdict as JSON to this new file")
    args = p.parse_args(argv)
    from sixnimmt_env.agents import check_spec, parse_lineup

    try:  # every spec is checked before any game: a typo in the last table costs no minutes of play
        check_spec(args.candidate)
        check_spec(args.incumbent)
        league = parse_lineup(args.league, "--league") if args.league else []
        hold = parse_lineup(args.hold, "--hold") if args.hold else []
        target = _parse_target(args.strong_target, args.no_strong) if args.strong_target is not None else None
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else None
    if out is not None:
        from sixnimmt_env.arena.report import check_new_file

        try:
            check_new_file(out, "--out")
        except ValueError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
    try:
        verdict = judge(
            args.candidate,
            args.incumbent,
            league,
            args.games,
            args.seed,
            args.players,
            args.episode,
            args.workers,
            hold,
            not args.no_strong,
            target,
        )
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"candidate `{verdict.candidate}` at {args.players} players, {args.episode}s, seed {args.seed}\n")
    print("| table | others | games | candidate's win share | bar | its bullheads | others' bullheads | rule |")
    print("|---|---|---:|---:|---:|---:|---:|---|")
    for t in verdict.tables:
        print(_line(t))
    failed = [f"{t.opponent} ({t.role})" for t in verdict.tables if not t.passed]  # a spec may be at two tables
    if verdict.strong is not None:
        for line in _strong_lines(verdict.strong, verdict.candidate, verdict.incumbent):
            print(line)
        failed += [f"{verdict.incumbent} (strong tables)"] if not verdict.strong.passed else []
        failed += [f"{verdict.incumbent} (strong target)"] if verdict.strong.target_met is False else []
    print()
    print("verdict: promote" if verdict.promote else f"verdict: keep the incumbent (failed: {', '.join(failed)})")
    if out is not None:
        try:
            with out.open("x") as f:  # never replaces a file made since the check
                json.dump(asdict(verdict), f, indent=2)
        except OSError as e:
            print(f"error: --out {str(out)!r} not written: {e}", file=sys.stderr)
            return 2
    return 0 if verdict.promote else 1


def _parse_target(text: str, no_strong: bool) -> tuple[float, float]:
    """``--strong-target AT_LEAST,AT_MOST``: two win shares in 0..1.

    Raises:
        ValueError: not two numbers in 0..1, or given with ``--no-strong``.
    """
    if no_strong:
        raise ValueError("--strong-target needs the strong tables: drop --no-strong")
    parts = text.split(",")
    try:
        values = [float(x) for x in parts]
    except ValueError:
        values = []
    if len(values) != 2 or not all(0.0 <= v <= 1.0 for v in values):
        raise ValueError(f"--strong-target {text!r}: give AT_LEAST,AT_MOST, two win shares in 0..1 (e.g. 0.30,0.20)")
    return values[0], values[1]


if __name__ == "__main__":
    sys.exit(main())
