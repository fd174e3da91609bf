"""The SB3 backend (``train.backend: sb3``, the default): MaskablePPO trained from a config, in one process or with
rollout processes beside the learner (``train.workers``, :mod:`training.rollouts`).

:func:`train_sb3` is the backend's entry, called by the pipeline (:func:`training.train.train`) with the run folder
claimed and ``config.yaml`` written. It builds the vector env (:func:`training.vec.build_vec_env`) and the model
(new, from ``train.init_from``, distilled from ``mc:N`` first with ``distill.enabled``, or resumed from a
checkpoint), trains with the callbacks of :mod:`training.callbacks` (arena evaluations, checkpoints, self-play
snapshots, the progress bar and the wall-time budget), and saves ``final_model.zip`` (with ``checkpoint.average: K``,
the mean of the last K checkpoints' weights, :func:`average_checkpoints`). The pipeline writes the report from what
it returns (:class:`training.lifecycle.Trained`).

Every checkpoint stores the game rules it was trained on (``sixnimmt_game`` in the zip's ``data``), which
``training.evaluate`` plays by default. ``--resume`` continues from the newest checkpoint that loads
(:func:`last_good_checkpoint`), its seed stream past the steps already played.
"""

from __future__ import annotations

import contextlib
import re
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import torch
from sb3_contrib import MaskablePPO
from stable_baselines3.common.callbacks import BaseCallback, CallbackList
from stable_baselines3.common.vec_env import VecEnv

from sixnimmt_env.agents import Agent
from sixnimmt_env.rules.engine import GameConfig
from training.callbacks import ArenaEval, CheckpointEvery, CurrentSelfSync, Progress, SelfPlaySnapshots, save_model
from training.config.schema import AlgoSection, ConfigError, EnvSection, TrainSection
from training.evaluate import METADATA_KEY, evaluate_lineups
from training.lifecycle import StopSignals, Terminated, Trained, checkpoint_steps
from training.opponents import MixtureSampler, SnapshotPool, mixture_sampler
from training.policy import algo_kwargs, custom_objects
from training.rollouts import resolve_workers
from training.vec import build_vec_env

if TYPE_CHECKING:
    from training.config.schema import TrainConfig


def checkpoints(run_dir: Path) -> list[Path]:
    """The checkpoints ``run_dir/checkpoints/model_<steps>_steps.zip``, newest (most steps) first."""
    found = []
    for p in (run_dir / "checkpoints").glob("model_*_steps.zip"):
        parts = p.stem.split("_")
        if len(parts) == 3 and parts[1].isdigit():
            found.append((int(parts[1]), p))
    return [p for _, p in sorted(found, reverse=True)]


def spaced_checkpoints(run_dir: Path, count: int, every: int) -> list[Path]:
    """The newest ``count`` checkpoints of ``run_dir`` at least ``every / 2`` steps apart, newest first: the one
    written at the end of training, then the periodic ones before it (a periodic checkpoint a few steps before the
    end one is skipped, so that no weights count twice in :func:`average_checkpoints`)."""
    chosen: list[Path] = []
    last = None
    for path in checkpoints(run_dir):
        steps = checkpoint_steps(path)
        if last is None or last - steps >= every / 2:
            chosen.append(path)
            last = steps
        if len(chosen) == count:
            break
    return chosen


def _policy_state(path: Path) -> dict[str, torch.Tensor]:
    """The policy's ``state_dict`` saved in the SB3 checkpoint ``path`` (on the CPU)."""
    from stable_baselines3.common.save_util import load_from_zip_file

    params = load_from_zip_file(path, load_data=False, device="cpu")[1]
    # SB3 types each entry of the params as one tensor; an entry is a module's whole state_dict
    return cast("dict[str, torch.Tensor]", params["policy"])


