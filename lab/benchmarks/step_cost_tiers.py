"""Per-call cost (µs of CPU time) of the step paths, for this checkout and, side by side, another one.

Rows: :func:`sixnimmt_env.rules.engine.step` (4 players ``row_choice="player"``, 4 players ``"cheapest"``, 10 players
``"player"``), :func:`sixnimmt_env.rules.engine.legal_actions` (4 players, every seat of every state), and one
``parallel_env(...).step`` of the compiled and of the reference backend (4 players), with the default infos and
with ``infos="view"`` left unread (``view`` rows) and read in full (``dict(info)`` of every agent, ``view read``).

Each checkout runs in its own worker process (``PYTHONPATH`` set to the checkout), which first plays fixed-seed
random games and keeps their states and joint actions; every measurement then replays them, timing only the
calls measured with :func:`time.process_time` (CPU time: steadier than wall time on a shared machine). The
workers are asked in turn, one measurement at a time (interleaved, each first in turn), ``--repeat`` times; the
best (lowest) figure of each is printed, with the ratio to the first checkout.

Usage::

    python lab/benchmarks/step_cost_tiers.py [--repo OTHER_CHECKOUT ...] [--repeat 7] [--games 200] [--tier TIER ...]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def _random_games(players: int, row_choice: str, games: int) -> list[tuple[Any, list[int]]]:
    """``(state, joint action)`` of every step of ``games`` fixed-seed random games on the reference engine."""
    import numpy as np

    from sixnimmt_env import engine  # sixnimmt_env.rules.engine; the old checkouts' sixnimmt_env.engine

    config = engine.GameConfig(num_players=players, row_choice=row_choice)
    rng = np.random.default_rng(0)
    rand = random.Random(0).random
    plays = []
    for _ in range(games):
        state = engine.new_game(config, rng)
        while not state.done:
            actions = []
            for seat in range(players):
                legal = engine.legal_actions(state, seat)
                actions.append(legal[int(rand() * len(legal))])
            plays.append((state, actions))
            state, _ = engine.step(state, actions, rng)
    return plays


def _time_step(players: int, row_choice: str, games: int) -> Callable[[], float]:
    """A function timing one ``engine.step`` per recorded state (µs)."""
    import numpy as np

    from sixnimmt_env import engine

    step = engine.step

    plays = _random_games(players, row_choice, games)
    clock = time.process_time

    def run() -> float:
        deal_rng = np.random.default_rng(1)
        t = clock()
        for state, actions in plays:
            step(state, actions, deal_rng)
        return (clock() - t) / len(plays) * 1e6

    return run


def _time_legal(games: int) -> Callable[[], float]:
    """A function timing one ``legal_actions(state, seat)`` over every seat of recorded 4-player states (µs)."""
    from sixnimmt_env import engine

    legal_actions = engine.legal_actions

    states = [state for state, _ in _random_games(4, "player", games)]
    clock = time.process_time

    def run() -> float:
        t = clock()
        for state in states:
            legal_actions(state, 0)
            legal_actions(state, 1)
            legal_actions(state, 2)
            legal_actions(state, 3)
        return (clock() - t) / (4 * len(states)) * 1e6

    return run


def _time_env(backend: str, games: int, infos: str = "empty", read: bool = False) -> Callable[[], float]:
    """Record the joint actions of ``games`` random 4-player episodes of ``parallel_env(backend=..., infos=...)``
    (chosen from the masks: the infos are never read); returns a function replaying them (``reset(seed)``
    untimed) and timing one ``env.step`` (µs), with ``read`` also ``dict(info)`` of every agent's info."""
    from sixnimmt_env import engine
    from sixnimmt_env.pettingzoo_env import parallel_env

    NOOP = engine.NOOP

    env = parallel_env(backend=backend, num_players=4, infos=infos)
    rand = random.Random(0).random
    episodes = []
    for seed in range(games):
        observations, _ = env.reset(seed=seed)
        actions_of = []
        while env.agents:
            actions = {}
            for name in env.possible_agents:
                mask = observations[name]["action_mask"]
                if mask[NOOP]:
                    actions[name] = NOOP
                else:
                    legal = mask.nonzero()[0]
                    actions[name] = int(legal[int(rand() * len(legal))])
            actions_of.append(actions)
            observations, *_ = env.step(actions)
        episodes.append((seed, actions_of))
    clock = time.process_time
    steps = sum(len(a) for _, a in episodes)

    def run() -> float:
        total = 0.0
        for seed, actions_of in episodes:
            env.reset(seed=seed)
            step = env.step
            t = clock()
            if read:
                for actions in actions_of:
                    for info in step(actions)[4].values():
                        dict(info)
            else:
                for actions in actions_of:
                    step(actions)
            total += clock() - t
        return total / steps * 1e6

    return run


