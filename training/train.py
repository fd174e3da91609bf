"""Train an agent from a YAML config: MaskablePPO (``train.backend: sb3``) or Ray RLlib's PPO (``rllib``).

Usage::

    python -m training.train configs/ppo_4p.yaml [--set algo.learning_rate=1e-4 ...] [--resume RUN_DIR]

:func:`train` is the pipeline: the config is read, overridden, type-checked and validated before anything starts
(:mod:`training.config`), the run folder is claimed (created and locked, ``config.yaml`` written), the backend
trains (:func:`training.sb3_backend.train_sb3`, :func:`training.rllib.backend.train_rllib`), and the report is written
(:func:`training.evaluate.finish_report`). A run writes ``<output_dir>/<name>/<timestamp>/``:

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
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

if __name__ == "__main__":  # the command: one BLAS thread before numpy loads (module docstring)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from training.config import ConfigError, TrainConfig, apply_override, dump_config, load_config, parse_config
from training.lifecycle import Trained, checkpoint_steps

RESUME_OVERRIDES = ("train.total_timesteps", "train.max_minutes")
"""The keys ``--set`` may change with ``--resume``: the budget of the run."""


def add_overrides_option(p: argparse.ArgumentParser) -> None:
    """Add ``--set KEY=VALUE`` (repeatable, into ``args.overrides``: config overrides,
    :func:`training.config.loader.load_config`)."""
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config key, e.g. algo.learning_rate=1e-4 (VALUE is parsed as YAML)",
    )


EXAMPLES = (
    "configs/ppo_4p.yaml",
    "configs/smoke.yaml --set train.total_timesteps=2e4 --set algo.learning_rate=1e-4",
    "--resume runs/ppo_4p/<stamp> --set train.total_timesteps=20e6",
)
"""Typical arguments of the command (``sixnimmt train`` or ``python -m training.train``), shown by its ``--help``."""


def _parser() -> argparse.ArgumentParser:
    from sixnimmt_env.cli import parser_kwargs

    p = argparse.ArgumentParser(**parser_kwargs("training.train", EXAMPLES), description=__doc__.split("\n\n")[0])
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


def new_run_dir(output_dir: str, name: str) -> Path:
    """A new run folder ``<output_dir>/<name>/<stamp>`` (``-1``, ``-2``, ... when another run took the stamp).

    Raises:
        ConfigError: ``output_dir`` is a file or not writable, or the folder cannot be created.
    """
    _check_output_dir(output_dir)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    base = Path(output_dir) / name
    for k in range(1000):  # two runs started in the same second get -1, -2, ...: mkdir decides who has which
        run_dir = base / (stamp if k == 0 else f"{stamp}-{k}")
        try:
            run_dir.mkdir(parents=True)
            return run_dir
        except FileExistsError:
            continue
        except OSError as e:
            raise ConfigError(f"train.output_dir {output_dir!r}: cannot create {run_dir}: {e}") from None
    raise ConfigError(f"train.output_dir {output_dir!r}: no free run folder name under {base}")


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


Backend = tuple[Callable[[TrainConfig, Path, Path | None, bool], Trained], Callable[[Path], tuple[Path, list[str]]]]
"""A backend's entry (``(cfg, run_dir, resume_from, progress) -> Trained``) and its finder of the checkpoint to
resume from (``run_dir -> (checkpoint, warnings)``)."""


def backend(name: str) -> Backend:
    """The backend of ``train.backend`` ``name`` (``sb3`` or ``rllib``), imported now: torch and SB3, or Ray."""
    if name == "rllib":
        from training.rllib.backend import last_rllib_checkpoint, train_rllib

        return train_rllib, last_rllib_checkpoint
    from training.sb3_backend import last_good_checkpoint, train_sb3

    return train_sb3, last_good_checkpoint


def _new_run(
    config: str | Path | None, overrides: Sequence[str], command: str, stack: contextlib.ExitStack
) -> tuple[TrainConfig, Path]:
    """Load and validate ``config`` with ``overrides``, claim a new run folder (locked by ``stack``) and write its
    ``config.yaml``.

    Raises:
        ConfigError: no config, any error of the config or of ``train.output_dir``.
    """
    if not config:
        raise ConfigError("give a config file, e.g. configs/ppo_4p.yaml")
    cfg = load_config(config, overrides)
    run_dir = new_run_dir(cfg.train.output_dir, cfg.name)
    stack.enter_context(run_lock(run_dir, command))
    dump_config(cfg, run_dir / "config.yaml")
    return cfg, run_dir


def _resume_config(run_dir: Path, overrides: Sequence[str]) -> tuple[TrainConfig, list[str]]:
    """The saved config of ``run_dir`` with the allowed budget overrides applied (written back to config.yaml
    by the caller); returns it and a note per change."""
    import yaml

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


def _resumed_run(
    run_dir: Path, config: str | Path | None, overrides: Sequence[str], command: str, stack: contextlib.ExitStack
) -> tuple[TrainConfig, Path]:
    """Claim the run folder ``run_dir`` (locked by ``stack``), read its config (its budget extended by
    ``overrides``, written back) and find the checkpoint to continue from.

    Returns:
        The config and the checkpoint.

    Raises:
        ConfigError: a config file given, not a run folder, an override other than the budget, no checkpoint, a
            budget not above the steps done, a finished run not extended.
        RunInUse: another process trains in ``run_dir``.
    """
    if config:
        raise ConfigError("--resume continues a run with its saved config: give no config file")
    if not (run_dir / "config.yaml").is_file():
        raise ConfigError(f"--resume {run_dir}: no config.yaml there; is it a run folder?")
    stack.enter_context(run_lock(run_dir, command))
    cfg, changes = _resume_config(run_dir, overrides)
    resume_from, skipped = backend(cfg.train.backend)[1](run_dir)
    for warning in skipped:
        print(f"warning: {warning}", file=sys.stderr)
    done = checkpoint_steps(resume_from)
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
    return cfg, resume_from


def train(
    config: str | Path | None = None,
    overrides: Sequence[str] = (),
    resume: str | Path | None = None,
    progress: bool = True,
    command: str | None = None,
) -> dict[str, Any]:
    """Train per the config file ``config`` (with the ``--set`` ``overrides``) in a new run folder, or continue the
    run in the folder ``resume``: load and validate the config, claim the run folder, train with the config's
    backend, write the report.

    Args:
        config: a YAML config (none with ``resume``).
        overrides: ``key.sub=value`` overrides (with ``resume``: ``train.total_timesteps`` and
            ``train.max_minutes`` only, extending the run's budget).
        resume: a run folder to continue from its newest good checkpoint.
        progress: show the tqdm bar.
        command: the command line recorded in ``command.txt`` and the lock (default: the ``python -m
            training.train`` line of these arguments).

    Returns:
        The backend's summary of this session (:class:`training.lifecycle.Trained`): ``run_dir``, ``steps``,
        ``start_steps``, ``session_steps``, ``seconds``, ``steps_per_second``, ``interrupted``, ``timed_out``,
        ``checkpoint``, and ``final_model`` and ``best_model`` when it ran to its end; ``seconds`` and
        ``steps_per_second`` count this session only.

    Raises:
        ConfigError: the config, the run folder or the checkpoint to resume from is wrong (before anything starts),
            or the backend found the config wrong when it started (the message says the run folder holds no model).
        RunInUse: another process trains in the run folder.
    """
    import training.ppo_agents  # noqa: F401  (registers the ppo: agent specs before configs are checked)
    from training.evaluate import finish_report

    if command is None:
        args = [*([str(config)] if config else []), *(f"--set={o}" for o in overrides)]
        args += ["--resume", str(resume)] if resume else []
        command = "python -m training.train " + " ".join(shlex.quote(a) for a in args)
    with contextlib.ExitStack() as stack:
        if resume:
            run_dir = Path(resume)
            cfg, resume_from = _resumed_run(run_dir, config, overrides, command, stack)
        else:
            (cfg, run_dir), resume_from = _new_run(config, overrides, command, stack), None
        with (run_dir / "command.txt").open("a") as f:
            f.write(command + "\n")
        print(f"run folder: {run_dir}", file=sys.stderr)
        if resume_from is not None:
            print(f"resuming from {resume_from}", file=sys.stderr)
        entry, _ = backend(cfg.train.backend)
        try:
            trained = entry(cfg, run_dir, resume_from, progress)
        except ConfigError as e:  # found only when the run starts (e.g. init_from's policy shapes)
            raise ConfigError(f"{e}; run folder {run_dir} holds no model") from None
        if trained.agent is not None:
            finish_report(run_dir, trained.agent, trained.report, cfg.eval, cfg.env.game_kwargs(), cfg.train.seed)
    return trained.summary


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit code (2 for a config error or a run in use, 130 when stopped)."""
    args = _parser().parse_args(argv)
    command = "python -m training.train " + " ".join(shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv))
    try:
        summary = train(args.config, args.overrides, args.resume, progress=not args.no_progress, command=command)
    except ConfigError as e:
        print(f"{'error' if isinstance(e, RunInUse) else 'config error'}: {e}", file=sys.stderr)
        return 2
    resumed = f" (resumed at {summary['start_steps']:,})" if summary["start_steps"] else ""
    print(
        f"{summary['session_steps']:,} steps in {summary['seconds']:.0f} s ({summary['steps_per_second']:,.0f} "
        f"steps/s){resumed}; {summary['steps']:,} in all; run folder {summary['run_dir']}",
        file=sys.stderr,
    )
    return 130 if summary["interrupted"] else 0


if __name__ == "__main__":
    sys.exit(main())
