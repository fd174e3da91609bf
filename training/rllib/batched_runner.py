"""An RLlib env runner that samples on the batched engine: ``ray.sampler: batched``.

RLlib's stock :class:`~ray.rllib.env.single_agent_env_runner.SingleAgentEnvRunner` steps one Python game per env
and does RLlib's per-game work (episode objects, connectors, callbacks) at every step: about 4,000 env steps/s
per runner on our game. :class:`BatchedEnvRunner` keeps the stock runner's interface (weights, state,
checkpoints, metrics, the learner's episodes) and replaces its sampling loop with the SB3 path's rollout core:

- the vector env is the one a rollout process of the SB3 path builds (:func:`training.vec.build_vec_env` with
  ``train.vec_env: batched``): ``ray.num_envs_per_env_runner`` games of the batched engine, the config's
  ``opponents`` mixture and the self-play snapshots played inside the engine
  (:class:`training.vec_env.SixNimmtVecEnv`);
- one forward of the runner's module (:class:`training.rllib.module.CardRLModule`) per step, over every game;
  the action drawn from the masked logits by Gumbel-max with the runner's own ``torch.Generator`` (the
  categorical distribution RLlib's PPO learner scores the actions with);
- numpy buffers for the fragment (``rollout_fragment_length`` steps of every game), and the
  :class:`~ray.rllib.env.single_agent_episode.SingleAgentEpisode` objects built from them once per fragment,
  already in numpy (what the stock runner's ``to_numpy()`` gives), so the learner connector pipeline (GAE) and
  PPO's learner take them unchanged.

Each returned episode (or chunk of one) holds:

======================  ===================================================================================
data                    value
======================  ===================================================================================
observations            ``{"observations": float32 (L+1, 506), "action_mask": int8 (L+1, 109)}``: the
                        learner's decisions, then the observation after the last one (the episode's
                        terminal observation, mask all 0, or the next decision of a chunk cut at the
                        fragment's end)
actions                 ``int64 (L,)``, legal under the masks
rewards                 ``float32 (L,)``: the vector env's rewards (minus the bullheads the learner took
                        since its last decision, R8, R9; ``train.reward`` and ``train.win_bonus`` apply)
extra_model_outputs     ``action_logp`` ``float32 (L,)``, ``action_dist_inputs`` (the masked logits)
                        ``float32 (L, 109)``, ``weights_seq_no`` ``int64 (L,)``
terminated              the game's episode (round or game, ``env.episode``) ended
infos                   empty, but the last of an ended episode: the engine's ``learner_seat``,
                        ``round_penalties``, ``totals``, ``rank`` (:class:`training.vec_env.SixNimmtVecEnv`)
======================  ===================================================================================

Metrics: the stock runner's sampled-step and episode counters, and per finished episode its return, length and
duration (``episode_return_mean`` and relatives), counted over all its chunks. Not called: RLlib's per-episode
callbacks (``on_episode_start/step/end``) and the env-to-module / module-to-env connector pipelines (our
module reads the raw observation dict). ``batch_mode: complete_episodes`` and ``sample(num_episodes=...)`` are
not supported (``NotImplementedError``).

Self-play: :meth:`BatchedEnvRunner.set_snapshot_pool` (the driver calls it on every runner with
:func:`push_snapshot_pool`) gives the engine the learner's snapshots as ``rllib-sample`` opponents
(:class:`training.rllib.rllib_agents.RLlibAgent`, one batched forward per engine step); an opponent seat is a
snapshot with probability ``self_play.prob``, as on the SB3 path.

Seeds: runner ``i`` seeds its games and its action sampling with :func:`training.vec.worker_seed` of
``train.seed`` and ``i`` (RLlib's ``worker_index``); same seed, same sampled actions.

Transfer: a fragment's episodes pickle as the fragment's arrays (:class:`FragmentEpisodes`); a runner in a Ray
actor without sample-end callbacks returns them unbuilt, and the learner's process builds them when it loads them.

Garbage collection: a built runner calls ``gc.freeze()`` (the objects of its set-up leave the collector's sight,
so that the full collections the episodes' allocations start do not walk them; in the training process itself
when ``ray.num_env_runners`` is 0), and the collector waits while a fragment's episodes are built.
"""

from __future__ import annotations

