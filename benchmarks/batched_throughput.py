"""Throughput of the batched engine, printed side by side with its targets (issue 5).

    python benchmarks/batched_throughput.py            # about 20 s after the first compile
    python benchmarks/batched_throughput.py --quick    # about 5 s

Figures:

- random legal play at B = 1024 (4 players, whole games), observations of every seat and masks included:
  decisions/s, a decision being one seat's real choice (every seat in card selection, the chooser in a
  row choice or a draft pick);
- the heuristic arena ``greedy,lowest,random,random``, 4 players, single rounds: games/s on the batched path
  (one process), and on the reference path for comparison;
- ``mc:64`` against three greedy, 4 players, single rounds: games/s of the batched player
  (:class:`sixnimmt_env.compiled.mc.MonteCarloPlayers` with the vectorised greedy agents, the ``mc:64`` seat rotating),
  and of the reference agent (its rollouts compiled on the rules kernel: the arena's reference path);
- MaskablePPO ``learn``: environment steps/s of ``configs/ppo_4p.yaml`` (512 Gymnasium envs in 2 worker
  processes) and of ``configs/ppo_4p_batched.yaml`` (``train.vec_env: batched``, 1024 games in lockstep),
  ``--train-steps`` each (default 131,072), rollouts and updates together;
- peak resident memory of a process playing random games with observations at B = 1024 and B = 16384
  (``VmHWM`` of ``/proc/self/status``, measured in fresh subprocesses, the interpreter and imports included).

Rates are per CPU second of this one process (``time.process_time``), so other load on the shared machine does
not skew them; on an idle machine they equal wall-clock rates on one core. Wall-clock rates are printed beside them.

    python benchmarks/batched_throughput.py --only mc,train    # just the mc:64 and the training figures
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from sixnimmt_env.compiled import BatchedGames
from sixnimmt_env.compiled.core import SELECT
from sixnimmt_env.compiled.fast_arena import play_games
from sixnimmt_env.compiled.heuristics import HeuristicPlayers, kind_codes
from sixnimmt_env.observation import OBS_SIZE
from sixnimmt_env.rules.engine import GameConfig


def _clock() -> float:
    """CPU seconds of this process: the machine is shared, so wall time would measure the other users' load."""
    return time.process_time()


WALL: dict[str, float] = {}
"""Wall-clock rates of the last runs, printed beside the CPU-time rates."""


TARGETS = {"random": 2_000_000, "arena": 80_000, "mc": 40, "train": 30_000}


def random_play(batch_size: int, seconds: float) -> tuple[float, int]:
    """Decisions/s of random legal play with observations and masks, and the steps played."""
    config = GameConfig(num_players=4)
    n = config.num_players
    games = BatchedGames(config, batch_size, seed=0)
    players = HeuristicPlayers(games, kind_codes(["random"] * n), seed=1)
    obs = np.empty((batch_size, n, OBS_SIZE), np.float32)
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


def mc_batched(games: int, samples: int = 64) -> float:
    """Games/s of ``mc:N`` against three greedy on the batched engine (4 players, single rounds, seat rotating)."""
    from sixnimmt_env.compiled.mc import MonteCarloPlayers

    config = GameConfig(num_players=4, episode="round")

    def play(count: int, seed: int) -> None:
        batch = BatchedGames(config, count, seed=seed)
        seats = np.zeros((count, 4), bool)
        seats[np.arange(count), np.arange(count) % 4] = True
        greedy = HeuristicPlayers(batch, np.where(seats, -1, kind_codes(["greedy"])[0]))
        mc = MonteCarloPlayers(batch, seats, samples, seed=seed)
        actions = np.zeros((count, 4), np.int64)
        while not batch.done.all():
            batch.step(mc.act(greedy.act(actions)), check=False)

    play(4, 0)  # compile / load
    t0, w0 = _clock(), time.perf_counter()
    play(games, 1)
    WALL["mc_batched"] = games / (time.perf_counter() - w0)
    return games / (_clock() - t0)


def _tree_cpu() -> float:
    """CPU seconds of this process plus its live descendants (e.g. the worker processes of a subprocess vector env),
    read from ``/proc/<pid>/stat`` (utime + stime)."""
    tick = os.sysconf("SC_CLK_TCK")
    parent: dict[int, int] = {}
    cpu: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        parent[int(entry)] = int(fields[1])
        cpu[int(entry)] = (int(fields[11]) + int(fields[12])) / tick
    mine, total, frontier = {os.getpid()}, 0.0, [os.getpid()]
    while frontier:
        p = frontier.pop()
        for child, ppid in parent.items():
            if ppid == p and child not in mine:
                mine.add(child)
                frontier.append(child)
                total += cpu[child]
    return _clock() + total


def vec_env_rate(batch_size: int, seconds: float) -> float:
    """Learner steps/s of :class:`training.vec_env.SixNimmtVecEnv` alone (the ``ppo_4p`` opponent mixture, the learner
    playing its lowest legal action), masks fetched as MaskablePPO fetches them."""
    from sb3_contrib.common.maskable.utils import get_action_masks

    from training.opponents import MixtureSampler
    from training.vec_env import SixNimmtVecEnv

    mixture = MixtureSampler(["greedy", "lowest", "highest", "random"], [0.7, 0.1, 0.1, 0.1])
    env = SixNimmtVecEnv(batch_size, opponents=mixture, seed=0, num_players=4, episode="round")
    env.reset()

    def play(steps: int) -> None:
        for _ in range(steps):
            env.step(get_action_masks(env).argmax(axis=1))

    play(5)
    steps, t0, w0 = 0, _clock(), time.perf_counter()
    while _clock() - t0 < seconds:
        play(20)
        steps += 20
    WALL["vec_env"] = steps * batch_size / (time.perf_counter() - w0)
    return steps * batch_size / (_clock() - t0)


