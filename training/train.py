"""Train a MaskablePPO agent from a YAML config.

Usage::

    python -m training.train configs/ppo_4p.yaml [--set algo.learning_rate=1e-4 ...] [--resume RUN_DIR]

The config is read, overridden, type-checked and validated before anything
starts (:mod:`training.train_config`). A run writes ``<output_dir>/<name>/<timestamp>/``:

=========================  ====================================================
file                       content
=========================  ====================================================
``config.yaml``            the resolved config (``--set`` applied)
``command.txt``            the command line that started (or resumed) the run
``checkpoints/``           ``model_<steps>_steps.zip`` every ``checkpoint.every``
                           steps, at Ctrl-C/SIGTERM and at the end
``pool/``                  self-play snapshots (the newest ``pool_size``)
``best_model.zip``         the best score on the first evaluation line-up
``final_model.zip``        the model at the end of training (with ``checkpoint.average: K``,
                           the mean of the last K checkpoints' weights)
``tb/``                    TensorBoard logs
``monitor/``               one Monitor CSV per training env (episode reward and length)
``eval.csv``               every evaluation during training
``final_eval.csv``         the final arena table (each line-up, every seat)
``learning_curve.png``     mean penalty against each line-up over steps
``report.md``              the final table, training time and speed
``evaluations/<stamp>/``   later ``training.evaluate`` runs of its checkpoints
``run.lock(.json)``        the lock of a run in use, and who holds it
=========================  ====================================================

Every checkpoint stores the game rules it was trained on (``sixnimmt_game`` in
the zip's ``data``), which ``training.evaluate`` plays by default.

The command runs numpy with one BLAS thread (``OPENBLAS_NUM_THREADS=1`` unless set): the policy opponents'
forward passes run in the training process, whose core is already busy, and a second BLAS thread only contends.

Ctrl-C or SIGTERM (``timeout``, a job scheduler) saves a checkpoint and stops.
``--resume RUN_DIR`` continues from the newest checkpoint of that run that
loads (a damaged newest one is skipped with a warning) with its saved config,
up to ``train.total_timesteps``; ``--set train.total_timesteps=N`` (and
``train.max_minutes``) may be given with it to extend the budget of a run,
finished or not: its earlier report is kept as ``report_<steps>_steps.md``.
``train.max_minutes`` caps the wall time of training (the final report comes
after it). Times and speeds printed after a resume count the resumed part only.

A run folder in use is locked (``run.lock``, an operating-system file lock
that ends with the process, so a killed run leaves no lock behind; who holds
it is in ``run.lock.json``): a second ``--resume`` of the same run stops with a
message instead of training beside the first.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import sys
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

if __name__ == "__main__":  # the command: one BLAS thread before numpy loads (module docstring)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from training.train_config import ConfigError, TrainConfig, apply_override, dump_config, load_config

RESUME_OVERRIDES = ("train.total_timesteps", "train.max_minutes")
"""The keys ``--set`` may change with ``--resume``: the budget of the run."""


def add_overrides_option(p: argparse.ArgumentParser) -> None:
    """Add ``--set KEY=VALUE`` (repeatable, into ``args.overrides``: config overrides, :func:`load_config`)."""
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config key, e.g. algo.learning_rate=1e-4 (VALUE is parsed as YAML)",
    )


def _parser() -> argparse.ArgumentParser:
    from sixnimmt_env.cli import parser_kwargs

    p = argparse.ArgumentParser(**parser_kwargs("training.train"), description=__doc__.split("\n\n")[0])
    p.add_argument("config", nargs="?", help="YAML config, e.g. configs/ppo_4p.yaml")
    add_overrides_option(p)
    p.add_argument(
        "--resume",
        metavar="RUN_DIR",
        help="continue the run in RUN_DIR from its last good checkpoint (with --set train.total_timesteps=N to "
        "extend its budget)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar (e.g. in logs)")
    return p


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
        steps = _steps_of_checkpoint(path)
        if last is None or last - steps >= every / 2:
            chosen.append(path)
            last = steps
        if len(chosen) == count:
            break
    return chosen


def average_checkpoints(paths: list[Path]) -> dict[str, Any]:
    """The element-wise mean of the policy weights saved in the SB3 checkpoints ``paths`` (``checkpoint.average``).

    Floating-point tensors (weights, biases) are averaged in float64 and cast back to their dtype; any other
    tensor (an integer counter) is taken from ``paths[0]``. Averaging the weights of the last checkpoints of a
    run, a few million steps apart, is a free ensemble of the end of training (docs/training_speed.md measures it).

    Args:
        paths: at least one checkpoint of one policy layout (:func:`spaced_checkpoints`, newest first).

    Returns:
        A ``state_dict`` for ``model.policy.load_state_dict``.

    Raises:
        ValueError: no path, or checkpoints whose policies have other parameter names or shapes (naming both).
    """
    from stable_baselines3.common.save_util import load_from_zip_file

    if not paths:
        raise ValueError("average_checkpoints: no checkpoint to average")
    states = [load_from_zip_file(p, load_data=False, device="cpu")[1]["policy"] for p in paths]
    first = states[0]
    layout = {k: v.shape for k, v in first.items()}
    for path, state in zip(paths[1:], states[1:], strict=True):
        if {k: v.shape for k, v in state.items()} != layout:
            raise ValueError(f"average_checkpoints: {path.name} holds another policy than {paths[0].name}")
    return {
        k: (sum(s[k].double() for s in states) / len(states)).to(v.dtype) if v.is_floating_point() else v
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


def _check_output_dir(output_dir: str) -> None:
    """``train.output_dir`` must be a folder that exists or can be created, and writable (checked before work)."""
    path = Path(output_dir)
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        raise ConfigError(f"train.output_dir {output_dir!r}: {str(probe)!r} is a file, not a folder")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise ConfigError(f"train.output_dir {output_dir!r}: {str(probe)!r} is not writable")


def new_run_dir(cfg: TrainConfig) -> Path:
    _check_output_dir(cfg.train.output_dir)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    base = Path(cfg.train.output_dir) / cfg.name
    for k in range(1000):  # two runs started in the same second get -1, -2, ...: mkdir decides who has which
        run_dir = base / (stamp if k == 0 else f"{stamp}-{k}")
        try:
            run_dir.mkdir(parents=True)
            return run_dir
        except FileExistsError:
            continue
        except OSError as e:
            raise ConfigError(f"train.output_dir {cfg.train.output_dir!r}: cannot create {run_dir}: {e}") from None
    raise ConfigError(f"train.output_dir {cfg.train.output_dir!r}: no free run folder name under {base}")


class RunInUse(ConfigError):
    """Another process holds the lock: it trains in this run folder (or into this weights file)."""


@contextlib.contextmanager
def held_lock(lock_path: Path, what: str, command: str, by: str = "another training") -> Iterator[None]:
    """Hold the operating-system lock ``lock_path`` (``filelock``) while the block runs, with the holder's details in
    ``lock_path`` + ``.json``.

    The lock ends with the process that holds it, so a killed process leaves nothing that blocks a later one; the
    ``.json`` file is only informative (deleted when the block ends).

    Raises:
        RunInUse: ``"{what} is in use by {by} (pid, host, start time, command)"``.
    """
    from sixnimmt_env.locks import LockHeld, ProcessLock, describe

    lock = ProcessLock(lock_path, command=command)
    try:
        lock.acquire()
    except LockHeld as e:
        known = describe(e.holder)
        holder = f"{known[:-1]}: {e.holder['command']})" if known and "command" in e.holder else known
        raise RunInUse(f"{what} is in use by {by}{holder}; wait for it to end or stop it first") from None
    try:
        yield
    finally:
        lock.release()


def run_lock(run_dir: Path, command: str) -> contextlib.AbstractContextManager[None]:
    """Hold the run folder's lock while training (``run.lock``; holder details in ``run.lock.json``;
    :func:`held_lock`).

    Raises:
        RunInUse: naming the process (pid, host, start time, command) that trains in ``run_dir``.
    """
    return held_lock(run_dir / "run.lock", f"run folder {run_dir}", command)


def train(cfg: TrainConfig, run_dir: Path, resume_from: Path | None = None, progress: bool = True) -> dict[str, Any]:
    """Train per ``cfg`` into ``run_dir`` (which must hold ``config.yaml``); returns a summary.

    Args:
        cfg: a validated config.
        run_dir: the run folder.
        resume_from: a checkpoint to continue from (its ``num_timesteps`` counts toward the budget).
        progress: show the tqdm bar.

    Returns:
        ``{"run_dir", "steps", "start_steps", "session_steps", "seconds", "steps_per_second", "interrupted",
        "signal", "timed_out", "checkpoint", "final_model", "best_model"}``: ``seconds`` and
        ``steps_per_second`` count this session only (``session_steps`` steps from ``start_steps``).

        With ``train.backend: rllib`` the run is :func:`training.rllib.backend.train_rllib`'s.
    """
    if cfg.train.backend == "rllib":
        from training.rllib.backend import train_rllib

        return train_rllib(cfg, run_dir, resume_from, progress)
    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.callbacks import CallbackList

    from sixnimmt_env.agents import Agent
    from training.callbacks import ArenaEval, CheckpointEvery, Progress, SelfPlaySnapshots, save_model
    from training.evaluate import evaluate_lineups, write_report
    from training.lifecycle import StopSignals, Terminated
    from training.opponents import SnapshotPool, sampler_from_config
    from training.policy import algo_kwargs, custom_objects
    from training.rollouts import resolve_workers
    from training.vec import build_vec_env

    torch.set_num_threads(cfg.train.torch_threads)
    pool = SnapshotPool(run_dir / "pool", cfg.self_play.pool_size) if cfg.self_play.enabled else None
    if resume_from is not None:
        _set_aside_monitor_logs(run_dir / "monitor", resume_from)
    workers = resolve_workers(cfg)
    algorithm: type[MaskablePPO] = MaskablePPO
    if workers > 1:  # rollouts in worker processes while the learner updates (training/rollouts.py)
        from training.rollouts import AsyncMaskablePPO, RolloutWorkers

        algorithm = AsyncMaskablePPO
        venv: Any = RolloutWorkers(
            cfg, workers, cfg.algo.n_steps, cfg.algo.gamma, run_dir / "monitor", [] if pool is None else pool.paths
        )
    else:
        venv = build_vec_env(cfg, run_dir / "monitor", [] if pool is None else pool.paths)
    try:  # the rollout processes are already running: stop them if the set-up fails
        seed = cfg.train.seed
        if resume_from is not None:
            from stable_baselines3.common.vec_env import VecNormalize

            model = algorithm.load(
                resume_from,
                env=venv,
                device=cfg.train.device,
                tensorboard_log=str(run_dir / "tb"),
                custom_objects=custom_objects(resume_from),
            )
            seed = cfg.train.seed + model.num_timesteps  # continue the seed stream past the steps already played
            model.set_random_seed(seed)
            norm_file = resume_from.with_name(resume_from.stem + ".obsnorm.npz")
            if isinstance(venv, VecNormalize) and norm_file.is_file():
                import numpy as np

                with np.load(norm_file) as f:
                    venv.obs_rms.mean, venv.obs_rms.var = f["mean"], f["var"]
        else:
            model = algorithm(
                env=venv,
                seed=seed,
                device=cfg.train.device,
                tensorboard_log=str(run_dir / "tb"),
                verbose=0,
                **algo_kwargs(cfg),
            )
            if cfg.train.init_from is not None:
                init_policy(model, cfg.train.init_from)
            if cfg.distill.enabled:
                from training.distill import distill_into

                distill_into(model.policy, cfg, run_dir / "distill", log=lambda line: print(line, file=sys.stderr))
                save_model(model, run_dir / "distill" / "distilled.zip")
    except BaseException:
        with contextlib.suppress(Exception):
            venv.close()
        raise
    game = cfg.env.game_kwargs()
    # the rules travel with every checkpoint (the zip's data JSON): training.evaluate reads them
    model.sixnimmt_game = {**game, "num_players": cfg.env.num_players}

    def evaluate(learner: Agent, pause: Callable[[], object] | None) -> list[dict[str, Any]]:
        return evaluate_lineups(learner, cfg.eval.opponents, cfg.eval.games, game, seed=cfg.train.seed, pause=pause)

    # with rollout processes, the evaluations run while the learner waits for them (RolloutWorkers.idle)
    evaluator = ArenaEval(cfg.eval.every, run_dir, evaluate, gate=getattr(venv, "idle", None))
    callbacks = [
        evaluator,
        CheckpointEvery(cfg.checkpoint.every, run_dir / "checkpoints"),
    ]
    if pool is not None:
        callbacks.append(
            SelfPlaySnapshots(cfg.self_play.snapshot_every, pool, lambda paths: sampler_from_config(cfg, paths))
        )
    max_seconds = None if cfg.train.max_minutes is None else 60.0 * cfg.train.max_minutes
    bar = Progress(cfg.train.total_timesteps, evaluator, disable=not progress, max_seconds=max_seconds)
    callbacks.append(bar)
    remaining = cfg.train.total_timesteps - model.num_timesteps
    start = time.perf_counter()
    start_steps = model.num_timesteps
    interrupted = False
    stop_signal = None
    try:
        with StopSignals(at_once=True):
            if remaining > 0:
                model.learn(
                    remaining,
                    callback=CallbackList(callbacks),
                    reset_num_timesteps=resume_from is None,
                    tb_log_name="ppo",
                )
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
    summary: dict[str, Any] = {
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
    if interrupted:
        print(
            f"\nstopped by {stop_signal} at {steps:,} steps: checkpoint {ckpt}; continue with --resume {run_dir}",
            file=sys.stderr,
        )
        return summary
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
    write_report(cfg, run_dir, final, summary)
    return summary


def init_policy(model: Any, checkpoint: str | Path) -> None:
    """Copy the policy weights of the SB3 checkpoint ``checkpoint`` into ``model``'s policy (``train.init_from``).

    A ``.npz`` file is an actor's weights (:func:`training.train_champion.export`, e.g. ``sixnimmt_env/champion.npz``):
    the actor is copied and the critic's MLP starts as a copy of the actor's (:func:`training.policy.load_actor`).

    Raises:
        ConfigError: the checkpoint does not load, or its policy does not have the same parameters and shapes.
    """
    from sb3_contrib import MaskablePPO

    if Path(checkpoint).suffix == ".npz":
        from training.policy import load_actor

        try:
            load_actor(model.policy, checkpoint)
        except ValueError as exc:
            raise ConfigError(f"train.init_from {str(checkpoint)!r}: {exc}") from exc
        return

    from training.policy import custom_objects

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
    import re

    found = re.search(r"- steps: ([\d,]+)", report.read_text())
    steps = found.group(1).replace(",", "") if found else "earlier"
    for name, suffix in (("report", ".md"), ("final_eval", ".csv")):
        old = run_dir / f"{name}{suffix}"
        if old.is_file():
            old.rename(run_dir / f"{name}_{steps}_steps{suffix}")


def _resume_config(run_dir: Path, overrides: list[str]) -> tuple[TrainConfig, list[str]]:
    """The saved config of ``run_dir`` with the allowed budget overrides applied (written back to config.yaml
    by the caller); returns it and a note per change."""
    import yaml

    from training.train_config import parse_config

    for assignment in overrides:
        key = assignment.split("=", 1)[0].strip()
        if key not in RESUME_OVERRIDES:
            raise ConfigError(
                f"--resume continues a run with its saved config: --set {key} is not allowed (only "
                f"{', '.join(RESUME_OVERRIDES)}, to extend its budget); start a new run to change anything else"
            )
    path = run_dir / "config.yaml"
    cfg = load_config(path)
    if not overrides:
        return cfg, []
    raw = yaml.safe_load(path.read_text())
    for assignment in overrides:
        apply_override(raw, assignment, f"{path} (--set {assignment})")
    new = parse_config(raw, str(path))
    notes = [
        f"{key}: {old} -> {value}"
        for key, old, value in (
            ("train.total_timesteps", cfg.train.total_timesteps, new.train.total_timesteps),
            ("train.max_minutes", cfg.train.max_minutes, new.train.max_minutes),
        )
        if old != value
    ]
    return new, notes


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit code (2 for a config error or a run in use, 130 when stopped)."""
    args = _parser().parse_args(argv)
    import training.ppo_agents  # noqa: F401  (registers the ppo: agent specs before configs are checked)

    command = "python -m training.train " + " ".join(shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv))
    with contextlib.ExitStack() as stack:
        try:
            if args.resume:
                run_dir = Path(args.resume)
                if args.config:
                    raise ConfigError("--resume continues a run with its saved config: give no config file")
                if not (run_dir / "config.yaml").is_file():
                    raise ConfigError(f"--resume {run_dir}: no config.yaml there; is it a run folder?")
                stack.enter_context(run_lock(run_dir, command))
                cfg, changes = _resume_config(run_dir, args.overrides)
                if cfg.train.backend == "rllib":
                    from training.rllib.backend import last_rllib_checkpoint

                    resume_from, skipped = last_rllib_checkpoint(run_dir)
                else:
                    resume_from, skipped = last_good_checkpoint(run_dir)
                for warning in skipped:
                    print(f"warning: {warning}", file=sys.stderr)
                done = _steps_of_checkpoint(resume_from)
                if changes and cfg.train.total_timesteps <= done:
                    raise ConfigError(
                        f"--resume {run_dir}: train.total_timesteps={cfg.train.total_timesteps:,} is not above the "
                        f"{done:,} steps already trained ({resume_from.name}); give a larger budget"
                    )
                if changes:
                    dump_config(cfg, run_dir / "config.yaml")
                    print("new budget: " + "; ".join(changes), file=sys.stderr)
                elif done >= cfg.train.total_timesteps and (
                    (run_dir / "final_model.zip").is_file() or (run_dir / "final_model").is_dir()
                ):
                    raise ConfigError(
                        f"--resume {run_dir}: the run is finished ({done:,} of train.total_timesteps="
                        f"{cfg.train.total_timesteps:,} steps); extend it with "
                        f"--set train.total_timesteps=<more than {done}>"
                    )
            else:
                if not args.config:
                    raise ConfigError("give a config file, e.g. configs/ppo_4p.yaml")
                cfg = load_config(args.config, args.overrides)
                run_dir = new_run_dir(cfg)
                stack.enter_context(run_lock(run_dir, command))
                resume_from = None
                dump_config(cfg, run_dir / "config.yaml")
        except ConfigError as e:
            print(f"{'error' if isinstance(e, RunInUse) else 'config error'}: {e}", file=sys.stderr)
            return 2
        with (run_dir / "command.txt").open("a") as f:
            f.write(command + "\n")
        print(f"run folder: {run_dir}", file=sys.stderr)
        if resume_from is not None:
            print(f"resuming from {resume_from}", file=sys.stderr)
        try:
            summary = train(cfg, run_dir, resume_from, progress=not args.no_progress)
        except ConfigError as e:  # found only when the run starts (e.g. init_from's policy shapes)
            print(f"config error: {e}; run folder {run_dir} holds no model", file=sys.stderr)
            return 2
    resumed = f" (resumed at {summary['start_steps']:,})" if summary["start_steps"] else ""
    print(
        f"{summary['session_steps']:,} steps in {summary['seconds']:.0f} s ({summary['steps_per_second']:,.0f} "
        f"steps/s){resumed}; {summary['steps']:,} in all; run folder {run_dir}",
        file=sys.stderr,
    )
    return 130 if summary["interrupted"] else 0


def _steps_of_checkpoint(path: Path) -> int:
    return int(path.stem.split("_")[1])


if __name__ == "__main__":
    sys.exit(main())
