"""The ``sixnimmt`` command (``[project.scripts]``): one entry for every tool, each a subcommand.

The product's own subcommands (:data:`COMMANDS`):

==============  =============================  ==========================================================
subcommand      runs                           what
==============  =============================  ==========================================================
``arena``       ``sixnimmt_env.arena``         agents against each other: penalties, 95 % CIs, leagues
``replay``      ``sixnimmt_env.records_text``  print a recorded game (``--save-games`` files)
``play``        ``sixnimmt_env.play``          play or watch at the table, in the browser or the terminal
==============  =============================  ==========================================================

Every other subcommand is a plugin: an entry point of the group :data:`PLUGIN_GROUP` (``sixnimmt.commands``) of
any installed distribution, named after the subcommand. The package's own ``pyproject.toml`` registers the
training kit's two, ``train`` (``training.train``: train a YAML config) and ``evaluate`` (``training.evaluate``: a
checkpoint, or any agents, against line-ups in the arena); a package of yours adds its own the same way::

    [project.entry-points."sixnimmt.commands"]
    mytool = "mypackage.mytool"           # sixnimmt mytool ARGS  ==  python -m mypackage.mytool ARGS
    other = "mypackage.other:main"        # sixnimmt other ARGS   ==  main(["ARGS", ...]), its return the exit status

An entry point that names a module runs it as ``python -m MODULE`` does (:func:`runpy.run_module`, as
``__main__``: the start-up settings of its ``if __name__ == "__main__"`` block apply, e.g. ``training.train``'s one
BLAS thread before numpy loads); one that names ``module:function`` calls the function with the arguments (a list
of strings) and exits with what it returns. A plugin never replaces one of :data:`COMMANDS`. ``sixnimmt --help``
lists every subcommand, a plugin's summary being the first line of its module's docstring (read without importing
it). A subcommand stopped by a missing module that an extra of its distribution requires (``torch`` for ``train``)
exits with status 2 and names the extra to install (``pip install 'sixnimmt[train]'``).

``sixnimmt CMD ARGS`` is ``python -m MODULE ARGS``, with its own options and ``--help`` (:func:`parser_kwargs`
gives its parser the ``prog`` as typed and its examples). This module imports the standard library only, so each
command's start-up settings still apply.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import re
import runpy
import sys
from collections.abc import Sequence
from importlib.metadata import Distribution, EntryPoint, PackageNotFoundError, distribution, entry_points
from typing import TypedDict

__all__ = [
    "COMMANDS",
    "COMMAND_EXAMPLES",
    "PLUGIN_GROUP",
    "ParserKwargs",
    "extra_providing",
    "main",
    "parser_kwargs",
    "plugin_commands",
]

COMMANDS: dict[str, tuple[str, str]] = {
    "arena": ("sixnimmt_env.arena", "play agents against each other: penalties with 95%% CIs, duplicate, leagues"),
    "replay": ("sixnimmt_env.records_text", "print a recorded game turn by turn (files of --save-games)"),
    "play": ("sixnimmt_env.play", "play against agents or watch them, in the browser or the terminal (--tui)"),
}
"""Subcommand -> (module run as ``python -m``, one-line summary), for the product's own subcommands."""

COMMAND_EXAMPLES: dict[str, tuple[str, ...]] = {
    "arena": (
        "--agents champion,greedy,mc:64,champion:default-ppo --games 2000",
        "--agents greedy,lowest,random,mc:16,champion --league --games 500",
        "--agents greedy,random --save-games games.jsonl",
    ),
    "replay": ("games.jsonl", "games.jsonl --game 3"),
    "play": ("--opponents champion,mc:64,greedy", "--watch --agents champion,mc:64,greedy,random", "--tui"),
}
"""A few typical invocations of each of :data:`COMMANDS` (its arguments), shown by its ``--help``; a plugin's
command passes its own to :func:`parser_kwargs`."""

PLUGIN_GROUP = "sixnimmt.commands"
"""The entry-point group of every subcommand but the product's own. An entry is named after the subcommand and points
to a module (run as ``python -m``) or to a ``module:function`` (called with the arguments)."""

