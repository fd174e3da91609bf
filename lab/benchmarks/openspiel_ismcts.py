"""OpenSpiel's ISMCTS against ``mc:64`` on ``python_sixnimmt``: strength and seconds per decision.

Seat 0 is played in turn by OpenSpiel's Python ``ISMCTSBot`` (on ``pyspiel.convert_to_turn_based(game)``,
random-rollout evaluator, worlds from :func:`sixnimmt_env.openspiel.resampler`) with each simulation budget
given, and by ``mc:64`` (:class:`sixnimmt_env.openspiel.AgentBot`); the other seats are ``mc:64``. Every
line-up plays the same deals (chance seeded by the deal number), so the paired difference of seat 0's
penalty is the strength gap. Single rounds (``episode="round"``) by default: a whole game is ~5 rounds.

    python lab/benchmarks/openspiel_ismcts.py --deals 40 --players 3 --sims 200,800

Prints one line per line-up: seat 0's mean penalty (bullheads, standard error), the paired difference to
``mc:64`` in seat 0, and the wall-clock seconds of the run per seat-0 decision (the mc:64 opponents included).
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

import numpy as np
import pyspiel
from open_spiel.python.algorithms import ismcts, mcts

from sixnimmt_env.openspiel import AgentBot, play, resampler


def ismcts_bot(game: pyspiel.Game, sims: int, seed: int) -> pyspiel.Bot:
    """OpenSpiel's Python ISMCTS with ``sims`` simulations and one random rollout per leaf."""
    evaluator = mcts.RandomRolloutEvaluator(1, np.random.RandomState(seed))
    bot = ismcts.ISMCTSBot(game, evaluator, uct_c=10.0, max_simulations=sims, random_state=np.random.RandomState(seed))
    bot.set_resampler(resampler(seed))
    return bot


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deals", type=int, default=40)
    parser.add_argument("--players", type=int, default=3)
    parser.add_argument("--sims", default="200,800", help="ISMCTS simulation budgets, comma-separated")
    parser.add_argument("--episode", default="round", choices=("round", "game"))
    args = parser.parse_args()
    game = pyspiel.convert_to_turn_based(
        pyspiel.load_game("python_sixnimmt", {"players": args.players, "episode": args.episode})
    )
    lineups = ["mc:64"] + [f"ismcts:{s}" for s in args.sims.split(",")]
    results: dict[str, list[float]] = {}
    for name in lineups:
        penalties, decisions, start = [], 0, time.perf_counter()
        for deal in range(args.deals):
            if name.startswith("ismcts:"):
                seat0: pyspiel.Bot = ismcts_bot(game, int(name.partition(":")[2]), deal)
            else:
                seat0 = AgentBot(name, 0, seed=deal)
            bots = [seat0] + [AgentBot("mc:64", p, seed=1000 * deal + p) for p in range(1, args.players)]
            state = game.new_initial_state()
            returns = play(state, bots, np.random.RandomState(deal))
            penalties.append(-returns[0])
            decisions += sum(pa.player == 0 for pa in state.full_history())
        seconds = time.perf_counter() - start
        results[name] = penalties
        mean = statistics.fmean(penalties)
        sem = statistics.stdev(penalties) / math.sqrt(len(penalties))
        diff = [a - b for a, b in zip(penalties, results["mc:64"], strict=True)]
        dsem = statistics.stdev(diff) / math.sqrt(len(diff)) if name != "mc:64" else 0.0
        gap = statistics.fmean(diff)
        print(
            f"{name:>12}  seat-0 penalty {mean:6.2f} ± {sem:4.2f}  vs mc:64 {gap:+6.2f} ± {dsem:4.2f}"
            f"  {seconds / decisions:6.3f} s/decision (whole run {seconds:.0f} s, {args.deals} deals)",
            flush=True,
        )


if __name__ == "__main__":
    main()
