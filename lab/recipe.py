"""A training recipe: the stages of an agent, in one file, run in order by one command.

Usage (from the repository's root)::

    python -m lab.recipe lab/configs/recipes/champion.yaml --list           # the stages and what is on disk
    python -m lab.recipe lab/configs/recipes/champion.yaml                  # train every stage not done yet
    python -m lab.recipe lab/configs/recipes/champion.yaml --all --force    # every stage again, from scratch
    python -m lab.recipe lab/configs/recipes/champion.yaml --from stage-5 --force   # stage 5 and the rest again
    python -m lab.recipe lab/configs/recipes/champion.yaml --only tables,2p --dry-run

A recipe file lists stages in order; each is one training config (``base:`` configs keep them short) plus the
weights file it writes, trained and exported by :mod:`lab.train_champion` in a process of its own::

    stages:
      - name: stage-1                       # unique; --from and --only take it
        config: ../champion.yaml            # relative to the recipe's folder
        out: ../../weights/champion_v1.npz  # likewise
        set: [train.max_minutes=null]       # optional: --set overrides, as on the command line
        about: mc:64 distillation, then PPO # optional: one line for --list

Later stages read earlier stages' weights through their configs (``train.init_from``, ``champion:`` opponents): the
order is the recipe's, and changing a stage's ``out`` does not change what later stages read. Paths in ``set``
values (``train.init_from``, agent specs) are relative to the recipe's folder too.

A stage is *done* when its ``out`` exists and was written by ``train_champion`` from a config of the same file name
with the same overrides (the weights' metadata; the config's contents are not compared, and a stage trained again
does not make the later stages stale: train them with ``--from``); a plain run trains the stages that are not done.
Before any training, every stage to train is checked: its config loads with its overrides (a file that an earlier
stage of the run writes may be missing yet), its ``out`` can be written, and an ``out`` that exists is replaced only
with ``--force`` (``--all`` and ``--from`` train done stages again, so they need it too). While a run trains, no
other recipe run can train into the same weights files (a lock file ``.NAME.lock`` beside each). A stage is the unit a
run goes on from: a stage that fails or is stopped (Ctrl-C waits for its training process to save and end) stops the
run, and the message gives the command that trains it again from its start and goes on.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from training.config import ConfigError, load_config, resolve_override
from training.config.files import read_yaml

__all__ = [
    "Recipe",
    "Stage",
    "StageStatus",
    "check_stages",
    "load_recipe",
    "main",
    "overrides",
    "stage_command",
    "stage_status",
]


class Stage(BaseModel):
    """One stage of a recipe: a training config and the weights file it writes (paths as given in the file).

    ``name`` is letters, digits and ``_.-`` (``--from`` and ``--only`` take it); ``set`` holds ``KEY=VALUE``
    overrides as ``--set`` takes them; ``about`` is one line for ``--list``.
    """

    model_config = ConfigDict(extra="forbid", strict=True)

    name: str
    config: str
    out: str
    set: list[str] = []
    about: str = ""

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _NAME.fullmatch(value):
            raise ValueError("a stage name is ASCII letters, digits and _.- (not starting with one of _.-)")
        return value

    @field_validator("config", "out")
    @classmethod
    def _path(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("a path, relative to the recipe's folder, is needed")
        return value

    @field_validator("set")
    @classmethod
    def _overrides(cls, value: list[str]) -> list[str]:
        for item in value:
            key, sep, _ = item.partition("=")
            if not sep or not key.strip():
                raise ValueError(f"an override is KEY=VALUE (as --set takes): {item!r}")
        return value


_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")

ROOT = Path(__file__).resolve().parents[1]
"""The repository's root: the folder that holds ``lab`` (a stage's process imports :mod:`lab.train_champion`)."""


class Recipe(BaseModel):
    """A recipe file: its stages (at least one), in the order they are trained."""

    model_config = ConfigDict(extra="forbid", strict=True)

    stages: list[Stage]

    @field_validator("stages")
    @classmethod
    def _some(cls, value: list[Stage]) -> list[Stage]:
        if not value:
            raise ValueError("a recipe lists at least one stage")
        return value


@dataclass(frozen=True)
class StageStatus:
    """What is on disk for a stage: ``state`` is ``"done"`` (its ``out`` written from this stage's config and
    overrides), ``"missing"`` (no ``out``) or ``"other"`` (an ``out`` that this stage did not write, or that does
    not read); ``detail`` says more (the steps trained, or what wrote the file)."""

    state: str
    detail: str


def load_recipe(path: str | Path) -> tuple[Recipe, Path]:
    """Read and check a recipe file; return it and its folder (the stages' paths are relative to it).

    Raises:
        ConfigError: naming the file and the key: not a mapping, an unknown or missing key, a stage name used
            twice, two stages with the same ``out``, or a stage config that does not exist.
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: recipe file not found")
    raw = read_yaml(path, "a recipe")
    if raw is None:
        raise ConfigError(f"{path}: the recipe is empty; it is a mapping with the key 'stages'")
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: a recipe is a mapping with the key 'stages', got {type(raw).__name__}")
    try:
        recipe = Recipe.model_validate(raw)
    except ValidationError as e:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(top)'}: {err['msg']} (got {err.get('input')!r})"
            for err in e.errors()
        )
        raise ConfigError(f"{path}: {problems}") from None
    folder = path.parent.resolve()
    names: set[str] = set()
    outs: dict[Path, str] = {}
    for i, stage in enumerate(recipe.stages):
        if stage.name in names:
            raise ConfigError(f"{path}: stages.{i}.name: {stage.name!r} names two stages")
        names.add(stage.name)
        out = (folder / stage.out).resolve()
        if out in outs:
            raise ConfigError(f"{path}: stages.{i}.out: {stage.out!r} is also the out of stage {outs[out]!r}")
        outs[out] = stage.name
        if not (folder / stage.config).is_file():
            raise ConfigError(f"{path}: stages.{i}.config: {stage.config!r} not found (relative to {folder})")
    return recipe, folder


