"""The ``sixnimmt`` command (sixnimmt_env/cli.py): its own subcommands and the plugins' (entry points of
``sixnimmt.commands``: the kit's ``train`` and ``evaluate``, a package of the user's), and the one line-up parser
(sixnimmt_env.agents.parse_lineup), run in subprocesses from another folder than the clone's, as a user types them."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from sixnimmt_env.agents import known_specs, parse_lineup

ROOT = Path(__file__).resolve().parents[1]
ENTRY = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]["sixnimmt"]
# What the installed `sixnimmt` script runs: the [project.scripts] entry point, loaded as pip's wrapper loads it.
SCRIPT = (
    "import importlib, sys\n"
    f"module, _, name = {ENTRY!r}.partition(':')\n"
    "sys.argv[0] = 'sixnimmt'\n"
    "sys.exit(getattr(importlib.import_module(module), name)())\n"
)


def _sixnimmt(
    *args: str, cwd: Path, timeout: float = 120, path: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """The installed ``sixnimmt`` with ``args``, run in ``cwd``; ``path``: a folder put before the clone on
    ``PYTHONPATH`` (where a test installs a plugin's distribution)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(p) for p in (path, ROOT) if p is not None)}
    return subprocess.run(
        [sys.executable, "-c", SCRIPT, *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=timeout
    )


def test_help_lists_every_subcommand_with_examples(tmp_path: Path) -> None:
    assert ENTRY == "sixnimmt_env.cli:main"
    out = _sixnimmt("--help", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    for command in ("train", "evaluate", "arena", "replay", "play"):
        assert f"\n    {command} " in out.stdout, command
    for lab_command in ("champion", "recipe", "promote"):  # the lab's: python -m lab.X from a checkout
        assert f"\n    {lab_command} " not in out.stdout, lab_command
    words = " ".join(out.stdout.split())  # the summaries as argparse wraps them, on one line
    for command in ("train", "evaluate"):  # a plugin's summary: its module's docstring's first line, not imported
        first = ast.get_docstring(ast.parse((ROOT / "training" / f"{command}.py").read_text())).splitlines()[0]
        plain = re.sub(r":\w+:`([^`]+)`", r"\1", first).replace("``", "")  # as reStructuredText renders them
        assert f" {command} {' '.join(plain.split())} " in words, command
    assert ":mod:`" not in out.stdout and "``" not in out.stdout
    assert "  sixnimmt arena --agents champion,greedy,mc:64,champion:default-ppo --games 2000" in out.stdout
    assert "champion:NAME (default-ppo, stage-8, tables, 2p)" in out.stdout
    sub = _sixnimmt("train", "--help", cwd=tmp_path)
    assert sub.returncode == 0 and sub.stdout.startswith("usage: sixnimmt train ")
    assert "examples:\n  sixnimmt train configs/ppo_4p.yaml\n" in sub.stdout
    plain = subprocess.run(
        [sys.executable, "-m", "training.train", "--help"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert plain.returncode == 0 and plain.stdout.startswith("usage: python -m training.train ")
    assert "  python -m training.train configs/ppo_4p.yaml\n" in plain.stdout


def test_a_missing_or_unknown_command_lists_the_commands(tmp_path: Path) -> None:
    for args in ((), ("tran", "configs/ppo_4p.yaml")):
        out = _sixnimmt(*args, cwd=tmp_path)
        assert out.returncode == 2 and out.stdout == ""
        assert "usage: sixnimmt [-h] COMMAND ..." in out.stderr
    assert (
        "argument COMMAND: invalid choice: 'tran' (choose from 'evaluate', 'train', 'arena', 'replay', 'play')"
        in out.stderr
    )
    out = _sixnimmt("recipe", "lab/configs/recipes/champion.yaml", "--list", cwd=ROOT)  # a lab command: not here
    assert out.returncode == 2 and out.stdout == ""
    assert (
        "sixnimmt: error: 'recipe' is not a command of the installed package: it is a tool of the repository's lab, "
        "run from a checkout as 'python -m lab.recipe ...' (docs/champion.md)"
    ) in " ".join(out.stderr.split())
    out = _sixnimmt("champion", cwd=tmp_path)
    assert out.returncode == 2 and "'python -m lab.train_champion ...'" in out.stderr


def test_arena_then_replay_through_the_command_match_python_m(tmp_path: Path) -> None:
    games = tmp_path / "games.jsonl"
    args = ["--agents", "greedy,random,champion:stage-8", "--games", "6", "--seed", "3", "--quiet"]
    out = _sixnimmt("arena", *args, "--out", "a", "--save-games", str(games), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    plain = subprocess.run(
        [sys.executable, "-m", "sixnimmt_env.arena", *args, "--out", "b"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert plain.returncode == 0, plain.stderr
    a, b = (json.loads((tmp_path / d / "results.json").read_text()) for d in ("a", "b"))
    assert [r["agent"] for r in a["agents"]] == ["greedy", "random", "champion:stage-8"]
    assert [r["mean_penalty"] for r in a["agents"]] == [r["mean_penalty"] for r in b["agents"]]
    assert len(games.read_text().splitlines()) == 6
    replay = _sixnimmt("replay", str(games), "--game", "2", cwd=tmp_path)
    assert replay.returncode == 0, replay.stderr
    assert "greedy" in replay.stdout and "champion:stage-8" in replay.stdout


def test_parse_lineup_splits_checks_and_names_the_option() -> None:
    assert parse_lineup(" mc:64, champion:default-ppo ,greedy", "--agents") == [
        "mc:64",
        "champion:default-ppo",
        "greedy",
    ]
    with pytest.raises(ValueError, match=r"--opponents 'greedy,,random' has an empty entry; give agent specs"):
        parse_lineup("greedy,,random", "--opponents")
    with pytest.raises(ValueError, match=r"--agents '' names no agent"):
        parse_lineup("", "--agents")
    with pytest.raises(ValueError, match=r"--agents 'greedy,gredy': unknown agent spec 'gredy'; known: random, "):
        parse_lineup("greedy,gredy", "--agents")


def test_every_command_gives_the_same_unknown_agent_error(tmp_path: Path) -> None:
    """The arena, training.evaluate, the play table and a training config (eval.opponents and opponents) refuse
    ``gredy`` with one message, listing every known spec: the built-in ones, then the plugins (entry points of
    sixnimmt.agents: champion, ppo, rllib), whatever each command imported before."""
    known = ", ".join(known_specs())
    assert known == (
        "random, lowest, highest, greedy, mc:N, champion[:NAME|PATH], champion-sample[:NAME|PATH], ppo:PATH, "
        "ppo-sample:PATH, rllib:PATH, rllib-sample:PATH"
    )
    message = f"unknown agent spec 'gredy'; known: {known}"
    config = tmp_path / "c.yaml"
    config.write_text("eval: {opponents: ['greedy,gredy,greedy']}\n")
    config_2 = tmp_path / "d.yaml"
    config_2.write_text("opponents: [{agent: gredy}]\n")
    runs = {
        "arena": _sixnimmt("arena", "--agents", "greedy,gredy", cwd=tmp_path),
        "evaluate": _sixnimmt("evaluate", "--agents", "greedy,gredy", "--games", "4", cwd=tmp_path),
        "play": _sixnimmt("play", "--opponents", "greedy,gredy", "--no-browser", cwd=tmp_path),
        "train (eval.opponents)": _sixnimmt("train", str(config), cwd=tmp_path),
        "train (opponents)": _sixnimmt("train", str(config_2), cwd=tmp_path),
    }
    for name, out in runs.items():
        assert out.returncode == 2, (name, out.stderr)
        assert message in out.stderr, (name, out.stderr)
        assert "Traceback" not in out.stderr, name
    assert f"--agents 'greedy,gredy': {message}" in runs["arena"].stderr
    assert f"--opponents 'greedy,gredy': {message}" in runs["play"].stderr
    assert (
        f"{config}: key 'eval.opponents[0]': line-up 'greedy,gredy,greedy': {message}"
        in runs["train (eval.opponents)"].stderr
    )
    assert f"{config_2}: key 'opponents[0].agent': {message}" in runs["train (opponents)"].stderr


def _plugin(folder: Path, name: str, entry_points: str, requires: tuple[str, ...] = ()) -> Path:
    """An installed distribution ``name`` 1.0 in ``folder`` (its ``.dist-info``, as pip writes it): its
    ``entry_points.txt`` and the ``Requires-Dist`` lines ``requires``; returns ``folder``."""
    info = folder / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    lines = ["Metadata-Version: 2.1", f"Name: {name}", "Version: 1.0", *(f"Requires-Dist: {r}" for r in requires)]
    (info / "METADATA").write_text("\n".join(lines) + "\n")
    (info / "entry_points.txt").write_text(entry_points)
    return folder


def test_a_plugin_adds_a_command_as_a_module_or_a_function(tmp_path: Path) -> None:
    """A distribution's entry points of ``sixnimmt.commands`` are subcommands: a module runs as ``python -m`` (as
    ``__main__``, with the arguments in ``sys.argv``), a ``module:function`` is called with the arguments and its
    return is the exit status; ``--help`` lists both with their docstrings' first line; none replaces the product's
    ``arena``."""
    site = tmp_path / "site"
    (site / "myplug").mkdir(parents=True)
    (site / "myplug" / "__init__.py").write_text("")
    (site / "myplug" / "hello.py").write_text(
        '"""Say hello to 95 % of the table."""\nimport sys\n'
        'if __name__ == "__main__":\n    print("hello", __name__, sys.argv[1:])\n    sys.exit(3)\n'
    )
    (site / "myplug" / "tool.py").write_text(
        '"""Count the arguments."""\ndef main(argv):\n    print("tool", argv)\n    return len(argv)\n'
    )
    entries = "[sixnimmt.commands]\nhello = myplug.hello\ncount = myplug.tool:main\narena = myplug.hello\n"
    _plugin(site, "myplug", entries)
    hello = _sixnimmt("hello", "a", "--b", cwd=tmp_path, path=site)
    assert hello.returncode == 3 and hello.stdout == "hello __main__ ['a', '--b']\n", hello.stderr
    count = _sixnimmt("count", "x", "y", cwd=tmp_path, path=site)
    assert count.returncode == 2 and count.stdout == "tool ['x', 'y']\n", count.stderr
    listed = _sixnimmt("--help", cwd=tmp_path, path=site)
    assert listed.returncode == 0, listed.stderr
    words = " ".join(listed.stdout.split())
    assert " hello Say hello to 95 % of the table. " in words and " count Count the arguments. " in words
    assert listed.stdout.count("\n    arena ") == 1 and "\n    train " in listed.stdout
    arena = _sixnimmt("arena", "--agents", "greedy,gredy", cwd=tmp_path, path=site)  # still the product's
    assert arena.returncode == 2 and "unknown agent spec 'gredy'" in arena.stderr


def test_a_command_whose_extra_is_missing_names_the_extra_to_install(tmp_path: Path) -> None:
    """A command stopped by a missing module that an extra of its distribution requires exits 2 and names the module,
    the extra and the ``pip install`` that adds it; a missing module that no extra requires is the plain error."""
    site = tmp_path / "site"
    (site / "fancyplug").mkdir(parents=True)
    (site / "fancyplug" / "__init__.py").write_text("")
    (site / "fancyplug" / "run.py").write_text('"""Needs a library."""\nimport no_such_lib.sub\n')
    (site / "fancyplug" / "bare.py").write_text('"""Needs another."""\nimport not_required_anywhere\n')
    requires = ("numpy>=1.26", 'No_Such-Lib>=1.0; extra == "fancy"')
    _plugin(site, "fancyplug", "[sixnimmt.commands]\nfancy = fancyplug.run\nbare = fancyplug.bare\n", requires)
    out = _sixnimmt("fancy", "--help", cwd=tmp_path, path=site)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr == (
        "sixnimmt fancy: needs the 'fancy' extra of fancyplug (no module named 'no_such_lib'); "
        "install it with: pip install 'fancyplug[fancy]'\n"
    )
    bare = _sixnimmt("bare", cwd=tmp_path, path=site)
    assert bare.returncode == 1 and "ModuleNotFoundError: No module named 'not_required_anywhere'" in bare.stderr


def test_the_kits_commands_are_entry_points_and_name_the_train_extra() -> None:
    """``train`` and ``evaluate`` come from this package's entry points (``pyproject.toml``); a missing ``torch``
    names the ``train`` extra (the package's own requirements, as installed)."""
    from importlib.metadata import distribution

    from sixnimmt_env.cli import extra_providing, plugin_commands

    commands = plugin_commands()
    assert {name: entry.value for name, entry in commands.items()} == {
        "evaluate": "training.evaluate",
        "train": "training.train",
    }
    dist = distribution("sixnimmt")
    assert [extra_providing(m, dist) for m in ("torch", "stable_baselines3.common", "sb3_contrib", "ray.rllib")] == [
        "train",
        "train",
        "train",
        "rllib",
    ]
    assert extra_providing("numpy", dist) is None and extra_providing("no_such", dist) is None


def test_sixnimmt_train_runs_numpy_with_one_blas_thread(tmp_path: Path) -> None:
    """``sixnimmt train`` runs the entry point's module as ``python -m training.train`` does, so its start-up setting
    holds: OPENBLAS_NUM_THREADS=1 before numpy loads (tests/test_training.py checks ``python -m``)."""
    code = (  # the variable as numpy is first imported (a finder that only looks), then after the command
        "import os, sys\n"
        "seen = []\n"
        "class Look:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'numpy' and not seen:\n"
        "            seen.append(os.environ.get('OPENBLAS_NUM_THREADS'))\n"
        "sys.meta_path.insert(0, Look())\n"
        "from sixnimmt_env.cli import main\n"
        "assert 'numpy' not in sys.modules\n"
        "try:\n"
        "    main(['train', '--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(seen[0], os.environ['OPENBLAS_NUM_THREADS'], 'numpy' in sys.modules)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    env["PYTHONPATH"] = str(ROOT)
    run = [sys.executable, "-c", code]
    out = subprocess.run(run, env=env, cwd=tmp_path, capture_output=True, text=True, check=True, timeout=120).stdout
    assert out.splitlines()[0].startswith("usage: sixnimmt train ")
    assert out.split()[-3:] == ["1", "1", "True"]
