"""Training environments: the vector env stacks.

A :class:`training.opponents.MixtureSampler` draws each opponent seat per episode.
:func:`build_vec_env` builds ``n_envs`` copies of :class:`sixnimmt_env.gym_env.SingleSeatEnv` (each in a
``Monitor`` writing ``monitor/<i>.monitor.csv``) with the builder named by ``train.vec_env`` in
:data:`VEC_ENV_BUILDERS`, then wraps it in ``VecNormalize`` (observations only)
when ``train.normalize_obs`` is set.

Every stack forwards ``env_method("action_masks")``, which MaskablePPO calls at
each step, and ``env_method("set_opponents", sampler)``, which the self-play
callback calls when the pool changes. Each builder receives a :class:`VecEnvRequest`.
"""

from __future__ import annotations

import contextlib
import itertools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.monitor import Monitor, ResultsWriter
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecEnv, VecMonitor, VecNormalize
from stable_baselines3.common.vec_env.base_vec_env import VecEnvIndices, VecEnvObs, VecEnvStepReturn

from sixnimmt_env.rules.engine import NUM_ACTIONS
from training import ppo_agents as _ppo_agents  # noqa: F401  (registers ppo: specs in every process)
from training.config.schema import EnvSection, TrainSection
from training.opponents import MixtureSampler

__all__ = [
    "VEC_ENV_BUILDERS",
    "BatchedVecMonitor",
    "EnvFactory",
    "VecEnvRequest",
    "WorkerVecEnv",
    "build_vec_env",
    "players_per_env",
    "worker_seed",
]


class EnvFactory:
    """A picklable ``() -> gym.Env`` for one worker: a Monitor-wrapped :class:`SingleSeatEnv`.

    Args:
        game: :class:`~sixnimmt_env.rules.engine.GameConfig` keyword arguments.
        learner_seat: ``"random"`` or a seat.
        sampler: the opponent sampler.
        monitor_file: the Monitor CSV path (``None``: no file).
        torch_threads: torch threads of the process the env is built in, or ``None`` to leave them (an env in
            the learner's own process). Opponent policies decide in numpy (:class:`training.ppo_agents.PolicyAgent`);
            1 keeps a worker process from competing with the learner for cores.
    """

    def __init__(
        self,
        game: dict[str, Any],
        learner_seat: int | str,
        sampler: MixtureSampler,
        monitor_file: str | None,
        torch_threads: int | None = 1,
    ) -> None:
        self.game, self.learner_seat, self.sampler = game, learner_seat, sampler
        self.monitor_file, self.torch_threads = monitor_file, torch_threads

    def __call__(self) -> gym.Env:
        from sixnimmt_env.gym_env import make_env

        if self.torch_threads is not None:
            import torch

            torch.set_num_threads(self.torch_threads)
        env = make_env(opponents=self.sampler, learner_seat=self.learner_seat, **self.game)  # type: ignore[arg-type]
        # a new file gets SB3's two header lines (load_results needs them); an existing one is appended to
        fresh = self.monitor_file is None or not Path(self.monitor_file).is_file()
        return Monitor(env, self.monitor_file, override_existing=fresh)


