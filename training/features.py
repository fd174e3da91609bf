"""Card features for the policy: what each card would do on the current rows.

The observation (:mod:`sixnimmt_env.observation`) holds the hand, the rows and
the cards seen, but an MLP has to learn from scratch which row a card goes to
(`RULES.md` R7), whether it would take a full row (R8) or be a low card (R9).
The features below compute these from the observation itself (no hidden
information: only the pieces ``hand``, ``row_lengths``, ``row_ends``,
``row_bullheads`` and ``seen``; the raw observation, so not with
``train.normalize_obs``).

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

Two uses:

- :class:`CardPolicy` (``algo.policy: card``, the shipped configs): :class:`HandFeatures`
  gives the features of the (at most 10) held cards; one small network shared by all
  cards scores them (:class:`CardHead`) and the actor and critic MLPs read the
  observation and these hand features. :class:`NumpyCardActor` is its actor in numpy.
- :class:`CardFeatures` (``algo.policy_kwargs.features_extractor_class: card_features``
  with ``MlpPolicy``): the observation followed by the features of all 104 cards.

The torch computation is :func:`_card_features_torch` (R7 as a sorted search over the row ends, for
batches of tensors); the numpy paths use the numba kernels of :mod:`sixnimmt_env.card_features`
(torch-free, for the shipped ``champion`` agent), which take the target row from the rules kernel
(:func:`sixnimmt_env.batched.kernel.target_row`); the two are tested equal, and the numba features
against the reference engine on random positions.
"""

from __future__ import annotations

from functools import partial

import gymnasium
import numpy as np
import torch
from sb3_contrib.common.maskable.distributions import MaskableCategoricalDistribution
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor

from sixnimmt_env.card_features import CARD_FEATURES, HAND_FEATURES, card_features, hand_features
from sixnimmt_env.engine import HAND_SIZE, NUM_ACTIONS, NUM_CARDS, NUM_ROWS, ROW_LIMIT
from sixnimmt_env.observation import BULLHEAD_ROW_SCALE, CARD_SCALE, OBS_SIZE, SLICES

FEATURES_SIZE = OBS_SIZE + NUM_CARDS * len(CARD_FEATURES)
"""Width of :class:`CardFeatures`' output: the observation, then 104 x 8 card features (card-major)."""


_card_features_numpy = card_features
"""The numba card features (:func:`sixnimmt_env.card_features.card_features`), the numpy twin of the torch ones."""


def _card_features_torch(obs: torch.Tensor, cards: torch.Tensor) -> torch.Tensor:
    """``(batch, K, 8)``: :func:`_card_features_numpy` in torch; ``cards`` an int64 ``(batch, K)`` tensor."""
    hand = obs[:, SLICES["hand"]]
    ends = torch.round(obs[:, SLICES["row_ends"]] * CARD_SCALE)  # card values, 0 = no row (draft)
    lengths = obs[:, SLICES["row_lengths"]] * ROW_LIMIT
    bulls = obs[:, SLICES["row_bullheads"]] * BULLHEAD_ROW_SCALE
    values = (cards + 1).to(obs.dtype)
    sorted_ends, order = torch.sort(ends, dim=1)
    below = torch.searchsorted(sorted_ends, values)  # row ends < c (and the missing rows)
    missing = (ends == 0).sum(dim=1, keepdim=True)
    low = below <= missing  # no real row end below c (R9)
    high = ~low
    target = (below - 1).clamp(min=0)  # in sorted order: the largest end below c (R7)
    t_end = torch.gather(sorted_ends, 1, target) * high
    t_len = torch.gather(torch.gather(lengths, 1, order), 1, target) * high
    t_bull = torch.gather(torch.gather(bulls, 1, order), 1, target) * high
    full = t_len >= ROW_LIMIT - 0.5  # R8
    has_rows = missing < NUM_ROWS
    cost = t_bull * full + (low & has_rows) * bulls.min(dim=1, keepdim=True).values
    unseen = torch.clamp(1.0 - obs[:, SLICES["seen"]] - hand, 0.0, 1.0)
    counts = torch.nn.functional.pad(unseen.cumsum(dim=1), (1, 0))  # counts[:, k]: unseen among 1..k
    between = torch.gather(counts, 1, cards) - torch.gather(counts, 1, t_end.long())  # unseen cards in (end, c)
    feats = (
        torch.gather(hand, 1, cards),
        low.to(obs.dtype),
        full.to(obs.dtype),
        t_len / ROW_LIMIT,
        t_bull / BULLHEAD_ROW_SCALE,
        between / 10.0,
        cost / 10.0,
        (values - t_end) / CARD_SCALE,
    )
    return torch.stack(feats, dim=2)