import dataclasses
import gc
import math
import time
import uuid
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import gymnasium as gym
import numpy as np
import torch
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.torch.torch_rl_module import TorchRLModule
from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner
from ray.rllib.env.single_agent_episode import SingleAgentEpisode
from ray.rllib.env.utils.infinite_lookback_buffer import InfiniteLookbackBuffer
from ray.rllib.utils.metrics import (
    WEIGHTS_SEQ_NO,
)
from ray.rllib.utils.spaces.space_utils import get_base_struct_from_space
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper

from sixnimmt_env.rllib_env import MASK_KEY, OBS_KEY, masked_space
from sixnimmt_env.rules.engine import NUM_ACTIONS
from training.config.schema import EnvSection, TrainSection
from training.opponents import MixtureSampler

if TYPE_CHECKING:
    from training.vec_env import MixedTablesVecEnv, SixNimmtVecEnv

__all__ = [
    "ENV_CONFIG_KEY",
    "BatchedEnvRunner",
    "EngineEnv",
    "EngineGames",
    "EpisodeBuilder",
    "FragmentEpisodes",
    "push_snapshot_pool",
    "snapshot_paths",
]

ENV_CONFIG_KEY = "engine_games"
"""The ``env_config`` key holding the run's :class:`EngineGames` (set by
:func:`training.rllib.backend.algorithm_config` for ``ray.sampler: batched``)."""


@dataclasses.dataclass(frozen=True)
class EngineGames:
    """What a :class:`BatchedEnvRunner` builds its games from: the config's ``env`` and ``train`` sections (the
    game, ``train.seed``, ``train.torch_threads``) and the opponents (the ``opponents`` mixture of
    :func:`training.opponents.mixture_sampler`, its pool empty: the runner plays the snapshots it is sent)."""

    env: EnvSection
    train: TrainSection
    sampler: MixtureSampler


_REWARD_SPACE = gym.spaces.Box(float("-inf"), float("inf"), (), np.float32)
"""The space RLlib gives an episode's rewards buffer."""


class EngineEnv:
    """The runner's ``env``: the batched vector env with the spaces RLlib reads (``get_spaces``, the module spec).

    Args:
        venv: the SB3 vector env of the batched engine (unwrapped: a ``SixNimmtVecEnv`` or ``MixedTablesVecEnv``).

    Attributes:
        venv: the vector env.
        num_envs: its games, B.
        single_observation_space: ``Dict({"observations": Box(506,), "action_mask": Box(0, 1, (109,), int8)})``.
        single_action_space: ``Discrete(109)``.
        observation_space: the batched observation space (B of the single one).
        action_space: the batched action space (B of the single one).
    """

    def __init__(self, venv: SixNimmtVecEnv | MixedTablesVecEnv) -> None:
        self.venv = venv
        self.num_envs = venv.num_envs
        self.single_observation_space = masked_space(venv.observation_space)
        self.single_action_space: gym.spaces.Discrete[np.int64] = gym.spaces.Discrete(NUM_ACTIONS)
        self.observation_space = gym.vector.utils.batch_space(self.single_observation_space, self.num_envs)
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, self.num_envs)

    @property
    def unwrapped(self) -> EngineEnv:
        """Itself (RLlib hands ``env.unwrapped`` to the module spec and callbacks)."""
        return self

    def close(self) -> None:
        """Close the vector env."""
        self.venv.close()


def _unwrap(venv: VecEnv) -> VecEnv:
    while isinstance(venv, VecEnvWrapper):
        venv = venv.venv
    return venv


