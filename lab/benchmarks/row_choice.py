"""Learned row choice against the cheapest-row rule (issue 13): the same agent, the same deals, paired.

An agent plays ``--games`` rotated single rounds against ``--opponents`` twice on the same deals: once with its own
low-card row choice (R9), once with that choice replaced by the cheapest row (the row of fewest bullheads, lowest
index on ties: the ``row_choice="cheapest"`` rule, R9b). The opponents and the agent's card choices are
deterministic, so each game differs only through the row choices; the script prints the mean per-game difference
of the agent's bullheads (own rows minus cheapest rows: negative means its own choice is better) with its 95 %
interval, and how many games differ at all.

Usage::

    python lab/benchmarks/row_choice.py [--agent champion] [--opponents greedy,greedy,greedy] [--games 4000] [--seed 7]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from sixnimmt_env.agents import Agent, make_agent
from sixnimmt_env.arena import play_game, seat_positions
from sixnimmt_env.rules.engine import CHOOSE_ROW, ROW_ACTION, GameConfig
from sixnimmt_env.stats import mean_ci95


class CheapestRow:
    """``agent`` with its low-card row choice replaced by the cheapest row (R9b); card choices unchanged."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self.spec = f"{getattr(agent, 'spec', type(agent).__name__)}+cheapest-row"

    def act(self, view: Mapping[str, Any], rng: np.random.Generator) -> int:
        if view["phase"] == CHOOSE_ROW and view["must_act"]:
            bulls = list(view["row_bullheads"])
            return ROW_ACTION + bulls.index(min(bulls))
        return self.agent.act(view, rng)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--agent", default="champion")
    p.add_argument("--opponents", default="greedy,greedy,greedy")
    p.add_argument("--games", type=int, default=4000)
    p.add_argument("--seed", type=int, default=7)
    args = p.parse_args(argv)
    opponents = [make_agent(s) for s in args.opponents.split(",")]
    agent = make_agent(args.agent)
    n = len(opponents) + 1
    config = GameConfig(num_players=n, episode="round", row_choice="player")
    start = time.perf_counter()
    diffs = np.zeros(args.games)
    for g in range(args.games):
        seats = seat_positions(n, g)  # listed agent position per seat; position 0 is the agent under test
        taken = []
        for tested in (agent, CheapestRow(agent)):
            lineup = [tested, *opponents]
            result = play_game(config, [lineup[i] for i in seats], args.seed, g)
            taken.append(result.penalties[seats.index(0)])
        diffs[g] = taken[0] - taken[1]
    mean, ci = mean_ci95(diffs)
    print(
        f"{args.agent} vs {args.opponents}, {args.games} rotated rounds (seed {args.seed}), "
        f"{time.perf_counter() - start:.0f} s:\n"
        f"  own row choice minus cheapest row: {mean:+.3f} ± {ci:.3f} bullheads per round "
        f"({np.count_nonzero(diffs)} games differ; own better in {np.count_nonzero(diffs < 0)}, "
        f"cheapest better in {np.count_nonzero(diffs > 0)})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
