"""Training a stage of ``champion`` and exporting its weights (lab.train_champion; issue 13): the export plays the
torch policy's logits, never replaces a file without ``--force``, writes only weights that load, and writes the
attention's format."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
import pytest

from sixnimmt_env import parallel_env
from sixnimmt_env.champion import WEIGHTS, load_champion, read_weights

ROOT = Path(__file__).resolve().parents[2]


def _positions(num_players: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Every seat's observation ``(n, 506)`` and mask ``(n, 109)`` at the first decision of a round."""
    observations, _ = parallel_env(num_players=num_players).reset(seed=seed)
    obs = np.stack([o["observation"] for o in observations.values()])
    return obs, np.stack([o["action_mask"] for o in observations.values()]).astype(bool)


def test_export_matches_the_torch_policy_and_never_overwrites(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from sb3_contrib import MaskablePPO

    from lab.train_champion import export, main
    from training.policy import CardPolicy
    from training.ppo_agents import PolicyAgent

    env = gymnasium.make("sixnimmt/SixNimmt-v0", num_players=4, opponents=["greedy"] * 3, episode="round")
    model = MaskablePPO(CardPolicy, env, seed=1, policy_kwargs={"net_arch": [32, 16]})
    zip_path = tmp_path / "m.zip"
    model.save(zip_path)
    out = export(zip_path, tmp_path / "w.npz")
    champion = load_champion(f"champion:{out}")
    assert champion.meta["steps"] == 0
    obs, _ = _positions(4, 2)
    torch_logits = PolicyAgent(model.policy).logits(obs)
    np.testing.assert_allclose(champion.actor.logits(obs), torch_logits, rtol=1e-5, atol=1e-5)
    before = out.read_bytes()
    with pytest.raises(ValueError, match="exists; give --force"):
        export(zip_path, out)
    assert main(["--export", str(zip_path), "--out", str(out)]) == 2
    assert out.read_bytes() == before
    assert main(["--export", str(zip_path), "--out", str(out), "--force"]) == 0
    assert load_champion(f"champion:{out}").meta["source"] == str(zip_path)


def test_write_weights_replaces_nothing_with_arrays_that_do_not_load(tmp_path: Path) -> None:
    from lab.train_champion import write_weights

    arrays = {k: v for k, v in np.load(WEIGHTS).items() if k != "meta"}
    out = write_weights(arrays, tmp_path / "w.npz", {"source": "test", "steps": 7})
    _, meta = read_weights(out)
    assert meta == {"format": "sixnimmt-card-actor-1", "source": "test", "steps": 7}
    before = out.read_bytes()
    broken = {**arrays, "linear_b": np.zeros(5, np.float32)}
    with pytest.raises(ValueError, match=r"linear_b has shape \(5,\), expected \(109,\)"):
        write_weights(broken, out, {"source": "broken"})
    assert out.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.npz"]  # no temporary file left behind


def test_champion_command_refuses_a_bad_override(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from lab.train_champion import main

    out = tmp_path / "w.npz"
    assert main([str(ROOT / "configs" / "smoke.yaml"), "--set", "train.win_bonus=-1", "--out", str(out)]) == 2
    assert "key 'train.win_bonus' must be in [0, 1e6) bullheads, got -1" in capsys.readouterr().err
    assert not out.exists()


def test_weights_with_hand_attention_write_format_2_and_play_their_attention(tmp_path: Path) -> None:
    from lab.train_champion import write_weights

    arrays = {k: v for k, v in np.load(WEIGHTS).items() if k != "meta"}
    gen = np.random.default_rng(8)
    attention = {
        "attention_in_w": gen.normal(0, 0.3, (32, 96)).astype(np.float32),
        "attention_in_b": gen.normal(0, 0.1, 96).astype(np.float32),
        "attention_out_w": gen.normal(0, 0.3, (32, 32)).astype(np.float32),
        "attention_out_b": np.zeros(32, np.float32),
        "attention_heads": np.array(4),
    }
    out = write_weights({**arrays, **attention}, tmp_path / "a.npz", {"source": "test"})
    actor, meta = read_weights(out)
    assert meta["format"] == "sixnimmt-card-actor-2" and actor.attention is not None and actor.attention[4] == 4
    obs, masks = _positions(4, 9)
    plain = load_champion().actor.logits(obs)
    logits = actor.logits(obs)
    assert np.abs(np.where(masks, logits - plain, 0.0)).max() > 0.05  # the attention is played
    np.testing.assert_array_equal(logits[:, 104:], plain[:, 104:])  # rows and no-op: the linear term only
    agent = load_champion(f"champion:{out}")
    assert all(masks[i, a] for i, a in enumerate(agent.choose(obs, masks)))
    # a file of format 1 with attention arrays, or some attention arrays missing, is refused
    entries: dict[str, Any] = {"meta": np.array('{"format": "sixnimmt-card-actor-1"}'), **arrays, **attention}
    np.savez(tmp_path / "one.npz", **entries)
    with pytest.raises(ValueError, match="format 'sixnimmt-card-actor-1' but the file has attention arrays"):
        read_weights(tmp_path / "one.npz")
    partial = {k: v for k, v in attention.items() if k != "attention_out_b"}
    with pytest.raises(ValueError, match=r"attention arrays \['attention_out_b'\] missing"):
        write_weights({**arrays, **partial}, tmp_path / "p.npz", {})
    assert not (tmp_path / "p.npz").exists()


def test_the_champion_command_runs_numpy_with_one_blas_thread() -> None:
    """``python -m lab.train_champion`` trains in its own process as ``python -m training.train`` does: it sets
    OPENBLAS_NUM_THREADS=1 before numpy loads, unless the user set it (tests/test_training.py checks the kit's)."""
    code = (  # the variable as numpy is first imported (a finder that only looks), then after the command
        "import os, runpy, sys\n"
        "seen = []\n"
        "class Look:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'numpy' and not seen:\n"
        "            seen.append(os.environ.get('OPENBLAS_NUM_THREADS'))\n"
        "sys.meta_path.insert(0, Look())\n"
        "assert 'numpy' not in sys.modules\n"
        "sys.argv = ['lab.train_champion', '--help']\n"
        "try:\n"
        "    runpy.run_module('lab.train_champion', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(seen[0], os.environ['OPENBLAS_NUM_THREADS'], 'numpy' in sys.modules)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    env["PYTHONPATH"] = str(ROOT)
    run = [sys.executable, "-c", code]
    out = subprocess.run(run, env=env, capture_output=True, text=True, check=True, timeout=120, cwd=ROOT).stdout
    assert out.split()[-3:] == ["1", "1", "True"]
    env["OPENBLAS_NUM_THREADS"] = "2"
    out = subprocess.run(run, env=env, capture_output=True, text=True, check=True, timeout=120, cwd=ROOT).stdout
    assert out.split()[-3:] == ["2", "2", "True"]


@pytest.mark.parametrize(
    ("module", "examples"),
    [
        ("lab.train_champion", "lab/configs/champion_short.yaml --out mine.npz"),
        ("lab.recipe", "lab/configs/recipes/champion.yaml --list"),
        ("lab.promote", "champion:mine.npz --incumbent champion --league champion:lab/weights/champion_v7.npz,mc:64"),
    ],
)
def test_the_lab_commands_run_from_the_repositorys_root_with_their_examples(module: str, examples: str) -> None:
    """The lab's commands are not ``sixnimmt`` subcommands: ``python -m lab.X --help`` from the repository's root
    names itself so and shows its examples."""
    out = subprocess.run(
        [sys.executable, "-m", module, "--help"], cwd=ROOT, capture_output=True, text=True, check=True, timeout=120
    ).stdout
    assert out.startswith(f"usage: python -m {module} ")
    assert f"examples:\n  python -m {module} {examples}" in out
