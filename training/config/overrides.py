"""``--set key.sub=value``: one config key overridden from the command line.

The value is parsed as YAML (``--set train.total_timesteps=2e6``, ``--set eval.opponents='["greedy"]'``) and applied
to the raw mapping of the config before validation (:func:`training.config.loader.parse_config`), so it is checked
like a key of the file; paths in it are relative to the current folder (:func:`apply_override`). A command that
passes an override on to another folder's run makes its paths absolute first (:func:`resolve_override`).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import yaml

from training.config.files import parse_yaml, resolve_paths, yaml_problem
from training.config.schema import ConfigError


def _override(assignment: str, source: str) -> tuple[str, list[str], dict[str, Any]]:
    """An override ``a.b.c=value`` split: its dotted key, the keys, and the value parsed as YAML nested under the
    keys (``{"a": {"b": {"c": value}}}``).

    Raises:
        ConfigError: without ``=``, with an empty key, or a value that is not valid YAML.
    """
    if "=" not in assignment:
        raise ConfigError(f"{source}: override {assignment!r} must look like key.sub=value")
    path, text = assignment.split("=", 1)
    keys = path.strip().split(".")
    if not all(keys):
        raise ConfigError(f"{source}: override {assignment!r} has an empty key")
    try:
        value = parse_yaml(text) if text.strip() else None
    except yaml.YAMLError as e:
        raise ConfigError(f"{source}: the value of {path.strip()!r} is not valid YAML: {yaml_problem(e)}") from None
    nested: dict[str, Any] = {keys[-1]: value}
    for k in reversed(keys[:-1]):
        nested = {k: nested}
    return path.strip(), keys, nested


def apply_override(raw: dict[str, Any], assignment: str, source: str = "--set") -> None:
    """Apply one ``a.b.c=value`` override to ``raw`` in place: ``value`` is parsed as YAML (paths in it relative to
    the current folder) and replaces what ``a.b.c`` held.

    Raises:
        ConfigError: without ``=``, a value that is not valid YAML, or when a key on the path is not a mapping.
    """
    path, keys, nested = _override(assignment, source)
    nested = resolve_paths(nested, Path.cwd())
    node = raw
    for i, k in enumerate(keys[:-1]):
        node = node.setdefault(k, {})
        if not isinstance(node, dict):
            raise ConfigError(f"{source}: key '{'.'.join(keys[: i + 1])}' is not a mapping; cannot set {path}")
        nested = nested[k]
    node[keys[-1]] = nested[keys[-1]]


def resolve_override(assignment: str, folder: Path) -> str:
    """``assignment`` (``key.sub=value``, as ``--set`` takes) with the paths in its value made absolute against
    ``folder`` (:func:`~training.config.files.resolve_paths`: ``train.init_from``, the specs of ``opponents`` and
    ``eval.opponents``), the value then written as JSON (which YAML reads); returned as given when its value holds no
    path (a shipped baseline's name is no path) or it does not parse (:func:`apply_override` reports that)."""
    from sixnimmt_env.champion import BASELINES

    try:
        path, keys, nested = _override(assignment, "--set")
    except ConfigError:
        return assignment
    init = nested["train"]["init_from"] if keys == ["train", "init_from"] else None
    if isinstance(init, str) and init in BASELINES:
        return assignment
    before = copy.deepcopy(nested)
    after = resolve_paths(nested, folder)
    if after == before:
        return assignment
    leaf: Any = after
    for k in keys:
        leaf = leaf[k]
    return f"{path}={json.dumps(leaf)}"
