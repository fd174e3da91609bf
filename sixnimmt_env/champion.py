"""The shipped ``champion`` agent: a trained card policy played in numpy and numba (no torch, no SB3).

The weights (``champion.npz`` beside this module, package data) are the actor of a
:class:`training.policy.CardPolicy` trained with MaskablePPO in eight stages, each a config of the repository's
``lab/configs/`` (``champion.yaml`` to ``champion_features_league_2.yaml``), listed in order by
``lab/configs/recipes/champion.yaml``; ``python -m lab.recipe lab/configs/recipes/champion.yaml --all --force``
(``make champion``) reproduces and exports them from a checkout (``docs/champion.md``: budget, strength tables).
The agent is deterministic: it plays the legal action of the highest logit (``champion-sample`` draws from the
policy instead).

=====================  ==============================================================
spec                   agent
=====================  ==============================================================
``champion``           the shipped weights of the table: stage 8 at 4 players, the
                       2-player weights at 2, the weights trained on tables of 2-6, 8
                       and 10 players (:data:`TABLES_WEIGHTS`) at the others
                       (:data:`BY_TABLE`)
``champion:NAME``      the same network with shipped weights, by name, at every table size
                       (:data:`BASELINES`: ``default-ppo``, ``stage-8``, ``tables``, ``2p``)
``champion:PATH``      the same network with the weights of another ``.npz`` (the arrays of
                       :class:`CardActor`: a past stage's in the repository's ``lab/weights/``,
                       or new weights to try before shipping them)
``champion-sample``    any of the above (``champion-sample:NAME``, ``champion-sample:PATH``)
                       drawing each action from the masked softmax of the logits, the
                       stochastic policy PPO trained, with the caller's ``rng``
=====================  ==============================================================

``make_agent("champion")`` finds the spec through the ``sixnimmt.agents`` entry point
(``pyproject.toml``); importing this module registers it too.

Every phase and variant: the network reads the 506-float observation
(:mod:`sixnimmt_env.observation`), whose size does not depend on the table, and the
illegal actions are masked out, so it plays a legal action in the ``select``,
``choose_row`` and ``draft`` phases of every variant (``standard``, ``tactics``, ``logic``)
and table size (2..10 players), single rounds and whole games. The observation holds the
number of players (``num_players``, players / 10), and ``champion`` plays each position with
the weights of its table size (:meth:`ChampionAgent.actor_for`): stage 8, trained on 4-player
tables, at 4 players; at 2 players the same continued at 2 players (``lab/configs/champion_2p.yaml``);
at 3 and 5 to 10 players the weights fine-tuned on tables of 2, 3, 4, 5, 6, 8 and 10 players
at once (``lab/configs/champion_tables*.yaml``). All were trained on standard single rounds with
the player's row choice (R9b ``"player"``); docs/champion.md gives their strength at each
table.
In the logic draft (V2) the card scores do not apply (display cards are not held) and only
the network's linear term ranks the display.
Stage 1's weights (the repository's ``lab/weights/champion_v1.npz``) predate the observation's last piece,
``drafted_by`` (0 outside the logic variant): :func:`read_weights` gives them zero weights for it, so they read it
but ignore it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from numba import njit

from sixnimmt_env.agents import register_agent
from sixnimmt_env.card_features import BASE_HAND_FEATURES, HAND_FEATURES, hand_features
from sixnimmt_env.observation import OBS_SIZE, SLICES, observation_from_view
from sixnimmt_env.rules.engine import HAND_SIZE, NOOP, NUM_ACTIONS

__all__ = [
    "BASELINES",
    "BY_TABLE",
    "TABLES_WEIGHTS",
    "WEIGHTS",
    "CardActor",
    "ChampionAgent",
    "load_champion",
    "observation_from_view",
    "pick_masked",
    "sample_masked",
]

WEIGHTS = Path(__file__).with_name("champion.npz")
"""Stage 8's weights, package data. ``champion`` plays them at 4 players, ``champion:stage-8`` at every size."""

