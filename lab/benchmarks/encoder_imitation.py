"""Which encoder imitates ``mc:64`` best, and at what cost (issue 13: "a better encoder").

Every variant is a :class:`training.policy.CardPolicy` fitted with :func:`training.distill.fit_policy` on the same
labelled decisions (the teacher's distribution at temperature 1, the same held-out 5 %, the same epochs and learning
rate), so the rows differ only in the network:

=============  ==================================================================================================
``mlp64``      the shipped shape: actor and critic MLPs 64-64 over the observation and the held cards' features,
               one small network shared by all cards scoring each held card (:class:`training.policy.CardHead`)
``mlp256``     the same with 256-256 MLPs
``hand``       ``mlp64`` with the held cards attending to each other before they are scored (two heads,
               :class:`training.policy.HandAttentionHead`, ``algo.policy_kwargs.hand_attention_heads: 2``)
``tokens``     ``hand`` where each held card first attends over 104 card tokens as well (every card 1..104: its 8
               ``CARD_FEATURES``, in hand / seen / unseen and its value; two heads of 16): one token per card, as
               in the published card-token transformer (this script only; not a policy option)
=============  ==================================================================================================

It prints, side by side: the parameters, the held-out agreement (how often the most likely action is the teacher's
best), the held-out cross-entropy, the fitting time, and the milliseconds of one forward and backward pass of a
4,096-decision batch on one thread (what a PPO update pays per minibatch).

Usage::

    python lab/benchmarks/encoder_imitation.py --labels RUN/distill/labels.npz [--variants mlp64,mlp256,hand] \\
        [--epochs 6] [--threads 1]
    python lab/benchmarks/encoder_imitation.py --decisions 1200000 --workers 2 --save labels.npz   # label first
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import gymnasium
import numpy as np
import torch
from stable_baselines3.common.type_aliases import Schedule

from sixnimmt_env.card_features import card_features
from sixnimmt_env.observation import OBS_SIZE, SLICES
from sixnimmt_env.rules.engine import HAND_SIZE, NUM_ACTIONS, NUM_CARDS, GameConfig
from training.distill import Labels, fit_policy, label_in_parallel
from training.policy import CARD_HIDDEN, CardNetworks, CardPolicy, HandAttentionHead, MaskedCategorical

VARIANTS = ("mlp64", "mlp256", "hand", "tokens")
TOKEN_FEATURES = 12
"""Per card token: the 8 ``CARD_FEATURES``, in hand, seen, unseen, value / 104."""
_ALL_CARDS = np.arange(NUM_CARDS)[None]
_HAND, _SEEN = SLICES["hand"].start, SLICES["seen"].start


def card_tokens(obs: np.ndarray) -> np.ndarray:
    """``float32 (batch, 104, 12)``: every card's token for observations ``(batch, 506)`` (module docstring)."""
    feats = card_features(obs, np.repeat(_ALL_CARDS, len(obs), axis=0))
    hand, seen = obs[:, _HAND : _HAND + NUM_CARDS], obs[:, _SEEN : _SEEN + NUM_CARDS]
    unseen = np.clip(1.0 - hand - seen, 0.0, 1.0)
    value = np.broadcast_to(np.arange(1, NUM_CARDS + 1, dtype=np.float32) / NUM_CARDS, hand.shape)
    return np.concatenate([feats, np.stack([hand, seen, unseen, value], axis=2)], axis=2).astype(np.float32)


class TokenNetworks(CardNetworks):
    """:class:`CardNetworks` whose actor latent also carries the raw observation (for :class:`TokenHead`)."""

    def __init__(self, net_arch: list[int], activation_fn: type[torch.nn.Module]) -> None:
        super().__init__(net_arch, activation_fn)
        self.latent_dim_pi += OBS_SIZE

    def forward_actor(self, features: torch.Tensor) -> torch.Tensor:
        return torch.cat([super().forward_actor(features), features[:, :OBS_SIZE]], dim=1)


class TokenHead(HandAttentionHead):
    """:class:`HandAttentionHead` where each held card's hidden vector first attends over the 104 card tokens."""

    def __init__(self, global_dim: int, hidden: int = CARD_HIDDEN, heads: int = 2) -> None:
        super().__init__(global_dim, hidden, heads)
        self.key = torch.nn.Linear(TOKEN_FEATURES, hidden)
        self.value = torch.nn.Linear(TOKEN_FEATURES, hidden)
        self.query = torch.nn.Linear(hidden, hidden)
        self.mix = torch.nn.Linear(2 * hidden, hidden)

    def forward(self, latent: torch.Tensor) -> torch.Tensor:
        obs = latent[:, -OBS_SIZE:].detach()
        tokens = torch.from_numpy(card_tokens(obs.cpu().numpy())).to(latent.device)
        batch, size = latent.shape[0], CARD_HIDDEN // self.heads
        keys = self.key(tokens).view(batch, NUM_CARDS, self.heads, size).transpose(1, 2)
        values = torch.relu(self.value(tokens)).view(batch, NUM_CARDS, self.heads, size).transpose(1, 2)
        self._tokens = (keys, values)  # read by card_hidden during this call
        return super().forward(latent[:, :-OBS_SIZE])

    def card_hidden(self, hidden: torch.Tensor, held: torch.Tensor) -> torch.Tensor:
        keys, values = self._tokens
        batch, size = hidden.shape[0], CARD_HIDDEN // self.heads
        query = self.query(hidden).view(batch, HAND_SIZE, self.heads, size).transpose(1, 2)
        weights = torch.softmax(query @ keys.transpose(2, 3) / size**0.5, dim=3)
        seen = (weights @ values).transpose(1, 2).reshape(batch, HAND_SIZE, CARD_HIDDEN)
        return super().card_hidden(torch.relu(self.mix(torch.cat([hidden, seen], dim=2))), held)


