"""Throughput of the batched engine, printed side by side with its targets (issue 5).

    python benchmarks/batched_throughput.py            # about 20 s after the first compile
    python benchmarks/batched_throughput.py --quick    # about 5 s

Figures:

- random legal play at B = 1024 (4 players, whole games), observations of every seat and masks included:
  decisions/s, a decision being one seat's real choice (every seat in card selection, the chooser in a
  row choice or a draft pick);
- the heuristic arena ``greedy,lowest,random,random``, 4 players, single rounds: games/s on the batched path
  (one process), and on the reference path for comparison;
- ``mc:64`` against three greedy, 4 players, single rounds: games/s (reference Python agent: the batched
  engine has no Monte Carlo rollouts yet);
- peak resident memory of a process playing random games with observations at B = 1024 and B = 16384
  (``resource.getrusage``, measured in fresh subprocesses, the interpreter and imports included).

Rates are per CPU second of this one process (``time.process_time``), so other load on the shared machine does
not skew them; on an idle machine they equal wall-clock rates on one core.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time

import numpy as np

from sixnimmt_env.batched import BatchedGames
from sixnimmt_env.batched.agents import HeuristicPlayers, kind_codes
from sixnimmt_env.batched.arena import play_games
from sixnimmt_env.batched.core import SELECT
from sixnimmt_env.engine import GameConfig


def _clock() -> float:
    """CPU seconds of this process: the machine is shared, so wall time would measure the other users' load."""
    return time.process_time()


WALL: dict[str, float] = {}
"""Wall-clock rates of the last runs, printed beside the CPU-time rates."""


TARGETS = {"random": 2_000_000, "arena": 80_000, "mc": 40}


def random_play(batch_size: int, seconds: float) -> tuple[float, int]:
    """Decisions/s of random legal play with observations and masks, and the steps played."""
    config = GameConfig(num_players=4)
    n = config.num_players
    games = BatchedGames(config, batch_size, seed=0)
    players = HeuristicPlayers(games, kind_codes(["random"] * n), seed=1)
    obs = np.empty((batch_size, n, 402), np.float32)
    masks = np.empty((batch_size, n, 109), np.int8)
    actions = np.zeros((batch_size, n), np.int64)

    def play(steps: int) -> int:
        decisions = 0
        for _ in range(steps):
            games.observe(obs)
            games.legal_mask(masks)
            phase = games.phase
            decisions += n * int(np.count_nonzero(phase == SELECT)) + int(np.count_nonzero(phase != SELECT))
            games.step(players.act(actions), check=False)
            games.reset_done()
        return decisions

    play(5)  # compile / load from the cache
    steps, decisions, t0, w0 = 0, 0, _clock(), time.perf_counter()
    while _clock() - t0 < seconds:
        decisions += play(20)
        steps += 20
    WALL["random"] = decisions / max(time.perf_counter() - w0, 1e-9)
    return decisions / max(_clock() - t0, 1e-9), steps


def arena_batched(games: int) -> float:
    config = GameConfig(num_players=4, episode="round")
    specs = ["greedy", "lowest", "random", "random"]
    play_games(config, specs, 0, 0, 64)  # compile / load
    t0, w0 = _clock(), time.perf_counter()
    for start in range(0, games, 4096):
        play_games(config, specs, 0, start, min(games, start + 4096))
    WALL["arena"] = games / (time.perf_counter() - w0)
    return games / (_clock() - t0)


def arena_reference(agents: str, games: int) -> float:
    from sixnimmt_env.agents import make_agent
    from sixnimmt_env.arena import play_game

    config = GameConfig(num_players=4, episode="round")
    built = [make_agent(s) for s in agents.split(",")]
    t0, w0 = _clock(), time.perf_counter()
    for g in range(games):
        play_game(config, [built[(i + g) % 4] for i in range(4)], 0, g)
    WALL[agents] = games / (time.perf_counter() - w0)
    return games / (_clock() - t0)


def peak_memory_mb(batch_size: int) -> float:
    """Peak RSS in MB of a fresh process playing random games (a few steps) with observations at ``batch_size``."""
    cmd = [sys.executable, __file__, "--child", str(batch_size)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def _child(batch_size: int) -> None:
    random_play(batch_size, 0.0)
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)  # Linux: KB


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="shorter runs (noisier figures)")
    parser.add_argument("--child", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child)
        return
    quick = args.quick
    rows = []
    rate, steps = random_play(1024, 1.0 if quick else 4.0)
    rows.append(("random legal play + obs + masks, B=1024", f"{rate:,.0f} decisions/s", TARGETS["random"]))
    rows.append(("  same, wall clock", f"{WALL['random']:,.0f} decisions/s", None))
    games = 8192 if quick else 40_960
    rate = arena_batched(games)
    rows.append(("arena greedy,lowest,random,random (batched)", f"{rate:,.0f} games/s", TARGETS["arena"]))
    rows.append(("  same, wall clock", f"{WALL['arena']:,.0f} games/s", None))
    ref = arena_reference("greedy,lowest,random,random", 300 if quick else 2000)
    rows.append(("arena greedy,lowest,random,random (reference)", f"{ref:,.0f} games/s", None))
    mc = arena_reference("mc:64,greedy,greedy,greedy", 2 if quick else 8)
    rows.append(("arena mc:64,greedy,greedy,greedy (reference agent)", f"{mc:,.1f} games/s", TARGETS["mc"]))
    for b in (1024, 16384):
        rows.append((f"peak resident memory, B={b}", f"{peak_memory_mb(b):,.0f} MB", None))
    width = max(len(r[0]) for r in rows)
    print(f"{'measure (rates per CPU second of one process)'.ljust(width)}  {'figure':>22}  target")
    for name, figure, target in rows:
        print(f"{name.ljust(width)}  {figure:>22}  {'' if target is None else f'{target:,}'}")
    print(f"(random play: {steps} batched steps of 1024 games; finished games restart at once)")


if __name__ == "__main__":
    main()
