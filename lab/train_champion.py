"""Train a stage of the ``champion`` agent and export its weights (issue 13).

Usage (from the repository's root)::

    python -m lab.train_champion [CONFIG] [--set KEY=VALUE ...] [--out sixnimmt_env/champion.npz] [--force]
    python -m lab.train_champion --export runs/champion/<stamp>/final_model.zip [--out PATH] [--force]

The first form trains the config (``python -m training.train``, a new run folder under ``runs/``), then
writes the final model's actor as numpy weights to ``--out``. The default config is the last stage,
``lab/configs/champion_features_league_2.yaml`` (stage 8): it fine-tunes stage 7's weights
``lab/weights/champion_v7.npz`` against whole tables of one kind (``train.opponent_draw: table``), with
tables of stage 6, the champion it had to beat, at weight 0.2. The stages before it, each a config of
``lab/configs/`` and a weights file of ``lab/weights/``, are listed in order, with their ``--out``, by the recipe
``lab/configs/recipes/champion.yaml``: stage 1 (``champion.yaml``, ``champion_v1.npz``) distils ``mc:64`` into the
card policy and then runs PPO; stage 2 (``champion_league.yaml``) fine-tunes it against a league; stage 3
(``champion_mc_league.yaml``) against a league in which ``mc:16`` holds 40 % of the seats; stage 4
(``champion_table_league.yaml``) against whole tables of one kind; stages 5 and 6 (``champion_greedy_league.yaml``,
``champion_greedy_league_2.yaml``) likewise with more ``greedy`` tables; stage 7 (``champion_features_league.yaml``)
with the three target line-ups at equal weight and the card policy's hand-and-table features.
``python -m lab.recipe lab/configs/recipes/champion.yaml --all --force`` (``make champion``) runs every stage from
scratch. The second form exports an existing MaskablePPO card-policy checkpoint. An existing ``--out`` is never
replaced without ``--force``. The default ``--out`` is what :mod:`sixnimmt_env.champion` plays at 4 players (spec
``champion``); at the other table sizes it plays ``sixnimmt_env/weights/champion_2p.npz`` (2 players) and
``sixnimmt_env/weights/champion_tables.npz``, the ``--out`` of ``lab/configs/champion_2p.yaml`` and
``lab/configs/champion_tables_2.yaml`` in the recipe (``champion:PATH`` plays a file elsewhere at every size);
``docs/champion.md`` has the budget and the strength tables.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import zipfile
from pathlib import Path
from typing import Any

if __name__ == "__main__":  # the command trains in-process: one BLAS thread, as python -m training.train
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

from sixnimmt_env.champion import ATTENTION_ARRAYS, FORMAT, FORMAT_ATTENTION, FORMAT_RESIDUAL, WEIGHTS, read_weights

__all__ = ["export", "main", "weight_arrays", "write_weights"]


def weight_arrays(policy: Any) -> dict[str, np.ndarray]:
    """The actor of a :class:`training.policy.CardPolicy` as the arrays of :class:`sixnimmt_env.champion.CardActor`.

    Raises:
        ValueError: a policy that is not a card policy, or an activation other than Tanh/ReLU.
    """
    from training.policy import CardPolicy, NumpyCardActor

    if not isinstance(policy, CardPolicy):
        raise ValueError(f"champion export needs a card policy (algo.policy: card), got {type(policy).__name__}")
    return NumpyCardActor(policy).arrays()


def _steps(checkpoint: str | Path) -> int | None:
    """The ``num_timesteps`` an SB3 checkpoint was saved at (its ``data`` JSON), or ``None`` if absent."""
    with zipfile.ZipFile(checkpoint) as z:
        data = json.loads(z.read("data"))
    steps = data.get("num_timesteps")
    return None if steps is None else int(steps)


def export(checkpoint: str | Path, out: str | Path, force: bool = False, meta: dict[str, Any] | None = None) -> Path:
    """Write the actor of a MaskablePPO card-policy ``checkpoint`` (``.zip``) to ``out`` (``.npz``) and read it back.

    Args:
        checkpoint: the model file.
        out: the weights file to write.
        force: replace an existing ``out``.
        meta: extra metadata stored as JSON (the source checkpoint, steps and format are always stored).

    Returns:
        The path written.

    Raises:
        ValueError: ``out`` exists and ``force`` is false, or the checkpoint is not a card policy
            (errors of :func:`training.ppo_agents.load_policy`).
    """
    from training.ppo_agents import load_policy

    out = Path(out)
    if out.exists() and not force:
        raise ValueError(f"{out} exists; give --force to replace it")
    policy, norm = load_policy(checkpoint)
    if norm is not None:
        raise ValueError(f"{checkpoint}: trained with normalize_obs; the champion reads the raw observation")
    info = {"source": str(checkpoint), "steps": _steps(checkpoint), **(meta or {})}
    return write_weights(weight_arrays(policy), out, info)


def write_weights(arrays: dict[str, np.ndarray], out: str | Path, meta: dict[str, Any]) -> Path:
    """Write a weights file of :class:`sixnimmt_env.champion.CardActor` ``arrays`` to ``out`` (``.npz``, compressed)
    with ``meta`` (plus the ``format``: residual layers' if it has any, else the attention's if it has attention
    arrays, else the plain one) as its JSON ``meta`` entry, and return the path.

    The file is written beside ``out`` first and read back with the package's reader; only then does it replace
    ``out`` (callers check for an existing ``out`` before their work).

    Raises:
        ValueError: the arrays do not load (errors of :func:`sixnimmt_env.champion.read_weights`); ``out`` is untouched.
    """
    out = Path(out)
    residual = bool(np.asarray(arrays.get("hidden_residual", False)).any())
    fmt = FORMAT_RESIDUAL if residual else FORMAT_ATTENTION if ATTENTION_ARRAYS[0] in arrays else FORMAT
    info = {"format": fmt, **meta}
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.stem + ".tmp.npz")
    entries: dict[str, Any] = {"meta": np.array(json.dumps(info)), **arrays}  # the archive's arrays by name
    np.savez_compressed(tmp, **entries)
    try:
        read_weights(tmp)  # it loads in the package's reader before it replaces anything
    except ValueError:
        tmp.unlink()
        raise
    tmp.replace(out)
    return out


EXAMPLES = (
    "lab/configs/champion_short.yaml --out mine.npz",
    "lab/configs/champion_league.yaml --set train.seed=3 --out mine.npz",
    "--export runs/champion_short/<stamp>/final_model.zip --out mine.npz",
)
"""Typical arguments of the command, shown by its ``--help``."""


def _parser() -> argparse.ArgumentParser:
    from sixnimmt_env.cli import parser_kwargs
    from training.train import add_overrides_option

    p = argparse.ArgumentParser(**parser_kwargs("lab.train_champion", EXAMPLES), description=__doc__.split("\n\n")[0])
    p.add_argument(
        "config",
        nargs="?",
        default="lab/configs/champion_features_league_2.yaml",
        help="training config (default: %(default)s)",
    )
    add_overrides_option(p)
    p.add_argument("--export", metavar="CHECKPOINT", help="only export this MaskablePPO card-policy checkpoint")
    p.add_argument("--out", default=str(WEIGHTS), help="weights file to write (default: the package's)")
    p.add_argument("--force", action="store_true", help="replace an existing --out")
    return p


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit code (2 for a bad argument or config)."""
    args = _parser().parse_args(argv)
    out = Path(args.out)
    if out.exists() and not args.force:
        print(f"error: {out} exists; give --force to replace it", file=sys.stderr)
        return 2
    checkpoint = args.export
    meta: dict[str, Any] = {}
    if checkpoint is None:
        from training.config import ConfigError, load_config
        from training.train import main as train_main

        try:
            cfg = load_config(args.config, args.overrides)
        except ConfigError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        before = set(Path(cfg.train.output_dir, cfg.name).glob("*"))
        code = train_main([args.config, "--no-progress", *(x for o in args.overrides for x in ("--set", o))])
        if code != 0:
            return code
        new = set(Path(cfg.train.output_dir, cfg.name).glob("*")) - before
        if len(new) != 1:  # another run of the config started beside this one: which folder is ours is unknown
            print(f"error: new run folders {sorted(map(str, new))}; export one with --export", file=sys.stderr)
            return 2
        (run_dir,) = new
        checkpoint = str(run_dir / "final_model.zip")
        meta["config"] = args.config
        if args.overrides:
            meta["overrides"] = args.overrides
    try:
        path = export(checkpoint, out, force=args.force, meta=meta)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"wrote {path} from {checkpoint}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
