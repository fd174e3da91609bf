"""Evaluate checkpoints through the arena (:mod:`sixnimmt_env.arena`), always with action masking.

Usage::

    python -m training.evaluate runs/ppo_4p/<stamp>/best_model.zip --opponents greedy,greedy,greedy --games 5000
    python -m training.evaluate --agents ppo:a.zip,ppo:b.zip,greedy,mc:16 --games 2000

The first form seats the checkpoint (as the ``ppo:PATH`` agent of
:mod:`training.agent`) with the listed opponents; the second lists every seat.
Seats rotate over games (the arena's rule), so every agent plays every seat
equally often. The table (mean penalty per round with 95% CI, win share, mean
rank), ``results.json``/``.md``/``.png`` in ``--out`` (default: a folder
beside the first checkpoint) and the number of illegal actions seen (the
masked policies never choose one; the arena would stop with an
``IllegalActionError`` naming the seat if any agent did) are printed.

A missing or corrupt checkpoint, or one trained for another observation size,
stops with a clear error (exit code 2) before any game is played.

:func:`evaluate_lineups` and :func:`write_report` are what training uses.
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from sixnimmt_env.agents import Agent, make_agent
from sixnimmt_env.arena import markdown_table, run_arena, write_results
from sixnimmt_env.engine import GameConfig
from training.agent import PolicyAgent

if TYPE_CHECKING:
    from training.config import TrainConfig


class CountingAgent:
    """Wraps an agent; counts its decisions and the illegal actions among them (then lets the arena raise)."""

    def __init__(self, agent: Agent, spec: str) -> None:
        self.agent, self.spec = agent, spec
        self.decisions = 0
        self.illegal = 0

    def act(self, view: Mapping[str, Any], rng: np.random.Generator) -> int:
        """The wrapped agent's action, checked against ``view["legal_actions"]``."""
        a = self.agent.act(view, rng)
        if view["must_act"]:
            self.decisions += 1
            if a not in view["legal_actions"]:
                self.illegal += 1
        return a


def evaluate_agents(
    specs: Sequence[str],
    games: int,
    game: Mapping[str, Any] | None = None,
    seed: int = 0,
    workers: int = 1,
    save_games: str | Path | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """Run the arena on ``specs`` (one per seat, rotated) and add decision/illegal counts of ``ppo`` agents.

    Args:
        specs: agent specs, e.g. ``["ppo:best_model.zip", "greedy", "greedy", "greedy"]``.
        games: arena games (>= 2).
        game: :class:`GameConfig` keyword arguments (``num_players`` is set to ``len(specs)``);
            default single rounds.
        seed: the arena seed.
        workers: arena worker processes (with more than one, counts are not collected).
        save_games: a new JSON Lines file for every game's record (:mod:`sixnimmt_env.records`).
        progress: show the arena's tqdm progress bar on stderr.

    Returns:
        The arena's results dict; with ``workers == 1`` each agent row also has
        ``decisions`` and ``illegal_actions``; ``illegal_actions`` (total) is 0 after a completed run.

    Raises:
        ValueError: an unknown spec, a bad checkpoint (missing, corrupt, wrong observation size).
    """
    import training.agent  # noqa: F401  (ppo: prefix)

    kwargs = {"episode": "round", **(game or {}), "num_players": len(specs)}
    config = GameConfig(**kwargs)
    counted = [CountingAgent(make_agent(s), s) for s in specs]
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
        results["settings"]["agents"] = list(specs)
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
    learner: str | PolicyAgent, lineups: Sequence[str], games: int, game: Mapping[str, Any], seed: int = 0
) -> list[dict[str, Any]]:
    """One :func:`lineup_row` per line-up (comma-separated opponent specs) for the ``learner`` spec."""
    rows = []
    for lineup in lineups:
        specs = [str(learner), *(s.strip() for s in lineup.split(","))]
        rows.append(lineup_row(evaluate_agents(specs, games, game, seed), lineup))
    return rows


def plot_learning_curve(eval_csv: Path, out: Path) -> Path | None:
    """PNG of the learner's mean penalty (95% CI band) and the opponents' against each line-up over steps."""
    if not eval_csv.is_file():
        return None
    with eval_csv.open() as f:
        rows = list(csv.DictReader(f))
    if not rows:
        return None
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7.0, 4.0), layout="constrained")
    ax = fig.subplots()
    for k, lineup in enumerate(dict.fromkeys(r["lineup"] for r in rows)):
        sel = [r for r in rows if r["lineup"] == lineup]
        x = np.array([int(r["step"]) for r in sel])
        y = np.array([float(r["mean_penalty"]) for r in sel])
        ci = np.array([float(r["ci95"]) for r in sel])
        color = f"C{k}"
        ax.plot(x, y, marker="o", color=color, label=f"learner vs {lineup}")
        ax.fill_between(x, y - ci, y + ci, color=color, alpha=0.2)
        opp = [float(r["opponents_mean_penalty"]) for r in sel]
        ax.plot(x, opp, linestyle="--", color=color, label=f"{lineup} (their mean)")
    ax.set_xlabel("environment steps")
    ax.set_ylabel("bullheads per round (lower is better)")
    ax.set_title("evaluation during training (95% CI)")
    ax.legend(fontsize=7)
    fig.savefig(out, dpi=120)
    return out


