"""Every install mode in a fresh virtual environment, and the core install on Python 3.11, 3.12 and 3.13 (issue 37,
items 1, 2 and 6).

Each mode installs this checkout (a copy of its files) into a new venv and then runs :data:`CHECK` there, from a
folder outside the checkout: a ``spawn`` child that has never imported ``sixnimmt_env`` makes the env from
Gymnasium's ``"sixnimmt_env:sixnimmt/SixNimmt-v0"`` and steps it, and ``gymnasium.make_vec(...,
vectorization_mode="async")`` with ``spawn`` workers does the same. The modes ``pip install .``, ``pip install -e
.``, the wheel and ``uv pip install`` install with ``--no-deps`` into a venv that sees the packages of the venv
running the tests (a ``.pth`` line): what is tested is our package's install, not PyPI's. ``make install`` is the
venv running the tests itself (CI builds it with ``make test``). The other Pythons install the wheel with its
dependencies, from the package index (pip's cache makes later runs quick), and play the arena with ``champion``.

These tests are marked ``install`` (a few minutes in all): ``.ci/run`` runs them after ``make test``, with
``--durations=0`` for the time of each mode and Python version.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.install

ROOT = Path(__file__).resolve().parent.parent

CHECK = """
import multiprocessing as mp
import queue as queues
import sys

ENV_ID = "sixnimmt_env:sixnimmt/SixNimmt-v0"


def child(queue):
    import gymnasium

    queue.put("sixnimmt_env" in sys.modules)
    env = gymnasium.make(ENV_ID, num_players=3, episode="round")
    obs, info = env.reset(seed=0)
    legal = int(info["action_mask"].sum())
    obs, reward, terminated, truncated, info = env.step(int(info["action_mask"].argmax()))
    queue.put((list(obs.shape), legal))


def answer(queue, process):
    while True:
        try:
            return queue.get(timeout=1)
        except queues.Empty:
            if not process.is_alive():
                raise SystemExit(f"the spawned child ended with exit code {process.exitcode} (its error is above)")


if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    process = ctx.Process(target=child, args=(queue,))
    process.start()
    print("child had imported sixnimmt_env:", answer(queue, process))
    print("child obs, legal actions:", *answer(queue, process))
    process.join()
    import gymnasium

    envs = gymnasium.make_vec(ENV_ID, num_envs=2, vectorization_mode="async", vector_kwargs={"context": "spawn"})
    obs, infos = envs.reset(seed=0)
    obs, rewards, terminated, truncated, infos = envs.step(infos["action_mask"].argmax(axis=1))
    print("async obs:", list(obs.shape))
    envs.close()
    import sixnimmt_env

    print("package:", sixnimmt_env.__file__)