_KEPT = Path(__file__).with_name("weights")
BASELINES: dict[str, Path] = {
    "default-ppo": _KEPT / "default_ppo_4p.npz",
    "stage-8": WEIGHTS,
    "tables": _KEPT / "champion_tables.npz",
    "2p": _KEPT / "champion_2p.npz",
}
"""The weights shipped as package data (this module's ``champion.npz`` and ``weights/``), by the name
``champion:NAME`` and a training config's ``train.init_from`` accept: ``default-ppo``, the policy of
``configs/baseline_ppo_4p.yaml`` (PPO from scratch, the bar docs/champion.md measures against); ``stage-8``, the
shipped ``champion`` at 4 players (:data:`WEIGHTS`); ``tables``, the shipped ``champion`` at 3 and 5 to 10 players
(stage 8 fine-tuned on tables of 2, 3, 4, 5, 6, 8 and 10 players); ``2p``, the shipped ``champion`` at 2 players
(``tables`` continued at 2 players). The weights of the champion's earlier stages, its exploiter and its
whole-game variant are not shipped: they are in the repository's ``lab/weights/``, played as ``champion:PATH``."""

TABLES_WEIGHTS = BASELINES["tables"]
"""The weights fine-tuned on tables of 2, 3, 4, 5, 6, 8 and 10 players (package data), which ``champion`` plays at 3 and
5 to 10 players (:data:`BY_TABLE`; 7 and 9 players too, sizes it was not trained on: docs/champion.md)."""

BY_TABLE: dict[int, Path] = {2: BASELINES["2p"], **{n: TABLES_WEIGHTS for n in range(3, 11) if n != 4}}
"""The weights ``champion`` plays at each table size (players) instead of :data:`WEIGHTS`: the 2-player weights
(``champion:2p``) at 2, :data:`TABLES_WEIGHTS` at 3 and 5 to 10; at 4 players stage 8 (:data:`WEIGHTS`) is the
stronger (docs/champion.md)."""

FORMAT = "sixnimmt-card-actor-1"
"""The ``format`` entry of a weights file of the card policy without attention."""
FORMAT_ATTENTION = "sixnimmt-card-actor-2"
"""The ``format`` entry of a weights file whose held cards attend to each other (``attention_*`` arrays); a
reader of :data:`FORMAT` alone refuses it instead of playing it without the attention."""
FORMAT_RESIDUAL = "sixnimmt-card-actor-3"
"""The ``format`` entry of a weights file with residual hidden layers (``hidden_residual``, with or without the
attention arrays); a reader of the two formats before refuses it instead of playing it without the additions."""
ATTENTION_ARRAYS = ("attention_in_w", "attention_in_b", "attention_out_w", "attention_out_b", "attention_heads")
"""The arrays of the held cards' self-attention (:class:`CardActor`); all or none of them are in a weights file."""

_GLOBAL_SIZE = OBS_SIZE + HAND_SIZE * len(HAND_FEATURES)  # 626: the actor MLP's input
_DRAFTED_BY = SLICES["drafted_by"]
_NUM_PLAYERS = SLICES["num_players"].start
_BASE_SIZE = OBS_SIZE + HAND_SIZE * BASE_HAND_FEATURES
"""Input width of weights trained before the held cards had ``own_below``, ``own_above`` and ``take_risk`` (596)."""
_NARROW_SIZE = _BASE_SIZE - (_DRAFTED_BY.stop - _DRAFTED_BY.start)
"""Input width of weights trained before the observation had its last piece, ``drafted_by`` (402 + 90)."""


