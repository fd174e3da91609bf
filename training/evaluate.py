"""Evaluate checkpoints through the arena (:mod:`sixnimmt_env.arena`), always with action masking.

Usage::

    python -m training.evaluate runs/ppo_4p/<stamp>/best_model.zip --games 5000
    python -m training.evaluate runs/ppo_4p/<stamp>/best_model.zip --opponents random,lowest,highest --games 5000
    python -m training.evaluate --agents ppo:a.zip,ppo:b.zip,greedy,mc:16 --games 2000

The first forms seat the checkpoint (as the ``ppo:PATH`` agent of
:mod:`training.ppo_agents`) with the listed opponents (default: ``greedy`` in every
other seat); the last lists every seat. The checkpoint may also be an RLlib
checkpoint folder (a run's ``final_model/``, played as ``rllib:PATH``, see
:mod:`training.rllib.rllib_agents`), or name its kind: ``ppo:PATH``, ``rllib:PATH``. Seats rotate over games
(the arena's rule), so every agent plays every seat equally often.

Rules: by default the game the (first) checkpoint was trained on: the rules
stored in the checkpoint by training, else the ``config.yaml`` of its run
folder (see :func:`checkpoint_rules`); ``--players``, ``--variant``,
``--row-choice``, ``--episode`` and ``--end-score`` override them. Listing a
table size the checkpoint was not trained for is an error unless ``--players``
confirms it. The rules used and where they came from are printed.

Output: the table (mean penalty per round with 95% CI, win share, mean rank),
the number of illegal actions seen (the masked policies never choose one; the
arena would stop with an ``IllegalActionError`` naming the seat if any agent
did), and ``results.json``/``.md``/``.png`` in a new folder per evaluation:
``<run>/evaluations/<stamp>/`` for a checkpoint in a run folder, else
``runs/eval/<stamp>/``, or ``--out`` (refused if it already holds results,
unless ``--overwrite``). ``--save-games FILE`` writes every game
(:mod:`sixnimmt_env.records`). Output paths are checked before any game.

A missing or corrupt checkpoint, or one trained for another observation size,
stops with a clear error (exit code 2) before any game is played.

:func:`evaluate_lineups` and :func:`finish_report` are what training uses.
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections.abc import Callable, Mapping, Sequence
from itertools import groupby
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from sixnimmt_env.agents import Agent, make_agent, parse_lineup
from sixnimmt_env.arena import markdown_table, run_arena, write_results
from sixnimmt_env.arena.report import short_labels
from sixnimmt_env.rules.engine import GameConfig

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from training.config.schema import EvalSection


class CountingAgent:
    """Wraps an agent; counts its decisions and the illegal actions among them (then lets the arena raise).

    ``pause``, if given, is called before each of the agent's actions (an evaluation in a background thread waits
    there while the learner trains: :class:`training.lifecycle.IdleGate`).
    """

    def __init__(self, agent: Agent, spec: str, pause: Callable[[], object] | None = None) -> None:
        self.agent, self.spec = agent, spec
        self.pause = pause
        self.decisions = 0
        self.illegal = 0

    def act(self, view: Mapping[str, Any], rng: np.random.Generator) -> int:
        """The wrapped agent's action, checked against ``view["legal_actions"]``."""
        if self.pause is not None:
            self.pause()
        a = self.agent.act(view, rng)
        if view["must_act"]:
            self.decisions += 1
            if a not in view["legal_actions"]:
                self.illegal += 1
        return a


@runtime_checkable
class _Named(Protocol):
    spec: str


def _spec_of(agent: Agent) -> str:
    """The name of an agent already built (:func:`evaluate_agents`): its ``spec`` attribute."""
    if not isinstance(agent, _Named):
        raise AttributeError(f"{agent!r} has no spec attribute to name it by")
    return str(agent.spec)