def average_checkpoints(paths: list[Path]) -> dict[str, torch.Tensor]:
    """The element-wise mean of the policy weights saved in the SB3 checkpoints ``paths`` (``checkpoint.average``).

    Floating-point tensors (weights, biases) are averaged in float64 and cast back to their dtype; any other
    tensor (an integer counter) is taken from ``paths[0]``. Averaging the weights of the last checkpoints of a
    run, a few million steps apart, is a free ensemble of the end of training (lab/docs/training_speed.md measures
    it).

    Args:
        paths: at least one checkpoint of one policy layout (:func:`spaced_checkpoints`, newest first).

    Returns:
        A ``state_dict`` for ``model.policy.load_state_dict``.

    Raises:
        ValueError: no path, or checkpoints whose policies have other parameter names or shapes (naming both).
    """
    if not paths:
        raise ValueError("average_checkpoints: no checkpoint to average")
    states = [_policy_state(p) for p in paths]
    first = states[0]
    layout = {k: v.shape for k, v in first.items()}
    for path, state in zip(paths[1:], states[1:], strict=True):
        if {k: v.shape for k, v in state.items()} != layout:
            raise ValueError(f"average_checkpoints: {path.name} holds another policy than {paths[0].name}")
    zero = torch.zeros((), dtype=torch.float64)  # the sum's start (0 + x is x)
    return {
        k: (sum((s[k].double() for s in states), zero) / len(states)).to(v.dtype) if v.is_floating_point() else v
        for k, v in first.items()
    }


def last_checkpoint(run_dir: Path) -> Path | None:
    """The checkpoint of ``run_dir/checkpoints`` with the most steps, or ``None``."""
    found = checkpoints(run_dir)
    return found[0] if found else None


def last_good_checkpoint(run_dir: Path) -> tuple[Path, list[str]]:
    """The newest checkpoint of ``run_dir`` that loads, and one warning per newer damaged one skipped.

    Raises:
        ConfigError: no checkpoint, or none that loads (naming each and why).
    """
    from training.ppo_agents import load_policy_agent

    found = checkpoints(run_dir)
    if not found:
        raise ConfigError(f"{run_dir}: no checkpoint to resume from in {run_dir / 'checkpoints'}")
    skipped = []
    for path in found:
        try:  # a damaged checkpoint or one of an earlier policy layout: skip it, say so
            load_policy_agent(f"ppo:{path}")
        except ValueError as e:
            skipped.append(f"skipping damaged checkpoint {path.name}: {str(e).splitlines()[0]}")
            continue
        return path, skipped
    raise ConfigError(f"--resume {run_dir}: no checkpoint loads; " + "; ".join(skipped))


def init_policy(model: Any, checkpoint: str | Path) -> None:
    """Copy the policy weights of the SB3 checkpoint ``checkpoint`` into ``model``'s policy (``train.init_from``).

    A ``.npz`` file is an actor's weights (``python -m lab.train_champion --export``, e.g.
    ``sixnimmt_env/champion.npz``): the actor is copied and the critic's MLP starts as a copy of the actor's
    (:func:`training.policy.load_actor`).

    Raises:
        ConfigError: the checkpoint does not load, or its policy does not have the same parameters and shapes.
    """
    if Path(checkpoint).suffix == ".npz":
        from training.policy import load_actor

        try:
            load_actor(model.policy, checkpoint)
        except ValueError as exc:
            raise ConfigError(f"train.init_from {str(checkpoint)!r}: {exc}") from exc
        return

    try:
        source = MaskablePPO.load(checkpoint, device=model.device, custom_objects=custom_objects(checkpoint))
    except Exception as exc:  # a damaged or foreign file: say which and why
        raise ConfigError(f"train.init_from {str(checkpoint)!r} does not load: {exc}") from exc
    theirs, ours = source.policy.state_dict(), model.policy.state_dict()
    mismatch = [k for k in ours if k not in theirs or theirs[k].shape != ours[k].shape]
    if mismatch or set(theirs) - set(ours):
        raise ConfigError(
            f"train.init_from {str(checkpoint)!r}: its policy differs from the config's "
            f"(parameters {sorted(mismatch or set(theirs) - set(ours))[:4]}); use the same algo.policy and net_arch"
        )
    model.policy.load_state_dict(theirs)


