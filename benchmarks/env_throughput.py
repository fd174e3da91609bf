"""Decisions per second of the bare engines and of the PettingZoo ParallelEnv's two backends (issue 2's targets).

A *decision* is one agent choosing one real action: every agent in a ``select``
step, only the chooser in a ``choose_row`` or ``draft`` step; no-ops do not
count. Every agent plays uniformly at random among its legal actions. One
process, one core. Rows:

- ``engine.step``: the reference engine :func:`sixnimmt_env.rules.engine.step`, legal
  actions from :func:`engine.legal_actions`, the choice in Python;
- ``engine.step_unchecked``: the same with :func:`engine.step_unchecked`
  (no validation; the actions come from ``legal_actions``);
- ``compiled engine``: the batched engine's kernels on one game, the random
  legal choice made inside numba too (:func:`sixnimmt_env.compiled.single.play_random`);
- ``env reference`` / ``env compiled``: ``parallel_env(backend=...)``, a
  Python policy reading each agent's ``action_mask`` (the no-op bit, else
  ``mask.nonzero()`` and a random pick), every observation, mask, reward,
  termination and (lazy) info dict built as a learner would receive them.

Each is run for single-round episodes (``episode="round"``) and whole games.
Targets (issue 2): the ParallelEnv >= 300,000 decisions/s, the bare engine
>= 1,000,000. Figures are printed per wall-clock second and per CPU second of
this process (the CPU figure is steadier on a shared machine), with the
decisions per step; with ``--repeat k`` each measurement runs k times and the
median is printed with the range of the per-CPU figures. The first run
compiles the numba kernels (cached on disk).

Usage::

    python benchmarks/env_throughput.py [--seconds 3] [--repeat 1] [--players 4] [--variant standard]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable

import numpy as np

from sixnimmt_env.pettingzoo_env import SixNimmtParallelEnv
from sixnimmt_env.rules import engine
from sixnimmt_env.rules.engine import NOOP, SELECT, GameConfig

Result = tuple[int, int, float, float]
"""(decisions, steps, wall seconds, CPU seconds)."""


def _env_kwargs(config: GameConfig) -> dict[str, object]:
    return {name: getattr(config, name) for name in GameConfig.field_names()}


def bench_engine(config: GameConfig, seconds: float, seed: int, checked: bool) -> Result:
    """Random games on the reference engine (``step`` or ``step_unchecked``) for about ``seconds``."""
    rng = np.random.default_rng(seed)
    rand = random.Random(seed).random
    legal_actions = engine.legal_actions
    step = engine.step if checked else engine.step_unchecked
    seats = range(config.num_players)
    n = config.num_players
    decisions = steps = 0
    wall0, cpu0 = time.perf_counter(), time.process_time()
    deadline = wall0 + seconds
    while time.perf_counter() < deadline:
        state = engine.new_game(config, rng)
        while not state.done:
            actions = []
            for seat in seats:
                legal = legal_actions(state, seat)
                actions.append(legal[int(rand() * len(legal))])
            decisions += n if state.phase == SELECT else 1
            steps += 1
            state, _ = step(state, actions, rng)
    return decisions, steps, time.perf_counter() - wall0, time.process_time() - cpu0


def bench_compiled_engine(config: GameConfig, seconds: float, seed: int) -> Result:
    """Random games on the compiled kernels (choice in numba too), 20,000 steps per call, for about ``seconds``."""
    from sixnimmt_env.compiled.single import SingleGame

    game = SingleGame(config, seed)
    policy_rng = np.random.SeedSequence(seed).generate_state(1, np.uint64)
    game.play_random(100, policy_rng)  # compile or load the cached kernels
    decisions = steps = 0
    chunk = 20_000
    wall0, cpu0 = time.perf_counter(), time.process_time()
    deadline = wall0 + seconds
    while time.perf_counter() < deadline:
        d, _ = game.play_random(chunk, policy_rng)
        decisions += d
        steps += chunk
    return decisions, steps, time.perf_counter() - wall0, time.process_time() - cpu0


def bench_env(config: GameConfig, seconds: float, seed: int, backend: str) -> Result:
    """Random games through ``parallel_env(backend=backend)``, a Python policy reading the masks."""
    env = SixNimmtParallelEnv(backend=backend, **_env_kwargs(config))
    rand = random.Random(seed).random
    names = env.possible_agents
    decisions = steps = 0
    env.reset(seed=seed)
    wall0, cpu0 = time.perf_counter(), time.process_time()
    deadline = wall0 + seconds
    while time.perf_counter() < deadline:
        observations, _ = env.reset()
        while env.agents:
            actions = {}
            for name in names:
                mask = observations[name]["action_mask"]
                if mask[NOOP]:  # the no-op is legal only when it is the agent's only action
                    actions[name] = NOOP
                else:
                    legal = mask.nonzero()[0]
                    actions[name] = legal[int(rand() * len(legal))]
                    decisions += 1
            steps += 1
            observations, _, _, _, _ = env.step(actions)
    return decisions, steps, time.perf_counter() - wall0, time.process_time() - cpu0


def main() -> None:
    """Run every measurement and print a table of decisions per second."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="time per measurement (default 3)")
    parser.add_argument("--players", type=int, default=4, help="number of players (default 4)")
    parser.add_argument("--variant", default="standard", choices=["standard", "tactics", "logic"])
    parser.add_argument("--repeat", type=int, default=1, help="runs per measurement; the median is shown (default 1)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    s, seed = args.seconds, args.seed
    runs: list[tuple[str, Callable[[GameConfig], Result]]] = [
        ("engine.step", lambda c: bench_engine(c, s, seed, checked=True)),
        ("engine.step_unchecked", lambda c: bench_engine(c, s, seed, checked=False)),
        ("compiled engine", lambda c: bench_compiled_engine(c, s, seed)),
        ("env reference", lambda c: bench_env(c, s, seed, "reference")),
        ("env compiled", lambda c: bench_env(c, s, seed, "compiled")),
    ]
    # compile (or load) the compiled backend's kernels before timing anything
    bench_env(GameConfig(num_players=args.players, variant=args.variant), 0.01, seed, "compiled")
    print(
        f"{args.players} players, variant {args.variant}, {s:g} s per measurement, {args.repeat} run(s) each "
        "(median), random legal actions"
    )
    print(
        f"{'what':<22} {'episode':<7} {'decisions':>11} {'dec/step':>8} {'per wall s':>12} {'per CPU s':>12}"
        f"  {'CPU s range':>19}"
    )
    for episode in ("round", "game"):
        config = GameConfig(num_players=args.players, variant=args.variant, episode=episode)
        for name, run in runs:
            results = [run(config) for _ in range(args.repeat)]
            per_cpu = [d / cpu for d, _, _, cpu in results]
            decisions, steps = sum(r[0] for r in results), sum(r[1] for r in results)
            wall = statistics.median(d / w for d, _, w, _ in results)
            print(
                f"{name:<22} {episode:<7} {decisions:>11,} {decisions / steps:>8.2f} "
                f"{wall:>12,.0f} {statistics.median(per_cpu):>12,.0f}  {min(per_cpu):>9,.0f}-{max(per_cpu):<9,.0f}"
            )


if __name__ == "__main__":
    main()