def train_rate(config: str, steps: int) -> float:
    """Environment steps per CPU second (this process and its workers) of MaskablePPO ``learn(steps)`` with
    ``config`` (no callbacks)."""
    import torch
    from sb3_contrib import MaskablePPO

    import training.ppo_agents  # noqa: F401  (ppo: specs)
    from training.config import load_config
    from training.opponents import mixture_sampler
    from training.policy import algo_kwargs
    from training.vec import build_vec_env

    cfg = load_config(config)
    torch.set_num_threads(cfg.train.torch_threads)
    venv = build_vec_env(cfg.env, cfg.train, mixture_sampler(cfg.opponents, cfg.self_play, cfg.train.opponent_draw))
    try:
        model = MaskablePPO(env=venv, seed=cfg.train.seed, device=cfg.train.device, **algo_kwargs(cfg.algo))
        model.learn(2048)  # warm up (numba loads, first rollout)
        t0, w0 = _tree_cpu(), time.perf_counter()
        model.learn(steps, reset_num_timesteps=False)
        cpu, wall = _tree_cpu() - t0, time.perf_counter() - w0
    finally:
        venv.close()
    done = model.num_timesteps - 2048
    WALL[config] = done / wall
    return done / cpu


def peak_memory_mb(batch_size: int) -> float:
    """Peak RSS in MB of a fresh process playing random games (a few steps) with observations at ``batch_size``."""
    cmd = [sys.executable, __file__, "--child", str(batch_size)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def _child(batch_size: int) -> None:
    random_play(batch_size, 0.0)
    # VmHWM: this process image's peak RSS (ru_maxrss would carry over the parent's peak across fork + exec)
    with open("/proc/self/status") as f:
        peak = [line for line in f if line.startswith("VmHWM:")]
    print(int(peak[0].split()[1]) / 1024 if peak else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="shorter runs (noisier figures)")
    parser.add_argument("--only", default="random,arena,mc,train,memory", help="comma-separated parts to run")
    parser.add_argument("--train-steps", type=int, default=131_072, help="MaskablePPO steps per training figure")
    parser.add_argument("--child", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child)
        return
    quick = args.quick
    parts = set(args.only.split(","))
    rows = []
    steps = 0
    if "random" in parts:
        rate, steps = random_play(1024, 1.0 if quick else 4.0)
        rows.append(("random legal play + obs + masks, B=1024", f"{rate:,.0f} decisions/s", TARGETS["random"]))
        rows.append(("  same, wall clock", f"{WALL['random']:,.0f} decisions/s", None))
    if "arena" in parts:
        games = 8192 if quick else 40_960
        rate = arena_batched(games)
        rows.append(("arena greedy,lowest,random,random (batched)", f"{rate:,.0f} games/s", TARGETS["arena"]))
        rows.append(("  same, wall clock", f"{WALL['arena']:,.0f} games/s", None))
        ref = arena_reference("greedy,lowest,random,random", 300 if quick else 2000)
        rows.append(("arena greedy,lowest,random,random (reference)", f"{ref:,.0f} games/s", None))
    if "mc" in parts:
        rate = mc_batched(64 if quick else 256)
        rows.append(("mc:64,greedy,greedy,greedy (batched MonteCarloPlayers)", f"{rate:,.1f} games/s", TARGETS["mc"]))
        rows.append(("  same, wall clock", f"{WALL['mc_batched']:,.1f} games/s", None))
        mc = arena_reference("mc:64,greedy,greedy,greedy", 8 if quick else 40)
        rows.append(("mc:64,greedy,greedy,greedy (reference agent, numba rollouts)", f"{mc:,.1f} games/s", None))
        rows.append(("  same, wall clock", f"{WALL['mc:64,greedy,greedy,greedy']:,.1f} games/s", None))
    if "train" in parts:
        rate = vec_env_rate(256, 1.0 if quick else 3.0)
        rows.append(("SixNimmtVecEnv alone, B=256 (no policy)", f"{rate:,.0f} steps/s", None))
        rows.append(("  same, wall clock", f"{WALL['vec_env']:,.0f} steps/s", None))
        for config in ("configs/ppo_4p.yaml", "configs/ppo_4p_batched.yaml"):
            rate = train_rate(config, args.train_steps)
            rows.append((f"MaskablePPO learn, {config} (CPU s of all processes)", f"{rate:,.0f} steps/s", None))
            rows.append(("  same, wall clock (2 cores)", f"{WALL[config]:,.0f} steps/s", TARGETS["train"]))
    if "memory" in parts:
        for b in (1024, 16384):
            rows.append((f"peak resident memory, B={b}", f"{peak_memory_mb(b):,.0f} MB", None))
    width = max(len(r[0]) for r in rows)
    print(f"{'measure (rates per CPU second of one process)'.ljust(width)}  {'figure':>22}  target")
    for name, figure, target in rows:
        print(f"{name.ljust(width)}  {figure:>22}  {'' if target is None else f'{target:,}'}")
    if steps:
        print(f"(random play: {steps} batched steps of 1024 games; finished games restart at once)")


if __name__ == "__main__":
    main()
