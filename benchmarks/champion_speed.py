"""Decisions per second of the shipped ``champion`` agent on one core (issue 13 asks for >= 2,000 in the arena).

Usage::

    python benchmarks/champion_speed.py [--games 200] [--players 4] [--weights champion:PATH.npz]

Records the views of every decision in ``--games`` single rounds of ``--players`` players played by ``greedy``, then
times the champion on them three ways: ``act(view, rng)`` (the arena and the play table: the observation
is rebuilt from the view), ``act_observation`` (the Gymnasium env's opponents) and one batched
``choose`` over all of them (the batched training env); then the held cards' features alone
(``hand_features``, part of every decision), one observation at a time and batched. CPU time of this
process is printed beside the wall time, since the machine may be shared.

``--weights`` times another agent spec of the same network (``champion:NAME``, or ``champion:PATH`` of a ``.npz``,
e.g. a wider student of ``lab/configs/strong_distill_256.yaml``) instead of the shipped ``champion``; the first line
printed gives its hidden layers.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from sixnimmt_env.agents import make_agent
from sixnimmt_env.card_features import hand_features
from sixnimmt_env.champion import load_champion, observation_from_view
from sixnimmt_env.rules.engine import NUM_ACTIONS, GameConfig, new_game, step, view


def _timed(fn: object, n: int) -> str:
    wall, cpu = time.perf_counter(), time.process_time()
    fn()  # type: ignore[operator]
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return f"{n / wall:>10,.0f} decisions/s wall, {n / cpu:>10,.0f} per CPU-second"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--games", type=int, default=200)
    p.add_argument("--players", type=int, default=4, help="table size, 2..10 (champion plays its weights)")
    p.add_argument(
        "--weights",
        default="champion",
        help="the agent spec timed: champion (default), champion:NAME or champion:PATH (a .npz of weights)",
    )
    args = p.parse_args()
    champion, greedy = load_champion(args.weights), make_agent("greedy")
    rng = np.random.default_rng(0)
    config = GameConfig(num_players=args.players, episode="round")
    views = []
    for _ in range(args.games):
        state = new_game(config, rng)
        while not state.done:
            seat_views = [view(state, q) for q in range(args.players)]
            views += [v for v in seat_views if v["must_act"]]
            state, _ = step(state, [greedy.act(v, rng) for v in seat_views], rng)
    obs = np.stack([observation_from_view(v) for v in views])
    masks = np.zeros((len(views), NUM_ACTIONS), bool)
    for i, v in enumerate(views):
        masks[i, list(v["legal_actions"])] = True
    champion.act(views[0], rng)  # compile the numba kernels first
    n = len(views)
    actor = champion.actor_for(args.players)
    print(f"{args.weights}: hidden layers {actor.hidden_layers()}")
    print(f"{n} decisions of {args.games} rounds of {args.players} players")
    print("act(view, rng)   ", _timed(lambda: [champion.act(v, rng) for v in views], n))
    print(
        "act_observation  ",
        _timed(lambda: [champion.act_observation(o, m, rng) for o, m in zip(obs, masks, strict=True)], n),
    )
    print("choose (batched) ", _timed(lambda: champion.choose(obs, masks), n))
    print("hand_features    ", _timed(lambda: [hand_features(obs[i : i + 1]) for i in range(n)], n), "(one by one)")
    print("hand_features    ", _timed(lambda: hand_features(obs), n), "(batched)")


if __name__ == "__main__":
    main()
