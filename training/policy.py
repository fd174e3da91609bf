"""The card policy: a MaskablePPO policy whose card logits come from one network shared by all cards.

:class:`CardPolicy` (``algo.policy: card``, the shipped configs) reads the held cards' features
(:class:`training.features.HandFeatures`); its actor and critic MLPs (:class:`CardNetworks`) read the
observation and these features, and one small network shared by all cards scores them
(:class:`CardHead`): what it learns about card 37 holds for card 73; with ``hand_attention_heads`` the held
cards first attend to each other (:class:`HandAttentionHead`). :class:`MaskedCategorical` is its
action distribution and :class:`NumpyCardActor` its actor copied to numpy (self-play opponents, the
``ppo:`` agents). The RLlib module (:mod:`training.rllib.module`) builds the same networks.
"""

from __future__ import annotations

import json
import zipfile
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import torch
from sb3_contrib.common.maskable.distributions import MaskableCategoricalDistribution
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3.common.type_aliases import Schedule

from sixnimmt_env.card_features import HAND_FEATURES
from sixnimmt_env.champion import CardActor, read_weights
from sixnimmt_env.observation import OBS_SIZE
from sixnimmt_env.rules.engine import HAND_SIZE, NUM_ACTIONS
from training.config import schema
from training.config.schema import AlgoSection
from training.features import FEATURE_EXTRACTORS, GLOBAL_SIZE, HAND_OUTPUT_SIZE, HandFeatures

CARD_HIDDEN = schema.CARD_HIDDEN
"""Hidden units of :class:`CardHead`'s per-card MLP (32)."""
ACTIVATION_CLASSES: dict[str, type[torch.nn.Module]] = {
    "tanh": torch.nn.Tanh,
    "relu": torch.nn.ReLU,
    "elu": torch.nn.ELU,
    "leaky_relu": torch.nn.LeakyReLU,
}
"""The torch class of each name of :data:`training.config.schema.ACTIVATIONS` (``algo.policy_kwargs.activation_fn``)."""


class ResidualLayer(torch.nn.Module):
    """A hidden layer that adds its input: ``x + activation(linear(x))``, ``linear`` mapping ``n`` units to ``n``
    (``algo.policy_kwargs.residual``; :func:`mlp`)."""

    def __init__(self, linear: torch.nn.Linear, activation: torch.nn.Module) -> None:
        super().__init__()
        if linear.in_features != linear.out_features:
            raise ValueError(f"a residual layer maps n units to n, got {linear.in_features} to {linear.out_features}")
        self.linear = linear
        self.activation = activation

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.activation(self.linear(x))


def mlp(
    in_size: int, sizes: list[int], activation_fn: type[torch.nn.Module], residual: bool = False
) -> torch.nn.Sequential:
    """The MLP both backends build (SB3's ``net_arch`` layout): ``Linear(in_size, sizes[0])``, an
    ``activation_fn()``, ``Linear(sizes[0], sizes[1])``, ... each layer followed by the activation; empty (the
    identity) for ``sizes == []``. The output has ``sizes[-1]`` units (``in_size`` when empty).

    With ``residual``, every layer after the first that is as wide as the layer before adds its input
    (:class:`ResidualLayer`: ``[512, 512]`` is ``h1 = act(W1 x + b1)``, ``h2 = h1 + act(W2 h1 + b2)``)."""
    layers: list[torch.nn.Module] = []
    last = in_size
    for i, size in enumerate(sizes):
        linear = torch.nn.Linear(last, size)
        if residual and i > 0 and size == last:
            layers.append(ResidualLayer(linear, activation_fn()))
        else:
            layers += [linear, activation_fn()]
        last = size
    return torch.nn.Sequential(*layers)


def hidden_layers(net: torch.nn.Sequential) -> list[tuple[torch.nn.Linear, torch.nn.Module, bool]]:
    """The layers of an :func:`mlp`, first to last, as ``(linear, activation, residual)``.

    Raises:
        ValueError: a module that is not a layer of :func:`mlp` (a linear layer and its activation, or a
            :class:`ResidualLayer`).
    """
    modules = list(net)
    out: list[tuple[torch.nn.Linear, torch.nn.Module, bool]] = []
    i = 0
    while i < len(modules):
        module = modules[i]
        if isinstance(module, ResidualLayer):
            out.append((module.linear, module.activation, True))
            i += 1
        elif isinstance(module, torch.nn.Linear) and i + 1 < len(modules):
            out.append((module, modules[i + 1], False))
            i += 2
        else:
            raise ValueError(f"not a layer of an mlp: {module!r}")
    return out


