"""The ``sixnimmt`` command (``[project.scripts]``): one entry for every tool, each a subcommand.

==============  =============================  ==========================================================
subcommand      runs                           what
==============  =============================  ==========================================================
``train``       ``training.train``             train a YAML config (``--set key=value``, ``--resume``)
``evaluate``    ``training.evaluate``          a checkpoint (or any agents) against line-ups in the arena
``arena``       ``sixnimmt_env.arena``         agents against each other: penalties, 95 % CIs, leagues
``replay``      ``sixnimmt_env.records_text``  print a recorded game (``--save-games`` files)
``play``        ``sixnimmt_env.play``          play or watch at the table, in the browser or the terminal
``champion``    ``training.train_champion``    train a stage of the ``champion`` agent, export its weights
``recipe``      ``training.recipe``            train the stages of a recipe file in order (``make champion``)
``promote``     ``training.promote``           a candidate against the incumbent and a league: promote or keep
==============  =============================  ==========================================================

``sixnimmt CMD ARGS`` is ``python -m MODULE ARGS``: the module runs as ``__main__`` (:func:`runpy.run_module`),
with its own options and ``--help``. ``train``, ``evaluate``, ``champion``, ``recipe`` and ``promote`` need the
``train`` extra, ``play`` the ``play`` extra. This module imports the standard library only, so each command's
start-up settings (one BLAS thread before numpy loads) still apply.
"""

from __future__ import annotations

import argparse
import runpy
import sys
from collections.abc import Sequence

__all__ = ["COMMANDS", "COMMAND_EXAMPLES", "main", "parser_kwargs"]

COMMANDS: dict[str, tuple[str, str]] = {
    "train": ("training.train", "train a YAML config: PPO (SB3 or RLlib), self-play, evaluations, checkpoints"),
    "evaluate": ("training.evaluate", "evaluate a checkpoint (or any agents) against line-ups in the arena"),
    "arena": ("sixnimmt_env.arena", "play agents against each other: penalties with 95%% CIs, duplicate, leagues"),
    "replay": ("sixnimmt_env.records_text", "print a recorded game turn by turn (files of --save-games)"),
    "play": ("sixnimmt_env.play", "play against agents or watch them, in the browser or the terminal (--tui)"),
    "champion": ("training.train_champion", "train a stage of the champion agent and export its weights (.npz)"),
    "recipe": ("training.recipe", "train the stages of a recipe file in order, each exported (.npz); skips done ones"),
    "promote": ("training.promote", "a candidate against the incumbent and a league: significant win, no loss?"),
}
"""Subcommand -> (module run as ``python -m``, one-line summary)."""

COMMAND_EXAMPLES: dict[str, tuple[str, ...]] = {
    "train": (
        "configs/ppo_4p.yaml",
        "configs/smoke.yaml --set train.total_timesteps=2e4 --set algo.learning_rate=1e-4",
        "--resume runs/ppo_4p/<stamp> --set train.total_timesteps=20e6",
    ),
    "evaluate": (
        "runs/ppo_4p/<stamp>/final_model.zip",
        "runs/ppo_4p/<stamp>/final_model.zip --opponents mc:64,greedy,champion:default-ppo",
        "--agents champion,champion:stage-1,greedy,greedy --games 2000",
    ),
    "arena": (
        "--agents champion,greedy,mc:64,champion:default-ppo --games 2000",
        "--agents greedy,lowest,random,mc:16,champion --league --games 500",
        "--agents greedy,random --save-games games.jsonl",
    ),
    "replay": ("games.jsonl", "games.jsonl --game 3"),
    "play": ("--opponents champion,mc:64,greedy", "--watch --agents champion,mc:64,greedy,random", "--tui"),
    "champion": ("configs/champion_short.yaml --out mine.npz", "configs/champion_league.yaml --set train.seed=3"),
    "recipe": (
        "configs/recipes/champion.yaml --list",
        "configs/recipes/champion.yaml --all --force",
        "configs/recipes/champion.yaml --from tables-1 --force",
    ),
    "promote": ("champion:mine.npz --incumbent champion --league champion:stage-7,mc:64 --games 4000 --workers 2",),
}
"""A few typical invocations of each subcommand (its arguments), shown by its ``--help``."""

EXAMPLES = """\
agent specs (one per seat, comma-separated): random, lowest, highest, greedy, mc:N, champion,
  champion:NAME (default-ppo, stage-1 .. stage-8, tables, 2p, games), champion:PATH.npz, ppo:PATH.zip, rllib:PATH
  (an unknown spec lists every known one, plugins included)

examples:
  sixnimmt train configs/ppo_4p.yaml --set train.max_minutes=10
  sixnimmt evaluate runs/ppo_4p/<stamp>/final_model.zip --opponents mc:64,greedy,greedy
  sixnimmt arena --agents champion,greedy,mc:64,champion:default-ppo --games 2000
  sixnimmt arena --agents greedy,random,lowest --save-games games.jsonl && sixnimmt replay games.jsonl --game 0
  sixnimmt play --opponents champion,mc:64,greedy
  sixnimmt champion configs/champion_short.yaml --out mine.npz

'sixnimmt CMD --help' shows the options of CMD; 'python -m MODULE' runs the same command."""

_running: str | None = None
"""The subcommand :func:`main` is running (read by :func:`parser_kwargs`)."""


def parser_kwargs(module: str) -> dict[str, object]:
    """``argparse.ArgumentParser`` keyword arguments of the command of ``module``: ``prog``, how it was typed
    (``sixnimmt arena`` when :func:`main` runs it, else ``python -m sixnimmt_env.arena``), and an ``epilog`` of
    examples (:data:`COMMAND_EXAMPLES`) kept as written."""
    name = next(n for n, (m, _) in COMMANDS.items() if m == module)
    prog = f"sixnimmt {name}" if _running == name else f"python -m {module}"
    lines = "\n".join(f"  {prog} {example}" for example in COMMAND_EXAMPLES[name])
    return {"prog": prog, "epilog": f"examples:\n{lines}", "formatter_class": argparse.RawDescriptionHelpFormatter}


def _parser() -> argparse.ArgumentParser:
    """The top-level parser: ``--help`` lists the subcommands and the examples; a bad command is its error."""
    p = argparse.ArgumentParser(
        prog="sixnimmt",
        description="6 nimmt! (Take 5) for reinforcement learning: train, evaluate, compare and play agents.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (_, summary) in COMMANDS.items():
        sub.add_parser(name, help=summary, add_help=False)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``sixnimmt COMMAND ARGS`` as ``python -m MODULE ARGS``; returns 0 when the command returns.

    Raises:
        SystemExit: the command's own exit (its status), or 2 for a missing or unknown command (the message
            lists the commands).
    """
    global _running
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in COMMANDS:
        _parser().parse_args(argv[:1])  # --help, or the error naming the commands; exits
    command, rest = argv[0], argv[1:]
    sys.argv = [f"sixnimmt {command}", *rest]
    _running = command
    try:
        runpy.run_module(COMMANDS[command][0], run_name="__main__", alter_sys=True)  # its SystemExit is the exit
    finally:
        _running = None
    return 0


if __name__ == "__main__":  # python -m sixnimmt_env.cli: run the imported module's main, which prog() reads
    from sixnimmt_env.cli import main as installed_main

    sys.exit(installed_main())