def _shown(path: Path) -> str:
    """``path`` relative to the current folder when it lies below it (as the weights' metadata records it)."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _out(stage: Stage, folder: Path) -> Path:
    return (folder / stage.out).resolve()


def overrides(stage: Stage, folder: Path) -> list[str]:
    """``stage``'s ``set`` overrides with the paths in their values made absolute against the recipe's ``folder``
    (:func:`training.config.resolve_override`; the others as written)."""
    return [resolve_override(item, folder) for item in stage.set]


def stage_command(stage: Stage, folder: Path, force: bool = False) -> list[str]:
    """The ``train_champion`` command line that trains ``stage`` of a recipe in ``folder`` (``--force`` if
    ``force``); :func:`_run` runs it with the repository's root on ``PYTHONPATH``, where ``lab`` is importable."""
    cmd = [sys.executable, "-m", "lab.train_champion", _shown((folder / stage.config).resolve())]
    for item in overrides(stage, folder):
        cmd += ["--set", item]
    cmd += ["--out", _shown(_out(stage, folder))]
    return [*cmd, "--force"] if force else cmd


def stage_status(stage: Stage, folder: Path) -> StageStatus:
    """What is on disk for ``stage`` (:class:`StageStatus`), read from its weights file's metadata."""
    from sixnimmt_env.champion import read_weights

    out = _out(stage, folder)
    if not out.exists():
        return StageStatus("missing", "not trained")
    try:
        _, meta = read_weights(out)
    except (OSError, ValueError) as e:
        return StageStatus("other", f"does not read as weights ({e})")
    config, given = meta.get("config"), list(meta.get("overrides") or [])
    if config is None:
        return StageStatus("other", f"exported from {meta.get('source', 'an unknown checkpoint')}, not by a config")
    if Path(str(config)).name != Path(stage.config).name or given != overrides(stage, folder):
        made = f"{config}" + (f" --set {' --set '.join(given)}" if given else "")
        return StageStatus("other", f"written from {made}")
    steps = meta.get("steps")
    return StageStatus("done", f"{steps:,} steps" if isinstance(steps, int) else "trained")


def _writable(out: Path) -> str | None:
    """Why ``out`` cannot be written as a file (``None`` if it can): a folder in its place, or a folder on its way
    that cannot be created or written (:func:`sixnimmt_env.arena.report.check_results_folder`)."""
    from sixnimmt_env.arena.report import check_results_folder

    if out.is_dir():
        return "is a folder"
    try:
        check_results_folder(out.parent, overwrite=True, what="its folder")
    except ValueError as e:
        return f"cannot be written: {e}"
    return None