def evaluate_agents(
    specs: Sequence[str | Agent],
    games: int,
    game: Mapping[str, Any] | None = None,
    seed: int = 0,
    workers: int = 1,
    save_games: str | Path | None = None,
    progress: bool = False,
    pause: Callable[[], object] | None = None,
) -> dict[str, Any]:
    """Run the arena on ``specs`` (one per seat, rotated) and add decision/illegal counts of ``ppo`` agents.

    Args:
        specs: agent specs, e.g. ``["ppo:best_model.zip", "greedy", "greedy", "greedy"]``, or agents already built
            (``workers == 1``; their ``spec`` attribute names them).
        games: arena games (>= 2).
        game: :class:`GameConfig` keyword arguments (``num_players`` is set to ``len(specs)``);
            default single rounds.
        seed: the arena seed.
        workers: arena worker processes (with more than one, counts are not collected).
        save_games: a new JSON Lines file for every game's record (:mod:`sixnimmt_env.records`).
        progress: show the arena's tqdm progress bar on stderr.
        pause: called before every decision of every seat (``workers == 1`` only), see :class:`CountingAgent`.

    Returns:
        The arena's results dict; with ``workers == 1`` each agent row also has
        ``decisions`` and ``illegal_actions``; ``illegal_actions`` (total) is 0 after a completed run.

    Raises:
        ValueError: an unknown spec, a bad checkpoint (missing, corrupt, wrong observation size).
    """
    import training.ppo_agents  # noqa: F401  (ppo: prefix)

    kwargs = {"episode": "round", **(game or {}), "num_players": len(specs)}
    config = GameConfig(**kwargs)
    if pause is not None and workers != 1:
        raise ValueError(f"pause needs the games in this process (workers=1), got workers={workers}")
    counted = [
        CountingAgent(make_agent(s), s, pause) if isinstance(s, str) else CountingAgent(s, _spec_of(s), pause)
        for s in specs
    ]
    results = run_arena(
        counted if workers == 1 else list(specs),
        games,
        seed,
        config,
        workers=workers,
        save_games=save_games,
        progress=progress,
    )
    if workers == 1:
        for row, agent in zip(results["agents"], counted, strict=True):
            row["agent"] = agent.spec
            row["decisions"] = agent.decisions
            row["illegal_actions"] = agent.illegal
        results["settings"]["agents"] = [agent.spec for agent in counted]
    results["illegal_actions"] = sum(r.get("illegal_actions", 0) for r in results["agents"])
    return results


def lineup_row(results: Mapping[str, Any], lineup: str) -> dict[str, Any]:
    """Position 0 (the learner) of an arena result, with the opponents' pooled mean penalty, as one CSV row."""
    me, others = results["agents"][0], results["agents"][1:]
    return {
        "lineup": lineup,
        "games": results["games"],
        "mean_penalty": round(me["mean_penalty"], 4),
        "ci95": round(me["ci95"], 4),
        "opponents_mean_penalty": round(float(np.mean([r["mean_penalty"] for r in others])), 4),
        "opponents_ci95": round(float(np.max([r["ci95"] for r in others])), 4),
        "win_share": round(me["win_share"], 4),
        "mean_rank": round(me["mean_rank"], 4),
        "illegal_actions": results["illegal_actions"],
    }


def evaluate_lineups(
    learner: str | Agent,
    lineups: Sequence[str],
    games: int,
    game: Mapping[str, Any],
    seed: int = 0,
    pause: Callable[[], object] | None = None,
) -> list[dict[str, Any]]:
    """One :func:`lineup_row` per line-up (comma-separated opponent specs) for the ``learner`` (a spec, or an agent
    already built: it plays every line-up); ``pause`` as in :func:`evaluate_agents`."""
    rows = []
    for lineup in lineups:
        specs: list[str | Agent] = [learner, *(s.strip() for s in lineup.split(","))]
        rows.append(lineup_row(evaluate_agents(specs, games, game, seed, pause=pause), lineup))
    return rows