LAB_COMMANDS: dict[str, str] = {"champion": "train_champion", "recipe": "recipe", "promote": "promote"}
"""Former subcommands that are the repository lab's tools now (how ``champion`` was made; not installed) -> the name
of the lab's module that runs each from a checkout; ``sixnimmt NAME`` says so instead of only listing the commands."""

EXAMPLES = """\
agent specs (one per seat, comma-separated): random, lowest, highest, greedy, mc:N, champion,
  champion:NAME (default-ppo, stage-8, tables, 2p), champion:PATH.npz, ppo:PATH.zip, rllib:PATH
  (an unknown spec lists every known one, plugins included)

examples:
  sixnimmt train configs/ppo_4p.yaml --set train.max_minutes=10
  sixnimmt evaluate runs/ppo_4p/<stamp>/final_model.zip --opponents mc:64,greedy,greedy
  sixnimmt arena --agents champion,greedy,mc:64,champion:default-ppo --games 2000
  sixnimmt arena --agents greedy,random,lowest --save-games games.jsonl && sixnimmt replay games.jsonl --game 0
  sixnimmt play --opponents champion,mc:64,greedy

'sixnimmt CMD --help' shows the options of CMD; 'python -m MODULE' runs the same command."""


class ParserKwargs(TypedDict):
    """The keyword arguments :func:`parser_kwargs` gives ``argparse.ArgumentParser``."""

    prog: str
    epilog: str
    formatter_class: type[argparse.HelpFormatter]


_running: tuple[str, str] | None = None
"""The subcommand :func:`main` is running and its module (read by :func:`parser_kwargs`)."""


def plugin_commands() -> dict[str, EntryPoint]:
    """The installed entry points of :data:`PLUGIN_GROUP` by subcommand name, in the order the installed metadata
    lists them; the first of two distributions' entries of one name wins, and no entry replaces one of
    :data:`COMMANDS`."""
    found: dict[str, EntryPoint] = {}
    for entry in entry_points(group=PLUGIN_GROUP):
        if entry.name not in COMMANDS and entry.name not in found:
            found[entry.name] = entry
    return found


def parser_kwargs(module: str, examples: Sequence[str] | None = None) -> ParserKwargs:
    """``argparse.ArgumentParser`` keyword arguments of the command of ``module``: ``prog``, how it was typed
    (``sixnimmt arena`` when :func:`main` runs it, else ``python -m sixnimmt_env.arena``), and an ``epilog`` of
    ``examples`` (its arguments, one invocation each; default: :data:`COMMAND_EXAMPLES` of the product's command of
    ``module``) kept as written.

    Raises:
        ValueError: no ``examples`` for a module that is not one of :data:`COMMANDS`.
    """
    if examples is None:
        own = [name for name, (m, _) in COMMANDS.items() if m == module]
        if not own:
            raise ValueError(f"{module!r} is not one of the sixnimmt command's own modules: give its examples")
        examples = COMMAND_EXAMPLES[own[0]]
    prog = f"sixnimmt {_running[0]}" if _running is not None and _running[1] == module else f"python -m {module}"
    lines = "\n".join(f"  {prog} {example}" for example in examples)
    return {"prog": prog, "epilog": f"examples:\n{lines}", "formatter_class": argparse.RawDescriptionHelpFormatter}


def _summary(entry: EntryPoint) -> str:
    """The first line of the docstring of ``entry``'s module, read from its source without importing it, as plain
    text (for ``--help``; roles and literals of reStructuredText unwrapped, ``%`` escaped for argparse), or where it
    lives when it has none."""
    try:
        spec = importlib.util.find_spec(entry.module)
    except (ImportError, ValueError):
        spec = None
    text = None
    if spec is not None and spec.origin and spec.origin.endswith(".py"):
        try:
            with open(spec.origin, encoding="utf-8") as f:
                text = ast.get_docstring(ast.parse(f.read()))
        except (OSError, SyntaxError, ValueError):
            text = None
    line = text.strip().splitlines()[0] if text and text.strip() else f"(from {entry.value})"
    line = re.sub(r":[\w:]+:`~?([^`]+)`", r"\1", line).replace("``", "")  # reStructuredText roles and literals
    return line.replace("%", "%%")


