"""The graph of intra-package imports of ``sixnimmt_env`` and ``training``: cycles and upward edges.

Reads every module with :mod:`ast` (nothing is imported) and collects its imports of ``sixnimmt_env`` and
``training`` modules: at module level (``top``), inside a function (``lazy``: run when the function is called)
and under ``if TYPE_CHECKING:`` (``typing``: never run; left out of the checks). ``from pkg import name``
points at ``pkg.name`` when that is a module, else at ``pkg``.

It prints:

- every cycle (strongly connected components of the graph of ``top`` and ``lazy`` edges, with one cycle each);
- every upward edge: an import of a module of a higher layer than the importer's in :data:`LAYERS`;
- every module-level import, from ``sixnimmt_env``, of ``training`` or of a library in :data:`FORBIDDEN`.

Usage::

    python benchmarks/import_graph.py            # the report; exit status 1 if there is a violation
    python benchmarks/import_graph.py --edges    # also every edge, with its layer numbers
    python benchmarks/import_graph.py --root DIR # another checkout (e.g. ``git archive`` of an older commit)

``tests/test_import_graph.py`` runs it and expects no violation.
"""

from __future__ import annotations

import argparse
import ast
import fnmatch
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("sixnimmt_env", "training")

LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("commands", ("sixnimmt_env.cli",)),  # the `sixnimmt` table of commands: the standard library only
    (
        "rules",
        (
            "sixnimmt_env.engine",
            "sixnimmt_env.rewards",
            "sixnimmt_env.seeding",
            "sixnimmt_env.stats",
            "sixnimmt_env.batched.kinds",
            "sixnimmt_env.registration",
        ),
    ),
    ("observation", ("sixnimmt_env.observation", "sixnimmt_env.render", "sixnimmt_env.backends")),
    ("kernel", ("sixnimmt_env.batched.params", "sixnimmt_env.batched.kernel")),
    ("batched", ("sixnimmt_env.batched", "sixnimmt_env.batched.*", "sixnimmt_env.card_features")),
    ("env-backends", ("sixnimmt_env.backends.*",)),
    ("agents", ("sixnimmt_env.agents", "sixnimmt_env.champion")),
    (
        "arena",
        ("sixnimmt_env.records", "sixnimmt_env.records_text", "sixnimmt_env.arena.play", "sixnimmt_env.arena.pool"),
    ),
    ("arena-report", ("sixnimmt_env.arena.summary", "sixnimmt_env.arena.report")),
    ("arena-runs", ("sixnimmt_env.arena.run", "sixnimmt_env.arena.league")),
    ("arena-cli", ("sixnimmt_env.arena", "sixnimmt_env.arena.*")),
    (
        "envs",
        ("sixnimmt_env.pettingzoo_env", "sixnimmt_env.sixnimmt_v0", "sixnimmt_env.*_env", "sixnimmt_env.openspiel"),
    ),
    ("play", ("sixnimmt_env.play", "sixnimmt_env.play.*")),
    ("package", ("sixnimmt_env",)),
    ("training-config", ("training.config",)),
    ("training-model", ("training.features", "training.policy", "training.agent")),
    ("training-envs", ("training.opponents", "training.vec", "training.vec_env")),
    ("training", ("training", "training.*")),
)
"""The declared layers, bottom first: ``(name, module patterns)``; the first layer whose pattern matches a module
is its layer. A module may import its own layer and the layers below it."""

FORBIDDEN = ("torch", "stable_baselines3", "sb3_contrib", "ray")
"""Libraries ``sixnimmt_env`` never imports at module level (nor ``training``)."""


@dataclass(frozen=True)
class Edge:
    """``source`` imports ``target`` (module names) at ``line``; ``kind`` is ``top``, ``lazy`` or ``typing``."""

    source: str
    target: str
    line: int
    kind: str