def check_stages(stages: Sequence[Stage], folder: Path) -> list[str]:
    """The problems (one line each, naming the stage) that would stop ``stages`` of a run, found before any
    training: a config that does not load with its overrides, an ``out`` that cannot be written.

    A config whose error names a file that an earlier stage of ``stages`` writes (its ``train.init_from``, a
    ``champion:`` opponent) passes: that file may be missing yet. Its other errors, if any, then show when its stage
    starts (the config loader stops at the first)."""
    problems = []
    written: list[Path] = []
    for stage in stages:
        try:
            load_config(folder / stage.config, overrides(stage, folder))
        except ConfigError as e:
            if not any(str(path) in str(e) for path in written):
                problems.append(f"stage {stage.name!r}: {e}")
        why = _writable(_out(stage, folder))
        if why is not None:
            problems.append(f"stage {stage.name!r}: its out {_shown(_out(stage, folder))} {why}")
        written.append(_out(stage, folder))
    return problems


@contextlib.contextmanager
def _locked(outs: Sequence[Path], command: str) -> Iterator[None]:
    """Hold the lock of each weights file in ``outs`` (``.NAME.lock`` beside it, created with its folder;
    :func:`training.train.held_lock`) while the block runs.

    Raises:
        training.train.RunInUse: another process holds one (it names the process).
    """
    from training.train import held_lock

    with contextlib.ExitStack() as stack:
        for out in outs:
            out.parent.mkdir(parents=True, exist_ok=True)
            lock = out.with_name(f".{out.name}.lock")
            stack.enter_context(held_lock(lock, f"weights file {_shown(out)}", command, by="another recipe run"))
        yield


