"""Config files: the safe YAML reader, ``base:`` chains and paths relative to the file that names them.

YAML is read with ``yaml.SafeLoader`` (plain data only, never ``eval``), which here also reads ``1e-4`` and ``1e6``
as numbers and refuses a key given twice in one mapping. ``base: other.yaml`` (relative to the config file) starts
from another config; the file then holds only what differs: mappings merge key by key, a list or a value replaces
the base's, ``name`` is never inherited (:func:`read_config_file`).

Paths in a config file (``train.init_from``, the ``PATH`` of agent specs such as ``champion:PATH`` or ``ppo:PATH`` in
``opponents``, ``eval.opponents`` and ``distill.teacher``) are relative to the folder of the file that names them (a
base config's to the base's), not to the current folder; :func:`resolve_paths` makes them absolute, so the
``config.yaml`` saved in a run folder names the same files. An agent argument counts as a path when it holds a ``/``
or has a file suffix (``.npz``, ``.zip``); ``champion:NAME`` with a name of :data:`sixnimmt_env.champion.BASELINES`
plays shipped weights from any folder.
"""

from __future__ import annotations

import re
import typing
from pathlib import Path
from typing import Any

import yaml

from training.config.schema import ConfigError


class _Loader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that also reads ``1e-4`` and ``1e6`` as floats (YAML 1.2; YAML 1.1 wants a dot) and
    refuses a key given twice in one mapping (PyYAML would keep the last one silently)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if isinstance(key, typing.Hashable) and key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"the key {key!r} is given twice in one mapping", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float", re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)[eE][-+]?\d+$"), list("-+0123456789.")
)


def parse_yaml(text: str) -> Any:
    """``text`` parsed by the config files' safe loader: plain data only (mappings, lists, strings, numbers, booleans,
    ``None``).

    Raises:
        yaml.YAMLError: ``text`` is not valid YAML, or a mapping gives a key twice.
    """
    return yaml.load(text, Loader=_Loader)  # a SafeLoader subclass: plain data only


def yaml_problem(error: yaml.YAMLError) -> str:
    """A PyYAML error in one line: what is wrong and where (line and column, 1-based)."""
    problem = getattr(error, "problem", None) or getattr(error, "context", None) or str(error).splitlines()[0]
    mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    return f"{problem}{where}"


def read_yaml(path: Path, what: str = "a YAML config") -> Any:
    """The data of the YAML file ``path`` (a safe loader: plain data only, no key given twice).

    Raises:
        ConfigError: naming ``path``: it cannot be read, is not UTF-8 text (``what`` says what it should be), or
            is not valid YAML (where).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not a text file ({what} is UTF-8 text)") from None
    except OSError as e:
        raise ConfigError(f"{path}: cannot be read: {e.strerror}") from None
    if "\x00" in text:
        raise ConfigError(f"{path}: not a text file (it holds NUL bytes; {what} is UTF-8 text)")
    try:
        return parse_yaml(text)
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: not valid YAML: {yaml_problem(e)}") from None


def _absolute(value: str, folder: Path) -> str:
    """``value`` (a path as written in a config) made absolute against ``folder``; ``~`` is the home folder."""
    path = Path(value).expanduser()
    return str(path if path.is_absolute() else (folder / path).resolve())


def _spec_paths(spec: Any, folder: Path) -> Any:
    """An agent spec (or a comma-separated line-up) with each ``PREFIX:PATH`` argument made absolute against
    ``folder`` when it is a path (holds a ``/`` or has a file suffix); other values as given."""
    if not isinstance(spec, str):
        return spec
    out = []
    for part in spec.split(","):
        prefix, colon, arg = part.strip().partition(":")
        is_path = colon and ("/" in arg or "\\" in arg or re.search("[A-Za-z]", Path(arg).suffix))
        out.append(f"{prefix}:{_absolute(arg, folder)}" if is_path else part)
    return ",".join(out)


def resolve_paths(raw: dict[str, Any], folder: Path) -> dict[str, Any]:
    """The paths of a raw config mapping made absolute against ``folder`` (the module docstring's rule), in place:
    ``train.init_from`` (but a baseline name of :data:`sixnimmt_env.champion.BASELINES`) and the agent specs of
    ``opponents``, ``eval.opponents`` and ``distill.teacher``. Values of the wrong shape are left for validation to
    refuse.

    Returns:
        ``raw``.
    """
    from sixnimmt_env.champion import BASELINES

    train = raw.get("train")
    if isinstance(train, dict) and isinstance(train.get("init_from"), str):
        init = train["init_from"]
        train["init_from"] = str(BASELINES[init]) if init in BASELINES else _absolute(init, folder)
    if isinstance(raw.get("opponents"), list):
        for entry in raw["opponents"]:
            if isinstance(entry, dict) and "agent" in entry:
                entry["agent"] = _spec_paths(entry["agent"], folder)
    ev = raw.get("eval")
    if isinstance(ev, dict) and isinstance(ev.get("opponents"), list):
        ev["opponents"] = [_spec_paths(lineup, folder) for lineup in ev["opponents"]]
    distill = raw.get("distill")
    if isinstance(distill, dict) and isinstance(distill.get("teacher"), str):
        distill["teacher"] = _spec_paths(distill["teacher"], folder)
    return raw


def merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """``over`` deep-merged onto ``base`` (a new mapping): mappings merge key by key, anything else replaces."""
    out = dict(base)
    for k, v in over.items():
        out[k] = merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def check_top_level(raw: Any, source: str) -> None:
    """Refuse an empty config and a top level that is not a mapping of sections.

    Raises:
        ConfigError: naming ``source``.
    """
    if raw is None or raw == {}:
        raise ConfigError(
            f"{source}: the config is empty; give at least one section (env, opponents, self_play, algo, train, "
            "eval, checkpoint), e.g. copy configs/ppo_4p.yaml"
        )
    if not isinstance(raw, dict):
        raise ConfigError(
            f"{source}: the top level must be a mapping of sections (env:, train:, ...), got a {type(raw).__name__}"
            f" ({str(raw)[:60]!r})"
        )


def read_config_file(path: Path, chain: tuple[Path, ...] = ()) -> dict[str, Any]:
    """The raw mapping of the config file ``path``, its base configs merged under it, paths made absolute.

    Args:
        path: the config file.
        chain: the files whose ``base`` led here (their bases are read by this function itself).

    Raises:
        ConfigError: a missing, unreadable, binary or empty file, bad YAML, a top level that is not a mapping, a
            recipe of stages, a ``base`` that is not a file name or that includes itself.
    """
    if not path.is_file():
        raise ConfigError(f"{path}: config file not found" + (f" (the base of {chain[-1]})" if chain else ""))
    raw = read_yaml(path)
    if isinstance(raw, dict) and "stages" in raw:
        raise ConfigError(
            f"{path}: a recipe of training stages, not a training config; run it with python -m lab.recipe {path}"
        )
    check_top_level(raw, str(path))
    raw = resolve_paths(raw, path.parent.resolve())
    base = raw.pop("base", None)
    if base is None:
        return raw
    if not isinstance(base, str) or not base.strip():
        raise ConfigError(f"{path}: key 'base' must be the file name of another config (relative to this one)")
    base_path = (path.parent / base).resolve()
    if base_path in (*chain, path.resolve()):
        raise ConfigError(f"{path}: key 'base' {base!r} includes {path.name} again (a cycle of base configs)")
    inherited = read_config_file(base_path, (*chain, path.resolve()))
    inherited.pop("name", None)
    return merge(inherited, raw)
