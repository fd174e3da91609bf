"""Train a MaskablePPO agent from a YAML config.

Usage::

    python -m training.train configs/ppo_4p.yaml [--set algo.learning_rate=1e-4 ...] [--resume RUN_DIR]

The config is read, overridden, type-checked and validated before anything
starts (:mod:`training.config`). A run writes ``<output_dir>/<name>/<timestamp>/``:

=========================  ====================================================
file                       content
=========================  ====================================================
``config.yaml``            the resolved config (``--set`` applied)
``command.txt``            the command line that started (or resumed) the run
``checkpoints/``           ``model_<steps>_steps.zip`` every ``checkpoint.every``
                           steps, at Ctrl-C and at the end
``pool/``                  self-play snapshots
``best_model.zip``         the best score on the first evaluation line-up
``final_model.zip``        the model at the end of training
``tb/``                    TensorBoard logs
``monitor/``               one Monitor CSV per training env (episode reward and length)
``eval.csv``               every evaluation during training
``final_eval.csv``         the final arena table (each line-up, every seat)
``learning_curve.png``     mean penalty against each line-up over steps
``report.md``              the final table, training time and speed
=========================  ====================================================

Ctrl-C saves a checkpoint and stops; ``--resume RUN_DIR`` continues from the
last checkpoint of that run with its saved config (overrides are refused), up
to ``train.total_timesteps``. ``train.max_minutes`` caps the wall time of
training (the final report comes after it).
"""

from __future__ import annotations

import argparse
import contextlib
import shlex
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from training.config import ConfigError, TrainConfig, algo_kwargs, dump_config, load_config


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m training.train", description=__doc__.split("\n\n")[0])
    p.add_argument("config", nargs="?", help="YAML config, e.g. configs/ppo_4p.yaml")
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config key, e.g. algo.learning_rate=1e-4 (VALUE is parsed as YAML)",
    )
    p.add_argument("--resume", metavar="RUN_DIR", help="continue the run in RUN_DIR from its last checkpoint")
    p.add_argument("--no-progress", action="store_true", help="no progress bar (e.g. in logs)")
    return p


def last_checkpoint(run_dir: Path) -> Path | None:
    """The checkpoint of ``run_dir/checkpoints`` with the most steps, or ``None``."""
    found = list((run_dir / "checkpoints").glob("model_*_steps.zip"))
    if not found:
        return None
    return max(found, key=lambda p: int(p.stem.split("_")[1]))


def _new_run_dir(cfg: TrainConfig) -> Path:
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    run_dir = Path(cfg.train.output_dir) / cfg.name / stamp
    k = 1
    while run_dir.exists():
        run_dir = Path(cfg.train.output_dir) / cfg.name / f"{stamp}-{k}"
        k += 1
    run_dir.mkdir(parents=True)
    return run_dir


