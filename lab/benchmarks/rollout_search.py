"""One step of search over the champion's own rollouts (issue 13): how much it gains, and how much of it
distillation keeps.

For a decision of the searching seat (card selection, R5, or a low card's row, R9) with legal actions A, the search
deals ``--worlds`` worlds: the other seats' hands drawn uniformly from the cards the seat has not seen (R4: not in its
hand, the rows or a penalty pile; during a row choice, not among the cards just revealed). In each world every
action ``a`` of A is played now, the other seats playing the policy's choice, and then every seat plays the policy
to the end of the round. ``score(a)`` is the mean over the worlds of the seat's bullheads from now on minus the
other seats' mean (lower is better; the same worlds for every ``a``). The search plays the legal action of highest
``logit(a) - score(a) / T`` (``--temperature`` T; with T = 0, the lowest score): the policy's logits keep it from
chasing the noise of a few worlds (one world's score swings by whole rows of bullheads with the dealt hands).

Two modes:

- **match** (default): ``--games`` rotated single rounds, the searching seat against three ``--opponents``, played
  twice on the same deals and with the same opponents' streams: once by the policy alone, once with the search. It
  prints both rows and the per-game difference of the seat's bullheads (search minus policy: negative means the
  search is better) with its 95 % interval.
- **distill** (``--distill GAMES``): the policy plays GAMES rotated single rounds (rounded up to batches of 192), a
  third of them against three ``mc:64``, a third against three default-config policies, a third against three
  ``greedy`` (batches of 192 games, the kind of table changing every 4 games, so each seat meets each kind); each of
  its decisions with two or more legal actions is searched. The policy is then trained
  (:func:`training.distill.fit_policy`) towards ``softmax(logit - score / T)`` over the legal actions and its actor
  written to ``--out`` (a weights file for ``champion:PATH``). It prints the held-out agreement with that target's
  best action before and after. Batch b's games and worlds depend only on (``--seed``, b), so ``--workers`` does not
  change the labels.

Usage::

    python lab/benchmarks/rollout_search.py [--weights PATH] [--games 1000] [--worlds 16] [--temperature 6] [--seed 21]
    python lab/benchmarks/rollout_search.py --distill 9984 --worlds 8 --temperature 3 --epochs 8 --lr 1e-3 \\
        --workers 2 --seed 31 --out runs/rollout_distilled.npz
"""

from __future__ import annotations

import argparse
import sys
import time
from multiprocessing import get_context
from pathlib import Path

import numpy as np

from sixnimmt_env.champion import BASELINES, WEIGHTS, CardActor, ChampionAgent, read_weights
from sixnimmt_env.compiled.core import BatchedGames
from sixnimmt_env.compiled.heuristics import HeuristicPlayers
from sixnimmt_env.compiled.kinds import EXTERNAL, GREEDY
from sixnimmt_env.compiled.mc import MonteCarloPlayers
from sixnimmt_env.rules.engine import NOOP, NUM_ACTIONS, NUM_CARDS, GameConfig
from sixnimmt_env.rules.kernel import CHOOSE_ROW
from sixnimmt_env.stats import mean_ci95, win_shares

CONFIG = GameConfig(num_players=4, episode="round", row_choice="player")
DEFAULT_CONFIG_POLICY = BASELINES["default-ppo"]
BATCH = 192
"""Games per batch (distill mode): 64 of each kind of table."""


