"""The standing benchmark scripts of ``benchmarks/`` that tests run, imported as modules here (the product's and the
kit's tests in ``tests/`` import no benchmark script): benchmarks/learner_rate.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from script_modules import load_script

ROOT = Path(__file__).resolve().parents[2]
SMOKE = ROOT / "configs" / "rllib_smoke.yaml"


def load_benchmark(name: str) -> ModuleType:
    """The script ``benchmarks/<name>.py`` imported as the module ``name`` (:func:`script_modules.load_script`).

    Raises:
        FileNotFoundError: no such script.
    """
    return load_script(ROOT / "benchmarks", name)


@pytest.fixture
def one_torch_thread() -> Iterator[None]:
    """Tiny networks: torch's thread pool only fights the other processes of a 2-core machine."""
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.usefixtures("one_torch_thread")
def test_learner_rate_benchmark_runs_on_a_tiny_config() -> None:
    """benchmarks/learner_rate.py's measurements on the smoke config (256 steps): both rates positive."""
    pytest.importorskip("ray")
    from training.config import load_config

    bench = load_benchmark("learner_rate")
    cfg = load_config(SMOKE, ["self_play.enabled=false", "ray.num_env_runners=0", "algo.n_steps=64"])
    episodes = bench.sample_episodes(cfg)
    rllib = bench.rllib_update_rate(cfg, episodes, repeats=1)
    sb3 = bench.sb3_update_rate(cfg, episodes, repeats=1, n_envs=4)
    assert rllib["update"] > 0 and rllib["connector"] > rllib["update"]
    assert sb3["steps"] >= 256 and sb3["train"] > sb3["update"] > 0
