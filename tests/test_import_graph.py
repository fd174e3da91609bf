"""The import graph of ``sixnimmt_env`` (the product), ``training`` (the kit) and ``lab`` (how ``champion`` was made):
import-linter's layers contracts (``[tool.importlinter]`` in ``pyproject.toml``) hold, every module has a layer, no two
modules import each other, however indirectly, and no module reaches a part above its own by a module name in a
string (the product runs the kit's commands through entry points only).

Every import counts here: at module level, inside a function (lazy) and under ``if TYPE_CHECKING:`` (grimp, the graph
that ``lint-imports`` checks, reads them all).
"""

from __future__ import annotations

import ast
import importlib
import os
import re
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
    assert len(CONFIG["contracts"]) == 8


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
    assert "Contracts: 6 kept, 2 broken." in run.stdout  # also the arena: summary -> engine -> report


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
    """The config package (``training/config/``) imports no other module of ``training``."""
    config = {"training.config", *graph.find_descendants("training.config")}
    assert len(config) == 7
    imported = set().union(*(graph.find_modules_directly_imported_by(m) for m in config))
    assert {m for m in imported if m.split(".")[0] == "training"} <= config
    assert "sixnimmt_env.agents" in imported


WHOLE_CONFIG = "TrainConfig"
"""The whole training config's class (``training.config.schema.TrainConfig``)."""


def whole_config_holders(folder: Path) -> list[tuple[str, str]]:
    """``(module file, function)`` of every function, method, lambda and dataclass field under ``folder`` (``*.py``)
    that takes the whole :data:`WHOLE_CONFIG`: a parameter (or a field) whose annotation names it, a string
    annotation included."""

    def names(annotation: ast.expr | None) -> set[str]:
        if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
            annotation = ast.parse(annotation.value, mode="eval").body
        if annotation is None:
            return set()
        nodes = list(ast.walk(annotation))
        attributes = {n.attr for n in nodes if isinstance(n, ast.Attribute)}
        return {n.id for n in nodes if isinstance(n, ast.Name)} | attributes

    found = []
    for path in sorted(folder.rglob("*.py")):
        where = str(path.relative_to(folder.parent))
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                a = node.args
                params = [*a.posonlyargs, *a.args, *a.kwonlyargs, *filter(None, [a.vararg, a.kwarg])]
                if any(WHOLE_CONFIG in names(p.annotation) for p in params):
                    found.append((where, getattr(node, "name", "<lambda>")))
            elif isinstance(node, ast.ClassDef):
                found += [
                    (where, f"{node.name}.{ast.unparse(s.target)}")
                    for s in node.body
                    if isinstance(s, ast.AnnAssign) and WHOLE_CONFIG in names(s.annotation)
                ]
    return found


def test_whole_config_holders_finds_parameters_fields_and_string_annotations(tmp_path: Path) -> None:
    source = tmp_path / "kit" / "m.py"
    source.parent.mkdir()
    source.write_text(
        "from training.config import TrainConfig, schema\n"
        "def a(cfg: TrainConfig) -> None: ...\n"
        "def b(x: int, *, cfg: 'TrainConfig | None' = None) -> TrainConfig: ...\n"
        "def c(cfg: schema.TrainConfig) -> None: ...\n"
        "def d(env: schema.EnvSection) -> TrainConfig: ...\n"
        "class Job:\n"
        "    cfg: TrainConfig\n"
        "    def run(self, other: list[TrainConfig]) -> None: ...\n"
    )
    assert whole_config_holders(tmp_path / "kit") == [("kit/m.py", n) for n in ("a", "b", "c", "Job.cfg", "run")]


def test_at_most_eight_functions_in_three_modules_take_the_whole_training_config() -> None:
    """Each part of training takes the config sections it reads (``build_vec_env(cfg.env, cfg.train, ...)``,
    ``algo_kwargs(cfg.algo)``); the whole config goes only to the loader's ``validate`` and ``dump_config`` and to
    the two backends' entries (:func:`training.train.train` loads it itself)."""
    holders = whole_config_holders(ROOT / "training")
    modules = {module for module, _ in holders}
    assert len(holders) <= 8 and len(modules) <= 3, holders
    assert modules == {"training/config/loader.py", "training/sb3_backend.py", "training/rllib/backend.py"}


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


MODULE_NAME = re.compile(r"(?:python\s+-m\s+)?([A-Za-z_]\w*)(?:\.\w+)*(?::\w+)?")
"""A string that is a dotted module name (``training.train``, ``lab.recipe``, ``training.train:main``), or one
``python -m`` runs."""