class CardActor:
    """The card policy's actor in numpy: action logits ``float32 (batch, 109)`` for observations ``(batch, 506)``.

    The network (``training.policy.CardPolicy``): an MLP over the observation and the held
    cards' :data:`~sixnimmt_env.card_features.HAND_FEATURES` (626 inputs; a residual layer adds its input,
    ``h + act(h @ w + b)``) gives a global latent ``g``; the logits are ``g @ linear_w + linear_b``, and each held
    card adds
    ``h @ card_out_w + card_out_b`` with ``h = relu(card_features @ card_in_w + card_in_b + g @ global_in_w)``.
    With the optional attention arrays (``training.policy.HandAttentionHead``), ``h`` becomes ``h + attention(h)``
    first: multi-head self-attention among the held cards' ``h`` (the rows after the last held card masked out).

    Args:
        arrays: the weights: ``hidden_w{i}`` ``(in, out)``, ``hidden_b{i}`` ``(out,)`` and
            ``hidden_tanh`` (one 0/1 per layer: tanh, else ReLU) for the MLP, optionally ``hidden_residual`` (one
            0/1 per layer: the layer adds its input; ``(n, n)`` weights, never the first layer); ``card_in_w``
            ``(12, H)``,
            ``card_in_b`` ``(H,)``, ``global_in_w`` ``(G, H)``, ``card_out_w`` ``(H, 1)``,
            ``card_out_b`` ``(1,)``, ``linear_w`` ``(G, 109)``, ``linear_b`` ``(109,)``; optionally all of
            :data:`ATTENTION_ARRAYS`: ``attention_in_w`` ``(H, 3H)`` (query, key, value projections),
            ``attention_in_b`` ``(3H,)``, ``attention_out_w`` ``(H, H)``, ``attention_out_b`` ``(H,)`` and
            ``attention_heads`` (an integer dividing H).

    Raises:
        ValueError: a missing array or shapes that do not chain (the message names the array).
    """

    def __init__(self, arrays: Mapping[str, np.ndarray]) -> None:
        def get(name: str) -> np.ndarray:
            if name not in arrays:
                raise ValueError(f"champion weights: missing array {name!r}; have {sorted(arrays)}")
            return np.ascontiguousarray(arrays[name], np.float32)

        tanh = np.asarray(arrays.get("hidden_tanh", []), bool).reshape(-1)
        residual = np.asarray(arrays.get("hidden_residual", np.zeros(len(tanh))), bool).reshape(-1)
        if len(residual) != len(tanh):
            raise ValueError(f"champion weights: hidden_residual has {len(residual)} entries, expected {len(tanh)}")
        self.layers: list[tuple[np.ndarray, np.ndarray, bool]] = []
        self.residual: list[bool] = [bool(r) for r in residual]
        width = _GLOBAL_SIZE
        for i, is_tanh in enumerate(tanh):
            weight, bias = get(f"hidden_w{i}"), get(f"hidden_b{i}")
            if weight.shape != (width, len(bias)):
                expected_shape = (width, len(bias))
                raise ValueError(f"champion weights: hidden_w{i} has shape {weight.shape}, expected {expected_shape}")
            if residual[i] and (i == 0 or width != len(bias)):
                raise ValueError(f"champion weights: hidden layer {i} of shape {weight.shape} cannot be residual")
            self.layers.append((weight, bias, bool(is_tanh)))
            width = len(bias)
        self.card_in_w, self.card_in_b = get("card_in_w"), get("card_in_b")
        self.global_in_w, self.card_out_w, self.card_out_b = get("global_in_w"), get("card_out_w"), get("card_out_b")
        self.linear_w, self.linear_b = get("linear_w"), get("linear_b")
        hidden = len(self.card_in_b)
        expected = {
            "card_in_w": (len(HAND_FEATURES), hidden),
            "global_in_w": (width, hidden),
            "card_out_w": (hidden, 1),
            "card_out_b": (1,),
            "linear_w": (width, NUM_ACTIONS),
            "linear_b": (NUM_ACTIONS,),
        }
        for name, shape in expected.items():
            if getattr(self, name).shape != shape:
                raise ValueError(f"champion weights: {name} has shape {getattr(self, name).shape}, expected {shape}")
        given = [name for name in ATTENTION_ARRAYS if name in arrays]
        self.attention: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int] | None = None
        if given:
            if len(given) != len(ATTENTION_ARRAYS):
                missing = sorted(set(ATTENTION_ARRAYS) - set(given))
                raise ValueError(f"champion weights: attention arrays {missing} missing (all or none of them)")
            heads = int(np.asarray(arrays["attention_heads"]).reshape(()))
            if heads < 1 or hidden % heads:
                raise ValueError(f"champion weights: attention_heads must divide {hidden}, got {heads}")
            shapes = {"attention_in_w": (hidden, 3 * hidden), "attention_in_b": (3 * hidden,)}
            shapes |= {"attention_out_w": (hidden, hidden), "attention_out_b": (hidden,)}
            for name, shape in shapes.items():
                if get(name).shape != shape:
                    raise ValueError(f"champion weights: {name} has shape {get(name).shape}, expected {shape}")
            self.attention = (
                *(get(name) for name in ("attention_in_w", "attention_in_b", "attention_out_w", "attention_out_b")),
                heads,
            )  # type: ignore[assignment]

    def hidden_layers(self) -> list[tuple[int, str]]:
        """The MLP's hidden layers as ``(units, "tanh" | "relu")``, first to last (as ``net_arch`` and
        ``activation_fn`` name them in a training config)."""
        return [(len(bias), "tanh" if tanh else "relu") for _, bias, tanh in self.layers]

    def fits(self, layers: list[tuple[int, str]]) -> bool:
        """Whether these weights load into a card policy whose hidden layers are ``layers`` (``(units, "tanh" |
        "relu")``, first to last): same count and activations, each layer at least as wide as this one's
        (``training.policy.load_actor`` widens a layer, and the logits stay this actor's)."""
        own = self.hidden_layers()
        if len(own) != len(layers):
            return False
        return all(act == wanted and units <= width for (units, act), (width, wanted) in zip(own, layers, strict=True))

    def logits(self, obs: np.ndarray) -> np.ndarray:
        """Unmasked logits ``float32 (batch, 109)`` for observations ``float32 (batch, 506)`` (or one ``(506,)``)."""
        obs = np.asarray(obs, np.float32).reshape(-1, OBS_SIZE)
        batch, cards = obs.shape[0], HAND_SIZE
        feats, held = hand_features(obs)
        flat = feats.reshape(batch, -1)
        if not self.layers:  # no hidden layer: the heads read the MLP's input itself
            glob = np.concatenate([obs, flat], axis=1)
        for i, (weight, bias, tanh) in enumerate(self.layers):
            # the first layer's input is the observation then the held cards' features: two products, no concatenation
            out = obs @ weight[:OBS_SIZE] + flat @ weight[OBS_SIZE:] if i == 0 else glob @ weight
            out += bias
            out = np.tanh(out, out=out) if tanh else np.maximum(out, 0.0, out=out)
            glob = glob + out if self.residual[i] else out
        width = len(self.card_in_b)
        # the per-card layers as 2-D products over the batch's batch x 10 cards
        hidden = (feats.reshape(batch * cards, -1) @ self.card_in_w).reshape(batch, cards, width)
        hidden += self.card_in_b
        hidden += (glob @ self.global_in_w)[:, None, :]
        np.maximum(hidden, 0.0, out=hidden)
        if self.attention is not None:
            hidden = hidden + self._attend(hidden, feats[:, :, 0] > 0)
        scores = (hidden.reshape(batch * cards, width) @ self.card_out_w).reshape(batch, cards)
        scores += self.card_out_b
        scores *= feats[:, :, 0]
        logits = glob @ self.linear_w + self.linear_b
        logits[np.arange(batch)[:, None], held] += scores  # held indices are distinct
        return logits.astype(np.float32, copy=False)

    def _attend(self, hidden: np.ndarray, held: np.ndarray) -> np.ndarray:
        """Multi-head self-attention among the held cards: ``hidden float32 (batch, 10, H)`` with ``held bool
        (batch, 10)`` (the rows after the last held card are masked out as keys, the first row never is), as
        ``torch.nn.MultiheadAttention`` computes it; returns ``float32 (batch, 10, H)``."""
        in_w, in_b, out_w, out_b, heads = self.attention  # type: ignore[misc]
        batch, cards, width = hidden.shape
        size = width // heads
        q, k, v = np.split(hidden @ in_w + in_b, 3, axis=2)

        def split(x: np.ndarray) -> np.ndarray:  # (batch, heads, cards, size)
            return x.reshape(batch, cards, heads, size).transpose(0, 2, 1, 3)

        logits = split(q) @ split(k).transpose(0, 1, 3, 2) / np.float32(np.sqrt(size))
        keys = held.copy()
        keys[:, 0] = True
        logits = np.where(keys[:, None, None, :], logits, -np.inf)
        weights = np.exp(logits - logits.max(axis=3, keepdims=True))
        weights /= weights.sum(axis=3, keepdims=True)
        mixed = (weights @ split(v)).transpose(0, 2, 1, 3).reshape(batch, cards, width)
        return mixed @ out_w + out_b


