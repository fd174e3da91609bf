"""Card features for the policy: what each card would do on the current rows.

The observation (:mod:`sixnimmt_env.observation`) holds the hand, the rows and
the cards seen, but an MLP has to learn from scratch which row a card goes to
(`RULES.md` R7), whether it would take a full row (R8) or be a low card (R9).
:class:`CardFeatures` computes these for every card 1..104 from the
observation itself (no hidden information: only the pieces ``hand``,
``row_lengths``, ``row_ends``, ``row_bullheads`` and ``seen``) and feeds them
to the policy and value networks beside the raw observation.

Per card ``c`` (8 values, ``CARD_FEATURES``):

=========  ================================================================
in_hand    1 if ``c`` is in the own hand
low        1 if ``c`` is below every row end (a low card, R9)
full       1 if its row already holds 5 cards (playing it takes the row, R8)
length     cards in its row / 5 (0 for a low card)
bullheads  bullheads in its row / 10 (0 for a low card)
unseen     unseen cards between its row's end and ``c`` / 10 (cards that
           another player could slip in first); below ``c`` for a low card
cost       its immediate cost / 10: the full row's bullheads, or the
           cheapest row's for a low card, else 0 (the ``greedy`` agent's cost)
distance   (``c`` - its row's end) / 104 (``c`` / 104 for a low card)
=========  ================================================================

Use it in a config as ``algo.policy_kwargs.features_extractor_class:
card_features``. :func:`card_features_numpy` is the same computation in
numpy, for the numpy copy of the actor (:mod:`training.agent`).
"""

from __future__ import annotations

from functools import partial

import gymnasium
import numpy as np
import torch
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor

from sixnimmt_env.engine import HAND_SIZE, NUM_CARDS, NUM_ROWS, ROW_LIMIT
from sixnimmt_env.observation import BULLHEAD_ROW_SCALE, CARD_SCALE, OBS_SIZE, SLICES

CARD_FEATURES = ("in_hand", "low", "full", "length", "bullheads", "unseen", "cost", "distance")
"""Names of the per-card features, in order."""
FEATURES_SIZE = OBS_SIZE + NUM_CARDS * len(CARD_FEATURES)
"""Width of :class:`CardFeatures`' output: the observation, then 104 x 8 card features (card-major)."""


def card_features_numpy(obs: np.ndarray) -> np.ndarray:
    """``float32 (batch, 1234)``: the observations ``(batch, 402)`` followed by their card features."""
    obs = np.asarray(obs, np.float32)
    batch = obs.shape[0]
    hand = obs[:, SLICES["hand"]]
    ends = np.rint(obs[:, SLICES["row_ends"]] * CARD_SCALE).astype(np.int64)  # (B, 4) card values, 0 = no row
    lengths = obs[:, SLICES["row_lengths"]] * ROW_LIMIT
    bulls = obs[:, SLICES["row_bullheads"]] * BULLHEAD_ROW_SCALE
    cards = np.arange(1, NUM_CARDS + 1)
    below = (ends[:, None, :] < cards[None, :, None]) & (ends[:, None, :] > 0)  # (B, 104, 4)
    target = np.where(below, ends[:, None, :], -1).argmax(axis=2)  # (B, 104)
    low = ~below.any(axis=2)
    t_len = np.where(low, 0.0, np.take_along_axis(lengths, target, axis=1))
    t_bull = np.where(low, 0.0, np.take_along_axis(bulls, target, axis=1))
    t_end = np.where(low, 0, np.take_along_axis(ends, target, axis=1))
    full = (t_len >= ROW_LIMIT - 0.5) & ~low
    has_rows = (ends > 0).any(axis=1, keepdims=True)
    cost = np.where(full, t_bull, 0.0) + np.where(low & has_rows, bulls.min(axis=1, keepdims=True), 0.0)
    unseen = np.clip(1.0 - obs[:, SLICES["seen"]] - hand, 0.0, 1.0)
    counts = np.concatenate([np.zeros((batch, 1), np.float32), np.cumsum(unseen, axis=1)], axis=1)  # counts[k]: 1..k
    between = counts[:, :NUM_CARDS] - np.take_along_axis(counts, t_end, axis=1)  # unseen in (row end, c)
    feats = np.stack(
        [
            hand,
            low.astype(np.float32),
            full.astype(np.float32),
            t_len / ROW_LIMIT,
            t_bull / BULLHEAD_ROW_SCALE,
            between / 10.0,
            cost / 10.0,
            (cards[None, :] - t_end) / CARD_SCALE,
        ],
        axis=2,
    ).astype(np.float32)
    return np.concatenate([obs, feats.reshape(batch, -1)], axis=1)


