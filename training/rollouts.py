"""Training on every core (``train.workers``): rollouts in worker processes while the learner updates.

With ``train.workers: W`` >= 2, a run is W processes: the learner (the training process: PPO updates, callbacks,
evaluations, checkpoints) and W - 1 rollout processes, each with its share of ``train.n_envs`` games (the same
vector env the config builds, e.g. the batched engine), its opponents and a copy of the policy for the forward
passes. While the learner updates on rollout k, the rollout processes collect rollout k + 1, so the update and
the rollout (engine, opponents, policy inference) overlap instead of taking turns.

The algorithm changes in one way, by one update: rollout k + 1 is collected with the weights the learner had
*before* its update on rollout k (``θ_{k-1}`` for rollout ``k + 1`` trained from ``θ_k``). Its log-probabilities are
the collecting policy's, so PPO's ratio and clipping are measured against the policy that acted, as in synchronous
PPO; the update starts one step away from it. The rollout processes run the actor alone: the learner computes the
values with the critic it is about to train (``θ_k``, as synchronous PPO does) and, for the card policy, the card
features once for its critic and its update (:func:`critic_values`). ``lab/docs/training_speed.md`` shows that it
learns as well per step as synchronous MaskablePPO.

Everything else is MaskablePPO's: :class:`AsyncMaskablePPO` is a ``MaskablePPO`` whose ``collect_rollouts``
fills the rollout buffer from the workers' shared memory (the card features in place of the observations; the
buffer's ``get`` makes its own copy), then
calls the callbacks once per vector step with ``num_timesteps`` counted as usual, so step-based schedules
(checkpoints, evaluations, self-play snapshots, the wall-time cap) fire as they do synchronously. Checkpoints
are plain MaskablePPO checkpoints.

:class:`RolloutWorkers` is the learner's view of the workers, a ``VecEnv`` for SB3's bookkeeping: ``env_method``
(``set_opponents`` from the self-play callback among them), ``get_attr`` and ``reset`` wait for the rollout in
flight and then run in every worker, so a new opponent set plays from the rollout after the one in flight.
``step`` is not available (the workers step their own envs). While the learner waits for the processes, its
``idle`` gate (:class:`training.lifecycle.IdleGate`) is open: the evaluations during training run then, in a thread
of the learner (:class:`training.callbacks.ArenaEval`), and take no time from the updates or the rollouts.

With ``self_play.current`` > 0 each process refreshes its current-self opponent
(:class:`training.opponents.CurrentSelf`) with the weights of each rollout before it collects it: the opponents of
those tables play the weights the learner's seats play.

Seeds: worker i seeds its envs and torch's sampling with :func:`worker_seed` of the run's seed (``train.seed``;
past it on ``--resume``) and i; same seed and same ``train.workers``, same run.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import multiprocessing as mp
import os
import pickle
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, cast

import numpy as np
import torch
from sb3_contrib import MaskablePPO
from sb3_contrib.common.maskable.buffers import MaskableRolloutBuffer
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper
from stable_baselines3.common.vec_env.base_vec_env import VecEnvIndices, VecEnvObs, VecEnvStepReturn

from sixnimmt_env.rules.engine import NUM_ACTIONS
from training.config.schema import EnvSection, TrainSection
from training.features import HandFeatures
from training.lifecycle import IdleGate
from training.opponents import MixtureSampler
from training.vec import build_vec_env, worker_seed
from training.vec_env import env_indices

__all__ = ["AsyncMaskablePPO", "RolloutWorkers", "critic_values", "resolve_workers", "rollout_processes", "worker_seed"]

_FIELDS = ("observations", "actions", "rewards", "episode_starts", "log_probs", "action_masks")
"""The rollout buffer's per-step arrays that a worker writes (``(n_steps, n_envs, ...)`` float32, SB3's layout); the
values are the learner's (:func:`critic_values`)."""

_SLOT = (*_FIELDS, "last_obs", "last_dones")
"""A slot's shared arrays: the per-step fields, then the observations and dones after the rollout's last step."""