_ALL_CARDS = np.arange(NUM_CARDS)[None]


def card_features_numpy(obs: np.ndarray) -> np.ndarray:
    """``float32 (batch, 1338)``: the observations ``(batch, 506)`` followed by their card features (card-major)."""
    obs = np.asarray(obs, np.float32)
    feats = _card_features_numpy(obs, np.repeat(_ALL_CARDS, len(obs), axis=0))
    return np.concatenate([obs, feats.reshape(len(obs), -1)], axis=1)


class CardFeatures(BaseFeaturesExtractor):
    """SB3 features extractor: the observation (506) followed by 8 features for each card 1..104 (module docstring).

    Input ``float32 (batch, 506)``; output ``float32 (batch, 1338)``. No parameters of its own.
    """

    def __init__(self, observation_space: gymnasium.spaces.Box) -> None:
        if observation_space.shape != (OBS_SIZE,):
            raise ValueError(
                f"CardFeatures needs the flat ({OBS_SIZE},) observation, got shape {observation_space.shape}"
            )
        super().__init__(observation_space, FEATURES_SIZE)
        self.register_buffer("cards", torch.arange(NUM_CARDS)[None], persistent=False)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        cards: torch.Tensor = self.cards  # type: ignore[assignment]
        feats = _card_features_torch(obs, cards.expand(obs.shape[0], -1))
        return torch.cat([obs, feats.reshape(obs.shape[0], -1)], dim=1)


FEATURE_EXTRACTORS = {"card_features": CardFeatures}
"""Names allowed for ``algo.policy_kwargs.features_extractor_class`` in configs."""


# --------------------------------------------------------------------------- a policy that scores every card alike

GLOBAL_SIZE = OBS_SIZE + HAND_SIZE * len(HAND_FEATURES)
"""Input width of the card policy's actor and critic MLPs: the observation and the held cards' features (596)."""
HAND_OUTPUT_SIZE = GLOBAL_SIZE + HAND_SIZE
"""Width of :class:`HandFeatures`' output (606)."""
CARD_HIDDEN = 32
"""Hidden units of :class:`CardHead`'s per-card MLP."""


class HandFeatures(BaseFeaturesExtractor):
    """Features extractor of :class:`CardPolicy`: the :data:`HAND_FEATURES` of the held cards only.

    Input ``float32 (batch, 506)``; output ``float32 (batch, 606)``: the observation, then the
    9 features of each of up to 10 held cards in ascending card order (zero rows after the last
    held card), then those cards' indices (card - 1, as floats; arbitrary for the zero rows).
    Ten cards instead of 104 keep the policy's update cheap. No parameters of its own.
    """

    def __init__(self, observation_space: gymnasium.spaces.Box) -> None:
        if observation_space.shape != (OBS_SIZE,):
            raise ValueError(
                f"HandFeatures needs the flat ({OBS_SIZE},) observation, got shape {observation_space.shape}"
            )
        super().__init__(observation_space, HAND_OUTPUT_SIZE)
        # held card i sorts by 104 - i: the top 10 are the held cards, lowest first
        self.register_buffer("rank", torch.arange(NUM_CARDS, 0, -1, dtype=torch.float32)[None], persistent=False)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        batch = obs.shape[0]
        rank: torch.Tensor = self.rank  # type: ignore[assignment]
        held = torch.topk(obs[:, SLICES["hand"]] * rank, HAND_SIZE, dim=1).indices
        feats = _card_features_torch(obs, held)
        value = (held + 1).to(obs.dtype).unsqueeze(2) / CARD_SCALE
        feats = torch.cat([feats, value], dim=2) * feats[:, :, :1]  # zero rows for cards not in hand
        return torch.cat([obs, feats.reshape(batch, -1), held.to(obs.dtype)], dim=1)