def _set_aside_monitor_logs(monitor_dir: Path, resume_from: Path) -> None:
    """Rename a resumed run's Monitor CSVs to ``<name>.until_<steps>_steps.monitor.csv``: each session writes
    its own files, each with the header SB3's ``load_results`` reads (it reads every ``*monitor.csv``)."""
    steps = resume_from.stem.split("_")[1]
    if not monitor_dir.is_dir():
        return
    for path in monitor_dir.glob("*.monitor.csv"):
        if ".until_" in path.name:
            continue
        target = path.with_name(path.name.replace(".monitor.csv", f".until_{steps}_steps.monitor.csv"))
        k = 1
        while target.exists():
            target = path.with_name(path.name.replace(".monitor.csv", f".until_{steps}_steps-{k}.monitor.csv"))
            k += 1
        path.rename(target)


def _keep_earlier_report(run_dir: Path) -> None:
    """Before an extended run writes its final files, keep the earlier report as ``report_<steps>_steps.md``
    (and ``final_eval_<steps>_steps.csv``); the earlier final model stays as ``checkpoints/model_<steps>_steps.zip``."""
    report = run_dir / "report.md"
    if not report.is_file():
        return
    found = re.search(r"- steps: ([\d,]+)", report.read_text())
    steps = found.group(1).replace(",", "") if found else "earlier"
    for name, suffix in (("report", ".md"), ("final_eval", ".csv")):
        old = run_dir / f"{name}{suffix}"
        if old.is_file():
            old.rename(run_dir / f"{name}_{steps}_steps{suffix}")


def _training_env(
    env: EnvSection, train: TrainSection, algo: AlgoSection, sampler: MixtureSampler, workers: int, monitor_dir: Path
) -> tuple[type[MaskablePPO], VecEnv]:
    """The algorithm class and the env it trains on: with ``workers`` >= 2 processes, :class:`AsyncMaskablePPO` and
    the rollout processes (:class:`training.rollouts.RolloutWorkers`, started here); else MaskablePPO and the vector
    env of :func:`training.vec.build_vec_env`."""
    if workers > 1:  # rollouts in worker processes while the learner updates (training/rollouts.py)
        from training.rollouts import AsyncMaskablePPO, RolloutWorkers

        venv = RolloutWorkers(env, train, sampler, workers, algo.n_steps, algo.gamma, monitor_dir)
        return AsyncMaskablePPO, venv
    return MaskablePPO, build_vec_env(env, train, sampler, monitor_dir)


def _model(
    algorithm: type[MaskablePPO],
    venv: VecEnv,
    algo: AlgoSection,
    train: TrainSection,
    run_dir: Path,
    resume_from: Path | None,
) -> MaskablePPO:
    """The model: loaded from ``resume_from`` (its seed stream continued past the steps it played, its observation
    statistics restored), or new per ``algo`` and seeded ``train.seed``, started from ``train.init_from`` if set.

    Raises:
        ConfigError: ``train.init_from`` does not load or does not fit (:func:`init_policy`).
    """
    if resume_from is not None:
        from stable_baselines3.common.running_mean_std import RunningMeanStd
        from stable_baselines3.common.vec_env import VecNormalize

        model = algorithm.load(
            resume_from,
            env=venv,
            device=train.device,
            tensorboard_log=str(run_dir / "tb"),
            custom_objects=custom_objects(resume_from),
        )
        model.set_random_seed(train.seed + model.num_timesteps)  # the seed stream past the steps already played
        norm_file = resume_from.with_name(resume_from.stem + ".obsnorm.npz")
        if isinstance(venv, VecNormalize) and norm_file.is_file():
            import numpy as np

            rms = venv.obs_rms
            assert isinstance(rms, RunningMeanStd)  # one Box observation: one statistic
            with np.load(norm_file) as f:
                rms.mean, rms.var = f["mean"], f["var"]
        return model
    model = algorithm(
        env=venv,
        seed=train.seed,
        device=train.device,
        tensorboard_log=str(run_dir / "tb"),
        verbose=0,
        **algo_kwargs(algo),
    )
    if train.init_from is not None:
        init_policy(model, train.init_from)
    return model