def module_files(root: Path = ROOT) -> dict[str, Path]:
    """``{module name: path}`` of every ``.py`` file of :data:`PACKAGES` under ``root``."""
    out = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.Module) -> list[tuple[ast.Import | ast.ImportFrom, str]]:
    """Every import statement with its kind (``top``, ``lazy``, ``typing``)."""
    found: list[tuple[ast.Import | ast.ImportFrom, str]] = []

    def visit(node: ast.AST, kind: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import | ast.ImportFrom):
                found.append((child, kind))
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                visit(child, "typing" if kind == "typing" else "lazy")
            elif isinstance(child, ast.If) and _is_type_checking(child):
                for sub in child.body:
                    visit(ast.Module(body=[sub], type_ignores=[]), "typing")
                for sub in child.orelse:
                    visit(ast.Module(body=[sub], type_ignores=[]), kind)
            else:
                visit(child, kind)

    visit(tree, "top")
    return found


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def build(root: Path = ROOT) -> tuple[dict[str, Path], list[Edge], list[Edge]]:
    """``(modules, edges, external)``: the intra-package edges and the imports of libraries (``target``: the
    top-level library name)."""
    modules = module_files(root)
    edges: list[Edge] = []
    external: list[Edge] = []
    for name, path in modules.items():
        tree = ast.parse(path.read_text(), str(path))
        is_package = path.name == "__init__.py"
        for node, kind in _imports(tree):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                base = _resolve(name, is_package, node)
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            for target in targets:
                if target.split(".")[0] in PACKAGES:
                    while target not in modules and "." in target:  # import a.b.c where c is a name
                        target = target.rsplit(".", 1)[0]
                    if target != name:
                        edges.append(Edge(name, target, node.lineno, kind))
                else:
                    external.append(Edge(name, target.split(".")[0], node.lineno, kind))
    return modules, sorted(set(edges), key=lambda e: (e.source, e.line, e.target)), external


def layer_of(module: str) -> int:
    """The index in :data:`LAYERS` of ``module``'s layer (``ValueError`` if no pattern matches it)."""
    for i, (_, patterns) in enumerate(LAYERS):
        if any(fnmatch.fnmatchcase(module, p) for p in patterns):
            return i
    raise ValueError(f"module {module} is in no layer of LAYERS")


def cycles(modules: list[str], edges: list[Edge]) -> list[list[str]]:
    """One cycle (a list of modules, the first repeated at the end) per strongly connected component of more
    than one module, over the ``top`` and ``lazy`` edges."""
    graph: dict[str, list[str]] = {m: [] for m in modules}
    for e in edges:
        if e.kind != "typing" and e.target not in graph[e.source]:
            graph[e.source].append(e.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def connect(v: str) -> None:  # Tarjan's algorithm
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for m in modules:
        if m not in index:
            connect(m)
    out = []
    for component in sorted(components):
        inside = set(component)
        start = component[0]
        path, seen = [start], {start}
        while True:  # walk inside the component until a module repeats: that closes a cycle
            nxt = next(w for w in graph[path[-1]] if w in inside)
            if nxt in seen:
                out.append([*path[path.index(nxt) :], nxt])
                break
            path.append(nxt)
            seen.add(nxt)
    return out


def report(root: Path = ROOT, show_edges: bool = False) -> tuple[list[str], int]:
    """The report's lines and the number of violations (cycles, upward edges, forbidden imports)."""
    modules, edges, external = build(root)
    lines = [f"{len(modules)} modules, {len(edges)} intra-package import edges "
             f"({sum(e.kind == 'top' for e in edges)} top, {sum(e.kind == 'lazy' for e in edges)} lazy, "
             f"{sum(e.kind == 'typing' for e in edges)} typing)"]  # fmt: skip
    if show_edges:
        lines += [f"  {e.source} [{layer_of(e.source)}] -> {e.target} [{layer_of(e.target)}] ({e.kind}, line {e.line})"
                  for e in edges]  # fmt: skip
    found = cycles(list(modules), edges)
    lines.append(f"cycles: {len(found)}")
    lines += ["  " + " -> ".join(c) for c in found]
    upward = [e for e in edges if e.kind != "typing" and layer_of(e.target) > layer_of(e.source)]
    lines.append(f"upward edges: {len(upward)}")
    lines += [f"  {e.source} ({LAYERS[layer_of(e.source)][0]}) -> {e.target} ({LAYERS[layer_of(e.target)][0]}), "
              f"{e.kind} import, line {e.line}" for e in upward]  # fmt: skip
    ours = [e for e in (*external, *edges) if e.source.startswith("sixnimmt_env") and e.kind != "typing"]
    bad = [e for e in ours if (e.kind == "top" and e.target in FORBIDDEN) or e.target.split(".")[0] == "training"]
    lines.append(f"sixnimmt_env importing training or {'/'.join(FORBIDDEN)} at module level: {len(bad)}")
    lines += [f"  {e.source} -> {e.target} ({e.kind}, line {e.line})" for e in bad]
    return lines, len(found) + len(upward) + len(bad)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--edges", action="store_true", help="also print every edge")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout to read (default: this one)")
    args = parser.parse_args(argv)
    lines, violations = report(args.root, show_edges=args.edges)
    print("\n".join(lines))
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