def read_weights(path: str | Path) -> tuple[CardActor, dict[str, Any]]:
    """The actor and the metadata (``dict`` from the file's ``meta`` JSON) of a weights file.

    Raises:
        ValueError: a missing or unreadable file, another ``format``, or bad shapes.
    """
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"champion weights {str(path)!r} not found")
    try:
        with np.load(p, allow_pickle=False) as f:
            arrays = {k: f[k] for k in f.files}
    except Exception as e:  # numpy raises several kinds for a damaged archive
        raise ValueError(f"champion weights {str(path)!r} could not be read as .npz: {e}") from None
    meta = json.loads(str(arrays.pop("meta"))) if "meta" in arrays else {}
    fmt, attention = meta.get("format"), any(name in arrays for name in ATTENTION_ARRAYS)
    if fmt not in (FORMAT, FORMAT_ATTENTION, FORMAT_RESIDUAL):
        raise ValueError(
            f"champion weights {str(path)!r}: format {fmt!r}, expected {FORMAT!r}, {FORMAT_ATTENTION!r} or "
            f"{FORMAT_RESIDUAL!r}"
        )
    residual = bool(np.asarray(arrays.get("hidden_residual", False)).any())
    if residual != (fmt == FORMAT_RESIDUAL):
        has = "has" if residual else "has no"
        raise ValueError(f"champion weights {str(path)!r}: format {fmt!r} but the file {has} residual layers")
    if fmt != FORMAT_RESIDUAL and attention != (fmt == FORMAT_ATTENTION):
        has = "has" if attention else "has no"
        raise ValueError(f"champion weights {str(path)!r}: format {fmt!r} but the file {has} attention arrays")
    return CardActor(_widen_inputs(arrays)), meta