def write_report(cfg: TrainConfig, run_dir: Path, model: Path, summary: Mapping[str, Any]) -> Path:
    """The final report of a run: arena tables of ``model`` against every evaluation line-up
    (``eval.final_games`` games each), ``final_eval.csv``, ``learning_curve.png`` and ``report.md``."""
    game = cfg.env.game_kwargs()
    lines = [
        f"# Training report: {cfg.name}",
        "",
        f"- run folder: `{run_dir}`",
        f"- steps: {summary['steps']:,} in {summary['seconds']:.0f} s "
        f"({summary['steps_per_second']:,.0f} env steps/s during learn, evaluations included)"
        + (" (stopped by train.max_minutes)" if summary.get("timed_out") else ""),
        f"- model: `{model.name}`; best during training: `best_model.zip`",
        "",
    ]
    rows = []
    for lineup in cfg.eval.opponents:
        specs = [f"ppo:{model}", *(s.strip() for s in lineup.split(","))]
        results = evaluate_agents(specs, cfg.eval.final_games, game, seed=cfg.train.seed + 1)
        rows.append(lineup_row(results, lineup))
        illegal = f"Illegal actions: {results['illegal_actions']}"
        lines += [f"## Against {lineup}", "", markdown_table(results), illegal, ""]
    with (run_dir / "final_eval.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    curve = plot_learning_curve(run_dir / "eval.csv", run_dir / "learning_curve.png")
    if curve is not None:
        lines += ["![learning curve](learning_curve.png)", ""]
    path = run_dir / "report.md"
    path.write_text("\n".join(lines))
    print("\n".join(lines), file=sys.stderr)
    return path


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m training.evaluate", description=__doc__.split("\n\n")[0])
    p.add_argument("checkpoint", nargs="?", help="a MaskablePPO .zip checkpoint (seated with --opponents)")
    p.add_argument("--opponents", default="greedy,greedy,greedy", help="opponent specs (default greedy,greedy,greedy)")
    p.add_argument("--agents", help="every seat's spec instead, e.g. ppo:a.zip,ppo:b.zip,greedy,mc:16")
    p.add_argument("--games", type=int, default=5000, help="games to play (default 5000)")
    p.add_argument("--seed", type=int, default=0, help="arena seed (default 0)")
    p.add_argument("--episode", default="round", help="round | game (default round)")
    p.add_argument("--variant", default="standard", help="standard | tactics | logic")
    p.add_argument("--row-choice", default="player", help="player | cheapest")
    p.add_argument("--workers", type=int, default=1, help="arena worker processes (default 1)")
    p.add_argument("--out", help="folder for results.json/.md/.png (default beside the first checkpoint)")
    return p


def _specs(text: str, option: str) -> list[str]:
    """The comma-separated agent specs of ``option``; an empty entry is a ``ValueError``."""
    specs = [s.strip() for s in text.split(",")]
    if not all(specs):
        raise ValueError(f"{option} {text!r} has an empty entry; give agent specs separated by single commas")
    return specs


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns the exit code (2 for bad input)."""
    args = _parser().parse_args(argv)
    import torch

    torch.set_num_threads(1)  # one-decision forward passes: more threads only fight each other
    try:
        if args.agents:
            if args.checkpoint:
                raise ValueError("give either a checkpoint with --opponents, or --agents, not both")
            specs = _specs(args.agents, "--agents")
        elif args.checkpoint:
            specs = [f"ppo:{args.checkpoint}", *_specs(args.opponents, "--opponents")]
        else:
            raise ValueError("give a checkpoint (with --opponents) or --agents")
        game = {"episode": args.episode, "variant": args.variant, "row_choice": args.row_choice}
        results = evaluate_agents(specs, args.games, game, args.seed, args.workers)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    first = next((s[s.index(":") + 1 :] for s in specs if s.startswith(("ppo:", "ppo-sample:"))), None)
    if args.out:
        out = Path(args.out)
    else:
        out = Path(first).with_name(f"eval_{Path(first).stem}") if first else Path("runs/eval")
    paths = write_results(results, out)
    print(markdown_table(results))
    decisions = sum(r.get("decisions", 0) for r in results["agents"])
    learned = sum(r.get("decisions", 0) for r in results["agents"] if str(r["agent"]).startswith(("ppo:", "ppo-")))
    counted = f" in {decisions:,} decisions of all agents ({learned:,} of the checkpoints)" if decisions else ""
    if args.workers > 1:
        counted = " (not counted per agent with --workers > 1; the arena stops at the first one)"
    print(f"illegal actions: {results['illegal_actions']}{counted}")
    print(f"wrote {paths['json']}, {paths['md']}, {paths['png']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