def _worker(remote: Any, parent_remote: Any, env_fns: list[Callable[[], gym.Env]]) -> None:
    """A worker process of :class:`WorkerVecEnv`: a ``DummyVecEnv`` of its share of the envs, driven by commands."""
    import torch

    torch.set_num_threads(1)
    parent_remote.close()
    venv = DummyVecEnv(env_fns)
    try:
        while True:
            cmd, data = remote.recv()
            if cmd == "step":
                obs, rewards, dones, infos = venv.step(data)
                remote.send((obs, rewards, dones, infos, _masks(venv)))
            elif cmd == "reset":
                seeds, options = data
                for i, seed in enumerate(seeds):
                    if seed is not None:
                        venv._seeds[i] = seed
                venv._options = list(options)
                obs = venv.reset()
                remote.send((obs, venv.reset_infos, _masks(venv)))
            elif cmd == "env_method":
                name, args, kwargs, indices = data
                remote.send(venv.env_method(name, *args, indices=indices, **kwargs))
            elif cmd == "get_attr":
                remote.send(venv.get_attr(data[0], indices=data[1]))
            elif cmd == "has_attr":
                remote.send(venv.has_attr(data))
            elif cmd == "set_attr":
                venv.set_attr(data[0], data[1], indices=data[2])
                remote.send(None)
            elif cmd == "is_wrapped":
                remote.send(venv.env_is_wrapped(data[0], indices=data[1]))
            elif cmd == "close":
                venv.close()
                remote.close()
                return
            else:
                raise ValueError(f"WorkerVecEnv worker: unknown command {cmd!r}")
    except (KeyboardInterrupt, EOFError, BrokenPipeError):
        venv.close()


def _masks(venv: VecEnv) -> np.ndarray:
    return np.stack(venv.env_method("action_masks")).astype(bool)