class EpisodeBuilder:
    """Builds numpy :class:`~ray.rllib.env.single_agent_episode.SingleAgentEpisode` objects from arrays, without
    RLlib's per-item constructor work.

    RLlib's constructor and its buffers' ``space`` setters rebuild the observation space's structure for every
    buffer of every episode (about 60 % of a fragment's time here); this sets the same attributes directly, with
    the structures computed once. The episode equals the one
    ``SingleAgentEpisode(..., len_lookback_buffer=0).to_numpy()`` builds from the same data (attribute for
    attribute: ``tests/test_rllib_batched.py`` checks it against the installed RLlib).

    Args:
        observation_space: the single observation space (the mask ``Dict``).
        action_space: the single action space.
    """

    def __init__(self, observation_space: gym.Space, action_space: gym.Space) -> None:
        self.observation_space, self.action_space = observation_space, action_space
        self._structs = {
            id(space): get_base_struct_from_space(space)
            for space in (observation_space, action_space, _REWARD_SPACE, None)
        }

    def buffer(self, data: Any, space: gym.Space | None = None) -> InfiniteLookbackBuffer:
        """A finalized (numpy) buffer of ``data`` (an array, a dict of arrays, or a list for infos), no lookback."""
        buf = InfiniteLookbackBuffer.__new__(InfiniteLookbackBuffer)
        buf.data = data
        buf.lookback = 0
        buf.finalized = not isinstance(data, list)
        buf._space = space
        buf._space_struct = self._structs[id(space)]
        return buf

    def __call__(
        self,
        id_: str,
        t_started: int,
        observations: np.ndarray,
        masks: np.ndarray,
        actions: np.ndarray,
        rewards: np.ndarray,
        logp: np.ndarray,
        logits: np.ndarray,
        seq: np.ndarray,
        terminated: bool,
        last_info: dict[str, Any] | None = None,
    ) -> SingleAgentEpisode:
        """One episode (chunk) of ``L = len(actions)`` steps.

        Args:
            id_: the episode's id (a chunk keeps its episode's).
            t_started: steps of the episode before this chunk.
            observations: ``float32 (L+1, 506)``; masks: ``int8 (L+1, 109)``.
            actions: ``int64 (L,)``; rewards, logp: ``float32 (L,)``; logits: ``float32 (L, 109)``;
                seq: ``int64 (L,)`` (the weights' sequence number).
            terminated: the episode ended with its last step.
            last_info: the info of the last observation (default: empty); the infos before it are one empty dict.
        """
        n = len(actions)
        episode = SingleAgentEpisode.__new__(SingleAgentEpisode)
        episode.id_ = id_
        episode.agent_id = None
        episode.module_id = None
        episode.multi_agent_episode_id = None
        episode.observations = self.buffer({OBS_KEY: observations, MASK_KEY: masks}, self.observation_space)
        # RLlib's constructor sets these None (its setters, which store the space here, are what this builder skips)
        episode._observation_space = self.observation_space  # type: ignore[assignment]
        # one empty dict shared by the steps of an episode (a dict per step made sampling 20 % slower)
        episode.infos = self.buffer([*[{}] * n, {} if last_info is None else last_info])
        episode.actions = self.buffer(actions, self.action_space)
        episode._action_space = self.action_space  # type: ignore[assignment]
        episode.rewards = self.buffer(rewards, _REWARD_SPACE)
        episode.is_terminated = terminated
        episode.is_truncated = False
        episode.extra_model_outputs = {
            Columns.ACTION_LOGP: self.buffer(logp),
            Columns.ACTION_DIST_INPUTS: self.buffer(logits),
            WEIGHTS_SEQ_NO: self.buffer(seq),
        }
        episode.t_started = t_started
        episode.t = t_started + n
        episode._custom_data = {}
        episode._start_time = None
        episode._last_step_time = None
        episode._last_added_observation = None
        episode._last_added_infos = None
        return episode


class FragmentEpisodes(list):
    """A fragment's episodes (a ``list`` of :class:`~ray.rllib.env.single_agent_episode.SingleAgentEpisode`) that
    pickles as the fragment's arrays.

    Pickled episode by episode, a fragment is thousands of small arrays and objects: serialising it took about
    as long as sampling it, in the runner, and as long again to load in the learner's process. This list
    pickles as its few fragment-wide arrays and a table (``fragment``, see :meth:`build`); loading it builds the
    episodes again (``_rebuild``), each one's data views of those arrays.
    """

    fragment: dict[str, Any]
    spaces: tuple[gym.Space, gym.Space]

    @classmethod
    def build(cls, fragment: dict[str, Any], builder: EpisodeBuilder) -> FragmentEpisodes:
        """The episodes of ``fragment``: ``observations`` ``float32 (R, 506)`` and ``masks`` ``int8 (R, 109)``
        (episode ``k``'s rows ``rows[k]:rows[k+1]``); env-major ``actions``, ``rewards``, ``logp`` ``(B, T)`` and
        ``logits`` ``(B, T, 109)``; ``seq`` ``(T,)``; ``table`` ``int64 (E, 5)`` rows ``(game, start, stop,
        t_started, terminated)``; ``ids`` and ``infos`` (the last observation's info or ``None``), one per
        episode."""
        out = cls()
        rows, o, m = fragment["rows"], fragment["observations"], fragment["masks"]
        a, r, lp, z, seq = (fragment[k] for k in ("actions", "rewards", "logp", "logits", "seq"))
        for k, (b, start, stop, t_started, ended) in enumerate(fragment["table"].tolist()):
            out.append(
                builder(
                    fragment["ids"][k],
                    t_started,
                    o[rows[k] : rows[k + 1]],
                    m[rows[k] : rows[k + 1]],
                    a[b, start:stop],
                    r[b, start:stop],
                    lp[b, start:stop],
                    z[b, start:stop],
                    seq[: stop - start],
                    bool(ended),
                    fragment["infos"][k],
                )
            )
        out.fragment = fragment
        out.spaces = (builder.observation_space, builder.action_space)
        return out

    @classmethod
    def deferred(cls, fragment: dict[str, Any], builder: EpisodeBuilder) -> FragmentEpisodes:
        """The fragment's episodes built only where the list is loaded (empty until then): what a runner in a Ray
        actor returns when nothing in its process reads them (its episodes would only be pickled)."""
        out = cls()
        out.fragment = fragment
        out.spaces = (builder.observation_space, builder.action_space)
        return out

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return _rebuild, (self.fragment, *self.spaces)