AUTO_WORKERS_MAX = 4
"""The most processes an unset ``train.workers`` takes. One learner takes about 114,000 env steps/s of the main job
(lab/docs/training_speed.md), which one rollout process nearly matches: more processes pay only when the opponents are
expensive (``mc:N``, many snapshot seats), and each costs about 650 MB. Set ``train.workers`` to go beyond."""


def resolve_workers(train: TrainSection) -> int:
    """The processes a run trains with: ``train.workers``, or, when unset, the cores this process may use
    (:func:`sixnimmt_env.arena.pool.usable_cores`), at most :data:`AUTO_WORKERS_MAX`.

    ``1`` is synchronous MaskablePPO in one process. The automatic choice falls back to 1 where the async path does
    not apply: ``train.normalize_obs`` (its running statistics live in the learner), fewer than 2 envs, or
    ``vec_env: subproc`` (already one process per env).
    """
    from sixnimmt_env.arena.pool import usable_cores

    if train.workers is not None:
        return train.workers
    if train.normalize_obs or train.n_envs < 2 or train.vec_env == "subproc":
        return 1
    return max(1, min(usable_cores(), AUTO_WORKERS_MAX))


def rollout_processes(n_envs: int, workers: int) -> list[int]:
    """The games of each rollout process for ``workers`` >= 2 processes in all: the ``n_envs`` games
    (``train.n_envs``) split as evenly as possible over ``min(workers - 1, n_envs)`` processes (the learner is the
    last process)."""
    n = n_envs
    k = min(workers - 1, n)
    bounds = np.linspace(0, n, k + 1).round().astype(int)
    return np.diff(bounds).tolist()


def _action_masks(venv: VecEnv) -> np.ndarray:
    """``bool (n_envs, 109)``: the legal actions of every env of ``venv`` (its base env's ``action_masks()`` where it
    has one, as the batched env does; else the stacked ``env_method("action_masks")``)."""
    base = venv
    while isinstance(base, VecEnvWrapper):
        base = base.venv
    masks = getattr(base, "action_masks", None)
    if callable(masks):
        return masks()
    return np.stack(venv.env_method("action_masks")).astype(bool)


@dataclasses.dataclass
class _Job:
    """What a rollout process is started with (pickled to it)."""

    index: int
    env: EnvSection
    train: TrainSection  # its own share: train.n_envs and train.seed are the worker's
    sampler: MixtureSampler  # the opponents, the self-play snapshots taken so far in its pool
    monitor_dir: Path | None
    n_steps: int
    gamma: float
    lo: int  # its envs' columns in the rollout buffer
    hi: int
    files: list[list[str]]  # per slot, per field: the shared array file
    shapes: dict[str, tuple[int, ...]]


def _open_slot(
    files: list[str], shapes: dict[str, tuple[int, ...]], mode: Literal["r+", "w+"]
) -> dict[str, np.ndarray]:
    # plain ndarray views of the mapped files: numpy's memmap subclass slows every indexing the buffer does
    return {
        name: np.memmap(path, dtype=np.float32, mode=mode, shape=shapes[name]).view(np.ndarray)
        for name, path in zip(_SLOT, files, strict=True)
    }