def _run(cmd: list[str]) -> int:
    """Run one stage's command (:data:`ROOT` first on ``PYTHONPATH``); on Ctrl-C wait for it (it got the signal too:
    it saves and ends), then raise ``KeyboardInterrupt``. A second Ctrl-C while waiting stops it at once."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    proc = subprocess.Popen(cmd, env={**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": path})
    try:
        return proc.wait()
    except KeyboardInterrupt:
        try:
            proc.wait()
        except KeyboardInterrupt:
            proc.kill()
            proc.wait()
        raise


def _select(recipe: Recipe, args: argparse.Namespace) -> tuple[list[Stage], bool]:
    """The stages this run looks at, and whether done ones are trained again. Raises ``ValueError`` for an unknown
    stage name (listing the recipe's) or an ``--only`` without a name."""
    names = [s.name for s in recipe.stages]

    def check(name: str, option: str) -> str:
        if name not in names:
            raise ValueError(f"{option}: no stage {name!r}; the recipe's stages are {', '.join(names)}")
        return name

    if args.only is not None:
        wanted = {check(n.strip(), "--only") for n in args.only.split(",") if n.strip()}
        if not wanted:
            raise ValueError(f"--only: give stage names, comma-separated; the recipe's stages are {', '.join(names)}")
        return [s for s in recipe.stages if s.name in wanted], True
    if args.from_stage is not None:
        first = names.index(check(args.from_stage, "--from"))
        return recipe.stages[first:], True
    return list(recipe.stages), bool(args.all)


EXAMPLES = (
    "lab/configs/recipes/champion.yaml --list",
    "lab/configs/recipes/champion.yaml --all --force",
    "lab/configs/recipes/champion.yaml --from tables-1 --force",
)
"""Typical arguments of the command, shown by its ``--help``."""


def _parser() -> argparse.ArgumentParser:
    from sixnimmt_env.cli import parser_kwargs

    p = argparse.ArgumentParser(**parser_kwargs("lab.recipe", EXAMPLES), description=__doc__.split("\n\n")[0])
    p.add_argument("recipe", help="the recipe file (e.g. lab/configs/recipes/champion.yaml)")
    p.add_argument("--list", action="store_true", help="show the stages and their state on disk; train nothing")
    p.add_argument("--dry-run", action="store_true", help="check the run and print its commands; train nothing")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--all", action="store_true", help="train every stage, done or not (from scratch)")
    group.add_argument("--from", dest="from_stage", metavar="STAGE", help="train this stage and every later one")
    group.add_argument("--only", metavar="STAGE[,STAGE]", help="train only these stages (in the recipe's order)")
    p.add_argument("--force", action="store_true", help="replace weights files that exist (a stage trained again)")
    return p


def _go_on(args: argparse.Namespace, stages: Sequence[Stage], folder: Path) -> str:
    """The command that trains ``stages[0]`` (the one that failed or was stopped) again and then the rest of
    ``stages``: a plain run repeats itself (done stages are kept); ``--only`` names the stages left; ``--all`` and
    ``--from`` go on ``--from`` it (with ``--force``, as they had)."""
    command = f"python -m lab.recipe {shlex.quote(args.recipe)}"
    if args.only is not None:
        force = " --force" if any(_out(s, folder).exists() for s in stages) else ""
        return f"{command} --only {','.join(s.name for s in stages)}{force}"
    if args.all or args.from_stage is not None:
        return f"{command} --from {stages[0].name}" + (" --force" if args.force else "")
    return command + (" --force" if args.force else "")


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns the exit code (2 for a bad recipe or option or a refused run, 130 after
    Ctrl-C, a failed stage's code)."""
    args = _parser().parse_args(argv)
    try:
        recipe, folder = load_recipe(args.recipe)
        stages, again = _select(recipe, args)
    except (ConfigError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.list:
        for i, s in enumerate(recipe.stages, 1):
            st = stage_status(s, folder)
            print(f"{i:>2}. {s.name:<14} {st.state:<8} {_shown(_out(s, folder))}: {st.detail}")
            sets = "".join(f" --set {o}" for o in s.set)
            print(f"    {_shown((folder / s.config).resolve())}{sets}" + (f"  ({s.about})" if s.about else ""))
        return 0
    if any(_writable(_out(s, folder)) for s in stages):  # the locks beside them could not be made: stop here
        for line in check_stages(stages, folder):
            print(f"error: {line}", file=sys.stderr)
        return 2
    try:
        with _locked([_out(s, folder) for s in stages], shlex.join(sys.argv)):
            return _train(args, stages, again, folder)
    except ConfigError as e:  # RunInUse: another recipe run trains into one of the weights files
        print(f"error: {e}", file=sys.stderr)
        return 2


def _train(args: argparse.Namespace, stages: list[Stage], again: bool, folder: Path) -> int:
    """Check and train the selected ``stages`` (their weights files locked by the caller); the exit code."""
    status = {s.name: stage_status(s, folder) for s in stages}
    todo = [s for s in stages if again or status[s.name].state != "done"]
    problems = [
        f"stage {s.name!r}: {_shown(_out(s, folder))} exists ({status[s.name].state}: {status[s.name].detail}); "
        "give --force to replace it"
        for s in todo
        if status[s.name].state != "missing" and not args.force
    ]
    problems += check_stages(todo, folder)
    if problems:
        for line in problems:
            print(f"error: {line}", file=sys.stderr)
        return 2
    skipped = [s.name for s in stages if s not in todo]
    if skipped:
        print(f"done already (kept): {', '.join(skipped)}", file=sys.stderr)
    if not todo:
        print("nothing to train (--all --force trains every stage again)", file=sys.stderr)
        return 0
    times: list[tuple[str, float]] = []
    for k, s in enumerate(todo, 1):
        cmd = stage_command(s, folder, force=args.force)
        print(f"[{k}/{len(todo)}] stage {s.name}: {shlex.join(cmd)}", file=sys.stderr, flush=True)
        if args.dry_run:
            continue
        start = time.monotonic()
        try:
            code = _run(cmd)
        except KeyboardInterrupt:
            print(
                f"\ninterrupted in stage {s.name!r}; go on with: {_go_on(args, todo[k - 1 :], folder)}", file=sys.stderr
            )
            return 130
        times.append((s.name, time.monotonic() - start))
        if code != 0:
            print(
                f"error: stage {s.name!r} failed (exit code {code}); go on with: {_go_on(args, todo[k - 1 :], folder)}",
                file=sys.stderr,
            )
            return code
        print(f"stage {s.name}: {times[-1][1] / 60:.1f} min", file=sys.stderr, flush=True)
    if times:
        each = ", ".join(f"{n} {t / 60:.1f} min" for n, t in times)
        print(f"stages trained: {each}; {sum(t for _, t in times) / 60:.1f} min in all", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
