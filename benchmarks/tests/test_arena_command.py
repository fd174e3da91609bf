"""``benchmarks/arena_command.py --rust``: another engine's command timed in the same run as the arena command,
and the ratio computed from this run's medians."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_rust_engines_command_is_timed_beside_ours_and_divides_the_rate(tmp_path: Path) -> None:
    # a stand-in for the engine: it checks the games and threads it is given, and takes a known 0.3 s
    engine = tmp_path / "engine.py"
    engine.write_text("import sys, time\nassert sys.argv[1:] == ['3000', '1'], sys.argv\ntime.sleep(0.3)\n")
    cmd = [sys.executable, "benchmarks/arena_command.py", "--games", "3000", "--workers", "1", "--runs", "2"]
    cmd += ["--no-plot", "--rust", f"{sys.executable} {engine} {{games}} {{threads}}"]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    rust_rates = [
        float(r.replace(",", ""))
        for r in re.findall(r"^rust  threads=1: [\d.]+ s, ([\d,]+) games/s$", out.stdout, re.M)
    ]
    assert len(rust_rates) == 2 and all(3000 / 0.3 / 2 < r < 3000 / 0.3 for r in rust_rates)  # 0.3 s and start-up
    assert (
        "| checkout | workers | median s | games/s (start-up included) | target | | / Rust (this run's) |" in out.stdout
    )
    ours = re.search(r"^\| \S+ \| 1 \| ([\d.]+) \| ([\d,]+) \| 130,000 \| [^|]* \| ([\d.]+)x \|$", out.stdout, re.M)
    rust = re.search(r"^\| Rust engine \| 1 \| ([\d.]+) \| ([\d,]+) \| \| \| 1\.00x \|$", out.stdout, re.M)
    assert ours is not None and rust is not None, out.stdout
    ratio = 3000 / float(ours.group(1)) / (3000 / float(rust.group(1)))
    assert abs(float(ours.group(3)) - ratio) <= 0.011  # printed to 2 decimals, from the rounded medians


def test_a_rust_command_without_its_placeholders_is_refused() -> None:
    cmd = [sys.executable, "benchmarks/arena_command.py", "--rust", "/opt/engine --games 400000"]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and out.stdout == ""
    assert "--rust needs {games} and {threads} in its command, got '/opt/engine --games 400000'" in out.stderr