def _learn(
    model: MaskablePPO,
    venv: VecEnv,
    callbacks: list[BaseCallback],
    evaluator: ArenaEval,
    bar: Progress,
    total_timesteps: int,
    fresh: bool,
    run_dir: Path,
) -> dict[str, Any]:
    """Train ``model`` up to ``total_timesteps`` steps (``fresh``: counted from 0), stop on Ctrl-C or SIGTERM
    (the evaluation in flight finished first), save ``checkpoints/model_<steps>_steps.zip`` and close ``venv``.

    Returns:
        The session's summary: ``run_dir``, ``steps``, ``start_steps``, ``session_steps``, ``seconds``,
        ``steps_per_second``, ``interrupted``, ``signal``, ``timed_out``, ``checkpoint``, ``workers``.
    """
    remaining = total_timesteps - model.num_timesteps
    start = time.perf_counter()
    start_steps = model.num_timesteps
    interrupted = False
    stop_signal = None
    try:
        with StopSignals(at_once=True):
            if remaining > 0:
                model.learn(remaining, callback=CallbackList(callbacks), reset_num_timesteps=fresh, tb_log_name="ppo")
    except KeyboardInterrupt as e:
        interrupted = True
        stop_signal = "SIGTERM" if isinstance(e, Terminated) else "Ctrl-C"
        if bar.bar is not None:
            bar.bar.close()
        # an evaluation running in the background (a fraction of a second) is finished, so its row is kept; one
        # that fails does not stop the checkpoint below
        with contextlib.suppress(Exception):
            evaluator.finish()
    seconds = time.perf_counter() - start
    steps = model.num_timesteps
    ckpt = save_model(model, run_dir / "checkpoints" / f"model_{steps}_steps.zip")
    with contextlib.suppress(EOFError, BrokenPipeError, ConnectionResetError):  # workers gone after Ctrl-C
        venv.close()
    return {
        "run_dir": str(run_dir),
        "steps": steps,
        "start_steps": start_steps,
        "session_steps": steps - start_steps,
        "seconds": seconds,
        "steps_per_second": (steps - start_steps) / max(seconds, 1e-9),
        "interrupted": interrupted,
        "signal": stop_signal,
        "timed_out": bar.timed_out,
        "checkpoint": str(ckpt),
        "workers": 1 + getattr(venv, "processes", 0),
    }


def report_lines(name: str, run_dir: Path, model: Path, summary: Mapping[str, Any]) -> list[str]:
    """The report's lines about an SB3 run (``name``: the config's): steps, speed, processes, the final model."""
    return [
        f"# Training report: {name}",
        "",
        f"- run folder: `{run_dir}`",
        f"- steps: {summary['steps']:,}"
        + (
            f" (resumed at {summary['start_steps']:,}: this session {summary['session_steps']:,} steps"
            if summary.get("start_steps")
            else " (trained"
        )
        + f" in {summary['seconds']:.0f} s, {summary['steps_per_second']:,.0f} env steps/s during learn, "
        "evaluations included)" + (" (stopped by train.max_minutes)" if summary.get("timed_out") else ""),
        *(
            [f"- processes: {summary['workers']} (train.workers: the learner and {summary['workers'] - 1} rollout)"]
            if summary.get("workers", 1) > 1
            else []
        ),
        f"- model: `{model.name}`"
        + (f" (the mean of the weights of {', '.join(summary['averaged'])})" if summary.get("averaged") else "")
        + "; best during training: `best_model.zip`",
        "",
    ]