def _worker(conn: Any, job: _Job) -> None:
    """A rollout process: builds its envs and its copy of the policy, then answers commands until ``close``."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    torch.set_num_threads(1)
    import training.ppo_agents  # noqa: F401  (ppo: specs of the opponents)

    try:
        venv = build_vec_env(job.env, job.train, job.sampler, job.monitor_dir, first_env=job.lo)
        policy: Any = None  # the learner's policy, sent before the first rollout (weights before every rollout)
        torch.manual_seed(job.train.seed)
        slots = [_open_slot(files, job.shapes, "r+") for files in job.files]
        venv.seed(job.train.seed)
        obs = cast(np.ndarray, venv.reset())  # one Box observation space: an array
        starts = np.ones(venv.num_envs, np.float32)
        conn.send(("ready", None))
        _warm_up(job.env, job.train, job.sampler)
        while True:
            cmd, data = conn.recv()
            if cmd == "collect":
                slot, weights = data
                torch.nn.utils.vector_to_parameters(torch.from_numpy(weights), policy.parameters())
                if job.sampler.current is not None:  # self_play.current: the opponents play these weights too
                    job.sampler.current.refresh(policy)
                obs, starts, events = _collect(venv, policy, obs, starts, slots[slot], job)
                conn.send(("rollout", events))
            elif cmd == "policy":
                policy = pickle.loads(data)
                policy.set_training_mode(False)
            elif cmd == "reset":
                if data is not None:  # a new seed for the run (SB3's env.seed, e.g. on --resume)
                    seed = worker_seed(data, job.index)
                    venv.seed(seed)
                    torch.manual_seed(seed)
                obs = cast(np.ndarray, venv.reset())
                starts = np.ones(venv.num_envs, np.float32)
                conn.send(("result", obs))
            elif cmd == "env_method":
                name, args, kwargs = data
                conn.send(("result", venv.env_method(name, *args, **kwargs)))
            elif cmd == "get_attr":
                conn.send(("result", venv.get_attr(data)))
            elif cmd == "close":
                venv.close()
                conn.send(("closed", None))
                return
            else:
                raise ValueError(f"rollout worker: unknown command {cmd!r}")
    except (KeyboardInterrupt, EOFError, BrokenPipeError):
        return
    except Exception as exc:  # the learner raises it with the worker's traceback
        import traceback

        with contextlib.suppress(BrokenPipeError, OSError):
            conn.send(("error", f"rollout worker {job.index}: {exc!r}\n{traceback.format_exc()}"))


def _warm_up(env: EnvSection, train: TrainSection, sampler: MixtureSampler, steps: int = 12) -> None:
    """Compile (or load from numba's cache) what a rollout runs, on a throwaway one-game copy of the worker's
    vector env (its opponents without the snapshot pool and the current self, agents of their own) played with its
    first legal actions, and the card features the policy reads: on a fresh checkout the batched engine's play loop
    takes about 10 s to compile, and a rollout process does it here, right after it reports ready, while the learner
    is still busy (distilling, building its model) instead of inside the run's first rollout and its wall-time
    budget. The run's own envs, seeds, opponents and random streams are untouched."""
    from sixnimmt_env.card_features import hand_features

    one = train.model_copy(update={"n_envs": 1})
    venv = build_vec_env(env, one, sampler.mixture_only(), None, wrap_normalize=False)
    try:
        obs = venv.reset()
        hand_features(np.asarray(obs, np.float32))
        for _ in range(steps):
            obs, *_ = venv.step(_action_masks(venv).argmax(axis=1))
    finally:
        venv.close()


def _collect(
    venv: VecEnv, policy: Any, obs: np.ndarray, starts: np.ndarray, slot: dict[str, np.ndarray], job: _Job
) -> tuple[np.ndarray, np.ndarray, list[tuple[int, int, float, int, float]]]:
    """One rollout of ``job.n_steps`` vector steps into ``slot``'s columns ``lo:hi`` (what MaskablePPO's
    ``collect_rollouts`` stores but the values, which the learner adds (:func:`critic_values`) from the
    observations and the last ones, ``last_obs``; timeouts bootstrapped with the value of the terminal
    observation). Returns the new
    observation, episode starts and the finished episodes ``(step, env index in the buffer, return, length, time)``
    (the Monitor's ``episode`` figures; length 0 where the env keeps none)."""
    lo, hi = job.lo, job.hi
    events: list[tuple[int, int, float, int, float]] = []
    dones = np.zeros(venv.num_envs, bool)
    rows = slot["observations"]
    # the batched env writes each step's observations straight into the next row of the buffer (no copies)
    into = getattr(venv.unwrapped, "observe_into", None)
    for t in range(job.n_steps):
        masks = _action_masks(venv)
        with torch.no_grad():  # the actor alone: the learner computes the values (critic_values)
            distribution = policy.get_distribution(torch.as_tensor(obs), action_masks=masks)
            actions = distribution.get_actions()
            log_probs = distribution.log_prob(actions)
        actions = actions.numpy()
        if into is not None:
            into(rows[t + 1, lo:hi] if t + 1 < job.n_steps else None)  # the last: a new array, for the next rollout
        result = venv.step(actions)
        new_obs, rewards, dones, infos = cast(np.ndarray, result[0]), result[1], result[2], result[3]
        for i in np.flatnonzero(dones):
            info = infos[i]
            terminal = info.get("terminal_observation")
            if terminal is not None and info.get("TimeLimit.truncated", False):
                with torch.no_grad():
                    rewards[i] += job.gamma * policy.predict_values(policy.obs_to_tensor(terminal)[0])[0].item()
            episode = info.get("episode")
            if episode is not None:  # what SB3's episode statistics read (VecMonitor's)
                events.append((t, lo + int(i), float(episode["r"]), int(episode["l"]), float(episode["t"])))
            else:
                events.append((t, lo + int(i), 0.0, 0, 0.0))
        if into is None or t == 0:
            rows[t, lo:hi] = obs
        slot["actions"][t, lo:hi, 0] = actions
        slot["rewards"][t, lo:hi] = rewards
        slot["episode_starts"][t, lo:hi] = starts
        slot["log_probs"][t, lo:hi] = log_probs.numpy()
        slot["action_masks"][t, lo:hi] = masks
        obs, starts = new_obs, dones.astype(np.float32)
    slot["last_obs"][lo:hi] = obs
    slot["last_dones"][lo:hi] = dones
    return obs, starts, events


def critic_values(policy: Any, slot: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, torch.Tensor]:
    """The learner's half of a rollout: its critic's values of the rollout's observations.

    With the card policy (:class:`training.features.HandFeatures`, which passes features through) the features of
    the observations are computed once, here: the critic reads them, and they take the observations' place in the
    rollout buffer, so that the update does not compute them again.

    Args:
        policy: the learner's policy (its current weights).
        slot: a collected rollout (:meth:`RolloutWorkers.wait`).

    Returns:
        ``(observations, values, last_values)``: for the rollout buffer, ``float32 (n_steps, n_envs, 636)`` features
        (other policies: the ``(n_steps, n_envs, 506)`` observations) and ``float32 (n_steps, n_envs)`` values;
        the ``(n_envs,)`` tensor of the values after the last step, for ``compute_returns_and_advantage``.
    """
    observations, last = slot["observations"], slot["last_obs"]
    n_steps, n = observations.shape[:2]
    device = policy.device  # the learner's (train.device); the rollout's arrays are on the CPU
    flat = torch.as_tensor(observations.reshape(n_steps * n, -1), device=device)
    reusable = isinstance(policy.pi_features_extractor, HandFeatures) and isinstance(
        policy.vf_features_extractor, HandFeatures
    )
    with torch.no_grad():
        if reusable:
            flat = policy.vf_features_extractor(flat)
        values = policy.predict_values(flat)
        last_values = policy.predict_values(torch.as_tensor(last, device=device)).reshape(-1)
    stored = flat.cpu().numpy().reshape(n_steps, n, -1) if reusable else observations
    return stored, values.cpu().numpy().reshape(n_steps, n), last_values


class RolloutWorkers(VecEnv):
    """The rollout processes of a run, as the learner's ``VecEnv`` (module docstring).

    Args:
        env: the config's ``env`` section (the game of every process's vector env).
        train: the config's ``train`` section: each process builds the vector env of
            :func:`training.vec.build_vec_env` for its share of ``train.n_envs``, seeded by :func:`worker_seed`.
        sampler: the opponents (:func:`training.opponents.mixture_sampler`, with the self-play snapshots already in
            the pool); each process gets a copy.
        workers: processes in all, the learner included (>= 2): ``workers - 1`` rollout processes.
        n_steps: vector steps per rollout (``algo.n_steps``).
        gamma: the discount, for bootstrapping truncated episodes.
        monitor_dir: the Monitor CSV folder (the files of a synchronous run, named by env index), or ``None``.

    Raises:
        RuntimeError: a rollout process failed to start (with its traceback).
    """

    def __init__(
        self,
        env: EnvSection,
        train: TrainSection,
        sampler: MixtureSampler,
        workers: int,
        n_steps: int,
        gamma: float,
        monitor_dir: Path | None = None,
    ) -> None:
        if workers < 2:
            raise ValueError(f"RolloutWorkers needs 2 or more processes in all (the learner and 1+), got {workers}")
        n = train.n_envs
        probe = build_vec_env(env, train.model_copy(update={"n_envs": 1}), sampler.mixture_only(), None)
        observation_space, action_space = probe.observation_space, probe.action_space
        probe.close()
        obs_shape = observation_space.shape
        assert obs_shape is not None  # a Box of (506,)
        super().__init__(n, observation_space, action_space)
        self.n_steps = n_steps
        shapes = {
            "observations": (n_steps, n, *obs_shape),
            "actions": (n_steps, n, 1),
            "rewards": (n_steps, n),
            "episode_starts": (n_steps, n),
            "log_probs": (n_steps, n),
            "action_masks": (n_steps, n, NUM_ACTIONS),
            "last_obs": (n, *obs_shape),
            "last_dones": (n,),
        }
        shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
        self._folder = tempfile.TemporaryDirectory(prefix="sixnimmt-rollouts-", dir=shm)
        files = [[os.path.join(self._folder.name, f"slot{s}-{name}") for name in shapes] for s in range(2)]
        self.slots = [_open_slot(f, shapes, "w+") for f in files]
        self._pending_slot: int | None = None
        self._next_slot = 0
        self._stash: dict[int, list[tuple[int, int, float, int, float]]] = {}  # rollouts received, by process
        self._seed: int | None = None
        self.idle = IdleGate()  # open while the learner waits for the processes: evaluations run then
        ctx = mp.get_context("forkserver")
        self.has_policy = False
        self._conns: list[Any] = []
        self._procs: list[Any] = []
        lo = 0
        for i, size in enumerate(rollout_processes(n, workers)):
            share = train.model_copy(update={"n_envs": size, "seed": worker_seed(train.seed, i)})
            job = _Job(i, env, share, sampler, monitor_dir, n_steps, gamma, lo, lo + size, files, shapes)
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=_worker, args=(child, job), daemon=True, name=f"sixnimmt-rollouts-{i}")
            proc.start()
            child.close()
            self._conns.append(parent)
            self._procs.append(proc)
            lo += size
        self._closed = False
        try:
            for i in range(len(self._conns)):
                self._receive(i, "ready")
        except BaseException:
            self._kill()
            raise
        # every process has mapped the files: remove their names now, so that even a killed run leaves nothing behind
        # in /dev/shm (the mappings stay valid until the processes end)
        self._folder.cleanup()

    def _kill(self) -> None:
        """Stop every process at once and free the shared memory (a worker failed, or closing failed)."""
        self._closed = True
        for proc in self._procs:
            if proc.is_alive():
                proc.terminate()
            proc.join(5)
        self._pending_slot = None
        self.slots = []
        self._folder.cleanup()

    @property
    def processes(self) -> int:
        """The rollout processes (``train.workers - 1``, at most ``n_envs``)."""
        return len(self._procs)

    def _receive(self, i: int, expected: str) -> Any:
        try:
            kind, data = self._conns[i].recv()
        except (EOFError, ConnectionResetError):
            proc = self._procs[i]
            proc.join(1.0)
            raise RuntimeError(f"rollout worker {i} ended unexpectedly (exit code {proc.exitcode})") from None
        if kind == "error":
            raise RuntimeError(data)
        if kind != expected:
            raise RuntimeError(f"rollout worker {i}: expected {expected!r}, got {kind!r}")
        return data

    # ------------------------------------------------------------------ rollouts

    def set_policy(self, policy: Any) -> None:
        """Give every process a copy of ``policy`` (the learner's; its weights come with each :meth:`start`)."""
        self._finish()
        if policy.device.type == "cpu":
            blob = pickle.dumps(policy)
        else:  # a CPU copy without the optimiser (its state may hold CUDA tensors, which a worker cannot load)
            optimizer, policy.optimizer = policy.optimizer, None
            try:
                blob = pickle.dumps(copy.deepcopy(policy).to("cpu"))
            finally:
                policy.optimizer = optimizer
        for conn in self._conns:
            conn.send(("policy", blob))
        self.has_policy = True

    def start(self, weights: np.ndarray) -> None:
        """Start the next rollout in every process with the policy weights ``weights`` (``float32``, the flat
        ``parameters_to_vector`` of the policy)."""
        if self._pending_slot is not None:
            raise RuntimeError("a rollout is already in flight")
        slot = self._next_slot
        for conn in self._conns:
            conn.send(("collect", (slot, weights)))
        self._pending_slot, self._next_slot = slot, 1 - slot

    @property
    def in_flight(self) -> bool:
        """A rollout has been started and not yet taken (:meth:`wait`)."""
        return self._pending_slot is not None

    def _finish(self) -> None:
        """Receive the rollout in flight into the stash (so a command can run in the workers); one process at a
        time, so an interruption loses no answer."""
        if self._pending_slot is None:
            return
        with self.idle.opened():
            for i in range(len(self._conns)):
                if i not in self._stash:
                    self._stash[i] = self._receive(i, "rollout")

    def wait(self) -> tuple[dict[str, np.ndarray], list[tuple[int, int, float, int, float]]]:
        """The rollout in flight, once every process has written it: its arrays (shared memory, valid until the
        rollout after next starts) and its finished episodes ``(step, env, return, length, time)`` in step order."""
        if self._pending_slot is None:
            raise RuntimeError("no rollout in flight")
        self._finish()
        events = sorted((e for part in self._stash.values() for e in part), key=lambda e: (e[0], e[1]))
        slot = self.slots[self._pending_slot]
        self._pending_slot, self._stash = None, {}
        return slot, events

    def discard(self) -> None:
        """Wait for the rollout in flight (if any) and drop it."""
        if self._pending_slot is not None:
            self.wait()

    # ------------------------------------------------------------------ VecEnv API

    def _command(self, cmd: str, data: Any) -> list[Any]:
        self._finish()
        for conn in self._conns:
            conn.send((cmd, data))
        return [self._receive(i, "result") for i in range(len(self._conns))]

    def seed(self, seed: int | None = None) -> Sequence[int | None]:
        """Seed the next :meth:`reset`: process i then seeds its envs and its torch sampling with
        ``SeedSequence([seed, i])`` (SB3 calls it with ``train.seed``, and past it on ``--resume``)."""
        self._seed = seed
        return [seed] * self.num_envs

    def reset(self) -> VecEnvObs:
        """Drop the rollout in flight and start new episodes in every env (reseeded if :meth:`seed` was called);
        returns the observations ``float32 (n_envs, 506)``."""
        self.discard()
        seed, self._seed = self._seed, None
        return np.concatenate(self._command("reset", seed))

    def step_async(self, actions: np.ndarray) -> None:
        """Not available: the rollout processes step their own envs (:meth:`start`, :meth:`wait`)."""
        raise NotImplementedError("RolloutWorkers collect whole rollouts (start/wait), not single steps")

    def step_wait(self) -> VecEnvStepReturn:
        """Not available (see :meth:`step_async`)."""
        raise NotImplementedError("RolloutWorkers collect whole rollouts (start/wait), not single steps")

    def env_method(
        self, method_name: str, *method_args: Any, indices: VecEnvIndices = None, **method_kwargs: Any
    ) -> list[Any]:
        """Call a method of every process's vector env (whatever ``indices``; results one per env of ``indices``)
        once the rollout in flight has ended. ``set_opponents`` (the self-play callback) therefore applies from the
        rollout after the one in flight, and when it returns no process draws from the old opponents any more (the
        callback may delete an evicted snapshot)."""
        parts = self._command("env_method", (method_name, method_args, method_kwargs))
        flat = [r for part in parts for r in part]
        return [flat[i] for i in self._idx(indices)]

    def _idx(self, indices: VecEnvIndices) -> list[int]:
        return env_indices(indices, self.num_envs)

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """The attribute in every env (waits for the rollout in flight); ``render_mode`` is None (nothing renders)."""
        if attr_name == "render_mode":
            return [None] * len(self._idx(indices))
        flat = [r for part in self._command("get_attr", attr_name) for r in part]
        return [flat[i] for i in self._idx(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        """Not available: the envs live in the rollout processes."""
        raise NotImplementedError("set_attr is not available on RolloutWorkers")

    def env_is_wrapped(self, wrapper_class: type, indices: VecEnvIndices = None) -> list[bool]:
        """False for every env (the workers' envs are theirs)."""
        return [False] * len(self._idx(indices))

    def close(self) -> None:
        """Wait for the rollout in flight, stop the processes and free the shared memory (idempotent)."""
        if self._closed:
            return
        self._closed = True
        deadline = time.monotonic() + 30
        for i, conn in enumerate(self._conns):
            with contextlib.suppress(EOFError, BrokenPipeError, OSError, RuntimeError):
                if self._pending_slot is not None and i not in self._stash:
                    if not conn.poll(max(0.0, deadline - time.monotonic())):
                        continue  # no answer in time: stopped below
                    self._receive(i, "rollout")
                conn.send(("close", None))
                if conn.poll(max(0.0, deadline - time.monotonic())):
                    self._receive(i, "closed")
        deadline = time.monotonic() + 10
        for proc in self._procs:
            proc.join(max(0.0, deadline - time.monotonic()))
        self._kill()


class AsyncMaskablePPO(MaskablePPO):
    """MaskablePPO whose rollouts are collected by :class:`RolloutWorkers` while it updates (module docstring).

    Built (or loaded) like ``MaskablePPO`` with a :class:`RolloutWorkers` as its env; the workers get a copy of
    the policy before the first rollout. ``save``/``load`` are MaskablePPO's: a checkpoint loads as a plain
    ``MaskablePPO``.
    """

    def _weights(self) -> np.ndarray:
        return torch.nn.utils.parameters_to_vector(self.policy.parameters()).detach().cpu().numpy()

    def collect_rollouts(  # type: ignore[override]
        self,
        env: VecEnv,
        callback: BaseCallback,
        rollout_buffer: MaskableRolloutBuffer,
        n_rollout_steps: int,
        use_masking: bool = True,
    ) -> bool:
        """Take the rollout collected while the last update ran, start the next with the current weights, and
        fill ``rollout_buffer`` (MaskablePPO's ``collect_rollouts`` contract; callbacks once per vector step)."""
        if not isinstance(env, RolloutWorkers):
            raise TypeError(f"AsyncMaskablePPO collects with RolloutWorkers, got {type(env).__name__}")
        if n_rollout_steps != env.n_steps:
            raise ValueError(f"n_rollout_steps {n_rollout_steps} != the workers' {env.n_steps}")
        self.policy.set_training_mode(False)
        if not env.has_policy:
            env.set_policy(self.policy)
        if not env.in_flight:
            env.start(self._weights())
        slot, events = env.wait()
        env.start(self._weights())  # collected while train() runs: one update behind
        observations, values, last_values = critic_values(self.policy, slot)  # this update's critic, as in PPO
        rollout_buffer.reset()
        for name in _FIELDS:
            setattr(rollout_buffer, name, slot[name])
        rollout_buffer.observations, rollout_buffer.values = observations, values
        rollout_buffer.pos, rollout_buffer.full = rollout_buffer.buffer_size, True
        callback.on_rollout_start()
        n = env.num_envs
        k = 0
        for step in range(n_rollout_steps):
            dones = np.zeros(n, bool)
            infos: list[dict[str, Any]] = [{}] * n  # read only (SB3 looks for "episode")
            while k < len(events) and events[k][0] == step:
                _, i, r, length, t = events[k]
                dones[i] = True
                if length:
                    infos[i] = {"episode": {"r": r, "l": length, "t": t}}
                k += 1
            self.num_timesteps += n
            callback.update_locals(locals())
            if not callback.on_step():
                return False
            self._update_info_buffer(infos, dones)
        rollout_buffer.compute_returns_and_advantage(last_values=last_values, dones=np.array(slot["last_dones"]))
        callback.on_rollout_end()
        return True