_held_numpy = hand_features
""":class:`HandFeatures` in numba (:func:`sixnimmt_env.card_features.hand_features`)."""


class CardNetworks(torch.nn.Module):
    """The ``mlp_extractor`` of :class:`CardPolicy`: actor and critic MLPs over the first 596 features.

    ``forward_actor`` returns ``[global latent (G), held card features (90), held indices (10)]``:
    the card part passes through untouched so that :class:`CardHead` scores every card with the
    same weights. ``forward_critic`` is the critic MLP's output.
    """

    def __init__(self, net_arch: list[int], activation_fn: type[torch.nn.Module]) -> None:
        super().__init__()

        def mlp(sizes: list[int]) -> torch.nn.Sequential:
            layers: list[torch.nn.Module] = []
            last = GLOBAL_SIZE
            for size in sizes:
                layers += [torch.nn.Linear(last, size), activation_fn()]
                last = size
            return torch.nn.Sequential(*layers)

        self.policy_net = mlp(net_arch)
        self.value_net = mlp(net_arch)
        self.global_dim = net_arch[-1] if net_arch else GLOBAL_SIZE
        self.latent_dim_pi = self.global_dim + HAND_OUTPUT_SIZE - OBS_SIZE
        self.latent_dim_vf = self.global_dim

    def forward_actor(self, features: torch.Tensor) -> torch.Tensor:
        return torch.cat([self.policy_net(features[:, :GLOBAL_SIZE]), features[:, OBS_SIZE:]], dim=1)

    def forward_critic(self, features: torch.Tensor) -> torch.Tensor:
        return self.value_net(features[:, :GLOBAL_SIZE])

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.forward_actor(features), self.forward_critic(features)


class CardHead(torch.nn.Module):
    """Action logits ``(batch, 109)`` from :class:`CardNetworks`' actor latent.

    The logit of each action is a linear term of the global latent; each held card adds the
    output of one small MLP (:data:`CARD_HIDDEN` units), shared by all cards, over the card's 9
    :data:`HAND_FEATURES` and the global latent (the first layer's global part is computed once
    per observation): what it learns about card 37 holds for card 73. Draft picks from the
    display, rows 104..107 and the no-op get the linear term only.
    """

    def __init__(self, global_dim: int, hidden: int = CARD_HIDDEN) -> None:
        super().__init__()
        self.global_dim = global_dim
        self.card_in = torch.nn.Linear(len(HAND_FEATURES), hidden)
        self.global_in = torch.nn.Linear(global_dim, hidden, bias=False)
        self.card_out = torch.nn.Linear(hidden, 1)
        self.linear = torch.nn.Linear(global_dim, NUM_ACTIONS)

    def forward(self, latent: torch.Tensor) -> torch.Tensor:
        batch, g = latent.shape[0], self.global_dim
        glob = latent[:, :g]
        # the card part is a function of the observation: no gradient flows into it
        cards = latent[:, g:].detach()
        feats = cards[:, : HAND_SIZE * len(HAND_FEATURES)].reshape(batch, HAND_SIZE, len(HAND_FEATURES))
        held = cards[:, HAND_SIZE * len(HAND_FEATURES) :].long()
        hidden = torch.relu(self.card_in(feats) + self.global_in(glob).unsqueeze(1))
        scores = self.card_out(hidden).squeeze(2) * feats[:, :, 0]  # 0 for the rows after the last held card
        return self.linear(glob).scatter_add(1, held, scores)


