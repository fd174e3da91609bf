"""The ``sixnimmt`` command (sixnimmt_env/cli.py) and the one line-up parser (sixnimmt_env.agents.parse_lineup), run
in subprocesses from another folder than the clone's, as a user types them."""

from __future__ import annotations

import json
import os
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


def _sixnimmt(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-c", SCRIPT, *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=timeout
    )


def test_help_lists_every_subcommand_with_examples(tmp_path: Path) -> None:
    assert ENTRY == "sixnimmt_env.cli:main"
    out = _sixnimmt("--help", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    for command in ("train", "evaluate", "arena", "replay", "play", "champion"):
        assert f"\n    {command} " in out.stdout, command
    assert "  sixnimmt arena --agents champion,greedy,mc:64,champion:default-ppo --games 2000" in out.stdout
    assert "champion:NAME (default-ppo, stage-1 .. stage-8, tables, 2p, games)" in out.stdout
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
        "argument COMMAND: invalid choice: 'tran' (choose from 'train', 'evaluate', 'arena', 'replay', 'play', "
        "'champion', 'recipe', 'promote')" in out.stderr
    )


def test_arena_then_replay_through_the_command_match_python_m(tmp_path: Path) -> None:
    games = tmp_path / "games.jsonl"
    args = ["--agents", "greedy,random,champion:stage-1", "--games", "6", "--seed", "3", "--quiet"]
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
    assert [r["agent"] for r in a["agents"]] == ["greedy", "random", "champion:stage-1"]
    assert [r["mean_penalty"] for r in a["agents"]] == [r["mean_penalty"] for r in b["agents"]]
    assert len(games.read_text().splitlines()) == 6
    replay = _sixnimmt("replay", str(games), "--game", "2", cwd=tmp_path)
    assert replay.returncode == 0, replay.stderr
    assert "greedy" in replay.stdout and "champion:stage-1" in replay.stdout


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