class TokenPolicy(CardPolicy):
    """The ``tokens`` variant as a card policy (fitting only; it has no numpy forward)."""

    def _build_mlp_extractor(self) -> None:
        super()._build_mlp_extractor()
        networks = self.mlp_extractor  # CardPolicy's, built from its checked net_arch
        arch = [layer.out_features for layer in networks.policy_net if isinstance(layer, torch.nn.Linear)]
        self.mlp_extractor = TokenNetworks(arch, self.activation_fn).to(self.device)

    def _build(self, lr_schedule: Schedule) -> None:
        super()._build(lr_schedule)
        networks = self.mlp_extractor
        assert isinstance(networks, TokenNetworks)
        self.action_net = TokenHead(networks.global_dim).to(self.device)
        settings = {"lr": lr_schedule(1), **self.optimizer_kwargs}  # SB3 builds its optimizer this way
        self.optimizer = self.optimizer_class(self.parameters(), **settings)


def _quiet(line: str) -> None:
    """A ``log`` for :func:`training.distill.fit_policy` that prints nothing (the table is printed at the end)."""


def make_policy(variant: str, seed: int) -> CardPolicy:
    """A fresh policy of ``variant`` (:data:`VARIANTS`). Raises ``ValueError`` for another name."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; one of {', '.join(VARIANTS)}")
    torch.manual_seed(seed)
    spaces: tuple[gymnasium.spaces.Box, gymnasium.spaces.Discrete] = (
        gymnasium.spaces.Box(0.0, 1.0, (OBS_SIZE,), np.float32),
        gymnasium.spaces.Discrete(NUM_ACTIONS),
    )
    arch = [256, 256] if variant == "mlp256" else [64, 64]
    heads = 2 if variant in ("hand", "tokens") else 0
    cls = TokenPolicy if variant == "tokens" else CardPolicy
    return cls(*spaces, lambda _: 1e-3, net_arch=arch, hand_attention_heads=heads)


def update_ms(policy: CardPolicy, labels: Labels, batch: int = 4096, repeats: int = 3) -> float:
    """Milliseconds of one forward and backward pass of the actor and critic on ``batch`` decisions (best of
    ``repeats``)."""
    obs, mask = torch.as_tensor(labels.obs[:batch]), labels.mask[:batch]
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        dist = policy.get_distribution(obs, action_masks=mask)
        assert isinstance(dist, MaskedCategorical)  # CardPolicy's distribution
        loss = -dist.log_p.clamp(min=-1e4).mean() + policy.predict_values(obs).mean()
        loss.backward()
        best = min(best, time.perf_counter() - start)
    policy.zero_grad()
    return best * 1000.0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--labels", type=Path, help="a labels file (training.distill.Labels.save); else --decisions")
    p.add_argument("--decisions", type=int, default=0, help="label this many decisions with mc:64 first")
    p.add_argument("--workers", type=int, default=1, help="labelling processes")
    p.add_argument("--save", type=Path, help="write the new labels here")
    p.add_argument("--variants", default="mlp64,mlp256,hand", help=f"comma-separated, of {', '.join(VARIANTS)}")
    p.add_argument("--epochs", type=int, default=6)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--threads", type=int, default=1, help="torch threads")
    p.add_argument("--seed", type=int, default=0, help="the labels' seed, the holdout split and the initial weights")
    args = p.parse_args(argv)
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    bad = [v for v in variants if v not in VARIANTS]
    if bad or not variants:
        p.error(f"--variants: unknown {bad or variants}; one of {', '.join(VARIANTS)}")
    if (args.labels is None) == (args.decisions <= 0):
        p.error("give --labels FILE or --decisions N (> 0), not both")
    if args.save is not None and args.save.exists():
        p.error(f"--save {args.save} exists; choose another path")
    torch.set_num_threads(args.threads)
    if args.labels is not None:
        labels = Labels.load(args.labels)
        source = str(args.labels)
    else:
        config = GameConfig(num_players=4, episode="round", row_choice="player")
        start = time.perf_counter()
        labels = label_in_parallel(config, args.decisions, 64, seed=args.seed, workers=args.workers)
        source = f"{len(labels):,} decisions labelled by mc:64 in {time.perf_counter() - start:.0f} s"
        if args.save is not None:
            labels.save(args.save)
    print(f"labels: {source}, {len(labels):,} decisions; {args.epochs} epochs, lr {args.lr}, {args.threads} thread(s)")
    rows = []
    for variant in variants:
        policy = make_policy(variant, args.seed)
        ms = update_ms(policy, labels)
        fit = fit_policy(policy, labels, args.epochs, 4096, args.lr, 1.0, 0.05, seed=args.seed, log=_quiet)
        params = sum(t.numel() for t in policy.parameters())
        rows.append((variant, params, fit["agreement"], fit["cross_entropy"], fit["seconds"], ms))
        print(f"  {variant}: agreement {fit['agreement']:.4f} ({fit['seconds']:.0f} s)", flush=True)
    print()
    print("| variant | parameters | held-out agreement | held-out cross-entropy | fit seconds | update ms / 4,096 |")
    print("|---|---:|---:|---:|---:|---:|")
    for variant, params, agreement, ce, seconds, ms in rows:
        print(f"| `{variant}` | {params:,} | {agreement:.4f} | {ce:.4f} | {seconds:.0f} | {ms:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
