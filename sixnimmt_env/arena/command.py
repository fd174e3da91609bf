"""The arena's command line: ``python -m sixnimmt_env.arena`` (see :mod:`sixnimmt_env.arena` for the options).

:func:`main` checks the outputs before any game (:func:`~sixnimmt_env.arena.report.check_results_folder`,
:func:`~sixnimmt_env.arena.report.check_new_file`), runs the arena or the league, writes the results folder and
prints the table. Ctrl-C prints one line, writes nothing and exits with status 130.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sixnimmt_env.agents import parse_lineup
from sixnimmt_env.arena.league import run_league
from sixnimmt_env.arena.plotter import PlotProcess
from sixnimmt_env.arena.pool import ENGINES, label, warn_workers
from sixnimmt_env.arena.report import (
    check_new_file,
    check_results_folder,
    league_note,
    markdown_table,
    new_results_folder,
    write_results,
)
from sixnimmt_env.arena.run import run_arena
from sixnimmt_env.rules.engine import GameConfig

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    from sixnimmt_env.cli import parser_kwargs

    p = argparse.ArgumentParser(
        **parser_kwargs("sixnimmt_env.arena"),
        description="Play baseline (or registered) agents against each other and report penalties with 95% CIs.",
    )
    p.add_argument("--agents", required=True, help="comma-separated agent specs, one per seat (the pool with --league)")
    p.add_argument("--games", type=int, default=1000, help="games to play (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="run seed; game g depends on (seed, g) only (default 0)")
    p.add_argument("--players", type=int, default=None, help="players per table (default: number of agents; league: 4)")
    p.add_argument("--variant", default="standard", help="standard | tactics | logic (RULES.md V1, V2)")
    p.add_argument("--row-choice", default="player", help="player | cheapest (RULES.md R9b; default player)")
    p.add_argument("--episode", default="round", help="round | game: a game is one round or a whole game (R12)")
    p.add_argument("--end-score", type=int, default=66, help="end score of a whole game (R12, default 66)")
    p.add_argument("--workers", type=int, default=1, help="worker processes (results do not depend on it)")
    p.add_argument(
        "--out",
        default=None,
        help="new folder for results.json/.md/.png (default: a new runs/arena/<stamp>/ per run); "
        "a folder that already holds results is refused unless --overwrite",
    )
    p.add_argument("--overwrite", action="store_true", help="replace the results already in --out")
    p.add_argument(
        "--save-games",
        metavar="FILE",
        help="write every game to FILE (JSON Lines, sixnimmt_env.records); "
        "view one with python -m sixnimmt_env.records_text FILE --game N",
    )
    p.add_argument("--duplicate", action="store_true", help="replay each deal with seats rotated through all positions")
    p.add_argument("--league", action="store_true", help="random tables from the pool, OpenSkill ratings")
    p.add_argument(
        "--engine",
        default="auto",
        choices=ENGINES,
        help="auto (batched engine when every agent is a heuristic one; default) | reference | batched",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument(
        "--no-plot",
        action="store_true",
        help="write results.json and results.md only: no results.png (matplotlib is not loaded)",
    )
    return p


def main(argv: Sequence[str] | None = None, plotter: PlotProcess | None = None) -> dict[str, Any]:
    """Run the arena from the command line; prints the table and returns the results dict.

    The tables are written (``results.json``, ``results.md``) and printed first; then ``results.png`` is drawn,
    unless ``--no-plot``.

    ``plotter``: a plot helper already started (:mod:`sixnimmt_env.arena.__main__` starts it before importing
    this module); the caller closes it; unused with ``--no-plot``. By default one is started here, after the
    outputs are checked.
    """
    parser = _parser()
    args = parser.parse_args(argv)
    out = Path(args.out) if args.out is not None else new_results_folder("runs/arena")
    try:  # fail before playing, not after
        specs = parse_lineup(args.agents, "--agents")
        check_results_folder(out, args.overwrite)
        if args.save_games is not None:
            check_new_file(args.save_games, "--save-games")
        warn_workers(args.workers)
    except ValueError as e:
        parser.error(str(e))
    if plotter is not None or args.no_plot:
        return _run(parser, args, specs, out, None if args.no_plot else plotter)
    with PlotProcess() as started:  # matplotlib loads on another core while the games are played
        return _run(parser, args, specs, out, started)


def _run(
    parser: argparse.ArgumentParser,
    args: argparse.Namespace,
    specs: list[str],
    out: Path,
    plotter: PlotProcess | None,
) -> dict[str, Any]:
    """Play the run of the parsed ``args``, write its tables and print them, then have ``plotter`` draw the plot
    (none without a plotter)."""
    try:
        default_players = min(4, len(specs)) if args.league else len(specs)
        config = GameConfig(
            num_players=args.players if args.players is not None else default_players,
            variant=args.variant,
            row_choice=args.row_choice,
            episode=args.episode,
            end_score=args.end_score,
        )
        progress = not args.quiet and sys.stderr.isatty()
        if plotter is not None:  # laid out while the games are played
            plotter.draft([label(spec) for spec in specs], config.num_players)
        if args.league:
            if args.duplicate:
                raise ValueError("--duplicate and --league cannot be combined (league tables are random)")
            results = run_league(
                specs,
                args.games,
                args.seed,
                config,
                workers=args.workers,
                progress=progress,
                engine=args.engine,
                save_games=args.save_games,
            )
        else:
            results = run_arena(
                specs,
                args.games,
                args.seed,
                config,
                workers=args.workers,
                duplicate=args.duplicate,
                progress=progress,
                engine=args.engine,
                save_games=args.save_games,
            )
    except ValueError as e:
        parser.error(str(e))
    except KeyboardInterrupt:
        print("\ninterrupted: no results written", file=sys.stderr)
        raise SystemExit(130) from None
    if args.out is None and out.exists():  # another run took this stamped name meanwhile: the next free one
        out = new_results_folder(out.parent)
    paths = write_results(results, out, overwrite=args.overwrite, plot=False)
    print(markdown_table(results))
    if results["mode"] == "league":
        print(league_note(results))
    if plotter is None:
        print(f"wrote {paths['json']}, {paths['md']}")
    else:
        sys.stdout.flush()  # the figures are on screen while the plot is drawn
        png = plotter.plot(results, out / "results.png")
        print(f"wrote {paths['json']}, {paths['md']}, {png}")
    if args.save_games is not None:
        print(f"wrote {results['games']:,} game records to {args.save_games}")
    return results