def lineup_labels(lineups: Sequence[str]) -> list[str]:
    """Line-ups (comma-separated agent specs) as legend labels: short labels, equal neighbours counted.

    ``"mc:64,mc:64,mc:64"`` gives ``"3 × mc:64"``; ``"champion:sixnimmt_env/weights/default_ppo_4p.npz,greedy,greedy"``
    gives ``"champion:default_ppo_4p.npz, 2 × greedy"``. The specs of all line-ups are shortened together by
    :func:`sixnimmt_env.arena.report.short_labels`, so distinct checkpoints stay distinct across line-ups.
    """
    seats = [[s.strip() for s in lineup.split(",")] for lineup in lineups]
    every = [s for specs in seats for s in specs]
    short = dict(zip(every, short_labels(every), strict=True))  # equal specs get equal labels
    out = []
    for specs in seats:
        runs = [(label, len(list(group))) for label, group in groupby(short[s] for s in specs)]
        out.append(", ".join(label if n == 1 else f"{n} × {label}" for label, n in runs))
    return out


def learning_curve_figure(rows: Sequence[Mapping[str, str]]) -> Figure:
    """The learning-curve figure of ``eval.csv`` rows: per line-up the learner's mean penalty (bullheads per round)
    with its 95 % band and the opponents' mean (dashed) over environment steps; the legend sits under the axes, so
    long line-ups never narrow the plot."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import EngFormatter

    lineups = list(dict.fromkeys(r["lineup"] for r in rows))
    labels = lineup_labels(lineups)
    fig = Figure(figsize=(9.0, 4.6 + 0.18 * len(lineups)), layout="constrained")
    ax = fig.subplots()
    for k, (lineup, label) in enumerate(zip(lineups, labels, strict=True)):
        sel = [r for r in rows if r["lineup"] == lineup]
        x = np.array([int(r["step"]) for r in sel])
        y = np.array([float(r["mean_penalty"]) for r in sel])
        ci = np.array([float(r["ci95"]) for r in sel])
        color = f"C{k}"
        ax.plot(x, y, marker="o", color=color, label=f"learner vs {label}")
        ax.fill_between(x, y - ci, y + ci, color=color, alpha=0.2)
        opp = [float(r["opponents_mean_penalty"]) for r in sel]
        ax.plot(x, opp, linestyle="--", color=color, label=f"{label} (their mean)")
    ax.set_xlabel("environment steps")
    ax.set_ylabel("bullheads per round (lower is better)")
    ax.set_title("evaluation during training (95% CI)")
    ax.xaxis.set_major_formatter(EngFormatter(sep=" "))  # 8 M, 1.5 k
    # under the axes, never over a curve; up to three line-ups, each column holds one line-up's pair of lines
    fig.legend(loc="outside lower center", ncols=min(len(lineups), 3), fontsize=8)
    return fig


def plot_learning_curve(eval_csv: Path, out: Path) -> Path | None:
    """PNG of :func:`learning_curve_figure` for a run's ``eval.csv``; ``None`` when the file is missing or empty."""
    if not eval_csv.is_file():
        return None
    with eval_csv.open() as f:
        rows = list(csv.DictReader(f))
    if not rows:
        return None
    fig = learning_curve_figure(rows)
    fig.savefig(out, dpi=120)
    return out