def _widen_inputs(arrays: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``arrays`` with zero input weights for the inputs added since they were trained.

    The first layer (``hidden_w0``, or ``global_in_w`` and ``linear_w`` without hidden layers) of weights
    trained on 9 features per held card reads ``506 + 10 x 9`` inputs, or ``402 + 10 x 9`` before the
    observation had its last piece, ``drafted_by``; ``card_in_w`` then has 9 rows. Zero rows at the places of
    the missing inputs (``drafted_by``; each held card's ``own_below``, ``own_above`` and ``take_risk``) give
    the same logits as the network they were trained in (for the narrow files: on every observation whose
    ``drafted_by`` is 0, every variant but the logic variant's draft picks, V2). Other widths are returned
    unchanged (the shape checks of :class:`CardActor` report them).
    """
    out = dict(arrays)
    tanh = np.asarray(arrays.get("hidden_tanh", []), bool).reshape(-1)
    first = ["hidden_w0"] if len(tanh) else ["global_in_w", "linear_w"]
    extra = len(HAND_FEATURES) - BASE_HAND_FEATURES
    for name in first:
        weight = out.get(name)
        if weight is None or weight.ndim != 2 or weight.shape[0] not in (_NARROW_SIZE, _BASE_SIZE):
            continue
        if weight.shape[0] == _NARROW_SIZE:
            zeros = np.zeros((_DRAFTED_BY.stop - _DRAFTED_BY.start, weight.shape[1]), weight.dtype)
            weight = np.concatenate([weight[: _DRAFTED_BY.start], zeros, weight[_DRAFTED_BY.start :]])
        cards = weight[OBS_SIZE:].reshape(HAND_SIZE, BASE_HAND_FEATURES, -1)
        cards = np.concatenate([cards, np.zeros((HAND_SIZE, extra, weight.shape[1]), weight.dtype)], axis=1)
        out[name] = np.concatenate([weight[:OBS_SIZE], cards.reshape(HAND_SIZE * len(HAND_FEATURES), -1)])
    card_in = out.get("card_in_w")
    if card_in is not None and card_in.ndim == 2 and card_in.shape[0] == BASE_HAND_FEATURES:
        out["card_in_w"] = np.concatenate([card_in, np.zeros((extra, card_in.shape[1]), card_in.dtype)])
    return out


class ChampionAgent:
    """An :class:`~sixnimmt_env.agents.Agent` playing the legal action of highest logit of a :class:`CardActor`,
    the actor of the position's table size.

    Three ways to ask, all giving the same action for the same position:

    - :meth:`act` on a seat's readable view (arena, play table);
    - :meth:`act_observation` on the encoded observation and mask (the Gymnasium env's opponents);
    - :meth:`choose` on a batch (vector envs; its rows may come from tables of several sizes).

    By default the agent is deterministic and ``rng`` is accepted for the protocol and not used. With ``sample``
    (the ``champion-sample`` specs) it draws each action from the softmax of the legal actions' logits, the policy
    PPO trained, with one uniform number per decision from ``rng``: the same ``rng`` state gives the same action.

    Args:
        actor: the actor of every table size not in ``by_table``.
        name: the agent spec (its ``repr``).
        meta: the metadata of ``actor``'s weights file.
        by_table: the actor of each of these table sizes (players, 2..10) instead of ``actor``.
        sample: draw actions from the policy's softmax instead of playing the highest logit.
    """

    def __init__(
        self,
        actor: CardActor,
        name: str = "champion",
        meta: Mapping[str, Any] | None = None,
        by_table: Mapping[int, CardActor] | None = None,
        sample: bool = False,
    ) -> None:
        self.actor = actor
        self.spec = name
        self.meta = dict(meta or {})
        self.by_table = dict(by_table or {})
        self.sample = sample

    def __repr__(self) -> str:
        return f"ChampionAgent({self.spec!r})"

    def actor_for(self, num_players: int) -> CardActor:
        """The actor playing at a table of ``num_players`` players."""
        return self.by_table.get(num_players, self.actor)

    def choose(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
        """Best (or, with ``sample``, drawn) legal actions ``int64 (batch,)`` for ``obs float32 (batch, 506)`` (or
        one observation ``(506,)``) and ``mask (batch, 109)`` (nonzero at the legal actions); each row by the actor
        of its table size (the observation's ``num_players``).

        Raises:
            ValueError: a sampling agent called without ``rng``.
        """
        if self.by_table:
            # one observation, or a list, is a batch of one (as CardActor.logits reads it)
            obs = np.asarray(obs, dtype=np.float32).reshape(-1, OBS_SIZE)
            column = obs[:, _NUM_PLAYERS]  # the piece holds players / 10
            if len(obs) == 1 or (column == column[0]).all():
                logits = self.actor_for(int(column[0] * 10.0 + 0.5)).logits(obs)
            else:
                sizes = np.rint(column * 10.0).astype(np.int64)
                logits = np.empty((len(obs), NUM_ACTIONS), np.float32)
                for n in np.unique(sizes):
                    rows = sizes == n
                    logits[rows] = self.actor_for(int(n)).logits(obs[rows])
        else:
            logits = self.actor.logits(obs)
        return pick_masked(logits, mask, rng, sample=self.sample, who=f"{self.spec}: a sampling champion")

    def act_observation(self, observation: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> int:
        """The action for one seat's observation (``float32 (506,)``) and mask (``(109,)``)."""
        return int(self.choose(observation[None], mask[None], rng)[0])

    def act(self, view: Mapping[str, Any], rng: np.random.Generator) -> int:
        """One legal action for the seat of ``view`` (the no-op 108 without a decision)."""
        legal = view["legal_actions"]
        if not view["must_act"] or len(legal) == 1:
            return int(legal[0]) if len(legal) == 1 else NOOP
        mask = np.zeros(NUM_ACTIONS, bool)
        mask[list(legal)] = True
        return int(self.choose(observation_from_view(view)[None], mask[None], rng)[0])


def pick_masked(
    logits: np.ndarray, mask: np.ndarray, rng: np.random.Generator | None, *, sample: bool, who: str
) -> np.ndarray:
    """The action of each row of ``logits`` (``(batch, 109)``) among those where ``mask`` (reshaped to ``logits``'
    shape) is nonzero, ``int64 (batch,)``: the highest logit, or with ``sample`` a draw of :func:`sample_masked` with
    one uniform number of ``rng`` per row. The one rule of both learned agents' ``choose``
    (:class:`ChampionAgent`, ``training.ppo_agents.PolicyAgent``).

    Raises:
        ValueError: ``sample`` without ``rng`` (``"{who} needs an rng"``).
    """
    mask = np.asarray(mask).reshape(logits.shape)
    if sample:
        if rng is None:
            raise ValueError(f"{who} needs an rng")
        return sample_masked(logits, mask, rng.random(len(logits)))
    return np.where(mask == 0, -np.inf, logits).argmax(axis=-1)


@njit(cache=True, nogil=True)
def sample_masked(logits: np.ndarray, mask: np.ndarray, uniform: np.ndarray) -> np.ndarray:  # pragma: no cover
    """One draw per row from the softmax of ``logits`` (``(batch, A)``, any float dtype) over the actions where
    ``mask`` (``(batch, A)``, nonzero at the legal actions) is set: the first legal action whose cumulative
    probability reaches ``uniform[i]`` (``float64 (batch,)`` in [0, 1)), found in float64; ``int64 (batch,)``.
    A row without a legal action gets -1."""
    batch, actions = logits.shape
    out = np.full(batch, -1, np.int64)
    for i in range(batch):
        top = -np.inf
        for a in range(actions):
            if mask[i, a] and logits[i, a] > top:
                top = logits[i, a]
        if top == -np.inf:
            continue
        total = 0.0
        for a in range(actions):
            if mask[i, a]:
                total += np.exp(logits[i, a] - top)
        threshold = uniform[i] * total
        running = 0.0
        for a in range(actions):
            if mask[i, a]:
                running += np.exp(logits[i, a] - top)
                out[i] = a  # the last legal action if rounding leaves the threshold above the sum
                if running > threshold:
                    break
    return out


_CACHE: dict[tuple[str, float], tuple[CardActor, dict[str, Any]]] = {}
"""Per-process cache of read weights, keyed by (resolved path, modification time)."""


def load_champion(spec: str = "champion") -> ChampionAgent:
    """Build the agent of a ``champion``, ``champion:NAME`` (:data:`BASELINES`) or ``champion:PATH`` spec (the
    registered factory), or of the same with ``champion-sample`` (the agent draws from the policy, ``sample``).
    ``champion`` plays :data:`WEIGHTS`, and :data:`BY_TABLE`'s weights at their table sizes; a name or a path plays
    its one weights file at every table size.

    Raises:
        ValueError: another prefix, an empty path, or any error of :func:`read_weights`.
    """
    prefix, colon, path = spec.partition(":")
    if prefix not in ("champion", "champion-sample") or (colon and not path):
        raise ValueError(
            f"agent spec {spec!r}: expected 'champion', 'champion:NAME' (one of {', '.join(BASELINES)}) or "
            "'champion:PATH' (a .npz of weights), or the same with 'champion-sample'"
        )
    sample = prefix == "champion-sample"
    if not colon:
        actor, meta = _read_cached(WEIGHTS)
        by_table = {n: _read_cached(p)[0] for n, p in BY_TABLE.items()}
        return ChampionAgent(actor, name=spec, meta=meta, by_table=by_table, sample=sample)
    p = BASELINES.get(path) or Path(path)
    if not p.is_file() and not p.suffix and len(p.parts) == 1:
        raise ValueError(f"champion weights {path!r} not found; shipped names: {', '.join(BASELINES)} (or a .npz path)")
    actor, meta = _read_cached(p)
    return ChampionAgent(actor, name=spec, meta=meta, sample=sample)


def _read_cached(p: Path) -> tuple[CardActor, dict[str, Any]]:
    """:func:`read_weights`, once per process for each (resolved path, modification time)."""
    key = (str(p.resolve()), p.stat().st_mtime if p.is_file() else 0.0)
    if key not in _CACHE:
        _CACHE[key] = read_weights(p)
    return _CACHE[key]


register_agent("champion", load_champion, "champion[:NAME|PATH]")
register_agent("champion-sample", load_champion, "champion-sample[:NAME|PATH]")