"""
"""The check run in every install (as a script file: a spawned child imports the script's ``child``); its lines,
printed by a working install, are :func:`expected_lines`."""


def check(python: str, folder: Path, keep_pythonpath: bool = False) -> list[str]:
    """Run :data:`CHECK` with ``python`` in ``folder``; its output lines."""
    script = folder / "check_install.py"
    script.write_text(CHECK)
    return run([python, str(script)], cwd=folder, keep_pythonpath=keep_pythonpath).splitlines()


def expected_lines(package_dir: Path) -> list[str]:
    return [
        "child had imported sixnimmt_env: False",
        "child obs, legal actions: [506] 10",  # after a step; the 10 cards dealt at the reset
        "async obs: [2, 506]",
        f"package: {package_dir / '__init__.py'}",
    ]


def run(command: list[str], cwd: Path, timeout: float = 900, keep_pythonpath: bool = False) -> str:
    """Run ``command`` (without ``$PYTHONPATH`` unless ``keep_pythonpath``: a fresh venv imports what it installed);
    its stdout, or a failure that shows its output."""
    env = dict(os.environ) if keep_pythonpath else {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(command)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    return done.stdout


def venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def new_venv(folder: Path, python: str = sys.executable, see_this_venv: bool = True) -> Path:
    """A fresh venv in ``folder``; with ``see_this_venv`` a ``.pth`` file adds the site-packages folders on this
    process's path at the end of its path (the dependencies, never our package, which an editable install maps
    with a finder of its own: nothing of this venv's is imported ahead of the fresh venv's own)."""
    run([python, "-m", "venv", str(folder)], cwd=folder.parent)
    if see_this_venv:
        pure = subprocess.run(
            [str(venv_python(folder)), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        folders = [entry for entry in sys.path if entry.endswith("site-packages") and Path(entry).is_dir()]
        Path(pure, "_deps_of_the_test_venv.pth").write_text("".join(f"{entry}\n" for entry in folders))
    return folder


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of this checkout's files (tracked and new ones, not the ignored), as a fresh clone would have them."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    copy = tmp_path_factory.mktemp("source") / "sixnimmt"
    for name in filter(None, listed.split("\0")):
        if (ROOT / name).is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, copy / name)
    return copy


@pytest.fixture(scope="module")
def dist(source: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel and the sdist, built once, each in an isolated build environment (``pip wheel``, ``uv build
    --sdist``: pip cannot build an sdist)."""
    out = tmp_path_factory.mktemp("dist")
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(source)], cwd=out)
    run([uv(), "build", "--sdist", "--quiet", "--out-dir", str(out), str(source)], cwd=out)
    return out


