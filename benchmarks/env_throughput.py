"""Decisions per second of the bare engine and of the PettingZoo ParallelEnv (issue 2's speed targets).

A *decision* is one agent choosing one action: in the ``select`` phase every
player decides, in ``choose_row`` and ``draft`` only one. Players act
uniformly at random among their legal actions. Measured on one core:

- ``engine``: :func:`sixnimmt_env.engine.step` with a random legal action per
  seat (legal actions from :func:`engine.legal_actions`);
- ``parallel_env``: ``SixNimmtParallelEnv.step`` with the same policy (legal
  actions from the engine state), building every observation, mask, reward
  and info dict;
- ``parallel_env+mask``: the same, but the policy reads each agent's
  ``action_mask`` (``np.flatnonzero``), as a learning agent would.

Each is run for single-round episodes (``episode="round"``) and whole games.
Targets (issue 2): the ParallelEnv >= 300,000 decisions/s, the bare engine
>= 1,000,000. Figures are printed per wall-clock second and per CPU second of
this process (the CPU figure is steadier on a shared machine).

Usage::

    python benchmarks/env_throughput.py [--seconds 3] [--players 4] [--variant standard]
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable

import numpy as np

from sixnimmt_env import engine
from sixnimmt_env.engine import SELECT, GameConfig
from sixnimmt_env.env import SixNimmtParallelEnv


def bench_engine(config: GameConfig, seconds: float, seed: int) -> tuple[int, float, float]:
    """Play random games on the bare engine for about ``seconds``; return (decisions, wall s, cpu s)."""
    rng = np.random.default_rng(seed)
    rand = random.Random(seed).random
    legal_actions, step = engine.legal_actions, engine.step
    seats = range(config.num_players)
    n = config.num_players
    decisions = 0
    wall0, cpu0 = time.perf_counter(), time.process_time()
    deadline = wall0 + seconds
    while time.perf_counter() < deadline:
        state = engine.new_game(config, rng)
        for _ in range(200):  # check the clock once per 200 steps
            if state.done:
                break
            actions = []
            for seat in seats:
                legal = legal_actions(state, seat)
                actions.append(legal[int(rand() * len(legal))])
            decisions += n if state.phase == SELECT else 1
            state, _ = step(state, actions, rng)
        while not state.done:
            actions = [legal_actions(state, s)[0] for s in seats]
            decisions += n if state.phase == SELECT else 1
            state, _ = step(state, actions, rng)
    return decisions, time.perf_counter() - wall0, time.process_time() - cpu0


def bench_env(config: GameConfig, seconds: float, seed: int, use_masks: bool) -> tuple[int, float, float]:
    """Play random games through the ParallelEnv for about ``seconds``; return (decisions, wall s, cpu s)."""
    env = SixNimmtParallelEnv(**{name: getattr(config, name) for name in GameConfig.field_names()})
    rand = random.Random(seed).random
    legal_actions = engine.legal_actions
    names = env.possible_agents
    n = config.num_players
    flatnonzero = np.flatnonzero
    decisions = 0
    env.reset(seed=seed)
    wall0, cpu0 = time.perf_counter(), time.process_time()
    deadline = wall0 + seconds
    while time.perf_counter() < deadline:
        observations, _ = env.reset()
        while env.agents:
            state = env.game_state
            actions = {}
            if use_masks:
                for name in names:
                    legal = flatnonzero(observations[name]["action_mask"])
                    actions[name] = legal[int(rand() * len(legal))]
            else:
                for seat, name in enumerate(names):
                    legal = legal_actions(state, seat)
                    actions[name] = legal[int(rand() * len(legal))]
            decisions += n if state.phase == SELECT else 1
            observations, _, _, _, _ = env.step(actions)
    return decisions, time.perf_counter() - wall0, time.process_time() - cpu0


def main() -> None:
    """Run every measurement and print a table of decisions per second."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="time per measurement (default 3)")
    parser.add_argument("--players", type=int, default=4, help="number of players (default 4)")
    parser.add_argument("--variant", default="standard", choices=["standard", "tactics", "logic"])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    runs: list[tuple[str, Callable[[GameConfig], tuple[int, float, float]]]] = [
        ("engine", lambda c: bench_engine(c, args.seconds, args.seed)),
        ("parallel_env", lambda c: bench_env(c, args.seconds, args.seed, use_masks=False)),
        ("parallel_env+mask", lambda c: bench_env(c, args.seconds, args.seed, use_masks=True)),
    ]
    print(f"{args.players} players, variant {args.variant}, {args.seconds:g} s per measurement")
    print(f"{'what':<18} {'episode':<7} {'decisions':>10} {'per wall s':>12} {'per CPU s':>12}")
    for episode in ("round", "game"):
        config = GameConfig(num_players=args.players, variant=args.variant, episode=episode)
        for name, run in runs:
            decisions, wall, cpu = run(config)
            print(f"{name:<18} {episode:<7} {decisions:>10,} {decisions / wall:>12,.0f} {decisions / cpu:>12,.0f}")


if __name__ == "__main__":
    main()