class WorkerVecEnv(VecEnv):
    """A vector env of ``len(env_fns)`` envs stepped by ``n_workers`` processes, each running a ``DummyVecEnv`` of
    a contiguous share (SB3's ``SubprocVecEnv`` runs one process per env, two pipe round trips per env and step
    with MaskablePPO; here it is one round trip per worker).

    Auto-reset, ``terminal_observation``, seeds (``seed(s)`` gives env ``i`` the seed ``s + i``) and reset
    options behave as in SB3's ``DummyVecEnv``. The action masks come back with every step and reset, so
    ``env_method("action_masks")`` (MaskablePPO's call before each step) is answered from them without a round
    trip: ``list`` of ``bool (109,)`` arrays. Every other ``env_method`` goes to the workers.

    Args:
        env_fns: picklable ``() -> gym.Env`` factories (envs with ``action_masks()``).
        n_workers: worker processes (1..len(env_fns)); the envs are split as evenly as possible.
        start_method: multiprocessing start method (default ``"forkserver"``: no torch state is forked).

    Raises:
        ValueError: ``n_workers`` outside 1..len(env_fns).
    """

    def __init__(self, env_fns: Sequence[Callable[[], gym.Env]], n_workers: int, start_method: str = "forkserver"):
        import multiprocessing as mp

        n = len(env_fns)
        if not 1 <= n_workers <= n:
            raise ValueError(f"n_workers must be 1..{n} (the number of envs), got {n_workers}")
        bounds = np.linspace(0, n, n_workers + 1).round().astype(int)
        self._slices = [slice(int(a), int(b)) for a, b in itertools.pairwise(bounds)]
        ctx = mp.get_context(start_method)
        self._remotes, self._processes = [], []
        for sl in self._slices:
            remote, work_remote = ctx.Pipe()
            # typeshed's BaseContext (what get_context of a str gives) lacks Process; every real context has it
            proc = ctx.Process(  # type: ignore[attr-defined]
                target=_worker, args=(work_remote, remote, list(env_fns[sl])), daemon=True
            )
            proc.start()
            work_remote.close()
            self._remotes.append(remote)
            self._processes.append(proc)
        self._remotes[0].send(("get_attr", ("observation_space", [0])))
        observation_space = self._remotes[0].recv()[0]
        self._remotes[0].send(("get_attr", ("action_space", [0])))
        action_space = self._remotes[0].recv()[0]
        super().__init__(n, observation_space, action_space)
        self._action_masks = np.zeros((n, NUM_ACTIONS), bool)
        self._closed = False

    def _split(self, indices: VecEnvIndices) -> list[tuple[int, list[int], list[int]]]:
        """``(worker, positions in the request, local indices)`` for each worker holding one of ``indices``."""
        wanted = list(self._get_indices(indices))
        out = []
        for w, sl in enumerate(self._slices):
            pos = [k for k, i in enumerate(wanted) if sl.start <= i < sl.stop]
            if pos:
                out.append((w, pos, [wanted[k] - sl.start for k in pos]))
        return out

    def _gather(self, cmd: str, make: Callable[[list[int]], tuple], indices: VecEnvIndices) -> list[Any]:
        parts = self._split(indices)
        for w, _, local in parts:
            self._remotes[w].send((cmd, make(local)))
        out: list[Any] = [None] * len(list(self._get_indices(indices)))
        for w, pos, _ in parts:
            for k, value in zip(pos, self._remotes[w].recv(), strict=True):
                out[k] = value
        return out

    def step_async(self, actions: np.ndarray) -> None:
        """Send each worker its share of ``actions`` (``int (n_envs,)``)."""
        for remote, sl in zip(self._remotes, self._slices, strict=True):
            remote.send(("step", actions[sl]))

    def step_wait(self) -> VecEnvStepReturn:
        """``(obs float32 (n_envs, 506), rewards float32 (n_envs,), dones bool (n_envs,), infos)``."""
        results = [remote.recv() for remote in self._remotes]
        obs, rewards, dones, infos, masks = zip(*results, strict=True)
        self._action_masks = np.concatenate(masks)
        return np.concatenate(obs), np.concatenate(rewards), np.concatenate(dones), [i for part in infos for i in part]

    def reset(self) -> VecEnvObs:
        """Reset every env (with the seeds of ``seed()`` and the options of ``set_options()``, once)."""
        for remote, sl in zip(self._remotes, self._slices, strict=True):
            remote.send(("reset", (self._seeds[sl], self._options[sl])))
        results = [remote.recv() for remote in self._remotes]
        obs, reset_infos, masks = zip(*results, strict=True)
        self.reset_infos = [i for part in reset_infos for i in part]
        self._action_masks = np.concatenate(masks)
        self._reset_seeds()
        self._reset_options()
        return np.concatenate(obs)

    def action_masks(self) -> np.ndarray:
        """``bool (n_envs, 109)``: the masks after the last step or reset."""
        return self._action_masks.copy()

    def env_method(self, method_name: str, *method_args: Any, indices: VecEnvIndices = None, **method_kwargs: Any):
        """Call ``method_name`` on the envs of ``indices``; ``"action_masks"`` is answered from the last step."""
        if method_name == "action_masks" and not method_args and not method_kwargs:
            return list(self._action_masks[list(self._get_indices(indices))])
        return self._gather("env_method", lambda local: (method_name, method_args, method_kwargs, local), indices)

    def has_attr(self, attr_name: str) -> bool:
        """Whether the envs have ``attr_name`` (asked of the first worker: all envs are alike)."""
        self._remotes[0].send(("has_attr", attr_name))
        return bool(self._remotes[0].recv())

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """``attr_name`` of each env of ``indices``."""
        return self._gather("get_attr", lambda local: (attr_name, local), indices)

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        """Set ``attr_name`` to ``value`` in each env of ``indices``."""
        self._gather("set_attr", lambda local: (attr_name, value, local), indices)

    def env_is_wrapped(self, wrapper_class: type, indices: VecEnvIndices = None) -> list[bool]:
        """Whether each env of ``indices`` is wrapped in ``wrapper_class``."""
        return self._gather("is_wrapped", lambda local: (wrapper_class, local), indices)

    def close(self) -> None:
        """Stop the workers."""
        if self._closed:
            return
        for remote in self._remotes:
            with contextlib.suppress(BrokenPipeError, EOFError, ConnectionResetError):  # a worker gone (Ctrl-C)
                remote.send(("close", None))
        for proc in self._processes:
            proc.join(timeout=10)
            if proc.is_alive():
                proc.terminate()
        self._closed = True