class CardFeatures(BaseFeaturesExtractor):
    """SB3 features extractor: the observation (402) followed by 8 features for each card 1..104 (module docstring).

    Input ``float32 (batch, 402)``; output ``float32 (batch, 1234)``. No parameters of its own.
    """

    def __init__(self, observation_space: gymnasium.spaces.Box) -> None:
        if observation_space.shape != (OBS_SIZE,):
            raise ValueError(
                f"CardFeatures needs the flat ({OBS_SIZE},) observation, got shape {observation_space.shape}"
            )
        super().__init__(observation_space, FEATURES_SIZE)
        self.register_buffer("cards", torch.arange(1, NUM_CARDS + 1, dtype=torch.float32)[None], persistent=False)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        batch = obs.shape[0]
        cards: torch.Tensor = self.cards  # type: ignore[assignment]
        hand = obs[:, SLICES["hand"]]
        ends = torch.round(obs[:, SLICES["row_ends"]] * CARD_SCALE)  # card values, 0 = no row (draft)
        lengths = obs[:, SLICES["row_lengths"]] * ROW_LIMIT
        bulls = obs[:, SLICES["row_bullheads"]] * BULLHEAD_ROW_SCALE
        sorted_ends, order = torch.sort(ends, dim=1)
        below = torch.searchsorted(sorted_ends, cards.expand(batch, -1).contiguous())  # row ends < c (and no-rows)
        missing = (ends == 0).sum(dim=1, keepdim=True)
        low = below <= missing  # no real row end below c (R9)
        target = (below - 1).clamp(min=0)  # in sorted order: the largest end below c (R7)
        t_end = torch.gather(sorted_ends, 1, target) * ~low
        t_len = torch.gather(torch.gather(lengths, 1, order), 1, target) * ~low
        t_bull = torch.gather(torch.gather(bulls, 1, order), 1, target) * ~low
        full = t_len >= ROW_LIMIT - 0.5
        has_rows = missing < NUM_ROWS
        cost = t_bull * full + (low & has_rows) * bulls.min(dim=1, keepdim=True).values
        unseen = torch.clamp(1.0 - obs[:, SLICES["seen"]] - hand, 0.0, 1.0)
        counts = torch.nn.functional.pad(unseen.cumsum(dim=1), (1, 0))  # counts[:, k]: unseen among 1..k
        between = counts[:, :NUM_CARDS] - torch.gather(counts, 1, t_end.long())  # unseen cards in (row end, c)
        feats = torch.stack(
            [
                hand,
                low.to(obs.dtype),
                full.to(obs.dtype),
                t_len / ROW_LIMIT,
                t_bull / BULLHEAD_ROW_SCALE,
                between / 10.0,
                cost / 10.0,
                (cards - t_end) / CARD_SCALE,
            ],
            dim=2,
        )
        return torch.cat([obs, feats.reshape(batch, -1)], dim=1)


FEATURE_EXTRACTORS = {"card_features": CardFeatures}
"""Names allowed for ``algo.policy_kwargs.features_extractor_class`` in configs."""


# --------------------------------------------------------------------------- a policy that scores every card alike