class CardNetworks(torch.nn.Module):
    """The ``mlp_extractor`` of :class:`CardPolicy`: actor and critic MLPs over the first 626 features.

    ``forward_actor`` returns ``[global latent (G), held card features (120), held indices (10)]``:
    the card part passes through untouched so that :class:`CardHead` scores every card with the
    same weights. ``forward_critic`` is the critic MLP's output. ``residual``: the MLPs' layers as wide as the layer
    before add their input (:func:`mlp`).
    """

    def __init__(self, net_arch: list[int], activation_fn: type[torch.nn.Module], residual: bool = False) -> None:
        super().__init__()
        self.policy_net = mlp(GLOBAL_SIZE, net_arch, activation_fn, residual)
        self.value_net = mlp(GLOBAL_SIZE, net_arch, activation_fn, residual)
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
    output of one small MLP (:data:`CARD_HIDDEN` units), shared by all cards, over the card's 12
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
        hidden = self.card_hidden(hidden, feats[:, :, 0] > 0)
        scores = self.card_out(hidden).squeeze(2) * feats[:, :, 0]  # 0 for the rows after the last held card
        return self.linear(glob).scatter_add(1, held, scores)

    def card_hidden(self, hidden: torch.Tensor, held: torch.Tensor) -> torch.Tensor:
        """The held cards' hidden vectors ``(batch, 10, H)`` as ``card_out`` scores them (``held``: ``bool (batch,
        10)``, false for the rows after the last held card): unchanged here; :class:`HandAttentionHead` mixes them."""
        return hidden


class HandAttentionHead(CardHead):
    """:class:`CardHead` whose held cards see each other: self-attention among their hidden vectors.

    Each held card's hidden vector ``h`` (``CARD_HIDDEN`` units, as in :class:`CardHead`) becomes ``h +
    attention(h, h of the held cards)`` before ``card_out`` scores it (multi-head self-attention, ``heads``
    heads, the rows after the last held card masked out as keys). The attention's output projection starts at
    zero, so a fresh head (and one loaded from plain card-policy weights, :func:`load_actor`) gives exactly the
    logits of the :class:`CardHead` it extends; training grows the interaction from there. Ten tokens per
    decision keep it cheap enough for PPO on a CPU (``algo.policy_kwargs.hand_attention_heads``).

    Raises:
        ValueError: ``heads`` < 1 or not a divisor of ``hidden``.
    """

    def __init__(self, global_dim: int, hidden: int = CARD_HIDDEN, heads: int = 2) -> None:
        if heads < 1 or hidden % heads:
            raise ValueError(f"hand_attention_heads must be >= 1 and divide {hidden}, got {heads}")
        super().__init__(global_dim, hidden)
        self.heads = heads
        self.attention = torch.nn.MultiheadAttention(hidden, heads, batch_first=True)
        self.zero_attention()

    def zero_attention(self) -> None:
        """Zero the attention's output projection: the head's logits become :class:`CardHead`'s."""
        with torch.no_grad():
            self.attention.out_proj.weight.zero_()
            self.attention.out_proj.bias.zero_()

    def card_hidden(self, hidden: torch.Tensor, held: torch.Tensor) -> torch.Tensor:
        padding = ~held
        padding[:, 0] = False  # an empty hand (no decision to score) still leaves one key
        mixed, _ = self.attention(hidden, hidden, hidden, key_padding_mask=padding, need_weights=False)
        return hidden + mixed


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
    def probs(self) -> torch.Tensor:
        """``(batch, 109)`` probabilities, exactly 0 for illegal actions. The exponential is taken of the
        log-probabilities clamped at -87 (float32's smallest normal number is e^-87.3) and multiplied by the mask:
        ``exp`` of -1e8 takes the CPU's slow underflow path, ten times the cost of the rest of the batch, and a
        legal action below e^-87 has no probability a float32 can hold anyway."""
        p = self.log_p.clamp(min=-87.0).exp()
        return p if self.masks is None else p * self.masks

    @property
    def distribution(self) -> torch.distributions.Categorical:  # type: ignore[override]
        """The masked distribution as a torch ``Categorical`` (as sb3-contrib's ``.distribution``), e.g. ``.probs``."""
        return torch.distributions.Categorical(logits=self.log_p, validate_args=False)

    def log_prob(self, actions: torch.Tensor) -> torch.Tensor:
        return self.log_p.gather(1, actions.long().view(-1, 1)).squeeze(1)

    def entropy(self) -> torch.Tensor:
        return -(self.probs * self.log_p).sum(dim=1)  # illegal actions: 0 * -1e8 = 0

    def sample(self) -> torch.Tensor:
        cdf = self.probs.detach().cumsum(dim=1)
        total = cdf[:, -1:].contiguous()
        drawn = torch.searchsorted(cdf, torch.rand(total.shape, dtype=cdf.dtype) * total, right=True)
        # the first index that reaches the total is the last action of positive probability (u * total may round up)
        return torch.minimum(drawn, torch.searchsorted(cdf, total)).squeeze(1)

    def mode(self) -> torch.Tensor:
        return self.log_p.argmax(dim=1)