@dataclass
class VecEnvRequest:
    """What a vector-env builder gets: the config's ``env`` and ``train`` sections, one factory per env, the
    sampler and the monitor folder."""

    env: EnvSection
    train: TrainSection
    env_fns: list[Callable[[], gym.Env]]
    sampler: MixtureSampler
    monitor_dir: Path | None
    first_env: int = 0


def _dummy(req: VecEnvRequest) -> VecEnv:
    return DummyVecEnv(req.env_fns)


def _subproc(req: VecEnvRequest) -> VecEnv:
    workers = req.train.n_workers
    if workers is None:
        return SubprocVecEnv(req.env_fns, start_method="forkserver")
    return WorkerVecEnv(req.env_fns, min(workers, len(req.env_fns)))


class _ResultsWriterFlushedEachSecond(ResultsWriter):
    """SB3's Monitor CSV writer, flushed at most once a second (and on ``close``) instead of after every row.

    A batched env ends about one episode in ten env steps, some hundred per vector step of 1,024 games; a flush
    (a ``write`` system call) per row was about 0.3 ms per 1,000 env steps, 3 % of a rollout process's work
    (lab/docs/training_speed.md). A process that is killed loses at most the last second's rows.
    """

    clock = staticmethod(time.monotonic)
    """The clock of the flushes (seconds)."""

    def __init__(self, filename: str, header: dict[str, float | str]) -> None:
        super().__init__(filename, header=header)
        self._flushed = self.clock()

    def write_row(self, epinfo: dict[str, float]) -> None:
        """Append one episode's row (``r``, ``l``, ``t``); the file is flushed if the last flush is a second old."""
        self.logger.writerow(epinfo)
        now = self.clock()
        if now - self._flushed >= 1.0:
            self.file_handler.flush()
            self._flushed = now


class BatchedVecMonitor(VecMonitor):
    """SB3's ``VecMonitor`` (episode returns, lengths and times in ``info["episode"]``; rows in ``filename``,
    ``None``: no file) whose CSV is flushed at most once a second and on ``close()``, for the batched env's many
    episodes per step. The file's format is VecMonitor's (``stable_baselines3.common.monitor.load_results``)."""

    def __init__(self, venv: VecEnv, filename: str | None = None) -> None:
        super().__init__(venv)
        if filename:
            spec = getattr(venv, "spec", None)
            env_id = spec.id if spec is not None else None  # as VecMonitor writes it
            self.results_writer = _ResultsWriterFlushedEachSecond(
                filename, header={"t_start": self.t_start, "env_id": str(env_id)}
            )


def _batched(req: VecEnvRequest) -> VecEnv:
    """The ``train.vec_env: batched`` builder: a :class:`SixNimmtVecEnv` of ``train.n_envs`` games in a
    :class:`BatchedVecMonitor` (``monitor/batched.monitor.csv``; ``batched-<i>.monitor.csv`` for a rollout
    process's share whose first game is the run's game ``i``).

    With several table sizes in ``env.num_players``, each size has as many games as :func:`players_per_env` gives
    it (the run's game ``i`` counted for ``sizes[i % len(sizes)]``; a rollout process's share counts from its first
    game's run-wide index), but the games of one size are in a row: one batch per size, in the order the sizes
    first appear, joined by a :class:`~training.vec_env.MixedTablesVecEnv`. Each batch is built with seed
    ``train.seed + k`` (the ``k``-th batch) and reseeded by SB3's ``env.seed(s)`` to ``s`` + the index of its first
    game (what MaskablePPO and each rollout process do before the first reset).
    """
    from training.vec_env import MixedTablesVecEnv, SixNimmtVecEnv  # the batched engine (numba) loads on demand

    env, train = req.env, req.train
    sizes = env.table_sizes()
    counts: dict[int, int] = {}
    for j in range(train.n_envs):
        n = sizes[(req.first_env + j) % len(sizes)]
        counts[n] = counts.get(n, 0) + 1
    parts = [
        SixNimmtVecEnv(
            count,
            opponents=req.sampler,
            learner_seat=env.learner_seat,
            seed=None if train.seed is None else train.seed + k,
            win_bonus=train.win_bonus,
            reward=train.reward,
            **env.game_kwargs(n),
        )
        for k, (n, count) in enumerate(counts.items())
    ]
    venv: VecEnv = parts[0] if len(parts) == 1 else MixedTablesVecEnv(parts)
    filename = (
        None
        if req.monitor_dir is None
        else str(req.monitor_dir / ("batched" if req.first_env == 0 else f"batched-{req.first_env}"))
    )
    return BatchedVecMonitor(venv, filename)