class CardNetworks(torch.nn.Module):
    """The ``mlp_extractor`` of :class:`CardPolicy`.

    ``forward_actor`` returns ``[global latent (G), card features (104 x 8)]``; the
    card features pass through untouched so that :class:`CardHead` can score every
    card with the same weights. ``forward_critic`` is an MLP over all features.
    """

    def __init__(self, features_dim: int, net_arch: list[int], activation_fn: type[torch.nn.Module]) -> None:
        super().__init__()

        def mlp(sizes: list[int]) -> torch.nn.Sequential:
            layers: list[torch.nn.Module] = []
            last = features_dim
            for size in sizes:
                layers += [torch.nn.Linear(last, size), activation_fn()]
                last = size
            return torch.nn.Sequential(*layers)

        self.policy_net = mlp(net_arch)
        self.value_net = mlp(net_arch)
        self.global_dim = net_arch[-1] if net_arch else features_dim
        self.latent_dim_pi = self.global_dim + NUM_CARDS * len(CARD_FEATURES)
        self.latent_dim_vf = net_arch[-1] if net_arch else features_dim

    def forward_actor(self, features: torch.Tensor) -> torch.Tensor:
        return torch.cat([self.policy_net(features), features[:, OBS_SIZE:]], dim=1)

    def forward_critic(self, features: torch.Tensor) -> torch.Tensor:
        return self.value_net(features)

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.forward_actor(features), self.forward_critic(features)


class CardHead(torch.nn.Module):
    """Action logits ``(batch, 109)`` from :class:`CardNetworks`' actor latent.

    The logit of each card in the hand is a linear term of the global latent
    plus one small MLP, shared by all cards, over the card's 8 features, its
    value / 104 and the global latent (the first layer's global part is computed
    once per observation): what it learns about card 37 holds for card 73. Only
    the (at most 10) cards in hand go through the shared MLP; the others (draft
    picks from the display) and rows 104..107 and the no-op get the linear term.
    """

    def __init__(self, global_dim: int, hidden: int = 64) -> None:
        super().__init__()
        self.global_dim = global_dim
        self.card_in = torch.nn.Linear(len(CARD_FEATURES) + 1, hidden)
        self.global_in = torch.nn.Linear(global_dim, hidden, bias=False)
        self.card_out = torch.nn.Linear(hidden, 1)
        self.linear = torch.nn.Linear(global_dim, 109)
        self.register_buffer(
            "values", torch.arange(1, NUM_CARDS + 1, dtype=torch.float32) / CARD_SCALE, persistent=False
        )

    def forward(self, latent: torch.Tensor) -> torch.Tensor:
        batch = latent.shape[0]
        glob = latent[:, : self.global_dim]
        cards = latent[:, self.global_dim :].reshape(batch, NUM_CARDS, len(CARD_FEATURES))
        in_hand = cards[:, :, 0]
        held = torch.topk(in_hand, HAND_SIZE, dim=1).indices  # (B, 10) card indices, the held ones first
        valid = torch.gather(in_hand, 1, held)  # 1 for cards really in hand
        feats = torch.gather(cards, 1, held.unsqueeze(2).expand(batch, HAND_SIZE, len(CARD_FEATURES)))
        values: torch.Tensor = self.values  # type: ignore[assignment]
        feats = torch.cat([feats, values[held].unsqueeze(2)], dim=2)
        hidden = torch.relu(self.card_in(feats) + self.global_in(glob).unsqueeze(1))
        scores = self.card_out(hidden).squeeze(2) * valid
        logits = self.linear(glob)
        delta = torch.zeros_like(logits).scatter(1, held, scores)
        return logits + delta