def train_sb3(cfg: TrainConfig, run_dir: Path, resume_from: Path | None = None, progress: bool = True) -> Trained:
    """Train MaskablePPO per ``cfg`` into ``run_dir`` (the backend's entry; see the module docstring).

    Args:
        cfg: a validated config with ``train.backend: sb3``.
        run_dir: the run folder (holding ``config.yaml``).
        resume_from: a checkpoint to continue from (its ``num_timesteps`` counts toward the budget).
        progress: show the tqdm bar.

    Returns:
        The session (:class:`training.lifecycle.Trained`): its summary (``run_dir``, ``steps``, ``start_steps``,
        ``session_steps``, ``seconds``, ``steps_per_second``, ``interrupted``, ``signal``, ``timed_out``,
        ``checkpoint``, ``workers``, with ``averaged``, ``final_model`` and ``best_model`` when not interrupted;
        ``seconds`` and ``steps_per_second`` count this session only), the report's lines and the final model as
        ``ppo:PATH``.

    Raises:
        ConfigError: ``train.init_from`` does not load or does not fit the config's policy.
    """
    torch.set_num_threads(cfg.train.torch_threads)
    sp = cfg.self_play
    pool = SnapshotPool(run_dir / "pool", sp.pool_size, sp.pool == "growing", sp.snapshot_every) if sp.enabled else None
    if resume_from is not None:
        _set_aside_monitor_logs(run_dir / "monitor", resume_from)
    sampler = mixture_sampler(cfg.opponents, cfg.self_play, cfg.train.opponent_draw, [] if pool is None else pool.paths)
    workers = resolve_workers(cfg.train)
    algorithm, venv = _training_env(cfg.env, cfg.train, cfg.algo, sampler, workers, run_dir / "monitor")
    try:  # the rollout processes are already running: stop them if the set-up fails
        model = _model(algorithm, venv, cfg.algo, cfg.train, run_dir, resume_from)
        if resume_from is None and cfg.distill.enabled:
            from training.distill import distill_into

            game_rules = GameConfig(**cfg.env.game_kwargs())
            distill_into(
                model.policy,
                cfg.distill,
                game_rules,
                cfg.train.seed,
                run_dir / "distill",
                log=lambda line: print(line, file=sys.stderr),
            )
            save_model(model, run_dir / "distill" / "distilled.zip")
    except BaseException:
        with contextlib.suppress(Exception):
            venv.close()
        raise
    game = cfg.env.game_kwargs()
    # the rules travel with every checkpoint (the zip's data JSON): training.evaluate reads them
    setattr(model, METADATA_KEY, {**game, "num_players": cfg.env.num_players})
    ev, seed = cfg.eval, cfg.train.seed

    def evaluate(learner: Agent, pause: Callable[[], object] | None) -> list[dict[str, Any]]:
        return evaluate_lineups(learner, ev.opponents, ev.games, game, seed=seed, pause=pause)

    # with rollout processes, the evaluations run while the learner waits for them (RolloutWorkers.idle)
    evaluator = ArenaEval(ev.every, run_dir, evaluate, gate=getattr(venv, "idle", None))
    callbacks: list[BaseCallback] = [evaluator, CheckpointEvery(cfg.checkpoint.every, run_dir / "checkpoints")]
    if pool is not None:
        callbacks.append(SelfPlaySnapshots(cfg.self_play.snapshot_every, pool, sampler.with_pool))
    if sampler.current is not None and workers == 1:  # rollout processes refresh their own (training.rollouts)
        callbacks.append(CurrentSelfSync(sampler.current))
    max_seconds = None if cfg.train.max_minutes is None else 60.0 * cfg.train.max_minutes
    bar = Progress(cfg.train.total_timesteps, evaluator, disable=not progress, max_seconds=max_seconds)
    callbacks.append(bar)
    summary = _learn(model, venv, callbacks, evaluator, bar, cfg.train.total_timesteps, resume_from is None, run_dir)
    if summary["interrupted"]:
        print(
            f"\nstopped by {summary['signal']} at {summary['steps']:,} steps: checkpoint {summary['checkpoint']}; "
            f"continue with --resume {run_dir}",
            file=sys.stderr,
        )
        return Trained(summary)
    _keep_earlier_report(run_dir)
    if cfg.checkpoint.average > 1:
        averaged = spaced_checkpoints(run_dir, cfg.checkpoint.average, cfg.checkpoint.every)
        model.policy.load_state_dict(average_checkpoints(averaged))
        summary["averaged"] = [p.name for p in averaged]
    final = save_model(model, run_dir / "final_model.zip")
    best = run_dir / "best_model.zip"
    if not best.is_file():  # no evaluation ran during training (tiny budget): the final model is the best known
        save_model(model, best)
    summary["final_model"] = str(final)
    summary["best_model"] = str(best)
    return Trained(summary, report_lines(cfg.name, run_dir, final, summary), f"ppo:{final}")