def _rebuild(fragment: dict[str, Any], observation_space: gym.Space, action_space: gym.Space) -> FragmentEpisodes:
    """Unpickle a :class:`FragmentEpisodes`."""
    return FragmentEpisodes.build(fragment, EpisodeBuilder(observation_space, action_space))


class BatchedEnvRunner(SingleAgentEnvRunner):
    """A ``SingleAgentEnvRunner`` whose ``sample()`` steps the batched engine (see the module docstring).

    Set with ``config.env_runners(env_runner_cls=BatchedEnvRunner)``; ``config.env_config[ENV_CONFIG_KEY]`` is
    the run's :class:`EngineGames`.

    Raises:
        ValueError: (at construction) ``env_config`` without the run's config.
    """

    def __init__(self, *, config: Any, **kwargs: Any) -> None:
        super().__init__(config=config, **kwargs)
        import ray
        from ray.rllib.callbacks.callbacks import RLlibCallback

        # a runner in a Ray actor whose episodes nothing reads in its process (no sample-end callbacks) returns
        # them unbuilt: they are built where they arrive (the learner's process), not twice
        in_actor = ray.is_initialized() and ray.get_runtime_context().get_actor_id() is not None
        plain = self.config.callbacks_on_sample_end is None and all(type(c) is RLlibCallback for c in self._callbacks)
        self._send_only = in_actor and plain
        # the objects of the set-up (torch, numba, Ray: hundreds of thousands) are never garbage: out of the
        # collector's sight, its full collections, which the episodes' allocations start every fragment or two,
        # walk the episodes only (they took 1/4 of a fragment's time at 512 games)
        gc.freeze()

    # ------------------------------------------------------------------ the env

    def make_env(self) -> None:
        """Build the runner's games: :func:`training.vec.build_vec_env` of the run's :class:`EngineGames` with
        ``train.vec_env: batched``, ``train.n_envs = num_envs_per_env_runner`` and the seed
        :func:`training.vec.worker_seed` (``train.seed``, ``worker_index``); the engine's games of this
        runner count from ``(worker_index - 1) * num_envs`` for mixed table sizes."""
        from training.vec import build_vec_env, worker_seed
        from training.vec_env import MixedTablesVecEnv, SixNimmtVecEnv

        games = self.config.env_config.get(ENV_CONFIG_KEY)
        if not isinstance(games, EngineGames):
            raise ValueError(f"BatchedEnvRunner needs the run's EngineGames in env_config[{ENV_CONFIG_KEY!r}]")
        if self.env is not None:
            self.env.close()
        torch.set_num_threads(int(games.train.torch_threads))
        n = int(self.config.num_envs_per_env_runner)
        index = int(self.worker_index or 0)
        seed = None if games.train.seed is None else worker_seed(games.train.seed, index)
        share = games.train.model_copy(update={"n_envs": n, "vec_env": "batched", "seed": seed})
        self._mixture = games.sampler
        self._engine_seed = seed
        first = max(index - 1, 0) * n
        venv = _unwrap(build_vec_env(games.env, share, games.sampler.with_pool(()), None, False, first))
        if not isinstance(venv, SixNimmtVecEnv | MixedTablesVecEnv):
            raise TypeError(f"train.vec_env: batched built a {type(venv).__name__}, not the batched engine")
        engine = EngineEnv(venv)
        # RLlib types env as its gym VectorEnv: the runner keeps there the EngineEnv with the attributes RLlib reads
        self.env = engine  # type: ignore[assignment]
        self.num_envs = n
        self._generator = torch.Generator()
        if seed is not None:
            self._generator.manual_seed(seed)
        else:
            self._generator.seed()
        self._needs_initial_reset = True
        self._finished: list[np.ndarray] = []  # per sample(): (return, length, seconds) rows of finished episodes
        self._id_prefix, self._id_count = uuid.uuid4().hex[:16], 0
        self._builder = EpisodeBuilder(engine.single_observation_space, engine.single_action_space)

    def _games(self) -> EngineEnv:
        """``self.env``: the runner's :class:`EngineEnv` (:meth:`make_env`; RLlib types the attribute as its gym
        ``VectorEnv``)."""
        env = self.env
        if not isinstance(env, EngineEnv):
            raise RuntimeError(f"BatchedEnvRunner has no games (env {env!r}): make_env builds them")
        return env

    def _torch_module(self) -> TorchRLModule:
        """``self.module``: the runner's torch RLModule (RLlib types the attribute as an optional ``RLModule``)."""
        module = self.module
        if not isinstance(module, TorchRLModule):
            raise RuntimeError(f"BatchedEnvRunner samples from a torch RLModule, got {module!r}")
        return module

    # ------------------------------------------------------------------ self-play

    def set_snapshot_pool(self, states: Sequence[dict[str, Any]]) -> int:
        """Play the learner's snapshots ``states`` (module states, ``RLModule.get_state(inference_only=True)``)
        inside the engine:
        from the next episode on, each opponent seat is one of them (drawn uniformly, sampling from its masked
        policy) with probability ``self_play.prob``, else an agent of the ``opponents`` mixture.

        Returns:
            The number of snapshots this runner plays (0 on a runner without games, e.g. the driver's).
        """
        if self.env is None:
            return 0
        from training.rllib.module import CardRLModule
        from training.rllib.rllib_agents import RLlibAgent

        own = self._torch_module()
        agents = []
        for k, state in enumerate(states):
            module = CardRLModule(
                observation_space=own.observation_space,
                action_space=own.action_space,
                model_config=own.model_config,
                inference_only=True,
            )
            module.set_state(dict(state))
            module.eval()
            agents.append(RLlibAgent(module, sample=True, name=f"rllib-sample:snapshot{k}"))
        self._games().venv.set_opponents(self._mixture.with_pool(agents))
        return len(agents)

    # ------------------------------------------------------------------ sampling

    def _reset_games(self) -> None:
        """New episodes in every game (the first reset seeds the engine)."""
        venv = self._games().venv
        if self._engine_seed is not None and self._needs_initial_reset:
            venv.seed(self._engine_seed)
        B = self.num_envs
        self._obs = np.asarray(venv.reset(), np.float32)
        self._mask = venv.action_masks().astype(np.int8)
        self._episode_ids = [self._new_id() for _ in range(B)]
        self._episode_t = np.zeros(B, np.int64)  # steps of each ongoing episode before this fragment
        self._episode_return = np.zeros(B, np.float64)
        self._episode_start = np.full(B, time.perf_counter())
        self._needs_initial_reset = False

    def _sample(
        self,
        *,
        num_timesteps: int | None = None,
        num_episodes: int | None = None,
        explore: bool,
        random_actions: bool = False,
        force_reset: bool = False,
    ) -> FragmentEpisodes:
        """Step every game ``ceil(num_timesteps / num_envs)`` times and return the episodes and chunks.

        Raises:
            NotImplementedError: ``num_episodes`` (``batch_mode: complete_episodes``) or ``random_actions``.
        """
        if num_episodes is not None or num_timesteps is None:
            raise NotImplementedError("BatchedEnvRunner samples timesteps (batch_mode: truncate_episodes) only")
        if random_actions:
            raise NotImplementedError("BatchedEnvRunner samples from its module (random_actions is not supported)")
        if force_reset or self._needs_initial_reset:
            self._reset_games()
        B = self.num_envs
        T = max(1, math.ceil(num_timesteps / B))
        venv = self._games().venv
        obs = np.empty((T + 1, B, self._obs.shape[1]), np.float32)
        mask = np.empty((T + 1, B, NUM_ACTIONS), np.int8)
        logits = np.empty((T, B, NUM_ACTIONS), np.float32)
        actions = np.empty((T, B), np.int64)
        logp = np.empty((T, B), np.float32)
        rewards = np.empty((T, B), np.float32)
        dones = np.empty((T, B), np.bool_)
        terminal: dict[tuple[int, int], dict[str, Any]] = {}  # (step, game) -> the engine's end-of-episode info
        obs[0], mask[0] = self._obs, self._mask
        into = getattr(venv, "observe_into", None)
        module = self._torch_module()
        # eval mode once for the fragment, and the forward hooks that forward_exploration/forward_inference call:
        # those switch the module's mode (a walk over its submodules) twice per call, 1/4 of a step's time here
        was_training = module.training
        module.eval()
        forward = module._forward_exploration if explore else module._forward_inference
        for t in range(T):
            with torch.no_grad():
                batch = {Columns.OBS: {OBS_KEY: torch.from_numpy(obs[t]), MASK_KEY: torch.from_numpy(mask[t])}}
                out = forward(batch)
                z = out[Columns.ACTION_DIST_INPUTS]
                if explore:  # Gumbel-max: a sample of the categorical of the masked logits
                    u = torch.rand(z.shape, generator=self._generator).clamp_(min=1e-20)
                    a = torch.argmax(z - torch.log(-torch.log(u)), dim=1)
                else:
                    a = torch.argmax(z, dim=1)
                lp = torch.log_softmax(z, dim=1).gather(1, a[:, None])[:, 0]
            logits[t] = z.numpy()
            actions[t] = a.numpy()
            logp[t] = lp.numpy()
            if into is not None:
                into(obs[t + 1])
            new_obs, r, d, infos = venv.step(actions[t])
            if into is None:
                obs[t + 1] = cast(np.ndarray, new_obs)  # SB3 types step's observations as any of its kinds
            rewards[t], dones[t] = r, d
            np.copyto(mask[t + 1], venv.action_masks(), casting="unsafe")
            for b in np.flatnonzero(d):
                terminal[t, int(b)] = infos[b]
        module.train(was_training)
        self._obs, self._mask = obs[T].copy(), mask[T].copy()
        # the episodes are some 10 objects each and hold no reference cycles: the garbage collector, which the
        # allocations would otherwise start over and over (each time walking every object of the process), waits
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            episodes = self._episodes(obs, mask, logits, actions, logp, rewards, dones, terminal)
        finally:
            if gc_was_enabled:
                gc.enable()
        steps = T * B
        self._log_env_steps(metric=self._metrics_num_env_steps_sampled, num_steps=steps)
        self._increase_sampled_metrics(steps, int(dones.sum()))
        return episodes

    def _new_id(self) -> str:
        """A new episode id: the runner's random prefix and a count (unique across runners and fragments)."""
        self._id_count += 1
        return f"{self._id_prefix}{self._id_count:x}"

    def _episodes(
        self,
        obs: np.ndarray,
        mask: np.ndarray,
        logits: np.ndarray,
        actions: np.ndarray,
        logp: np.ndarray,
        rewards: np.ndarray,
        dones: np.ndarray,
        terminal: dict[tuple[int, int], dict[str, Any]],
    ) -> FragmentEpisodes:
        """The fragment's buffers (step-major, ``(T[+1], B, ...)``) as numpy episodes: every episode that ended in
        the fragment, then the chunk of every ongoing one (continued by the next fragment under the same id)."""
        T, B = actions.shape
        now = time.perf_counter()
        table: list[tuple[int, int, int, int, bool]] = []  # (game, start, stop, t_started, terminated)
        ids: list[str] = []
        infos: list[dict[str, Any] | None] = []
        finished: list[tuple[float, int, float]] = []
        ended_env, ended_step = np.nonzero(dones.T)  # sorted by env, then step
        bounds = np.searchsorted(ended_env, np.arange(B + 1))
        chunks: list[tuple[int, int]] = []
        for b in range(B):
            start = 0
            for e in ended_step[bounds[b] : bounds[b + 1]].tolist():
                stop = e + 1
                table.append((b, start, stop, int(self._episode_t[b]), True))
                ids.append(self._episode_ids[b])
                infos.append(terminal[e, b])
                ret = self._episode_return[b] + float(rewards[start:stop, b].sum())
                finished.append((ret, int(self._episode_t[b]) + stop - start, now - self._episode_start[b]))
                self._episode_ids[b] = self._new_id()
                self._episode_t[b] = 0
                self._episode_return[b] = 0.0
                self._episode_start[b] = now
                start = stop
            if start < T:
                chunks.append((b, start))
        for b, start in chunks:  # the ongoing episodes' chunks after the ended episodes (the stock runner's order)
            table.append((b, start, T, int(self._episode_t[b]), False))
            ids.append(self._episode_ids[b])
            infos.append(None)
            self._episode_t[b] += T - start
            self._episode_return[b] += float(rewards[start:, b].sum())
        if finished:
            self._finished.append(np.asarray(finished, np.float64))
        # each episode's observations (its steps', then the terminal one or the chunk's next decision) in one array
        lengths = np.asarray([stop - start for _, start, stop, _, _ in table], np.int64)
        rows = np.zeros(len(table) + 1, np.int64)
        np.cumsum(lengths + 1, out=rows[1:])
        obs_all = np.empty((int(rows[-1]), obs.shape[2]), np.float32)
        mask_all = np.empty((int(rows[-1]), NUM_ACTIONS), np.int8)
        for k, (b, start, stop, _, ended) in enumerate(table):
            r = int(rows[k])
            end = r + stop - start
            obs_all[r:end] = obs[start:stop, b]
            mask_all[r:end] = mask[start:stop, b]
            if ended:
                obs_all[end] = infos[k].pop("terminal_observation")  # type: ignore[union-attr]
                mask_all[end] = 0  # no decision at the end
            else:
                obs_all[end], mask_all[end] = obs[stop, b], mask[stop, b]
        fragment = {
            "observations": obs_all,
            "masks": mask_all,
            "rows": rows,
            # env-major: each episode's steps are a contiguous slice
            "actions": np.ascontiguousarray(actions.T),
            "rewards": np.ascontiguousarray(rewards.T),
            "logp": np.ascontiguousarray(logp.T),
            "logits": np.ascontiguousarray(logits.transpose(1, 0, 2)),
            "seq": np.full(T, self._weights_seq_no, np.int64),
            "table": np.asarray(table, np.int64).reshape(-1, 5),
            "ids": ids,
            "infos": infos,
        }
        if self._send_only:
            return FragmentEpisodes.deferred(fragment, self._builder)
        return FragmentEpisodes.build(fragment, self._builder)

    # ------------------------------------------------------------------ metrics

    def get_metrics(self) -> dict[str, Any]:
        """The stock runner's metrics: sampled steps and episodes, and the finished episodes' return, length and
        duration (the last ``metrics_num_episodes_for_smoothing / num_env_runners`` of them: the window RLlib
        keeps)."""
        if getattr(self, "_finished", None):  # a runner without games has none
            rows = np.concatenate(self._finished)
            self._finished.clear()
            win = max(1, math.ceil(self.config.metrics_num_episodes_for_smoothing / (self.config.num_env_runners or 1)))
            for ret, length, seconds in rows[-win:].tolist():
                self._log_episode_metrics(int(length), ret, seconds)
        return self.metrics.reduce()


def snapshot_paths(pool: Path, size: int) -> list[Path]:
    """The newest ``size`` snapshots of a run's ``pool/`` folder (``snapshot_<steps>`` RLModule folders), oldest
    first."""
    found = [p for p in pool.glob("snapshot_*") if p.is_dir() and p.name.split("_")[1].isdigit()]
    return sorted(found, key=lambda p: int(p.name.split("_")[1]))[-size:] if size > 0 else []


def _set_pool(runner: Any, states: Sequence[dict[str, Any]]) -> int:
    return runner.set_snapshot_pool(states) if isinstance(runner, BatchedEnvRunner) else 0


def push_snapshot_pool(algo: Any, paths: Sequence[Path]) -> list[int]:
    """Give every env runner of ``algo`` the snapshots at ``paths`` (RLModule checkpoints) to play inside its
    engine (:meth:`BatchedEnvRunner.set_snapshot_pool`); the states are read here, on the driver, and sent.

    Returns:
        Per runner (the driver's included), the snapshots it plays.
    """
    from training.rllib.rllib_agents import load_module

    states = [load_module(p).get_state(inference_only=True) for p in paths]  # what an acting copy needs
    return list(algo.env_runner_group.foreach_env_runner(partial(_set_pool, states=states)))