class CardPolicy(MaskableActorCriticPolicy):
    """MaskablePPO policy over :class:`CardFeatures` whose card logits come from one network shared by all
    cards (:class:`CardHead`): what it learns about card 37 holds for card 73. ``net_arch`` (a list) sizes
    the global actor and the critic MLPs. Use it with ``algo.policy: card`` in a config."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs.setdefault("features_extractor_class", CardFeatures)
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    def _build_mlp_extractor(self) -> None:
        arch = self.net_arch if isinstance(self.net_arch, list) else list(self.net_arch.get("pi", []))
        self.mlp_extractor = CardNetworks(self.features_dim, arch, self.activation_fn).to(self.device)

    def _build(self, lr_schedule: object) -> None:
        self._build_mlp_extractor()
        self.action_net = CardHead(self.mlp_extractor.global_dim).to(self.device)
        self.value_net = torch.nn.Linear(self.mlp_extractor.latent_dim_vf, 1).to(self.device)
        if self.ortho_init:
            self.mlp_extractor.apply(partial(self.init_weights, gain=np.sqrt(2)))
            self.action_net.apply(partial(self.init_weights, gain=np.sqrt(2)))
            self.init_weights(self.action_net.card_out, gain=0.01)
            self.init_weights(self.action_net.linear, gain=0.01)
            self.value_net.apply(partial(self.init_weights, gain=1.0))
        self.optimizer = self.optimizer_class(self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs)  # type: ignore[operator]


POLICIES: dict[str, object] = {"MlpPolicy": "MlpPolicy", "card": CardPolicy}
"""Names allowed for ``algo.policy`` in configs: SB3's ``"MlpPolicy"`` (default) or :class:`CardPolicy`."""


class NumpyCardActor:
    """The actor of a :class:`CardPolicy` copied to numpy: logits ``float32 (batch, 109)`` for observations
    ``(batch, 402)``, equal to the torch policy's (to float rounding). Later changes to the policy are not seen.

    A single decision costs tens of microseconds instead of a torch call's overhead (self-play opponents).
    """

    def __init__(self, policy: CardPolicy) -> None:
        def arrays(linear: torch.nn.Linear) -> tuple[np.ndarray, np.ndarray | None]:
            weight = np.ascontiguousarray(linear.weight.detach().cpu().numpy().T.astype(np.float32))
            bias = None if linear.bias is None else linear.bias.detach().cpu().numpy().astype(np.float32)
            return weight, bias

        self.layers: list[tuple[np.ndarray, np.ndarray | None, bool]] = []
        for module in policy.mlp_extractor.policy_net:
            if isinstance(module, torch.nn.Linear):
                self.layers.append((*arrays(module), False))
            elif isinstance(module, torch.nn.Tanh | torch.nn.ReLU):
                weight, bias, _ = self.layers[-1]
                self.layers[-1] = (weight, bias, isinstance(module, torch.nn.Tanh))
            else:
                raise ValueError(f"NumpyCardActor supports Linear/Tanh/ReLU layers, got {module!r}")
        head = policy.action_net
        self.card_in, self.global_in, self.card_out, self.linear = (
            arrays(head.card_in),
            arrays(head.global_in)[0],
            arrays(head.card_out),
            arrays(head.linear),
        )

    def logits(self, obs: np.ndarray) -> np.ndarray:
        x = card_features_numpy(np.asarray(obs, np.float32).reshape(-1, OBS_SIZE))
        batch = x.shape[0]
        glob = x
        for weight, bias, tanh in self.layers:
            glob = glob @ weight + bias
            glob = np.tanh(glob) if tanh else np.maximum(glob, 0.0)
        cards = x[:, OBS_SIZE:].reshape(batch, NUM_CARDS, len(CARD_FEATURES))
        in_hand = cards[:, :, 0]
        held = np.argsort(-in_hand, axis=1, kind="stable")[:, :HAND_SIZE]  # the held cards first
        valid = np.take_along_axis(in_hand, held, axis=1)
        feats = np.take_along_axis(cards, held[:, :, None], axis=1)
        feats = np.concatenate([feats, ((held + 1) / CARD_SCALE).astype(np.float32)[:, :, None]], axis=2)
        hidden = np.maximum(feats @ self.card_in[0] + self.card_in[1] + (glob @ self.global_in)[:, None, :], 0.0)
        scores = (hidden @ self.card_out[0] + self.card_out[1])[:, :, 0] * valid
        logits = glob @ self.linear[0] + self.linear[1]
        rows = np.arange(batch)[:, None]
        logits[rows, held] += scores
        return logits.astype(np.float32)