def policy_actions(actor: CardActor, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The policy's action ``int64 (B, n)`` for every (game, seat): the legal action of highest logit, the no-op
    108 where it is the only legal action. ``obs float32 (B, n, 506)``, ``mask (B, n, 109)`` (nonzero = legal)."""
    B, n = mask.shape[:2]
    out = np.full((B, n), NOOP, np.int64)
    legal = mask.reshape(B * n, NUM_ACTIONS) != 0
    deciding = np.flatnonzero(legal[:, :NOOP].any(axis=1))
    if len(deciding):
        out.reshape(-1)[deciding] = ChampionAgent(actor).choose(obs.reshape(B * n, -1)[deciding], legal[deciding])
    return out


def search_scores(
    games: BatchedGames,
    index: np.ndarray,
    seats: np.ndarray,
    actor: CardActor,
    worlds: int,
    rng: np.random.Generator,
    hands: np.ndarray | None = None,
) -> np.ndarray:
    """The search's scores of the decisions of seat ``seats[i]`` in game ``index[i]`` of ``games`` (unchanged).

    Args:
        games: a batch of 4-player single rounds (``CONFIG``) in the ``select`` or ``choose_row`` phase.
        index, seats: ``int (L,)``: the games and the deciding seats.
        actor: the policy that plays every seat in the rollouts.
        worlds: worlds dealt per decision (>= 1).
        rng: deals the worlds.
        hands: optional ``(L, n, 10)``: play these hands instead of dealt worlds (perfect information; the tests
            check that the policy's own action then scores what the round really gives).

    Returns:
        ``float64 (L, 109)``: mean bullheads from now on, own minus the other seats' mean, per legal action; ``nan``
        at the illegal actions.
    """
    index, seats = np.asarray(index, np.int64), np.asarray(seats, np.int64)
    L, n = len(index), games.num_players
    legal = [np.flatnonzero(games.legal_mask_of(int(b), int(s))) for b, s in zip(index, seats, strict=True)]
    K = max(len(a) for a in legal)
    W = 1 if hands is not None else worlds
    rollouts = BatchedGames(games.config, L * W * K, seed=0)
    for dst, src in zip(rollouts.arrays, games.arrays, strict=True):
        dst[:] = src[np.repeat(index, W * K)]
    first = np.array([np.resize(a, K) for a in legal])  # (L, K): the legal actions, the first repeated as padding
    first = np.repeat(first[:, None, :], W, axis=1).reshape(-1)
    seat_of = np.repeat(seats, W * K)
    for i, (b, s) in enumerate(zip(index, seats, strict=True)):
        block = slice(i * W * K, (i + 1) * W * K)
        if hands is not None:
            rollouts.hand[block] = hands[i]
            continue
        known = np.zeros(NUM_CARDS + 1, np.bool_)  # by card 1..104; index 0 is the empty slot
        known[games.hand[b, s, : games.hand_len[b, s]]] = True
        known[games.rows[b].reshape(-1)] = True
        known[np.flatnonzero(games.pile[b] >= 0)] = True
        if games.phase[b] == CHOOSE_ROW:
            known[games.revealed[b]] = True
        known[0] = True
        unseen = np.flatnonzero(~known)
        others = [q for q in range(n) if q != s]
        for w in range(W):
            deal, at = rng.permutation(unseen), 0
            rows = slice(i * W * K + w * K, i * W * K + (w + 1) * K)
            for q in others:
                k = int(games.hand_len[b, q])
                rollouts.hand[rows, q] = 0
                rollouts.hand[rows, q, :k] = np.sort(deal[at : at + k])
                at += k
    start = rollouts.round_pen.astype(np.float64)
    actions = policy_actions(actor, rollouts.observe(), rollouts.legal_mask())
    actions[np.arange(len(first)), seat_of] = first
    rollouts.step(actions, check=False)
    while not rollouts.done.all():
        actions = policy_actions(actor, rollouts.observe(), rollouts.legal_mask())
        rollouts.step(actions, check=False)
    taken = rollouts.round_pen - start
    own = taken[np.arange(len(first)), seat_of]
    score = (own - (taken.sum(axis=1) - own) / (n - 1)).reshape(L, W, K).mean(axis=1)
    out = np.full((L, NUM_ACTIONS), np.nan)
    for i, a in enumerate(legal):
        out[i, a] = score[i, : len(a)]
    return out


def choose(scores: np.ndarray, logits: np.ndarray, temperature: float) -> np.ndarray:
    """``int64 (L,)``: the legal action (finite score) of highest ``logit - score / temperature``; with
    ``temperature`` 0, of lowest score."""
    key = -scores if temperature == 0 else logits - scores / temperature
    return np.where(np.isnan(scores), -np.inf, key).argmax(axis=1)


def _searched(mask: np.ndarray, done: np.ndarray) -> np.ndarray:
    """Games whose searching seat has two or more legal actions (``mask`` of that seat, ``(B, 109)``)."""
    return np.flatnonzero(((mask[:, :NOOP] != 0).sum(axis=1) >= 2) & ~done)


def play_batch(
    actor: CardActor,
    games: int,
    seed: int | list[int],
    kinds: np.ndarray,
    worlds: int,
    temperature: float | None,
    record: dict[str, list[np.ndarray]] | None = None,
) -> np.ndarray:
    """Play ``games`` rotated single rounds (seat ``g % 4`` searches or plays the policy) and return the round's
    bullheads ``int (games, 4)`` by seat.

    ``kinds`` ``(games,)``: the other three seats' player per game (0 ``mc:64``, 1 the default-config policy, 2
    ``greedy``). ``temperature`` ``None``: the policy alone; else the search (:func:`choose`). ``record``: append
    each searched decision's ``obs``, ``mask``, ``scores``, ``logits`` and the seat's bullheads so far (``pen``)
    and game (``game``), for distillation.
    """
    rng = np.random.default_rng(seed)
    stream = int(rng.integers(2**31))
    g = BatchedGames(CONFIG, games, seed=stream)
    seat = np.arange(games) % 4
    at = np.arange(games)
    others = np.ones((games, 4), np.bool_)
    others[at, seat] = False
    mc = MonteCarloPlayers(g, others & (kinds == 0)[:, None], 64, seed=stream + 1)
    heuristic = np.where(others & (kinds == 2)[:, None], GREEDY, EXTERNAL).astype(np.int8)
    greedy = HeuristicPlayers(g, heuristic, seed=stream + 2)
    learned = others & (kinds == 1)[:, None]
    default = read_weights(DEFAULT_CONFIG_POLICY)[0] if learned.any() else None
    while not g.done.all():
        actions = np.full((games, 4), NOOP, np.int64)
        mc.act(actions)
        greedy.act(actions)
        obs, mask = g.observe(), g.legal_mask()
        if default is not None:
            actions[learned] = policy_actions(default, obs, mask)[learned]
        own_obs, own_mask = obs[at, seat], mask[at, seat]
        own = policy_actions(actor, own_obs[:, None], own_mask[:, None])[:, 0]
        if temperature is not None or record is not None:
            need = _searched(own_mask, g.done)
            for part in np.array_split(need, max(1, len(need) // 64)):
                if len(part) == 0:
                    continue
                scores = search_scores(g, part, seat[part], actor, worlds, rng)
                logits = actor.logits(own_obs[part]).astype(np.float64)
                if temperature is not None:
                    own[part] = choose(scores, logits, temperature)
                if record is not None:
                    for key, value in (
                        ("obs", own_obs[part]),
                        ("mask", own_mask[part] != 0),
                        ("scores", scores),
                        ("logits", logits),
                        ("pen", g.round_pen[part, seat[part]]),
                        ("game", part),
                    ):
                        record[key].append(np.array(value))
        actions[at, seat] = own
        actions[g.done] = NOOP
        g.step(actions)
    return g.round_pen.astype(np.int64)


def _label_batch(job: tuple[str, int, int, int]) -> dict[str, np.ndarray]:
    """Distill mode, one batch (a worker's job): the searched decisions of batch ``b`` and their returns."""
    weights, seed, b, worlds = job
    actor = read_weights(weights)[0]
    record: dict[str, list[np.ndarray]] = {k: [] for k in ("obs", "mask", "scores", "logits", "pen", "game")}
    kinds = (np.arange(BATCH) // 4) % 3
    final = play_batch(actor, BATCH, [seed, b], kinds, worlds, None, record)
    out = {k: np.concatenate(v) for k, v in record.items()}
    seat = out["game"] % 4
    out["returns"] = -(final[out["game"], seat] - out.pop("pen")).astype(np.float32)
    return out


def distill(args: argparse.Namespace) -> int:
    import torch
    from gymnasium import spaces

    from training.distill import Labels, fit_policy
    from training.policy import CardPolicy, NumpyCardActor, load_actor

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository's root: the lab is not installed
    from lab.train_champion import write_weights

    out = Path(args.out)
    if out.exists() and not args.force:
        print(f"error: {out} exists; give --force to replace it", file=sys.stderr)
        return 2
    batches = -(-args.distill // BATCH)
    start = time.perf_counter()
    jobs = [(str(args.weights), args.seed, b, args.worlds) for b in range(batches)]
    if args.workers > 1:
        with get_context("spawn").Pool(args.workers) as pool:
            parts = pool.map(_label_batch, jobs, chunksize=1)
    else:
        parts = [_label_batch(job) for job in jobs]
    data = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    labelled = time.perf_counter() - start
    print(f"{len(data['returns']):,} searched decisions in {batches * BATCH:,} games, {labelled:.0f} s")
    target = data["scores"] - args.temperature * data["logits"]  # softmax(-target / T) = softmax(logit - score / T)
    labels = Labels(data["obs"], data["mask"], target.astype(np.float32), data["returns"])
    torch.manual_seed(args.seed)
    actor, _ = read_weights(args.weights)
    layers = actor.hidden_layers()
    activation = torch.nn.Tanh if layers[0][1] == "tanh" else torch.nn.ReLU
    box = spaces.Box(-np.inf, np.inf, (data["obs"].shape[1],), np.float32)
    policy = CardPolicy(box, spaces.Discrete(NUM_ACTIONS), lambda _: args.lr, net_arch=[u for u, _ in layers],
                        activation_fn=activation)  # fmt: skip
    load_actor(policy, args.weights)
    quiet = lambda _: None  # noqa: E731
    fit = {"temperature": args.temperature, "seed": args.seed, "batch_size": args.batch_size, "log": quiet}
    before = fit_policy(policy, labels, epochs=0, **fit)
    after = fit_policy(policy, labels, epochs=args.epochs, learning_rate=args.lr, **fit)
    print(f"held-out agreement with the target's best action: {before['agreement']:.4f} before, "
          f"{after['agreement']:.4f} after ({args.epochs} epochs, learning rate {args.lr})")  # fmt: skip
    source = (
        f"{args.weights} fitted to {len(labels)} rollout-search labels (lab/benchmarks/rollout_search.py, "
        f"{batches * BATCH} games, worlds {args.worlds}, temperature {args.temperature}, {args.epochs} epochs, "
        f"learning rate {args.lr}, seed {args.seed})"
    )
    write_weights(NumpyCardActor(policy).arrays(), out, {"source": source, "steps": None})
    print(f"wrote {out}")
    return 0


def match(args: argparse.Namespace) -> int:
    actor = read_weights(args.weights)[0]
    kinds = np.full(args.games, {"mc:64": 0, "default": 1, "greedy": 2}[args.opponents])
    rows = []
    print(f"{args.games:,} single rounds against three {args.opponents} (seed {args.seed}), the same deals twice\n")
    print("| searching seat | bullheads per round | win share | time |\n|---|---:|---:|---:|")
    seat = np.arange(args.games) % 4
    for name, temperature in (("policy", None), (f"search, {args.worlds} worlds, T={args.temperature:g}",
                                                  args.temperature)):  # fmt: skip
        start = time.perf_counter()
        pen = play_batch(actor, args.games, args.seed, kinds, args.worlds, temperature)
        rows.append((name, pen, time.perf_counter() - start))
        mean, ci = mean_ci95(pen[np.arange(args.games), seat].astype(np.float64))
        smean, sci = mean_ci95(100 * win_shares(pen)[np.arange(args.games), seat])
        print(f"| {name} | {float(mean):.3f} ± {float(ci):.3f} | {float(smean):.1f} ± {float(sci):.1f} % | "
              f"{rows[-1][2]:.0f} s |")  # fmt: skip
    diff = (rows[1][1] - rows[0][1])[np.arange(args.games), seat].astype(np.float64)
    mean, ci = mean_ci95(diff)
    print(f"paired difference (search minus policy), bullheads per round: {float(mean):+.3f} ± {float(ci):.3f}")
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--weights", default=str(WEIGHTS), help="the policy's weights file (default: the shipped champion)")
    p.add_argument("--games", type=int, default=1000, help="match mode: deals, each played twice")
    p.add_argument(
        "--opponents",
        choices=("mc:64", "default", "greedy"),
        default="mc:64",
        help="match mode: three mc:64, three default-config policies or three greedy",
    )
    p.add_argument("--worlds", type=int, default=16, help="worlds dealt per searched decision (default: %(default)s)")
    p.add_argument(
        "--temperature", type=float, default=6.0, help="T of logit - score / T; 0 (match mode only): the lowest score"
    )
    p.add_argument("--seed", type=int, default=21)
    p.add_argument(
        "--distill",
        type=int,
        metavar="GAMES",
        help=f"distill mode: label GAMES games (rounded up to batches of {BATCH}), fit the policy",
    )
    p.add_argument("--epochs", type=int, default=8, help="distill mode: passes over the labels (default: %(default)s)")
    p.add_argument("--lr", type=float, default=1e-3, help="distill mode: Adam's learning rate (default: %(default)s)")
    p.add_argument("--batch-size", type=int, default=4096, help="distill mode: labels per gradient step")
    p.add_argument("--workers", type=int, default=1, help="distill mode: labelling processes (default: %(default)s)")
    p.add_argument("--out", default="runs/rollout_distilled.npz", help="distill mode: the weights file to write (.npz)")
    p.add_argument("--force", action="store_true", help="distill mode: replace an existing --out")
    args = p.parse_args(argv)
    for name, low in (("worlds", 1), ("epochs", 1), ("batch_size", 1), ("workers", 1)):
        if getattr(args, name) < low:
            p.error(f"--{name.replace('_', '-')} must be at least {low}, got {getattr(args, name)}")
    if not args.temperature >= 0:
        p.error(f"--temperature must be >= 0 (0: the lowest score, no prior), got {args.temperature}")
    if args.distill is None and args.games < 2:
        p.error(f"--games must be at least 2, got {args.games}")
    if args.distill is not None:
        if args.distill < 1:
            p.error(f"--distill must be at least 1 game, got {args.distill}")
        if args.temperature == 0:
            p.error("--temperature must be > 0 in distill mode (the target is softmax(logit - score / T))")
        if not 0 < args.lr < float("inf"):
            p.error(f"--lr must be a positive number, got {args.lr}")
        if not args.out.endswith(".npz"):
            p.error(f"--out must name a .npz file, got {args.out!r}")
        games = -(-args.distill // BATCH) * BATCH
        if args.batch_size > 8 * games:  # each game gives at least 9 searched decisions (turns 1-9 of R5)
            p.error(
                f"--batch-size {args.batch_size} may exceed the labels of {games} games (at least 9 per game, "
                f"5 % held out): give at most {8 * games}, or more games"
            )
    try:
        read_weights(args.weights)
    except ValueError as e:
        p.error(str(e))
    return distill(args) if args.distill else match(args)


if __name__ == "__main__":
    sys.exit(main())
