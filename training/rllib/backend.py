"""Train with Ray RLlib's PPO (new API stack) from the same YAML configs: ``train.backend: rllib``.

``python -m training.train configs/rllib_ppo_4p.yaml`` dispatches here (:func:`train_rllib`, called by the pipeline
:func:`training.train.train`, which writes the report from what it returns). The
game, the opponents and self-play mean what they mean for SB3. Without self-play each env is the
single-seat env (:func:`sixnimmt_env.gym_env.make_env`) in
:class:`sixnimmt_env.rllib_env.ActionMaskObservation`, its opponent seats drawn per episode from the
``opponents`` mixture by :class:`training.opponents.MixtureSampler`. With ``self_play.enabled`` the run is
RLlib multi-agent, a league (:mod:`training.rllib.self_play`): the learner's seat and snapshot seats are
RLlib agents of :class:`~training.rllib.self_play.LeagueEnv` (the mixture's opponents still play inside
the env), mapped by the ``policy_mapping_fn`` to the trained module or to one of ``self_play.pool_size``
snapshot modules that are never trained; every ``self_play.snapshot_every`` steps the learner's weights
go into the next snapshot slot (the oldest replaced) and an opponent seat is a snapshot with
probability ``self_play.prob``. Each snapshot is also saved to ``pool/`` (playable as ``rllib:PATH``).
The policy is :class:`training.rllib.module.CardRLModule`.

``ray.sampler: batched`` replaces the env runners by :class:`training.rllib.batched_runner.BatchedEnvRunner`: each
runner's envs are games of the batched engine (the SB3 path's vector env), the mixture's opponents and the
self-play snapshots playing inside it; the run stays single-agent, and every ``self_play.snapshot_every`` steps
the newest ``self_play.pool_size`` snapshots of ``pool/`` are sent to every runner
(:func:`training.rllib.batched_runner.push_snapshot_pool`).

Ray: ``ray.address: null`` starts a local Ray inside the process (``ray.num_cpus`` CPUs, an object
store of ``ray.object_store_mb``; stopped at the end); ``auto`` or an address joins a running
cluster (left running). The run folder ``<output_dir>/<name>/<timestamp>/``:

=====================================  ==========================================================
file                                   content
=====================================  ==========================================================
``config.yaml``, ``command.txt``       the resolved config, the command lines (train.py)
``checkpoints/checkpoint_<N>_steps/``  RLlib algorithm checkpoints (``Algorithm.save_to_path``)
                                       every ``checkpoint.every`` steps, at Ctrl-C/SIGTERM and at
                                       the end, each with ``progress.json`` (steps, iterations, snapshots)
``pool/snapshot_<N>/``                 self-play snapshots (RLModule checkpoints; the league plays
                                       them from the algorithm's snapshot modules; with
                                       ``ray.sampler: batched`` the newest ``self_play.pool_size``
                                       play inside every runner's engine)
``best_model/``, ``final_model/``      RLModule checkpoints: the best on the first evaluation
                                       line-up, the last; play them as ``rllib:PATH``
``tb/``                                TensorBoard: episode return, steps/s, PPO losses, evaluations
``eval.csv``                           every evaluation in the arena during training
``final_eval.csv``, ``report.md``,     the final arena tables (``eval.final_games`` games per
``learning_curve.png``                 line-up), training time and speed, the curve
=====================================  ==========================================================

Ctrl-C or SIGTERM stop after the current iteration with a checkpoint (a second one at once);
``--resume RUN_DIR`` restores the last checkpoint and continues up to ``train.total_timesteps``.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from training.config.rllib_settings import local_cpus, model_config, n_steps, ppo_training_kwargs
from training.config.schema import AlgoSection, ConfigError, EvalSection, RaySection, SelfPlaySection
from training.lifecycle import EvalRecord, StopSignals, Trained

if TYPE_CHECKING:
    from training.config.schema import TrainConfig

ENV_NAME = "sixnimmt-single-seat"
"""The name :func:`train_rllib` registers :func:`training_env` under (``ray.tune.registry.register_env``)."""
LEAGUE_ENV_NAME = "sixnimmt-league"
"""The name of the self-play env creator (:func:`training.rllib.self_play.league_env`)."""
APPO_SAMPLE_WAIT_S = 120.0
"""Seconds an APPO run waits for env steps (its iterations may return before the runners' samples arrive) before
it gives up: no env steps for that long means the env runners are lost."""


def training_env(config: Mapping[str, Any]) -> Any:
    """RLlib env creator of a run: the single-seat env with the run's opponents, in RLlib's mask layout.

    ``config``: ``game`` (GameConfig keywords), ``table_sizes`` (env runner ``i`` plays
    ``table_sizes[i % len]``), ``learner_seat``, ``sampler`` (a :class:`training.opponents.MixtureSampler`),
    ``torch_threads``. RLlib passes an ``EnvContext`` whose ``worker_index`` picks the table size.
    """
    import torch

    import training.rllib.rllib_agents  # noqa: F401  (rllib: specs of self-play snapshots, in every worker)
    from sixnimmt_env.gym_env import make_env
    from sixnimmt_env.rllib_env import ActionMaskObservation

    torch.set_num_threads(int(config.get("torch_threads", 1)))
    sizes = list(config["table_sizes"])
    game = {**config["game"], "num_players": sizes[getattr(config, "worker_index", 0) % len(sizes)]}
    env = make_env(opponents=config["sampler"], learner_seat=config["learner_seat"], **game)
    return ActionMaskObservation(env)


def algorithm_config(cfg: TrainConfig, filled: int = 0) -> Any:
    """The ``PPOConfig`` of ``cfg`` (``APPOConfig`` with ``ray.algorithm: appo``): env, runners, learners, the
    RLModule, the algorithm's settings, seed.

    ``ray.sampler: batched``: one module, sampled by :class:`training.rllib.batched_runner.BatchedEnvRunner` (the
    batched engine; self-play snapshots inside it). Otherwise, without self-play: the single-seat env
    (:data:`ENV_NAME`) and one module. With ``self_play.enabled``:
    the league (:mod:`training.rllib.self_play`): :data:`LEAGUE_ENV_NAME`, the learner's module and
    ``self_play.pool_size`` snapshot modules mapped by :func:`~training.rllib.self_play.league_mapping`, the
    learner's module alone trained; ``filled`` snapshot slots hold a snapshot already (a resumed run).
    """
    from ray.rllib.algorithms.appo import APPOConfig
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    from training.opponents import mixture_sampler
    from training.rllib.module import CardRLModule
    from training.rllib.self_play import LEARNER_MODULE, league_mapping, module_ids

    r = cfg.ray
    base: dict[str, Any] = {
        "game": cfg.env.game_kwargs(),
        "table_sizes": cfg.env.table_sizes(),
        "learner_seat": cfg.env.learner_seat,
        "torch_threads": cfg.train.torch_threads,
    }
    spec = RLModuleSpec(module_class=CardRLModule, model_config=model_config(cfg.algo))
    mixture = mixture_sampler(cfg.opponents, cfg.self_play, cfg.train.opponent_draw)
    config = APPOConfig() if r.algorithm == "appo" else PPOConfig()
    if r.sampler == "batched":  # the batched engine in every runner; self-play snapshots play inside it
        from training.rllib.batched_runner import ENV_CONFIG_KEY, BatchedEnvRunner, EngineGames

        games = EngineGames(cfg.env, cfg.train, mixture)
        config = (
            config.environment(ENV_NAME, env_config={ENV_CONFIG_KEY: games}, disable_env_checking=True)
            .env_runners(env_runner_cls=BatchedEnvRunner)
            .rl_module(rl_module_spec=spec)
        )
    elif cfg.self_play.enabled:
        slots = cfg.self_play.pool_size
        env_config = {
            **base,
            "specs": [o.agent for o in cfg.opponents],
            "weights": [o.weight for o in cfg.opponents],
            "prob": cfg.self_play.prob,
            "pool_slots": slots,
            "filled": filled,
        }
        ids = module_ids(slots)
        config = (
            config.environment(
                LEAGUE_ENV_NAME,
                env_config=env_config,
                disable_env_checking=True,  # RLlib's checker steps unmasked random actions: illegal here
            )
            .multi_agent(policies=set(ids), policy_mapping_fn=league_mapping, policies_to_train=[LEARNER_MODULE])
            .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs=dict.fromkeys(ids, spec)))
        )
    else:
        env_config = {**base, "sampler": mixture}
        config = config.environment(ENV_NAME, env_config=env_config, disable_env_checking=False).rl_module(
            rl_module_spec=spec
        )
    return (
        config.framework("torch")
        .env_runners(
            num_env_runners=r.num_env_runners,
            num_envs_per_env_runner=r.num_envs_per_env_runner,
            # a fraction of a CPU is a Ray resource like any other; RLlib's annotation says int
            num_cpus_per_env_runner=r.num_cpus_per_env_runner,  # type: ignore[arg-type]
            num_gpus_per_env_runner=r.num_gpus_per_env_runner,
            rollout_fragment_length=n_steps(cfg.algo),
            batch_mode="truncate_episodes",
        )
        .learners(
            num_learners=r.num_learners,
            num_cpus_per_learner=r.num_cpus_per_learner,
            num_gpus_per_learner=r.num_gpus_per_learner,
        )
        .training(**ppo_training_kwargs(cfg.algo, r))
        .training(**learner_pipeline(cfg.algo, cfg.self_play, r))
        .fault_tolerance(
            restart_failed_env_runners=r.restart_failed_env_runners,
            delay_between_env_runner_restarts_s=r.env_runner_restart_delay_s,
        )
        .debugging(seed=cfg.train.seed, log_level="ERROR")
    )


def learner_pipeline(algo: AlgoSection, self_play: SelfPlaySection, ray: RaySection) -> dict[str, Any]:
    """``training()`` keywords of the learner connector: single-agent PPO (no league, or ``ray.sampler: batched``)
    builds its train batch in bulk (:class:`training.rllib.learner_connector.BulkPPOBatch`, with ``algo.gamma`` and
    ``algo.gae_lambda``, in place of RLlib's default pipeline); APPO and the league keep RLlib's (``{}``)."""
    if ray.algorithm != "ppo" or (self_play.enabled and ray.sampler != "batched"):
        return {}
    from functools import partial

    from training.rllib.learner_connector import BulkPPOBatch

    return {
        "learner_connector": partial(BulkPPOBatch, gamma=algo.gamma, lambda_=algo.gae_lambda),
        "add_default_connectors_to_learner_pipeline": False,
    }


def register_envs() -> None:
    """Register the env creators of both set-ups with Ray (:data:`ENV_NAME`, :data:`LEAGUE_ENV_NAME`)."""
    from ray.tune.registry import register_env

    from training.rllib.self_play import league_env

    register_env(ENV_NAME, training_env)
    register_env(LEAGUE_ENV_NAME, league_env)


def last_rllib_checkpoint(run_dir: Path) -> tuple[Path, list[str]]:
    """The newest whole checkpoint of ``run_dir/checkpoints`` (its ``progress.json`` and ``learner_group/`` there),
    and one warning per newer damaged one skipped. A checkpoint is written under ``checkpoint_<N>_steps.partial/``
    and renamed when whole, so a driver killed while saving leaves a ``.partial`` folder, never read here.

    Raises:
        ConfigError: no checkpoint, or none whole (naming each).
    """
    found = [p for p in (run_dir / "checkpoints").glob("checkpoint_*_steps") if p.is_dir()]
    if not found:
        raise ConfigError(f"{run_dir}: no RLlib checkpoint to resume from in {run_dir / 'checkpoints'}")
    skipped: list[str] = []
    for path in sorted(found, key=lambda p: int(p.name.split("_")[1]), reverse=True):
        if (path / "progress.json").is_file() and (path / "learner_group").is_dir():
            return path, skipped
        skipped.append(f"skipping damaged checkpoint {path.name}: no progress.json or learner_group/")
    raise ConfigError(f"--resume {run_dir}: no whole checkpoint; " + "; ".join(skipped))


def start_ray(settings: RaySection) -> bool:
    """Start a local Ray (``ray.address: null``) or join the cluster at ``ray.address``, per the config's ``ray``
    section ``settings``.

    Returns:
        True if this call started Ray (and so should shut it down).
    """
    import logging

    import ray

    if ray.is_initialized():
        return False
    if settings.address is None:
        ray.init(
            address="local",  # a new Ray of its own, even when a cluster runs on this machine
            num_cpus=local_cpus(settings),
            num_gpus=0 if not (settings.num_gpus_per_env_runner or settings.num_gpus_per_learner) else None,
            object_store_memory=settings.object_store_mb * 1024 * 1024,
            include_dashboard=False,
            log_to_driver=False,
            logging_level=logging.ERROR,
        )
    else:
        ray.init(address=settings.address, log_to_driver=False, logging_level=logging.ERROR)
    return True


def learner_module(algo: Any) -> Any:
    """The trained RLModule with the learner's current weights: the driver's acting copy (``algo.get_module()``)
    given the learner group's weights. PPO syncs that copy after every update; APPO (asynchronous) does not, so
    without this its saved models, snapshots and evaluations would be its first weights."""
    from ray.rllib.core import COMPONENT_LEARNER, COMPONENT_RL_MODULE, DEFAULT_MODULE_ID

    module = algo.get_module()
    path = f"{COMPONENT_LEARNER}/{COMPONENT_RL_MODULE}/{DEFAULT_MODULE_ID}"
    state = algo.learner_group.get_state(components=path, inference_only=True)
    module.set_state(state[COMPONENT_LEARNER][COMPONENT_RL_MODULE][DEFAULT_MODULE_ID])
    return module


def _save_module(algo: Any, folder: Path) -> Path:
    """The learner's current RLModule (:func:`learner_module`) as an RLModule checkpoint in ``folder``
    (replaced)."""
    if folder.exists():
        shutil.rmtree(folder)
    learner_module(algo).save_to_path(str(folder.resolve()))  # RLlib (pyarrow) wants absolute paths
    return folder


def _push_pool(algo: Any, run_dir: Path, pool_size: int) -> None:
    """Send the newest ``pool_size`` (``self_play.pool_size``) snapshots of ``run_dir/pool`` to every batched env
    runner (at each snapshot, on ``--resume``, and to runners RLlib restarted)."""
    from training.rllib.batched_runner import push_snapshot_pool, snapshot_paths

    push_snapshot_pool(algo, snapshot_paths(run_dir / "pool", pool_size))


def _save_checkpoint(algo: Any, run_dir: Path, progress: Mapping[str, Any]) -> Path:
    folder = run_dir / "checkpoints" / f"checkpoint_{progress['steps']}_steps"
    partial = folder.with_name(folder.name + ".partial")  # renamed when whole (last_rllib_checkpoint)
    for stale in (partial, folder):
        if stale.exists():
            shutil.rmtree(stale)
    algo.save_to_path(str(partial.resolve()))
    (partial / "progress.json").write_text(json.dumps(dict(progress)))
    partial.rename(folder)
    return folder


def _metric(result: Mapping[str, Any], *keys: str) -> float | None:
    node: Any = result
    for k in keys:
        if not isinstance(node, Mapping) or k not in node:
            return None
        node = node[k]
    try:
        return float(node)
    except (TypeError, ValueError):
        return None


class _Evaluator:
    """Arena evaluations of the current module against every line-up, recorded by
    :class:`~training.lifecycle.EvalRecord` (``eval.csv``); the best first-line-up score's module copied to
    ``best_model/``."""

    def __init__(self, run_dir: Path, ev: EvalSection, game: Mapping[str, Any], seed: int) -> None:
        self.run_dir, self.ev, self.game, self.seed = run_dir, ev, game, seed
        self.record = EvalRecord(run_dir)

    def __call__(self, algo: Any, steps: int) -> list[dict[str, Any]]:
        import training.rllib.rllib_agents  # noqa: F401
        from training.evaluate import evaluate_lineups

        start = time.perf_counter()
        folder = _save_module(algo, self.run_dir / "last_eval")
        rows = evaluate_lineups(f"rllib:{folder}", self.ev.opponents, self.ev.games, self.game, self.seed)
        if self.record.add(steps, time.perf_counter() - start, rows):
            best = self.run_dir / "best_model"
            if best.exists():
                shutil.rmtree(best)
            shutil.copytree(folder, best)
        return rows


def report_lines(name: str, r: RaySection, run_dir: Path, model: Path, summary: Mapping[str, Any]) -> list[str]:
    """The report's lines about an RLlib run (``name``: the config's; ``r``: its ``ray`` section), in the SB3
    report's layout: steps, speed, Ray's runners and learners, the final model."""
    return [
        f"# Training report: {name} (Ray RLlib {r.algorithm.upper()})",
        "",
        f"- run folder: `{run_dir}`",
        f"- steps: {summary['steps']:,} in {summary['seconds']:.0f} s, {summary['iterations']} iterations "
        f"({summary['steps_per_second']:,.0f} env steps/s, evaluations included)"
        + (" (stopped by train.max_minutes)" if summary.get("timed_out") else ""),
        f"- Ray: {'local' if r.address is None else r.address}, {r.num_env_runners} env runners x "
        f"{r.num_envs_per_env_runner} envs on {len(set(summary['runner_nodes']))} node(s), "
        f"{r.num_learners} remote learners; env runners restarted after a failure: {summary.get('runner_restarts', 0)}",
        f"- model: `{model.name}` (play it as `rllib:{model}`); best during training: `best_model`",
        "",
    ]


def train_rllib(cfg: TrainConfig, run_dir: Path, resume_from: Path | None = None, progress: bool = True) -> Trained:
    """Train per ``cfg`` (``train.backend: rllib``) into ``run_dir`` (the backend's entry).

    Args:
        cfg: a validated config.
        run_dir: the run folder (holding ``config.yaml``).
        resume_from: an algorithm checkpoint of this run (:func:`last_rllib_checkpoint`) to continue from.
        progress: show the tqdm bar.

    Returns:
        The session (:class:`training.lifecycle.Trained`): its summary ``{"run_dir", "steps", "iterations",
        "seconds", "steps_per_second", "start_steps", "session_steps", "interrupted", "timed_out", "checkpoint",
        "runner_nodes", "runner_restarts", "final_model", "best_model"}`` (the last two only when not interrupted),
        the report's lines and the final module as ``rllib:PATH``.
    """
    import ray
    from torch.utils.tensorboard import SummaryWriter
    from tqdm import tqdm

    from training.rllib.self_play import push_slots

    done = {"steps": 0, "iterations": 0, "seconds": 0.0, "snapshots": 0}
    if resume_from is not None:
        done.update(json.loads((resume_from / "progress.json").read_text()))
    if cfg.self_play.enabled:
        (run_dir / "pool").mkdir(exist_ok=True)
    import torch

    torch.set_num_threads(cfg.train.torch_threads)  # the local learner's (ray.num_learners: 0), as for SB3's learner
    started_ray = start_ray(cfg.ray)
    register_envs()
    writer = SummaryWriter(str(run_dir / "tb"))
    algo = None
    try:
        algo = algorithm_config(cfg, min(int(done["snapshots"]), cfg.self_play.pool_size)).build_algo()
        if resume_from is not None:
            algo.restore_from_path(str(resume_from.resolve()))
            if cfg.self_play.enabled and cfg.ray.sampler == "batched":  # the pool/ folder's newest snapshots
                _push_pool(algo, run_dir, cfg.self_play.pool_size)
            elif cfg.self_play.enabled:
                push_slots(algo, min(int(done["snapshots"]), cfg.self_play.pool_size))
        nodes = runner_nodes(algo)
        print(f"Ray: {len(nodes)} env runner(s) on {len(set(nodes))} node(s)", file=sys.stderr)
        trained = _loop(cfg, run_dir, algo, done, writer, progress, tqdm, nodes)
        trained.summary["runner_nodes"] = nodes
        return trained
    finally:
        writer.close()
        if algo is not None:
            algo.stop()
        if started_ray:
            ray.shutdown()


def _loop(
    cfg: TrainConfig,
    run_dir: Path,
    algo: Any,
    done: dict[str, Any],
    writer: Any,
    progress: bool,
    tqdm: Any,
    nodes: list[str],
) -> Trained:
    """The iterations of an RLlib run up to ``train.total_timesteps`` (or ``train.max_minutes``, or a stop signal),
    with the snapshots, evaluations and checkpoints they make due, then the last checkpoint and the final module."""
    from ray.rllib.utils.metrics import (
        ENV_RUNNER_RESULTS,
        EPISODE_MODULE_RETURN_MEAN,
        EPISODE_RETURN_MEAN,
        LEARNER_RESULTS,
        NUM_ENV_STEPS_SAMPLED,
    )

    from training.rllib.self_play import LEARNER_MODULE, snapshot_into_slot

    evaluator = _Evaluator(run_dir, cfg.eval, cfg.env.game_kwargs(), cfg.train.seed)
    health = RunnerHealth(cfg.ray.num_env_runners)
    steps, iterations = int(done["steps"]), int(done["iterations"])
    snapshots = int(done["snapshots"])
    every = {"eval": cfg.eval.every, "checkpoint": cfg.checkpoint.every, "snapshot": cfg.self_play.snapshot_every}
    due = {k: (steps // v + 1) * v for k, v in every.items()}
    max_seconds = None if cfg.train.max_minutes is None else 60.0 * cfg.train.max_minutes
    start, start_steps = time.perf_counter(), steps
    last_sample = start
    bar = tqdm(total=cfg.train.total_timesteps, initial=steps, unit="step", dynamic_ncols=True, disable=not progress)
    interrupted = timed_out = False
    with StopSignals(at_once=False) as stop:
        try:
            while steps < cfg.train.total_timesteps:
                if stop.requested:
                    interrupted = True
                    break
                if max_seconds is not None and time.perf_counter() - start > max_seconds:
                    timed_out = True
                    break
                result = algo.train()
                sampled = _metric(result, ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED)
                if sampled is None or not sampled > 0:
                    # APPO's first calls may return before its runners' first samples arrive (asynchronous)
                    if cfg.ray.algorithm == "appo" and time.perf_counter() - last_sample < APPO_SAMPLE_WAIT_S:
                        time.sleep(0.05)
                        continue
                    raise RuntimeError(f"RLlib iteration {iterations + 1} sampled no env steps (env runners lost?)")
                last_sample = time.perf_counter()
                sampled = int(sampled)
                steps += sampled
                iterations += 1
                if health.update(algo, steps, writer) and cfg.self_play.enabled and cfg.ray.sampler == "batched":
                    # a restarted runner starts with the mixture alone: give it the snapshot pool again
                    _push_pool(algo, run_dir, cfg.self_play.pool_size)
                bar.update(sampled)
                rate = (steps - start_steps) / max(time.perf_counter() - start, 1e-9)
                if cfg.self_play.enabled and cfg.ray.sampler == "env":  # the learner's (the episode sums every seat's)
                    ret = _metric(result, ENV_RUNNER_RESULTS, EPISODE_MODULE_RETURN_MEAN, LEARNER_MODULE)
                else:
                    ret = _metric(result, ENV_RUNNER_RESULTS, EPISODE_RETURN_MEAN)
                writer.add_scalar("rollout/ep_rew_mean", ret if ret is not None else float("nan"), steps)
                writer.add_scalar("time/env_steps_per_second", rate, steps)
                for name in ("policy_loss", "vf_loss", "entropy", "mean_kl_loss"):
                    value = _metric(result, LEARNER_RESULTS, "default_policy", name)
                    if value is not None:
                        writer.add_scalar(f"train/{name}", value, steps)
                post = {"steps/s": f"{rate:,.0f}"}
                if ret is not None:
                    post["return"] = f"{ret:.2f}"
                if cfg.self_play.enabled and steps >= due["snapshot"]:
                    due["snapshot"] = (steps // every["snapshot"] + 1) * every["snapshot"]
                    _save_module(algo, run_dir / "pool" / f"snapshot_{steps}")
                    slots = cfg.self_play.pool_size
                    if cfg.ray.sampler == "batched":  # the newest pool_size snapshots play inside every engine
                        _push_pool(algo, run_dir, slots)
                    else:
                        snapshot_into_slot(algo, snapshots % slots, min(snapshots + 1, slots))
                    snapshots += 1
                if steps >= due["eval"]:
                    due["eval"] = (steps // every["eval"] + 1) * every["eval"]
                    rows = evaluator(algo, steps)
                    for row in rows:
                        writer.add_scalar(f"eval/{row['lineup']}/mean_penalty", row["mean_penalty"], steps)
                        writer.add_scalar(f"eval/{row['lineup']}/win_share", row["win_share"], steps)
                if evaluator.record.latest is not None:
                    post["eval"] = f"{evaluator.record.latest:.2f}"
                bar.set_postfix(post, refresh=False)
                if steps >= due["checkpoint"]:
                    due["checkpoint"] = (steps // every["checkpoint"] + 1) * every["checkpoint"]
                    _save_checkpoint(algo, run_dir, _progress(steps, iterations, snapshots, done, start))
        except KeyboardInterrupt:
            interrupted = True
    bar.close()
    seconds = time.perf_counter() - start
    ckpt = _save_checkpoint(algo, run_dir, _progress(steps, iterations, snapshots, done, start))
    summary: dict[str, Any] = {
        "run_dir": str(run_dir),
        "steps": steps,
        "iterations": iterations,
        "seconds": seconds,
        "steps_per_second": (steps - start_steps) / max(seconds, 1e-9),
        "start_steps": start_steps,
        "session_steps": steps - start_steps,
        "interrupted": interrupted,
        "timed_out": timed_out,
        "checkpoint": str(ckpt),
        "runner_nodes": nodes,
        "runner_restarts": health.restarts,
    }
    if interrupted:
        print(f"\ninterrupted at {steps} steps: checkpoint {ckpt}; continue with --resume {run_dir}", file=sys.stderr)
        return Trained(summary)
    final = _save_module(algo, run_dir / "final_model")
    best = run_dir / "best_model"
    if not best.exists():  # no evaluation ran during training: the final module is the best known
        shutil.copytree(final, best)
    summary["final_model"] = str(final)
    summary["best_model"] = str(best)
    return Trained(summary, report_lines(cfg.name, cfg.ray, run_dir, final, summary), f"rllib:{final}")


class RunnerHealth:
    """The env runners' health after each iteration: says on stderr when runners are lost and when RLlib's fault
    tolerance (``ray.restart_failed_env_runners``) has replaced them, and writes both to TensorBoard
    (``ray/healthy_env_runners``, ``ray/env_runner_restarts``).

    Args:
        runners: the remote env runners the run asked for (``ray.num_env_runners``).
    """

    def __init__(self, runners: int) -> None:
        self.runners = runners
        self.healthy = runners
        self.restarts = 0

    def update(self, algo: Any, steps: int, writer: Any) -> bool:
        """Read the runner group's health after an iteration (``steps``: env steps so far); whether runners were
        restarted since the last call (they start from the run's config: the caller gives them its state)."""
        if self.runners == 0:
            return False
        group = algo.env_runner_group
        healthy, restarts = group.num_healthy_remote_workers(), group.num_remote_worker_restarts()
        if healthy < self.healthy:
            print(
                f"\n{self.runners - healthy} of {self.runners} env runner(s) lost at {steps:,} steps: training goes "
                "on with the others" + (" while RLlib restarts them" if algo.config.restart_failed_env_runners else ""),
                file=sys.stderr,
            )
        if restarts > self.restarts:
            print(
                f"\n{restarts - self.restarts} env runner(s) restarted; {healthy} of {self.runners} healthy",
                file=sys.stderr,
            )
        restarted = restarts > self.restarts
        self.healthy, self.restarts = healthy, restarts
        writer.add_scalar("ray/healthy_env_runners", healthy, steps)
        writer.add_scalar("ray/env_runner_restarts", restarts, steps)
        return restarted


def _node_id(runner: Any) -> str:
    import ray

    return ray.get_runtime_context().get_node_id()


def runner_nodes(algo: Any) -> list[str]:
    """The Ray node id of each remote env runner of ``algo`` (empty without remote runners)."""
    return list(algo.env_runner_group.foreach_env_runner(_node_id, local_env_runner=False))


def _progress(steps: int, iterations: int, snapshots: int, done: Mapping[str, Any], start: float) -> dict[str, Any]:
    return {
        "steps": steps,
        "iterations": iterations,
        "snapshots": snapshots,
        "seconds": float(done["seconds"]) + time.perf_counter() - start,
    }