def train(cfg: TrainConfig, run_dir: Path, resume_from: Path | None = None, progress: bool = True) -> dict[str, Any]:
    """Train per ``cfg`` into ``run_dir`` (which must hold ``config.yaml``); returns a summary.

    Args:
        cfg: a validated config.
        run_dir: the run folder.
        resume_from: a checkpoint to continue from (its ``num_timesteps`` counts toward the budget).
        progress: show the tqdm bar.

    Returns:
        ``{"run_dir", "steps", "seconds", "steps_per_second", "interrupted", "final_model", "best_model"}``.

    With ``train.backend: rllib`` the run is :func:`training.rllib.train.train_rllib`'s.
    """
    if cfg.train.backend == "rllib":
        from training.rllib.train import train_rllib

        return train_rllib(cfg, run_dir, resume_from, progress)
    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.callbacks import CallbackList

    from training.callbacks import ArenaEval, CheckpointEvery, Progress, SelfPlayPool, save_model
    from training.evaluate import evaluate_lineups, write_report
    from training.vec import build_vec_env, sampler_from_config

    torch.set_num_threads(cfg.train.torch_threads)
    pool_dir = run_dir / "pool"
    pool: list[str] = []
    if cfg.self_play.enabled:
        pool_dir.mkdir(exist_ok=True)
        pool = [str(p) for p in sorted(pool_dir.glob("snapshot_*.zip"), key=lambda p: int(p.stem.split("_")[1]))]
        pool = pool[-cfg.self_play.pool_size :]
    venv = build_vec_env(cfg, run_dir / "monitor", pool)
    seed = cfg.train.seed
    if resume_from is not None:
        from stable_baselines3.common.vec_env import VecNormalize

        model = MaskablePPO.load(resume_from, env=venv, device=cfg.train.device, tensorboard_log=str(run_dir / "tb"))
        seed = cfg.train.seed + model.num_timesteps  # continue the seed stream past the steps already played
        model.set_random_seed(seed)
        norm_file = resume_from.with_name(resume_from.stem + ".obsnorm.npz")
        if isinstance(venv, VecNormalize) and norm_file.is_file():
            import numpy as np

            with np.load(norm_file) as f:
                venv.obs_rms.mean, venv.obs_rms.var = f["mean"], f["var"]
    else:
        model = MaskablePPO(
            env=venv,
            seed=seed,
            device=cfg.train.device,
            tensorboard_log=str(run_dir / "tb"),
            verbose=0,
            **algo_kwargs(cfg),
        )
    game = cfg.env.game_kwargs()

    def evaluate(path: Path) -> list[dict[str, Any]]:
        return evaluate_lineups(f"ppo:{path}", cfg.eval.opponents, cfg.eval.games, game, seed=cfg.train.seed)

    evaluator = ArenaEval(cfg.eval.every, run_dir, evaluate)
    callbacks = [
        evaluator,
        CheckpointEvery(cfg.checkpoint.every, run_dir / "checkpoints"),
    ]
    if cfg.self_play.enabled:
        callbacks.append(
            SelfPlayPool(
                cfg.self_play.snapshot_every,
                pool_dir,
                cfg.self_play.pool_size,
                lambda pool: sampler_from_config(cfg, pool),
            )
        )
    max_seconds = None if cfg.train.max_minutes is None else 60.0 * cfg.train.max_minutes
    bar = Progress(cfg.train.total_timesteps, evaluator, disable=not progress, max_seconds=max_seconds)
    callbacks.append(bar)
    remaining = cfg.train.total_timesteps - model.num_timesteps
    start = time.perf_counter()
    start_steps = model.num_timesteps
    interrupted = False
    try:
        if remaining > 0:
            model.learn(
                remaining,
                callback=CallbackList(callbacks),
                reset_num_timesteps=resume_from is None,
                tb_log_name="ppo",
            )
    except KeyboardInterrupt:
        interrupted = True
        if bar.bar is not None:
            bar.bar.close()
    seconds = time.perf_counter() - start
    steps = model.num_timesteps
    ckpt = save_model(model, run_dir / "checkpoints" / f"model_{steps}_steps.zip")
    with contextlib.suppress(EOFError, BrokenPipeError, ConnectionResetError):  # workers gone after Ctrl-C
        venv.close()
    summary: dict[str, Any] = {
        "run_dir": str(run_dir),
        "steps": steps,
        "seconds": seconds,
        "steps_per_second": (steps - start_steps) / max(seconds, 1e-9),
        "interrupted": interrupted,
        "timed_out": bar.timed_out,
        "checkpoint": str(ckpt),
    }
    if interrupted:
        print(f"\ninterrupted at {steps} steps: checkpoint {ckpt}; continue with --resume {run_dir}", file=sys.stderr)
        return summary
    final = save_model(model, run_dir / "final_model.zip")
    best = run_dir / "best_model.zip"
    if not best.is_file():  # no evaluation ran during training (tiny budget): the final model is the best known
        save_model(model, best)
    summary["final_model"] = str(final)
    summary["best_model"] = str(best)
    write_report(cfg, run_dir, final, summary)
    return summary


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit code (2 for a config error)."""
    args = _parser().parse_args(argv)
    import training.agent  # noqa: F401  (registers the ppo: agent specs before configs are checked)

    command = "python -m training.train " + " ".join(shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv))
    try:
        if args.resume:
            run_dir = Path(args.resume)
            if args.overrides or args.config:
                raise ConfigError("--resume continues a run with its saved config: give no config file and no --set")
            cfg = load_config(run_dir / "config.yaml")
            if cfg.train.backend == "rllib":
                from training.rllib.train import last_rllib_checkpoint

                resume_from = last_rllib_checkpoint(run_dir)
            else:
                resume_from = last_checkpoint(run_dir)
            if resume_from is None:
                raise ConfigError(f"{run_dir}: no checkpoint to resume from in {run_dir / 'checkpoints'}")
            from training.agent import load_policy_agent

            try:  # a damaged checkpoint or one of an earlier policy layout: a clear message, not a traceback
                if cfg.train.backend != "rllib":
                    load_policy_agent(f"ppo:{resume_from}")
            except ValueError as e:
                raise ConfigError(f"--resume {run_dir}: {e}") from None
        else:
            if not args.config:
                raise ConfigError("give a config file, e.g. configs/ppo_4p.yaml")
            cfg = load_config(args.config, args.overrides)
            run_dir = _new_run_dir(cfg)
            resume_from = None
            dump_config(cfg, run_dir / "config.yaml")
    except ConfigError as e:
        print(f"config error: {e}", file=sys.stderr)
        return 2
    with (run_dir / "command.txt").open("a") as f:
        f.write(command + "\n")
    print(f"run folder: {run_dir}", file=sys.stderr)
    summary = train(cfg, run_dir, resume_from, progress=not args.no_progress)
    print(
        f"{summary['steps']} steps in {summary['seconds']:.0f} s ({summary['steps_per_second']:,.0f} steps/s); "
        f"run folder {run_dir}",
        file=sys.stderr,
    )
    return 130 if summary["interrupted"] else 0


if __name__ == "__main__":
    sys.exit(main())