def uv() -> str:
    """The ``uv`` of the venv running the tests (the ``dev`` extra)."""
    found = shutil.which("uv", path=str(Path(sys.executable).parent))
    assert found is not None, "uv is in the dev extra: pip install -e '.[dev]'"
    return found


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A working folder outside the checkout, for the check."""
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


def test_the_wheel_is_pure_python_and_the_sdist_has_the_license(dist: Path) -> None:
    """One ``py3-none-any`` wheel: right on any Python 3 and platform, no file outside the packages (no ``.pth``),
    nothing compiled; the sdist and the wheel carry the MIT LICENSE."""
    (wheel,) = dist.glob("*.whl")
    assert wheel.name == "sixnimmt-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        metadata = archive.read("sixnimmt-0.1.0.dist-info/METADATA").decode()
        scripts = archive.read("sixnimmt-0.1.0.dist-info/entry_points.txt").decode()
    assert {name.split("/")[0] for name in names} == {"sixnimmt_env", "training", "sixnimmt-0.1.0.dist-info"}
    assert not [name for name in names if name.endswith((".pth", ".so", ".pyd"))]
    assert "sixnimmt-0.1.0.dist-info/licenses/LICENSE" in names
    assert "License-Expression: MIT" in metadata and "Root-Is-Purelib: true" in archive_wheel_file(wheel)
    assert "sixnimmt = sixnimmt_env.cli:main" in scripts
    assert "[sixnimmt.commands]\nevaluate = training.evaluate\ntrain = training.train\n" in scripts  # the kit's
    weights = sorted(name for name in names if name.endswith(".npz"))  # what champion plays, and default-ppo
    assert weights == [
        "sixnimmt_env/champion.npz",
        "sixnimmt_env/weights/champion_2p.npz",
        "sixnimmt_env/weights/champion_tables.npz",
        "sixnimmt_env/weights/default_ppo_4p.npz",
    ]
    (sdist,) = dist.glob("*.tar.gz")
    with tarfile.open(sdist) as archive:
        members = archive.getnames()
    assert "sixnimmt-0.1.0/LICENSE" in members and "sixnimmt-0.1.0/sixnimmt_env/champion.npz" in members
    assert "sixnimmt-0.1.0/setup.py" not in members
    assert not [m for m in members if m.startswith("sixnimmt-0.1.0/lab/")]  # the lab is the repository's only


def archive_wheel_file(wheel: Path) -> str:
    with zipfile.ZipFile(wheel) as archive:
        return archive.read("sixnimmt-0.1.0.dist-info/WHEEL").decode()


MODES = ["pip install .", "pip install -e .", "wheel", "uv pip install"]


@pytest.mark.parametrize("mode", MODES)
def test_install_mode_in_a_fresh_venv(mode: str, source: Path, dist: Path, outside: Path, tmp_path: Path) -> None:
    """The mode installs the package alone (``--no-deps``); the check passes from a folder outside the source."""
    venv = new_venv(tmp_path / "venv")
    python = str(venv_python(venv))
    pip = [python, "-m", "pip", "install", "--no-deps", "-q"]
    pure = Path(run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], cwd=outside).strip())
    pth_before = {p.name for p in pure.glob("*.pth")}
    if mode == "pip install .":
        run([*pip, str(source)], cwd=outside)
    elif mode == "pip install -e .":
        run([*pip, "-e", str(source)], cwd=outside)
    elif mode == "wheel":
        run([*pip, *map(str, dist.glob("*.whl"))], cwd=outside)
    else:
        run([uv(), "pip", "install", "--no-deps", "--quiet", "--python", python, str(source)], cwd=outside)
    package = (source if mode == "pip install -e ." else pure) / "sixnimmt_env"
    assert check(python, outside) == expected_lines(package)
    (outside / "training.py").write_text('raise SystemExit("the user\'s training.py ran")\n')
    for command in ("train", "evaluate"):  # the sixnimmt command is immune to a user's training.py
        usage = run([str(venv / "bin" / "sixnimmt"), command, "--help"], cwd=outside).splitlines()[0]
        assert usage.startswith(f"usage: sixnimmt {command} "), command
    pth = sorted({p.name for p in pure.glob("*.pth")} - pth_before)  # what the install put beside the packages
    assert pth == (["__editable__.sixnimmt-0.1.0.pth"] if mode == "pip install -e ." else [])  # setuptools' own


def test_make_install_venv(outside: Path) -> None:
    """The venv running these tests: ``make install`` built it (``make test`` in CI), an editable install."""
    assert check(sys.executable, outside, keep_pythonpath=True) == expected_lines(ROOT / "sixnimmt_env")


def other_python(version: str) -> str:
    """An interpreter of ``version`` on this machine: pyenv's (``~/.pyenv/versions/X.Y.*``, the newest), else
    ``pythonX.Y`` on the path (not a pyenv shim, which answers only for the versions pyenv has selected)."""
    pyenv = sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{version}.*/bin/python{version}")))
    found = shutil.which(f"python{version}")
    for candidate in [*reversed(pyenv), found]:
        if candidate and "/shims/" not in candidate:
            return candidate
    pytest.fail(f"no Python {version} here (pyenv's ~/.pyenv/versions/{version}.* or python{version} on the path)")


ARENA = ["-m", "sixnimmt_env.arena", "--agents", "champion,greedy,random,random", "--games", "200", "--workers", "1"]


@pytest.mark.parametrize("version", ["3.11", "3.12", "3.13"])
def test_core_install_on_each_python(version: str, dist: Path, outside: Path, tmp_path: Path) -> None:
    """The wheel with its dependencies from the package index into a fresh venv of that Python: the check, and the
    arena playing the shipped ``champion`` (numba compiles the loops there)."""
    python = sys.executable if version == "3.11" else other_python(version)
    venv = new_venv(tmp_path / "venv", python=python, see_this_venv=False)
    vpython = str(venv_python(venv))
    run([vpython, "-m", "pip", "install", "-q", *map(str, dist.glob("*.whl"))], cwd=outside)
    assert run([vpython, "-c", "import sys; print(sys.version_info[:2])"], cwd=outside).strip() == str(
        tuple(map(int, version.split(".")))
    )
    pure = Path(run([vpython, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], cwd=outside).strip())
    assert check(vpython, outside) == expected_lines(pure / "sixnimmt_env")
    run([vpython, *ARENA, "--quiet", "--out", str(outside / "arena")], cwd=outside)
    results = json.loads((outside / "arena" / "results.json").read_text())
    assert results["games"] == 200 and results["agents"][0]["agent"] == "champion"