def _parser(plugins: dict[str, EntryPoint]) -> argparse.ArgumentParser:
    """The top-level parser: ``--help`` lists the subcommands (the plugins', then the product's own) and the
    examples; a bad command is its error."""
    p = argparse.ArgumentParser(
        prog="sixnimmt",
        description="6 nimmt! (Take 5) for reinforcement learning: train, evaluate, compare and play agents.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, entry in plugins.items():
        sub.add_parser(name, help=_summary(entry), add_help=False)
    for name, (_, summary) in COMMANDS.items():
        sub.add_parser(name, help=summary, add_help=False)
    return p


def _normalized(name: str) -> str:
    """A distribution or module name as PEP 503 compares them (``stable_baselines3`` -> ``stable-baselines3``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def extra_providing(module: str, dist: Distribution) -> str | None:
    """The extra of ``dist`` that requires the distribution of the top-level module of ``module`` (by name, as
    PEP 503 compares names: ``stable_baselines3`` is ``stable-baselines3``), or ``None`` (no extra names it)."""
    wanted = _normalized(module.partition(".")[0])
    for requirement in dist.requires or ():
        spec, _, marker = requirement.partition(";")
        name = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", spec)
        extra = re.search(r"""extra\s*==\s*["']([^"']+)["']""", marker)
        if name and extra and _normalized(name.group(1)) == wanted:
            return extra.group(1)
    return None


def _distribution_of(entry: EntryPoint | None) -> Distribution | None:
    """The installed distribution of a plugin's entry point, or this package's for the product's own commands
    (``None`` when it is not installed, e.g. run from a checkout)."""
    if entry is not None:
        return entry.dist
    try:
        return distribution("sixnimmt")
    except PackageNotFoundError:
        return None


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``sixnimmt COMMAND ARGS``: one of :data:`COMMANDS` as ``python -m MODULE ARGS``, or a plugin's entry point
    (:data:`PLUGIN_GROUP`); returns 0 when the command returns.

    Raises:
        SystemExit: the command's own exit (its status); 2 for a missing or unknown command (the message lists the
            commands; for one of ``LAB_COMMANDS``, it names the lab's module to run from a checkout), or for a
            module missing that an extra of the command's distribution requires (the message names the module and
            the extra, with the ``pip install`` that adds it).
    """
    global _running
    argv = list(sys.argv[1:] if argv is None else argv)
    plugins = plugin_commands()
    if argv and argv[0] in LAB_COMMANDS and argv[0] not in plugins:  # none of COMMANDS is a lab command
        _parser(plugins).error(
            f"{argv[0]!r} is not a command of the installed package: it is a tool of the repository's lab, "
            f"run from a checkout as 'python -m lab.{LAB_COMMANDS[argv[0]]} ...' (docs/champion.md)"
        )
    if not argv or (argv[0] not in COMMANDS and argv[0] not in plugins):
        _parser(plugins).parse_args(argv[:1])  # --help, or the error naming the commands; exits
    command, rest = argv[0], argv[1:]
    entry = None if command in COMMANDS else plugins[command]
    module = COMMANDS[command][0] if entry is None else entry.module
    sys.argv = [f"sixnimmt {command}", *rest]
    _running = (command, module)
    try:
        if entry is None or entry.attr is None:
            runpy.run_module(module, run_name="__main__", alter_sys=True)  # its SystemExit is the exit
        else:
            raise SystemExit(entry.load()(rest))
    except ModuleNotFoundError as e:
        dist = _distribution_of(entry)
        extra = extra_providing(e.name, dist) if e.name and dist is not None else None
        if extra is None:
            raise
        name = dist.metadata["Name"] if dist is not None else "sixnimmt"
        print(
            f"sixnimmt {command}: needs the {extra!r} extra of {name} (no module named {e.name!r}); "
            f"install it with: pip install '{name}[{extra}]'",
            file=sys.stderr,
        )
        raise SystemExit(2) from None
    finally:
        _running = None
    return 0


if __name__ == "__main__":  # python -m sixnimmt_env.cli: run the imported module's main, which prog() reads
    from sixnimmt_env.cli import main as installed_main

    sys.exit(installed_main())
