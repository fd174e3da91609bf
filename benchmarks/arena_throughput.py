"""Arena throughput: heuristic games/s with 1 and 2 workers; mc:64 games/s and decisions/s.

Usage::

    python benchmarks/arena_throughput.py                      # the issue's figures (20,000 + 1,000 games)
    python benchmarks/arena_throughput.py --games 2000 --mc-games 20 --mc-timing-games 10   # a few seconds

Prints the Markdown tables of each run and a summary. Games per second are
wall-clock figures on a possibly shared machine; the single-worker runs also
give games per CPU-second of this process (closer to "one core"). mc's rollouts
run compiled (:mod:`sixnimmt_env.compiled.mc`). ``benchmarks/arena_command.py``
times the whole command, start-up included.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from sixnimmt_env.agents import MonteCarloAgent
from sixnimmt_env.arena import markdown_table, run_arena
from sixnimmt_env.rules.engine import GameConfig

HEURISTIC = "greedy,lowest,random,random"


class _TimedAgent:
    """Wraps an agent; counts its real decisions (more than one legal choice) and the seconds spent on them."""

    def __init__(self, agent: MonteCarloAgent) -> None:
        self.agent = agent
        self.spec = agent.spec
        self.decisions = 0
        self.seconds = 0.0

    def act(self, view: Mapping[str, Any], rng: np.random.Generator) -> int:
        t0 = time.perf_counter()
        action = self.agent.act(view, rng)
        self.seconds += time.perf_counter() - t0
        if view["must_act"] and len(view["legal_actions"]) > 1:
            self.decisions += 1
        return action


def _timed_run(agents: Any, games: int, seed: int, workers: int) -> tuple[dict[str, Any], float]:
    cpu = time.process_time()
    res = run_arena(agents, games, seed, GameConfig(num_players=4, episode="round"), workers=workers, progress=True)
    return res, games / max(time.process_time() - cpu, 1e-9)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--games", type=int, default=20000, help="heuristic games per run (default 20000)")
    p.add_argument("--mc-games", type=int, default=1000, help="mc:64 arena games (default 1000; 0 skips)")
    p.add_argument("--mc-workers", type=int, default=2, help="workers for the mc:64 arena run (default 2)")
    p.add_argument("--mc-timing-games", type=int, default=50, help="single-worker mc:64 games for decisions/s")
    p.add_argument("--samples", type=int, default=64, help="mc samples N (default 64)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()

    summary = [
        "| run | games | workers | games/s (wall) | games per CPU-s (this process) |",
        "|---|---:|---:|---:|---:|",
    ]
    for workers in (1, 2):
        res, cpu_rate = _timed_run(HEURISTIC, args.games, args.seed, workers)
        print(markdown_table(res))
        cpu = f"{cpu_rate:,.0f}" if workers == 1 else "n/a"
        summary.append(f"| {HEURISTIC} | {args.games:,} | {workers} | {res['games_per_s']:,.0f} | {cpu} |")

    mc_spec = f"mc:{args.samples}"
    mc_table = f"{mc_spec},greedy,greedy,greedy"
    timed: dict[str, _TimedAgent] = {}
    for path in ["compiled"] if args.mc_timing_games >= 2 else []:
        timed[path] = _TimedAgent(MonteCarloAgent(args.samples))
        res, cpu_rate = _timed_run([timed[path], "greedy", "greedy", "greedy"], args.mc_timing_games, args.seed, 1)
        print(markdown_table(res))
        summary.append(
            f"| {mc_table} ({path} rollouts) | {args.mc_timing_games:,} | 1 | {res['games_per_s']:,.2f} "
            f"| {cpu_rate:,.2f} |"
        )
    if args.mc_games >= 2:
        res, _ = _timed_run(mc_table, args.mc_games, args.seed, args.mc_workers)
        print(markdown_table(res))
        summary.append(f"| {mc_table} | {args.mc_games:,} | {args.mc_workers} | {res['games_per_s']:,.2f} | n/a |")
    print("\n".join(summary))
    for path, agent in timed.items():
        if agent.decisions:
            print(
                f"{mc_spec} ({path} rollouts): {agent.decisions:,} searched decisions in {agent.seconds:.1f} s: "
                f"{agent.decisions / agent.seconds:,.1f} decisions/s "
                f"({1000 * agent.seconds / agent.decisions:.2f} ms each; single worker)"
            )


if __name__ == "__main__":
    main()