class CardPolicy(MaskableActorCriticPolicy):
    """MaskablePPO policy over :class:`HandFeatures` whose card logits come from one network shared by all
    cards (:class:`CardHead`): what it learns about card 37 holds for card 73. ``net_arch`` (a list) sizes
    the actor and critic MLPs, each over the observation and the held cards' features (626 inputs).
    ``hand_attention_heads`` > 0 lets the held cards attend to each other before they are scored
    (:class:`HandAttentionHead`; ``algo.policy_kwargs.hand_attention_heads``). ``residual``: each hidden layer after
    the first that is as wide as the layer before adds its input, ``h + act(W h + b)`` (:class:`ResidualLayer`;
    ``algo.policy_kwargs.residual``, e.g. ``net_arch: [512, 512]``). Use it with ``algo.policy: card`` in a config.

    Raises:
        ValueError: ``hand_attention_heads`` not an integer >= 0 (or not a divisor of :data:`CARD_HIDDEN`), a
            ``residual`` that is not a bool, or a ``net_arch`` that is not a list of layer sizes.
    """

    # SB3 declares ``mlp_extractor`` as its own MlpExtractor, but takes any module with its ``latent_dim_pi/vf`` and
    # ``forward_actor/critic`` (SB3's documented way to a custom network: override ``_build_mlp_extractor``)
    mlp_extractor: CardNetworks  # type: ignore[assignment]
    action_net: CardHead  # a HandAttentionHead with hand_attention_heads > 0

    def __init__(self, *args: object, hand_attention_heads: int = 0, residual: bool = False, **kwargs: object) -> None:
        if not isinstance(hand_attention_heads, int) or hand_attention_heads < 0:
            raise ValueError(f"CardPolicy: hand_attention_heads must be an integer >= 0, got {hand_attention_heads!r}")
        if not isinstance(residual, bool):
            raise ValueError(f"CardPolicy: residual must be true or false, got {residual!r}")
        self.hand_attention_heads = hand_attention_heads
        self.residual = residual
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
        self.mlp_extractor = CardNetworks(arch, self.activation_fn, self.residual).to(self.device)

    def _build(self, lr_schedule: Schedule) -> None:
        self._build_mlp_extractor()
        self.action_dist = MaskedCategorical(NUM_ACTIONS)
        global_dim = self.mlp_extractor.global_dim
        heads = self.hand_attention_heads
        head = HandAttentionHead(global_dim, heads=heads) if heads else CardHead(global_dim)
        self.action_net = head.to(self.device)
        self.value_net = torch.nn.Linear(self.mlp_extractor.latent_dim_vf, 1).to(self.device)
        if self.ortho_init:
            self.mlp_extractor.apply(partial(self.init_weights, gain=np.sqrt(2)))
            self.action_net.apply(partial(self.init_weights, gain=np.sqrt(2)))
            self.init_weights(self.action_net.card_out, gain=0.01)
            self.init_weights(self.action_net.linear, gain=0.01)
            if isinstance(self.action_net, HandAttentionHead):
                self.action_net.zero_attention()
            self.value_net.apply(partial(self.init_weights, gain=1.0))
        # SB3 types optimizer_class as torch's base Optimizer(params, defaults): its subclasses (Adam) take lr, as
        # in SB3's own _build
        self.optimizer = self.optimizer_class(self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs)  # type: ignore[call-arg]

    def _get_constructor_parameters(self) -> dict[str, Any]:
        data = super()._get_constructor_parameters()
        data["hand_attention_heads"] = self.hand_attention_heads  # rebuilt by MaskablePPO.load
        if self.residual:  # (a checkpoint of a plain card policy keeps the parameters it always had)
            data["residual"] = self.residual
        return data


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
        self.residual: list[bool] = []
        for linear, activation, residual in hidden_layers(policy.mlp_extractor.policy_net):
            if not isinstance(activation, torch.nn.Tanh | torch.nn.ReLU):
                raise ValueError(f"NumpyCardActor supports Linear/Tanh/ReLU layers, got {activation!r}")
            self.layers.append((*arrays(linear), isinstance(activation, torch.nn.Tanh)))
            self.residual.append(residual)
        head = policy.action_net
        self.card_in, self.global_in, self.card_out, self.linear = (
            arrays(head.card_in),
            arrays(head.global_in)[0],
            arrays(head.card_out),
            arrays(head.linear),
        )

        self.attention: dict[str, np.ndarray] = {}
        if isinstance(head, HandAttentionHead):
            attention = head.attention
            self.attention = {
                "attention_in_w": np.ascontiguousarray(attention.in_proj_weight.detach().cpu().numpy().T, np.float32),
                "attention_in_b": attention.in_proj_bias.detach().cpu().numpy().astype(np.float32),
                "attention_out_w": arrays(attention.out_proj)[0],
                "attention_out_b": arrays(attention.out_proj)[1],  # type: ignore[dict-item]
                "attention_heads": np.array(head.heads, np.int64),
            }
        self._actor = CardActor(self.arrays())

    def arrays(self) -> dict[str, np.ndarray]:
        """The weights as the arrays of :class:`sixnimmt_env.champion.CardActor` (the shipped weights' layout; the
        ``attention_*`` arrays for a :class:`HandAttentionHead`, ``hidden_residual`` for residual layers)."""
        out: dict[str, np.ndarray] = dict(self.attention)
        for i, (weight, bias, _) in enumerate(self.layers):
            out[f"hidden_w{i}"], out[f"hidden_b{i}"] = weight, bias  # type: ignore[assignment]
        out["hidden_tanh"] = np.array([tanh for _, _, tanh in self.layers], bool)
        if any(self.residual):
            out["hidden_residual"] = np.array(self.residual, bool)
        out["card_in_w"], out["card_in_b"] = self.card_in  # type: ignore[assignment]
        out["global_in_w"] = self.global_in
        out["card_out_w"], out["card_out_b"] = self.card_out  # type: ignore[assignment]
        out["linear_w"], out["linear_b"] = self.linear  # type: ignore[assignment]
        return out

    def logits(self, obs: np.ndarray) -> np.ndarray:
        """Logits ``float32 (batch, 109)``: the forward pass of :class:`sixnimmt_env.champion.CardActor`."""
        return self._actor.logits(obs)