def module_names(path: Path) -> list[tuple[int, str]]:
    """``(line, string)`` of every string constant in ``path`` that is a module name (:data:`MODULE_NAME`): what
    ``runpy.run_module``, ``importlib.import_module``, ``-m`` in a command line or an entry point's value would take.
    Docstrings are left out (they name modules to the reader)."""
    tree = ast.parse(path.read_text(), str(path))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
        and MODULE_NAME.fullmatch(node.value.strip())
    ]


def reached_parts(folder: Path, parts: tuple[str, ...]) -> list[str]:
    """``file:line: string`` of every string constant under ``folder`` (``*.py``) that is a module name of one of
    the top-level packages ``parts`` (:func:`module_names`), or an import of one of them."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        for line, text in module_names(path):
            name = MODULE_NAME.fullmatch(text.strip())
            if name and name.group(1) in parts and "." in text.strip().split()[-1]:
                found.append(f"{path.relative_to(folder.parent)}:{line}: {text!r}")
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            names += [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else []
            found += [
                f"{path.relative_to(folder.parent)}:{getattr(node, 'lineno', 0)}: import {n}"
                for n in names
                if n.split(".")[0] in parts
            ]
    return found


def test_module_names_finds_what_runpy_or_import_module_would_take(tmp_path: Path) -> None:
    """The finder of :func:`reached_parts` sees a module name in a call, a table and a ``-m`` command line, and an
    import of the package; it passes over docstrings, prose and other packages."""
    source = tmp_path / "probe" / "m.py"
    source.parent.mkdir()
    source.write_text(
        '"""Runs training.train (a docstring)."""\n'
        "import runpy\n"
        "from training import train\n"
        "TABLE = {'train': ('training.train', 'train a config')}\n"
        "def f():\n"
        '    """lab.recipe in a docstring."""\n'
        "    runpy.run_module('lab.recipe')\n"
        "    return ['python', '-m', 'training.evaluate', 'python -m lab.promote', 'see training.train there']\n"
        "ENTRY = 'training.train:main'\n"
        "OTHER = ('sixnimmt_env.arena', 'training', 'a.b')\n"
    )
    found = [line.split(": ", 1)[1] for line in reached_parts(tmp_path, ("training", "lab"))]
    assert sorted(found) == sorted(
        [
            "'training.train'",
            "'lab.recipe'",
            "'training.evaluate'",
            "'python -m lab.promote'",
            "'training.train:main'",
            "import training",
        ]
    )


def test_the_product_reaches_the_kit_and_the_lab_only_through_entry_points() -> None:
    """No module of ``sixnimmt_env`` names a module of ``training`` or ``lab`` in a string it could run or import
    (``runpy``, ``importlib.import_module``, ``python -m``), and none of ``training`` names one of ``lab``: the
    ``sixnimmt`` command finds ``train`` and ``evaluate`` through the entry points of ``sixnimmt.commands``
    (``pyproject.toml``), the agents through those of ``sixnimmt.agents``."""
    assert reached_parts(ROOT / "sixnimmt_env", ("training", "lab")) == []
    assert reached_parts(ROOT / "training", ("lab",)) == []
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["entry-points"]["sixnimmt.commands"] == {"train": "training.train", "evaluate": "training.evaluate"}


def test_nothing_outside_the_lab_imports_it() -> None:
    """The lab (``lab/``: the champion's recipe, its configs and past weights) is not installed: no test outside
    ``lab/tests``, no benchmark and no other part imports or runs a module of it, and the wheel leaves it out."""
    for folder in ("tests", "benchmarks", "sixnimmt_env", "training"):
        assert reached_parts(ROOT / folder, ("lab",)) == [], folder
    find = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]
    assert find["include"] == ["sixnimmt_env*", "training*"]


def test_the_tests_of_the_product_and_the_kit_load_no_script_file() -> None:
    """``tests/`` imports no benchmark script (scripts of ``benchmarks/`` and ``lab/benchmarks/``, loaded by file):
    the play server's driver is ``tests/play_server.py``, which ``benchmarks/play_load.py`` imports; the tests of the
    benchmark scripts themselves are in ``benchmarks/tests`` and ``lab/tests``."""
    loaders = [
        path.name
        for path in sorted((ROOT / "tests").glob("*.py"))
        if path.name != Path(__file__).name and "spec_from_file_location" in path.read_text()
    ]
    assert loaders == []