TIMERS: dict[str, Callable[[int], Callable[[], float]]] = {
    "step 4p player": lambda games: _time_step(4, "player", games),
    "step 4p cheapest": lambda games: _time_step(4, "cheapest", games),
    "step 10p player": lambda games: _time_step(10, "player", games // 2),
    "legal_actions 4p": _time_legal,
    "env compiled 4p": lambda games: _time_env("compiled", games // 2),
    "env reference 4p": lambda games: _time_env("reference", games // 2),
    "env compiled view": lambda games: _time_env("compiled", games // 2, "view"),
    "env reference view": lambda games: _time_env("reference", games // 2, "view"),
    "env compiled view read": lambda games: _time_env("compiled", games // 2, "view", read=True),
    "env reference view read": lambda games: _time_env("reference", games // 2, "view", read=True),
}
"""Each tier's timer from the number of recorded games (fewer for 10 players and the envs)."""
TIERS = tuple(TIMERS)


def _worker(games: int, tiers: list[str]) -> None:
    """Answer ``TIER`` lines on stdin with one measurement each (µs per call, a JSON number on stdout)."""
    runs = {tier: TIMERS[tier](games) for tier in tiers}
    for run in runs.values():
        run()  # warm up (and load the compiled kernels)
    print("ready", flush=True)
    for line in sys.stdin:
        print(json.dumps(runs[line.strip()]()), flush=True)


def main() -> None:
    """Start one worker per checkout, ask them in turn, print the best figures (module docstring)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repo", action="append", default=[], help="another checkout to measure (repeatable)")
    p.add_argument("--repeat", type=int, default=7, help="measurements per tier and checkout; the best is shown")
    p.add_argument("--games", type=int, default=200, help="recorded games per tier (fewer for 10p and the envs)")
    p.add_argument("--tier", action="append", choices=TIERS, help="measure only this tier (repeatable)")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    tiers = args.tier or list(TIERS)
    if args.worker:
        _worker(args.games, tiers)
        return
    repos = [ROOT, *(Path(r).resolve() for r in args.repo)]
    workers = []
    for repo in repos:
        env = {**os.environ, "PYTHONPATH": str(repo), "OPENBLAS_NUM_THREADS": "1"}
        cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", "--games", str(args.games)]
        cmd += [f"--tier={tier}" for tier in tiers]
        w = subprocess.Popen(cmd, cwd=repo, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        workers.append(w)
    for w in workers:
        assert w.stdout is not None and w.stdout.readline().strip() == "ready"
    best = {(tier, i): float("inf") for tier in tiers for i in range(len(repos))}
    for k in range(args.repeat):
        for tier in tiers:
            for i in [*range(k % len(workers), len(workers)), *range(k % len(workers))]:  # each first in turn
                w = workers[i]
                assert w.stdin is not None and w.stdout is not None
                w.stdin.write(tier + "\n")
                w.stdin.flush()
                best[tier, i] = min(best[tier, i], json.loads(w.stdout.readline()))
    for w in workers:
        assert w.stdin is not None
        w.stdin.close()
        w.wait()
    names = [str(r) for r in repos]
    print(f"µs per call, CPU time, best of {args.repeat} (interleaved); ratio = checkout / {names[0]}")
    for i, name in enumerate(names):
        print(f"  [{i}] {name}")
    head = f"{'tier':<24}" + "".join(f"{f'[{i}]':>10}" for i in range(len(repos)))
    head += "".join(f"{f'[{i}]/[0]':>10}" for i in range(1, len(repos)))
    print(head)
    for tier in tiers:
        line = f"{tier:<24}" + "".join(f"{best[tier, i]:>10.2f}" for i in range(len(repos)))
        line += "".join(f"{best[tier, i] / best[tier, 0]:>10.3f}" for i in range(1, len(repos)))
        print(line)


if __name__ == "__main__":
    main()