def load_actor(policy: CardPolicy, path: str | Path) -> None:
    """Copy the actor of the weights file ``path`` (``.npz``, the arrays of :class:`sixnimmt_env.champion.CardActor`,
    as the repository's ``lab/train_champion.py`` exports them) into a card policy, in place.

    The inverse of :meth:`NumpyCardActor.arrays`: afterwards the policy's logits are the file's (``read_weights``, whose
    first layer is widened for the inputs added since the file was written). The critic's MLP starts as a copy of the
    actor's hidden layers (its value head keeps its initial weights), so PPO fine-tuning starts from
    features that already mean something (``train.init_from`` with a ``.npz``).

    The policy's hidden layers may be wider than the file's (same count and activations, each at least as
    wide): the file's units are the first of each layer, the extra units keep their initial incoming weights and
    get zero outgoing weights, so the logits are still exactly the file's and PPO can grow into the extra units.

    Raises:
        ValueError: not a card policy, a file that does not read, or hidden layers that are not the policy's
            ``net_arch``, ``activation_fn`` and ``residual`` (another count, another activation, a narrower layer, or
            residual layers elsewhere).
    """
    if not isinstance(policy, CardPolicy):
        raise ValueError(f"champion weights load into a card policy (algo.policy: card), got {type(policy).__name__}")
    actor, _ = read_weights(path)
    layers = hidden_layers(policy.mlp_extractor.policy_net)
    linears = [linear for linear, _, _ in layers]
    names = {torch.nn.Tanh: "tanh", torch.nn.ReLU: "relu"}
    theirs = actor.hidden_layers()
    ours = [(m.out_features, names.get(type(a), type(a).__name__)) for m, a, _ in layers]
    if not actor.fits(ours):
        raise ValueError(
            f"{path}: hidden layers (size, activation) {theirs} do not fit the policy's {ours} (same count and "
            "activations, each layer at least as wide); set algo.policy_kwargs net_arch and activation_fn to match"
        )
    if actor.residual != [residual for _, _, residual in layers]:
        raise ValueError(
            f"{path}: residual hidden layers {actor.residual} differ from the policy's "
            f"{[residual for _, _, residual in layers]}; set algo.policy_kwargs.residual to match"
        )

    def put(linear: torch.nn.Linear, weight: np.ndarray, bias: np.ndarray | None = None) -> None:
        # the file's (in, out) block goes top-left; an extra output unit keeps its incoming weights, an extra
        # input unit (a widened layer below) gets zero weights into the file's units
        w = torch.as_tensor(weight.T)
        with torch.no_grad():
            linear.weight[: w.shape[0], : w.shape[1]] = w
            linear.weight[: w.shape[0], w.shape[1] :] = 0.0
            if bias is not None:
                linear.bias[: len(bias)] = torch.as_tensor(bias)

    critic_linears = [linear for linear, _, _ in hidden_layers(policy.mlp_extractor.value_net)]
    for i, (weight, bias, _) in enumerate(actor.layers):
        put(linears[i], weight, bias)
        put(critic_linears[i], weight, bias)
    head = policy.action_net
    put(head.card_in, actor.card_in_w, actor.card_in_b)
    put(head.global_in, actor.global_in_w)
    put(head.card_out, actor.card_out_w, actor.card_out_b)
    put(head.linear, actor.linear_w, actor.linear_b)
    if isinstance(head, HandAttentionHead):
        if actor.attention is None:
            head.zero_attention()  # the held cards' attention starts silent: the logits are the file's
        else:
            in_w, in_b, out_w, out_b, heads = actor.attention
            if heads != head.heads or in_w.shape[0] != head.card_out.in_features:
                raise ValueError(
                    f"{path}: attention with {heads} heads over {in_w.shape[0]} units does not fit the policy's "
                    f"{head.heads} heads over {head.card_out.in_features} (algo.policy_kwargs.hand_attention_heads)"
                )
            with torch.no_grad():
                head.attention.in_proj_weight.copy_(torch.as_tensor(in_w.T))
                head.attention.in_proj_bias.copy_(torch.as_tensor(in_b))
            put(head.attention.out_proj, out_w, out_b)
    elif actor.attention is not None:
        raise ValueError(
            f"{path}: the weights' held cards attend to each other; set algo.policy_kwargs.hand_attention_heads "
            f"to {actor.attention[4]} to load them"
        )