def final_evaluations(run_dir: Path, spec: str, ev: EvalSection, game: Mapping[str, Any], seed: int) -> list[str]:
    """Play the agent ``spec`` (``ppo:PATH`` or ``rllib:PATH``) against every ``eval.opponents`` line-up of ``ev``
    (``eval.final_games`` games each, of the game ``game``, seeded ``seed + 1``), write ``final_eval.csv`` and
    ``learning_curve.png`` into ``run_dir``, and return the report's Markdown lines for them (one table per line-up,
    then the curve if there is one)."""
    lines: list[str] = []
    rows = []
    for lineup in ev.opponents:
        specs = [spec, *(s.strip() for s in lineup.split(","))]
        results = evaluate_agents(specs, ev.final_games, game, seed=seed + 1)
        rows.append(lineup_row(results, lineup))
        illegal = f"Illegal actions: {results['illegal_actions']}"
        lines += [f"## Against {lineup}", "", markdown_table(results), illegal, ""]
    with (run_dir / "final_eval.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    if plot_learning_curve(run_dir / "eval.csv", run_dir / "learning_curve.png") is not None:
        lines += ["![learning curve](learning_curve.png)", ""]
    return lines


def finish_report(
    run_dir: Path, spec: str, header: list[str], ev: EvalSection, game: Mapping[str, Any], seed: int
) -> Path:
    """The end of a run, both backends: ``report.md`` holds ``header`` (the backend's lines about the run) and the
    :func:`final_evaluations` of the agent ``spec`` against ``ev``'s line-ups (which write ``final_eval.csv`` and
    ``learning_curve.png``); the report is printed to stderr too. Returns the path of ``report.md``."""
    lines = [*header, *final_evaluations(run_dir, spec, ev, game, seed)]
    path = run_dir / "report.md"
    path.write_text("\n".join(lines))
    print("\n".join(lines), file=sys.stderr)
    return path


RULE_KEYS = ("num_players", "variant", "row_choice", "end_score", "end_rule", "max_rounds", "episode")
"""The :class:`GameConfig` fields a run's rules fix (``num_players`` may be a list of table sizes)."""
METADATA_KEY = "sixnimmt_game"
"""The attribute under which training stores the game rules in a checkpoint (the zip's ``data`` JSON)."""


def checkpoint_rules(checkpoint: str | Path) -> tuple[dict[str, Any], str] | None:
    """The game rules a checkpoint was trained on, and where they were read, or ``None`` if unknown.

    Looks, in order, at the checkpoint's own metadata (the ``sixnimmt_game`` entry training writes into
    every checkpoint) and at the ``config.yaml`` of its run folder (the checkpoint's folder, or its parent
    for ``checkpoints/`` and ``pool/``).

    Returns:
        ``(rules, source)``: ``rules`` maps every name of :data:`RULE_KEYS` to its value
        (``num_players``: an int or a list of table sizes); ``source`` names the file read.

    Raises:
        ValueError: if the run's ``config.yaml`` exists but cannot be read or has no ``env`` section.
    """
    import json
    import zipfile

    path = Path(checkpoint)
    try:
        with zipfile.ZipFile(path) as z:
            data = json.loads(z.read("data"))
        meta = data.get(METADATA_KEY)
        if isinstance(meta, dict) and all(k in meta for k in RULE_KEYS):
            return {k: meta[k] for k in RULE_KEYS}, f"{path} (checkpoint metadata)"
    except (OSError, KeyError, ValueError, zipfile.BadZipFile):
        pass
    folder = path.parent
    candidates = [folder / "config.yaml"]
    if folder.name in ("checkpoints", "pool"):
        candidates.append(folder.parent / "config.yaml")
    for candidate in candidates:
        if candidate.is_file():
            import yaml

            from training.config.schema import EnvSection

            try:
                raw = yaml.safe_load(candidate.read_text(encoding="utf-8"))
            except (yaml.YAMLError, UnicodeDecodeError) as e:
                raise ValueError(f"the run config {candidate} of {path} cannot be read: {e}") from None
            env = raw.get("env") if isinstance(raw, dict) else None
            if not isinstance(env, dict):
                raise ValueError(f"the run config {candidate} of {path} has no 'env' section")
            defaults = EnvSection()
            return {k: env.get(k, getattr(defaults, k)) for k in RULE_KEYS}, str(candidate)
    return None


def resolve_rules(
    checkpoint: str | Path | None,
    seats: int | None,
    overrides: Mapping[str, Any],
) -> tuple[dict[str, Any], str]:
    """The :class:`GameConfig` keyword arguments of an evaluation, and a sentence saying where they come from.

    Args:
        checkpoint: the (first) checkpoint evaluated, or ``None``.
        seats: the number of agents listed (``None``: not fixed by the command, as with the default opponents).
        overrides: rule values given on the command line (``num_players``, ``variant``, ``row_choice``,
            ``episode``, ``end_score``); ``None`` values are ignored.

    Returns:
        ``(game, source)``: ``game`` holds every field of :data:`RULE_KEYS` with an int ``num_players``.

    Raises:
        ValueError: when the listed seats do not match the table the checkpoint was trained on and
            ``--players`` does not confirm the new size.
    """
    found = checkpoint_rules(checkpoint) if checkpoint is not None else None
    if found is None:
        base: dict[str, Any] = {"num_players": 4, "episode": "round"}
        source = "defaults (single rounds, standard deck)"
        if checkpoint is not None:
            source += f": no training config or metadata found for {checkpoint}"
    else:
        base, source = dict(found[0]), f"the training rules of {found[1]}"
    given = {k: v for k, v in overrides.items() if v is not None}
    sizes = base["num_players"] if isinstance(base["num_players"], list) else [base["num_players"]]
    if "num_players" in given:
        players = given["num_players"]
        if seats is not None and seats != players:
            raise ValueError(f"--players {players} but {seats} agents are listed (one per seat)")
    elif seats is not None:
        if found is not None and seats not in sizes:
            trained = " or ".join(map(str, sizes))
            raise ValueError(
                f"{checkpoint} was trained for {trained} players (from {found[1]}) but {seats} seats are listed; "
                f"list {sizes[0]} seats (the checkpoint and {sizes[0] - 1} opponents), or pass --players {seats} to "
                "evaluate on another table size"
            )
        players = seats
    else:
        players = sizes[0]
    game = {**base, **given, "num_players": players}
    changed = [f"{k}={given[k]}" for k in given if given[k] != base.get(k)]
    if changed:
        source += " with " + ", ".join(changed) + " from the command line"
    return game, source


EXAMPLES = (
    "runs/ppo_4p/<stamp>/final_model.zip",
    "runs/ppo_4p/<stamp>/final_model.zip --opponents mc:64,greedy,champion:default-ppo",
    "--agents champion,champion:stage-8,greedy,greedy --games 2000",
)
"""Typical arguments of the command (``sixnimmt evaluate`` or ``python -m training.evaluate``), shown by its
``--help``."""


def _parser() -> argparse.ArgumentParser:
    from sixnimmt_env.cli import parser_kwargs

    p = argparse.ArgumentParser(**parser_kwargs("training.evaluate", EXAMPLES), description=__doc__.split("\n\n")[0])
    p.add_argument(
        "checkpoint",
        nargs="?",
        help="a MaskablePPO .zip checkpoint or an RLlib checkpoint folder, optionally as ppo:PATH or rllib:PATH "
        "(seated with --opponents)",
    )
    p.add_argument(
        "--opponents",
        help="opponent specs, one per other seat (default: greedy in every other seat of the trained table)",
    )
    p.add_argument(
        "--fill-seats",
        action="store_true",
        help="repeat the --opponents list to fill every other seat of the table (e.g. random,lowest,highest)",
    )
    p.add_argument("--agents", help="every seat's spec instead, e.g. ppo:a.zip,ppo:b.zip,greedy,mc:16")
    p.add_argument("--games", type=int, default=5000, help="games to play (default 5000)")
    p.add_argument("--seed", type=int, default=0, help="arena seed (default 0)")
    rules = p.add_argument_group(
        "rules", "default: the rules the (first) checkpoint was trained on (its run's config.yaml)"
    )
    rules.add_argument("--players", type=int, help="players per table")
    rules.add_argument("--variant", help="standard | tactics | logic")
    rules.add_argument("--row-choice", help="player | cheapest")
    rules.add_argument("--episode", help="round | game")
    rules.add_argument("--end-score", type=int, help="end score of a whole game (R12)")
    p.add_argument("--workers", type=int, default=1, help="arena worker processes (default 1)")
    p.add_argument(
        "--out",
        help="new folder for results.json/.md/.png (default: a new <run>/evaluations/<stamp>/ beside the "
        "checkpoint, or runs/eval/<stamp>/)",
    )
    p.add_argument("--overwrite", action="store_true", help="replace results already in --out")
    p.add_argument("--save-games", metavar="FILE", help="write every game to FILE (JSON Lines, sixnimmt_env.records)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


CHECKPOINT_PREFIXES = ("ppo:", "ppo-sample:", "rllib:", "rllib-sample:")
"""Agent spec prefixes whose argument is a checkpoint path (its rules are read from the checkpoint's run)."""


def _checkpoint_spec(checkpoint: str) -> tuple[str, str]:
    """The agent spec and the path of the positional checkpoint: ``ppo:PATH``/``rllib:PATH`` as given, a folder
    as ``rllib:PATH`` (an RLlib checkpoint), anything else as ``ppo:PATH`` (a MaskablePPO .zip).

    Raises:
        ValueError: the path does not exist, or a ``ppo:`` checkpoint is not a file.
    """
    if checkpoint.startswith(CHECKPOINT_PREFIXES):
        prefix, path = checkpoint.split(":", 1)
    else:
        prefix, path = ("rllib" if Path(checkpoint).is_dir() else "ppo"), checkpoint
    if not Path(path).exists() or (prefix.startswith("ppo") and not Path(path).is_file()):
        raise ValueError(f"checkpoint {path!r} not found")
    return f"{prefix}:{path}", path


def _run_folder(checkpoint: Path) -> Path:
    """The run folder a checkpoint belongs to (its folder, or the parent of ``checkpoints/``/``pool/``)."""
    folder = checkpoint.parent
    return folder.parent if folder.name in ("checkpoints", "pool") else folder


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns the exit code (2 for bad input, 130 when interrupted)."""
    from sixnimmt_env.arena.pool import warn_workers
    from sixnimmt_env.arena.report import check_new_file, check_results_folder, new_results_folder

    args = _parser().parse_args(argv)
    try:
        if args.agents:
            if args.checkpoint or args.opponents:
                raise ValueError("give either a checkpoint with --opponents, or --agents, not both")
            listed = parse_lineup(args.agents, "--agents")
            specs: list[str] | None = listed
            first = next((s.split(":", 1)[1] for s in listed if s.startswith(CHECKPOINT_PREFIXES)), None)
            if first is not None and not Path(first).exists():
                raise ValueError(f"checkpoint {first!r} not found")
        elif args.checkpoint:
            specs = None
            seated, first = _checkpoint_spec(args.checkpoint)
        else:
            raise ValueError("give a checkpoint (with --opponents) or --agents")
        overrides = {
            "num_players": args.players,
            "variant": args.variant,
            "row_choice": args.row_choice,
            "episode": args.episode,
            "end_score": args.end_score,
        }
        opponents = None if args.opponents is None else parse_lineup(args.opponents, "--opponents")
        seats = len(specs) if specs is not None else None
        if opponents is not None and not args.fill_seats:
            seats = len(opponents) + 1
        game, source = resolve_rules(first, seats, overrides)
        config = GameConfig(**game)
        if specs is None:
            n = config.num_players
            pool = opponents or ["greedy"]
            if opponents is None or args.fill_seats:
                opponents = [pool[i % len(pool)] for i in range(n - 1)]
            specs = [seated, *opponents]
        if args.out:
            out = Path(args.out)
        elif first is not None:
            out = new_results_folder(_run_folder(Path(first)) / "evaluations")
        else:
            out = new_results_folder("runs/eval")
        check_results_folder(out, args.overwrite)  # before any game: nothing is lost and no work is wasted
        if args.save_games is not None:
            check_new_file(args.save_games, "--save-games")
        warn_workers(args.workers)
        print(f"rules: {source}", file=sys.stderr)
        import torch

        torch.set_num_threads(1)  # one-decision forward passes: more threads only fight each other
        results = evaluate_agents(
            specs, args.games, game, args.seed, args.workers, args.save_games, progress=not args.quiet
        )
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\ninterrupted: no results written", file=sys.stderr)
        return 130
    results["settings"]["rules_from"] = source
    if not args.out and out.exists():  # another run took this stamped name meanwhile: the next free one
        out = new_results_folder(out.parent)
    paths = write_results(results, out, overwrite=args.overwrite)
    print(markdown_table(results))
    decisions = sum(r.get("decisions", 0) for r in results["agents"])
    learned = sum(r.get("decisions", 0) for r in results["agents"] if str(r["agent"]).startswith(CHECKPOINT_PREFIXES))
    counted = f" in {decisions:,} decisions of all agents ({learned:,} of the checkpoints)" if decisions else ""
    if args.workers > 1:
        counted = " (not counted per agent with --workers > 1; the arena stops at the first one)"
    print(f"illegal actions: {results['illegal_actions']}{counted}")
    print(f"rules: {source}")
    print(f"wrote {paths['json']}, {paths['md']}, {paths['png']}")
    if args.save_games is not None:
        print(f"wrote {results['games']:,} game records to {args.save_games}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