class MaskedCategorical(MaskableCategoricalDistribution):
    """sb3-contrib's masked categorical distribution over the 109 actions, computed once per batch.

    The same distribution as :class:`sb3_contrib.common.maskable.distributions.MaskableCategoricalDistribution`
    (illegal actions' logits set to -1e8), with one ``log_softmax`` instead of three normalisations and argument
    checks, and sampling by the inverse CDF (one uniform number per row). The card policy's rollouts and
    updates spend a quarter of their time in the distribution otherwise.
    """

    def proba_distribution(self, action_logits: torch.Tensor) -> MaskedCategorical:
        self.logits = action_logits.view(-1, self.action_dim)
        self.masks: torch.Tensor | None = None
        self._log_p: torch.Tensor | None = None
        return self

    def apply_masking(self, masks: np.ndarray | torch.Tensor | None) -> None:
        self.masks = None if masks is None else torch.as_tensor(masks, dtype=torch.bool).reshape(self.logits.shape)
        self._log_p = None

    @property
    def log_p(self) -> torch.Tensor:
        """``(batch, 109)`` log-probabilities; -1e8 - logsumexp for illegal actions (probability 0)."""
        if self._log_p is None:
            logits = self.logits if self.masks is None else self.logits.masked_fill(~self.masks, -1e8)
            self._log_p = torch.log_softmax(logits, dim=1)
        return self._log_p

    @property
    def distribution(self) -> torch.distributions.Categorical:  # type: ignore[override]
        """The masked distribution as a torch ``Categorical`` (as sb3-contrib's ``.distribution``), e.g. ``.probs``."""
        return torch.distributions.Categorical(logits=self.log_p, validate_args=False)

    def log_prob(self, actions: torch.Tensor) -> torch.Tensor:
        return self.log_p.gather(1, actions.long().view(-1, 1)).squeeze(1)

    def entropy(self) -> torch.Tensor:
        log_p = self.log_p
        return -(log_p.exp() * log_p).sum(dim=1)  # illegal actions: 0 * -1e8 = 0

    def sample(self) -> torch.Tensor:
        cdf = self.log_p.detach().exp().cumsum(dim=1)
        total = cdf[:, -1:].contiguous()
        drawn = torch.searchsorted(cdf, torch.rand(total.shape, dtype=cdf.dtype) * total, right=True)
        # the first index that reaches the total is the last action of positive probability (u * total may round up)
        return torch.minimum(drawn, torch.searchsorted(cdf, total)).squeeze(1)

    def mode(self) -> torch.Tensor:
        return self.log_p.argmax(dim=1)


class CardPolicy(MaskableActorCriticPolicy):
    """MaskablePPO policy over :class:`HandFeatures` whose card logits come from one network shared by all
    cards (:class:`CardHead`): what it learns about card 37 holds for card 73. ``net_arch`` (a list) sizes
    the actor and critic MLPs, each over the observation and the held cards' features (596 inputs).
    Use it with ``algo.policy: card`` in a config."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs.setdefault("features_extractor_class", HandFeatures)
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        if not isinstance(self.features_extractor, HandFeatures):
            raise ValueError(
                f"CardPolicy needs the HandFeatures extractor, got {type(self.features_extractor).__name__}"
            )

    def _build_mlp_extractor(self) -> None:
        arch = self.net_arch
        if isinstance(arch, dict) and arch.get("pi") == arch.get("vf"):  # SB3's default: dict(pi=[64, 64], vf=[64, 64])
            arch = list(arch["pi"] or [])
        if not isinstance(arch, list) or not all(isinstance(a, int) and a > 0 for a in arch):
            raise ValueError(
                f"CardPolicy: net_arch must be a list of layer sizes (it sizes the actor and the critic alike), "
                f"e.g. [64, 64]; got {arch!r}"
            )
        self.mlp_extractor = CardNetworks(arch, self.activation_fn).to(self.device)

    def _build(self, lr_schedule: object) -> None:
        self._build_mlp_extractor()
        self.action_dist = MaskedCategorical(NUM_ACTIONS)
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
    ``(batch, 506)``, equal to the torch policy's (to float rounding). Later changes to the policy are not seen.

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
        obs = np.asarray(obs, np.float32).reshape(-1, OBS_SIZE)
        batch = obs.shape[0]
        feats, held = _held_numpy(obs)
        glob = np.concatenate([obs, feats.reshape(batch, -1)], axis=1)
        for weight, bias, tanh in self.layers:
            glob = glob @ weight + bias
            glob = np.tanh(glob) if tanh else np.maximum(glob, 0.0)
        hidden = np.maximum(feats @ self.card_in[0] + self.card_in[1] + (glob @ self.global_in)[:, None, :], 0.0)
        scores = (hidden @ self.card_out[0] + self.card_out[1])[:, :, 0] * feats[:, :, 0]
        logits = glob @ self.linear[0] + self.linear[1]
        logits[np.arange(batch)[:, None], held] += scores  # held indices are distinct
        return logits.astype(np.float32)
