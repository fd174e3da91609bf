"""PPO's learner connector in bulk: a sampled iteration's episodes to the train batch, with the critic's values and
GAE, in one pass (single-agent PPO runs, :func:`training.rllib.backend.algorithm_config`).

RLlib's default PPO learner pipeline works episode by episode: it appends an artificial timestep to every episode
(``AddOneTsToEpisodesAndTruncate``, for the bootstrap value), gathers each column through its generic connector
pieces, pads the batch with those artificial rows (masked out of the loss by ``loss_mask``) and computes GAE over
it. Our episodes are short (a round is about 11 decisions), so one iteration of 16,384 steps holds about 1,400
episode chunks and that per-episode work took about half of the learner's update (``benchmarks/learner_rate.py``).

:class:`BulkPPOBatch` replaces that pipeline (``add_default_connectors_to_learner_pipeline=False``): it reads each
episode's arrays once, runs the critic once over all observations and each chunk's final observation, and computes
GAE for all chunks together (a backward scan over the time steps, vectorised over the chunks). The batch has no
artificial rows and so no ``loss_mask``. The estimates are RLlib's (``compute_value_targets``): ``delta_t = r_t +
gamma (1 - terminated_t) V(s_{t+1}) - V(s_t)``, the recursion stopped at the end of a chunk, the bootstrap value of a
truncated chunk its last observation's value; advantages are standardised over the batch.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np
import torch
from ray.rllib.connectors.connector_v2 import ConnectorV2
from ray.rllib.core import DEFAULT_MODULE_ID
from ray.rllib.core.columns import Columns
from ray.rllib.evaluation.postprocessing import Postprocessing

from sixnimmt_env.rllib_env import MASK_KEY, OBS_KEY

__all__ = ["BulkPPOBatch", "gae"]


def _items(buffer: Any, n: int, public: Any) -> Any:
    """The first ``n`` items of an episode's ``InfiniteLookbackBuffer`` past its lookback: views of its arrays when
    the episode is in numpy form (an env runner's finished sample), else ``public()`` (the episode's ``get_*``)."""
    data = buffer.data
    lookback = buffer.lookback
    if isinstance(data, dict) and all(isinstance(v, np.ndarray) for v in data.values()):
        return {k: v[lookback : lookback + n] for k, v in data.items()}
    if isinstance(data, np.ndarray):
        return data[lookback : lookback + n]
    return public()


def gae(
    values: np.ndarray,
    last_values: np.ndarray,
    rewards: np.ndarray,
    lengths: np.ndarray,
    terminated: np.ndarray,
    gamma: float,
    lambda_: float,
) -> np.ndarray:
    """GAE advantages of concatenated episode chunks (not standardised).

    Args:
        values: ``float32 (N,)`` the critic's values of the chunks' observations, chunk after chunk.
        last_values: ``float32 (E,)`` the values of each chunk's final observation (after its last step).
        rewards: ``float32 (N,)``.
        lengths: ``int (E,)`` the chunks' lengths (>= 1), summing to ``N``.
        terminated: ``bool (E,)`` whether the chunk ends its episode (no bootstrap after its last step).
        gamma, lambda_: the discount and GAE's lambda.

    Returns:
        ``float32 (N,)`` advantages.

    Raises:
        ValueError: ``lengths`` do not sum to ``N`` or hold a chunk of length 0.
    """
    n, e = len(values), len(lengths)
    if int(lengths.sum()) != n or (lengths < 1).any():
        raise ValueError(f"chunk lengths {lengths.tolist()[:8]}... must be >= 1 and sum to {n}")
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    t_max = int(lengths.max())
    # time-major padded (T, E): column j holds chunk j's steps, rows past its length unused
    row = np.arange(t_max)[:, None]
    valid = row < lengths[None, :]
    index = np.where(valid, starts[None, :] + row, 0)
    v = np.where(valid, values[index], 0.0).astype(np.float32)
    r = np.where(valid, rewards[index], 0.0).astype(np.float32)
    # V(s_{t+1}): the next row's value, the chunk's final observation's after its last step (0 if terminated)
    next_v = np.zeros_like(v)
    next_v[:-1] = v[1:]
    last = lengths - 1
    cols = np.arange(e)
    next_v[last, cols] = np.where(terminated, 0.0, last_values).astype(np.float32)
    delta = r + np.float32(gamma) * next_v - v
    adv = np.zeros_like(v)
    running = np.zeros(e, np.float32)
    decay = np.float32(gamma * lambda_)
    for t in range(t_max - 1, -1, -1):
        running = np.where(valid[t], delta[t] + decay * np.where(t < last, running, 0.0), 0.0).astype(np.float32)
        adv[t] = running
    return adv.T[valid.T]  # chunk after chunk


class BulkPPOBatch(ConnectorV2):
    """Learner connector: single-agent episodes to PPO's train batch in one pass (module docstring).

    The batch of module ``default_policy``: ``obs`` (``{"observations": float32 (N, F), "action_mask": (N,
    109)}``, where ``F`` is 636 for the card policy: the observations' features
    (:class:`~training.features.HandFeatures`, which the module passes through), 506 for ``MlpPolicy``: the
    observations), ``actions`` ``int64 (N,)``, ``action_logp`` ``float32 (N,)``, ``action_dist_inputs``
    ``float32 (N, 109)``, ``advantages`` and ``value_targets`` ``float32 (N,)``, torch tensors on the module's
    device. The module is a
    :class:`training.rllib.module.CardRLModule` (its ``features`` and ``compute_values``).

    Raises:
        TypeError: a multi-agent episode (the league uses RLlib's own pipeline).
    """

    def __init__(
        self,
        input_observation_space: Any = None,
        input_action_space: Any = None,
        *,
        gamma: float,
        lambda_: float,
        **kwargs: Any,
    ) -> None:
        super().__init__(input_observation_space, input_action_space, **kwargs)
        self.gamma, self.lambda_ = float(gamma), float(lambda_)

    def __call__(
        self,
        *,
        rl_module: Any,
        batch: dict[str, Any],
        episodes: list[Any],
        explore: bool | None = None,
        shared_data: dict | None = None,
        metrics: Any = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        episodes = [e for e in episodes if len(e) > 0]
        if any(not hasattr(e, "get_actions") or hasattr(e, "agent_episodes") for e in episodes):
            raise TypeError("BulkPPOBatch takes single-agent episodes only")
        if not episodes:
            return batch
        for e in episodes:
            if not e.is_numpy:  # env runners send numpy episodes; any other is converted in place, as RLlib does
                e.to_numpy()
        module = rl_module[DEFAULT_MODULE_ID].unwrapped()  # not its DDP wrapper (ray.num_learners >= 2)
        device = next(module.parameters()).device
        lengths = np.array([len(e) for e in episodes], np.int64)
        obs, masks, final_obs, final_masks = [], [], [], []
        actions, rewards = [], []
        logp: list[np.ndarray] = []
        dist: list[np.ndarray] = []
        for e in episodes:
            n_e = len(e)
            o = _items(e.observations, n_e + 1, partial(e.get_observations, slice(0, n_e + 1)))  # and the final one
            obs.append(o[OBS_KEY][:-1])
            masks.append(o[MASK_KEY][:-1])
            final_obs.append(o[OBS_KEY][-1])
            final_masks.append(o[MASK_KEY][-1])
            actions.append(_items(e.actions, n_e, e.get_actions))
            rewards.append(_items(e.rewards, n_e, e.get_rewards))
            for column, out in ((Columns.ACTION_LOGP, logp), (Columns.ACTION_DIST_INPUTS, dist)):
                out.append(_items(e.extra_model_outputs[column], n_e, partial(e.get_extra_model_outputs, column)))
        terminated = np.array([e.is_terminated for e in episodes], bool)
        x = torch.from_numpy(np.concatenate([*obs, np.stack(final_obs)]).astype(np.float32, copy=False))
        mask = torch.from_numpy(np.concatenate([*masks, np.stack(final_masks)]))
        n = int(lengths.sum())
        with torch.no_grad():
            # the card policy's features, computed once: the critic reads them here, and they take the observations'
            # place in the batch (HandFeatures passes features through), so the minibatches do not compute them again
            features = module.features(x.to(device))
            values = module.compute_values({Columns.OBS: {OBS_KEY: features, MASK_KEY: mask}}, embeddings=features)
        values = values.float().cpu().numpy()
        rew = np.concatenate(rewards).astype(np.float32, copy=False)
        advantages = gae(values[:n], values[n:], rew, lengths, terminated, self.gamma, self.lambda_)
        targets = (advantages + values[:n]).astype(np.float32)
        advantages = (advantages - advantages.mean()) / max(1e-4, float(advantages.std()))

        def tensor(a: np.ndarray) -> torch.Tensor:
            return torch.from_numpy(np.ascontiguousarray(a)).to(device)

        batch[DEFAULT_MODULE_ID] = {
            Columns.OBS: {OBS_KEY: features[:n], MASK_KEY: mask[:n].to(device)},
            Columns.ACTIONS: tensor(np.concatenate(actions).astype(np.int64, copy=False)),
            Columns.ACTION_LOGP: tensor(np.concatenate(logp).astype(np.float32, copy=False)),
            Columns.ACTION_DIST_INPUTS: tensor(np.concatenate(dist).astype(np.float32, copy=False)),
            Postprocessing.ADVANTAGES: tensor(advantages.astype(np.float32)),
            Postprocessing.VALUE_TARGETS: tensor(targets),
        }
        return batch
