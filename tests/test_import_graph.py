"""The import graph of ``sixnimmt_env`` and ``training``: import-linter's layers contracts (``[tool.importlinter]`` in
``pyproject.toml``) hold, every module has a layer, and no two modules import each other, however indirectly.

Every import counts here: at module level, inside a function (lazy) and under ``if TYPE_CHECKING:`` (grimp, the graph
that ``lint-imports`` checks, reads them all).
"""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import grimp
import pytest

from sixnimmt_env import agents
from sixnimmt_env.compiled.fast_arena import supports
from sixnimmt_env.compiled.kinds import EXACT_AGENT_CLASSES, KINDS

ROOT = Path(__file__).resolve().parent.parent
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
FORBIDDEN = ("torch", "stable_baselines3", "sb3_contrib", "ray")
"""Libraries that importing any module of ``sixnimmt_env`` never loads (the core install has none of them)."""


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` (the script beside this Python, else the one on ``PATH``) on the packages under ``root``."""
    script = Path(sys.executable).parent / "lint-imports"
    command = [str(script) if script.exists() else shutil.which("lint-imports") or "lint-imports"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        [*command, "--no-cache", "--no-logo"], cwd=root, env=env, capture_output=True, text=True, timeout=300
    )


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph(*CONFIG["root_packages"], cache_dir=None)


def _layer_names(layers: list[str]) -> list[str]:
    return [name.strip() for layer in layers for name in layer.split("|")]


def _ignored() -> set[tuple[str, str]]:
    """The ``importer -> imported`` pairs that a contract's ``ignore_imports`` lists (another slice fixes each)."""
    pairs = set()
    for contract in CONFIG["contracts"]:
        for line in contract.get("ignore_imports", []):
            source, target = (part.strip() for part in line.split("->"))
            pairs.add((source, target))
    return pairs


def test_lint_imports_keeps_every_contract() -> None:
    run = lint_imports(ROOT)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert f"Contracts: {len(CONFIG['contracts'])} kept, 0 broken." in run.stdout
    assert len(CONFIG["contracts"]) == 6


def test_an_upward_import_under_type_checking_breaks_the_contract(tmp_path: Path) -> None:
    """A copy of the packages where the engine imports the arena's report, only for a type hint: a broken layer."""
    for package in CONFIG["root_packages"]:
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("*.npz", "__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    engine = tmp_path / "sixnimmt_env" / "rules" / "engine.py"
    hint = "\nimport typing\n\nif typing.TYPE_CHECKING:\n    from sixnimmt_env.arena.report import Plotter\n"
    engine.write_text(engine.read_text() + hint)
    run = lint_imports(tmp_path)
    assert run.returncode == 1
    assert "sixnimmt_env.rules.engine -> sixnimmt_env.arena.report" in run.stdout
    assert "Contracts: 4 kept, 2 broken." in run.stdout  # also the arena: summary -> engine -> report


def test_every_module_has_a_layer(graph: grimp.ImportGraph) -> None:
    """Each child of a contract's container (a module or a subpackage) is named in one of its layers."""
    assert len(graph.modules) >= 70
    for contract in CONFIG["contracts"]:
        for container in contract.get("containers", []):
            children = {m.rsplit(".", 1)[1] for m in graph.find_children(container)}
            assert children == set(_layer_names(contract["layers"])), container
    top = next(c for c in CONFIG["contracts"] if "containers" not in c)
    assert set(top["layers"]) == set(CONFIG["root_packages"])
    assert "sixnimmt_env.seeding" in graph.find_modules_directly_imported_by("sixnimmt_env.arena.play")


def test_no_cycle(graph: grimp.ImportGraph) -> None:
    """No strongly connected component of more than one module (lazy and ``TYPE_CHECKING`` imports included), once
    the imports that a contract ignores (listed for another slice to fix) are left out."""
    ignored = _ignored()
    modules = sorted(graph.modules)
    edges = {m: sorted(t for t in graph.find_modules_directly_imported_by(m) if (m, t) not in ignored) for m in modules}
    assert cycles(modules, edges) == []


def cycles(modules: list[str], edges: dict[str, list[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges.get(v, []):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for m in modules:
        if m not in index:
            visit(m)
    return found


def test_cycles_finds_a_cycle() -> None:
    assert cycles(["a", "b", "c"], {"a": ["b"], "b": ["a", "c"]}) == [["a", "b"]]
    assert cycles(["a", "b", "c"], {"a": ["b"], "b": ["c"]}) == []


def test_training_config_is_a_leaf_of_training(graph: grimp.ImportGraph) -> None:
    imported = graph.find_modules_directly_imported_by("training.train_config")
    assert {m for m in imported if m.split(".")[0] == "training"} == set()
    assert "sixnimmt_env.agents" in imported


def test_sixnimmt_env_loads_no_training_library() -> None:
    """Importing every module of ``sixnimmt_env`` (the core install) loads none of :data:`FORBIDDEN`: the RLlib
    adapter imports Ray inside its functions only."""
    code = (
        "import pkgutil, importlib, sys, sixnimmt_env\n"
        "names = [m.name for m in pkgutil.walk_packages(sixnimmt_env.__path__, 'sixnimmt_env.')"
        " if not m.name.endswith('__main__')]\n"
        "[importlib.import_module(n) for n in names]\n"
        f"print(len(names), sorted(n for n in {FORBIDDEN!r} if n in sys.modules))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-2000:]
    count, loaded = run.stdout.split(" ", 1)
    assert int(count) >= 50 and loaded.strip() == "[]"


def test_exact_agent_classes_name_the_heuristic_agents() -> None:
    classes = {getattr(importlib.import_module(n.rsplit(".", 1)[0]), n.rsplit(".", 1)[1]) for n in EXACT_AGENT_CLASSES}
    assert classes == {agents.RandomAgent, agents.LowestAgent, agents.HighestAgent, agents.GreedyAgent}
    assert {c().spec for c in classes} == set(KINDS)

    class Sub(agents.GreedyAgent):
        pass

    assert supports([agents.GreedyAgent(), "lowest", agents.RandomAgent()])
    assert not supports([Sub(), "lowest"])
    assert not supports([agents.MonteCarloAgent(4)])


def test_the_engine_keeps_its_package_name() -> None:
    """``from sixnimmt_env import engine`` (the README's import before the rules moved into
    :mod:`sixnimmt_env.rules`) gives the one engine module; there is no second module of that name."""
    import sixnimmt_env
    from sixnimmt_env import engine
    from sixnimmt_env.rules import engine as rules_engine

    assert engine is rules_engine is sixnimmt_env.engine
    assert engine.__name__ == "sixnimmt_env.rules.engine"
    assert not (ROOT / "sixnimmt_env" / "engine.py").exists()
    assert not list((ROOT / "sixnimmt_env").glob("batched/*.py"))  # the compiled tier is sixnimmt_env.compiled