def algo_kwargs(algo: AlgoSection) -> dict[str, Any]:
    """The MaskablePPO keyword arguments the ``algo`` section sets (MaskablePPO's defaults, which the section's
    repeat, for the rest), with ``policy`` and ``policy_kwargs.activation_fn`` /
    ``policy_kwargs.features_extractor_class`` named by strings turned into their classes."""
    kwargs = algo.given_items()
    kwargs["policy"] = POLICIES[algo.policy]
    pk = dict(kwargs.get("policy_kwargs") or {})
    if isinstance(pk.get("activation_fn"), str):
        pk["activation_fn"] = ACTIVATION_CLASSES[pk["activation_fn"]]
    if isinstance(pk.get("features_extractor_class"), str):
        pk["features_extractor_class"] = FEATURE_EXTRACTORS[pk["features_extractor_class"]]
    if pk:
        kwargs["policy_kwargs"] = pk
    return kwargs


def custom_objects(path: str | Path) -> dict[str, Any]:
    """The ``custom_objects`` for ``MaskablePPO.load(path, ...)``: ``{"policy_class": CardPolicy}`` for a checkpoint
    whose pickled policy class is the card policy under its former module ``training.features`` (that reference no
    longer resolves), else ``{}`` (the checkpoint's own class loads).

    Raises:
        OSError, zipfile.BadZipFile, KeyError, ValueError: ``path`` is not a readable SB3 checkpoint.
    """
    with zipfile.ZipFile(path) as archive:
        stored = json.loads(archive.read("data")).get("policy_class")
    if isinstance(stored, dict) and stored.get("__module__") == "training.features":
        return {"policy_class": CardPolicy}
    return {}