VEC_ENV_BUILDERS: dict[str, Callable[[VecEnvRequest], VecEnv]] = {
    "dummy": _dummy,
    "subproc": _subproc,
    "batched": _batched,
}
"""``train.vec_env`` name (the ``Literal`` of :attr:`training.config.schema.TrainSection.vec_env`) -> builder.
The VecEnv returned must answer ``env_method("action_masks")``
(stacked to ``bool (n_envs, 109)``) and ``env_method("set_opponents", sampler)``."""


def players_per_env(env: EnvSection, n_envs: int) -> list[int]:
    """Players of each of the ``n_envs`` training envs (``train.n_envs``): env ``i`` plays ``sizes[i % len]`` of the
    table sizes ``sizes`` (:meth:`training.config.schema.EnvSection.table_sizes`)."""
    sizes = env.table_sizes()
    return [sizes[i % len(sizes)] for i in range(n_envs)]


def worker_seed(seed: int, index: int) -> int:
    """The seed of rollout process (or RLlib env runner) ``index`` in a run seeded ``seed``:
    ``SeedSequence([seed, index])``'s first word, for its envs and its torch sampling."""
    return int(np.random.SeedSequence([seed, index]).generate_state(1)[0])


def build_vec_env(
    env: EnvSection,
    train: TrainSection,
    sampler: MixtureSampler,
    monitor_dir: Path | None = None,
    wrap_normalize: bool = True,
    first_env: int = 0,
) -> VecEnv:
    """The training vector env of a config's ``env`` and ``train`` sections (see the module docstring).

    Args:
        env: the game and the learner's seat (a validated section).
        train: ``n_envs``, ``vec_env``, ``n_workers``, ``seed``, ``reward``, ``win_bonus``, ``normalize_obs``.
        sampler: the opponents of every env (:func:`training.opponents.mixture_sampler`, with the self-play
            snapshots already in the pool).
        monitor_dir: folder for ``<i>.monitor.csv`` (created), or ``None``.
        wrap_normalize: wrap in ``VecNormalize(norm_obs=True, norm_reward=False)`` if ``train.normalize_obs``.
        first_env: the run-wide index of the first env (a rollout process's share, :mod:`training.rollouts`):
            the Monitor CSVs are named by run-wide index (``batched-<first_env>`` for a batched share after the
            first).

    Returns:
        A ``VecEnv`` of ``train.n_envs`` envs: observations ``float32 (n_envs, 506)``, actions ``(n_envs,)`` of
        0..108.
    """
    if monitor_dir is not None:
        monitor_dir.mkdir(parents=True, exist_ok=True)
    fns: list[Callable[[], gym.Env]] = [
        EnvFactory(
            {**env.game_kwargs(n), "reward": train.reward},
            env.learner_seat,
            sampler,
            str(monitor_dir / f"{first_env + i}.monitor.csv") if monitor_dir is not None else None,
            None if train.vec_env == "dummy" else 1,
        )
        for i, n in enumerate(players_per_env(env, train.n_envs))
    ]
    venv = VEC_ENV_BUILDERS[train.vec_env](VecEnvRequest(env, train, fns, sampler, monitor_dir, first_env))
    if wrap_normalize and train.normalize_obs:
        venv = VecNormalize(venv, norm_obs=True, norm_reward=False)
    return venv
