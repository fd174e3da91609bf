"""Load a training config: read the file and its ``base`` configs, apply the ``--set`` overrides, type-check the
sections and run the checks across them, all before anything starts; write a resolved config back.

:func:`load_config` is what a command calls (``python -m training.train CONFIG``); :func:`parse_config` does the same
from a mapping already read. Every error is a :class:`~training.config.schema.ConfigError` of one line naming the
file and the dotted key, what is allowed there and the value given, e.g. ``configs/smoke.yaml: key 'train.n_envs'
must be an integer >= 1, got 0``, or ``unknown key 'train.total_timestep'; did you mean 'total_timesteps'? allowed
keys here: ...``.
"""

from __future__ import annotations

import difflib
import typing
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any, Literal

import annotated_types
import yaml
from pydantic import BaseModel, ValidationError

from training.config.checks import (
    check_checkpoint,
    check_device,
    check_distill,
    check_env,
    check_eval,
    check_opponents,
    check_rllib,
    check_sb3,
    check_self_play,
    check_train,
)
from training.config.files import check_top_level, read_config_file
from training.config.overrides import apply_override
from training.config.schema import ConfigError, TrainConfig


def _describe(tp: Any, metadata: Iterable[Any] = ()) -> str:
    """What a field of annotation ``tp`` (and constraints ``metadata``) allows, in words: ``an integer >= 1``."""
    origin = typing.get_origin(tp)
    if origin is Annotated:
        base, *more = typing.get_args(tp)
        return _describe(base, [*more, *metadata])
    bounds = [
        f"{op} {float(getattr(m, attr)) if tp is float else getattr(m, attr)!r}"  # Ge(0) and Ge(0.0) are cached alike
        for m in metadata
        for attr, op in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<"))
        if hasattr(m, attr)
    ]
    bounds += [
        f"with at least {m.min_length} {'entry' if m.min_length == 1 else 'entries'}"
        for m in metadata
        if isinstance(m, annotated_types.MinLen)
    ]
    if origin is Literal:
        words = " or ".join(repr(a) for a in typing.get_args(tp))
    elif origin in (typing.Union, type(int | None)):
        words = " or ".join(_describe(a) for a in typing.get_args(tp))
    elif origin is list:
        words = f"a list ({_describe(typing.get_args(tp)[0])} each)"
    elif isinstance(tp, type) and issubclass(tp, BaseModel):
        words = f"a mapping of {', '.join(tp.model_fields)}"
    else:
        names = {int: "an integer", float: "a number", bool: "true or false", str: "a string", type(None): "null"}
        words = names.get(tp, "a mapping" if origin is dict else getattr(tp, "__name__", str(tp)))
    return " ".join([words, " and ".join(bounds)]).strip()


def _config_error(error: ValidationError, source: str) -> ConfigError:
    """The first error of a failed validation of :class:`~training.config.schema.TrainConfig` as a
    :class:`~training.config.schema.ConfigError`: the dotted key, what is allowed there (the field's type and
    constraints, or its description) and the value given; for an unknown key, the keys allowed (the closest one first
    when it looks like a typo)."""
    first = error.errors()[0]
    model: Any = TrainConfig
    tp: Any = TrainConfig
    info: Any = None
    key = ""
    for part in first["loc"]:
        if isinstance(part, int) and typing.get_origin(tp) is list:
            tp, info, key = typing.get_args(tp)[0], None, f"{key}[{part}]"
        elif isinstance(tp, type) and issubclass(tp, BaseModel) and isinstance(part, str):
            model, key = tp, f"{key}.{part}" if key else part
            if part not in tp.model_fields:
                break  # an unknown key (extra_forbidden)
            info = tp.model_fields[part]
            tp = info.annotation
        else:
            break  # inside a union: the field as a whole is described
    if first["type"] == "extra_forbidden":
        allowed = list(model.model_fields)
        close = difflib.get_close_matches(key.rsplit(".", 1)[-1], allowed, n=1)
        guess = f"did you mean '{close[0]}'? " if close else ""
        why = f" ({model.UNKNOWN_HINT})" if model.UNKNOWN_HINT else ""
        return ConfigError(f"{source}: unknown key '{key}'{why}; {guess}allowed keys here: {', '.join(allowed)}")
    allowed_text = (info.description if info is not None else None) or _describe(
        tp, info.metadata if info is not None else ()
    )
    return ConfigError(f"{source}: key '{key}' must be {allowed_text}, got {first['input']!r}")


def validate(cfg: TrainConfig, source: str) -> TrainConfig:
    """The checks across sections (:mod:`training.config.checks`), in this order: the game, the opponents, the
    evaluation line-ups (a single spec filled out to the table, in place), the ``train`` keys and ``init_from``, the
    self-play shares, the distillation, the checkpoints, the device, then the backend's own (``check_rllib`` or
    ``check_sb3``).

    Returns:
        ``cfg``.

    Raises:
        ConfigError: naming ``source`` and the offending key (the first check that fails).
    """
    check_env(cfg.env, cfg.train.n_envs, source)
    check_opponents(cfg.opponents, source)
    check_eval(cfg.eval, cfg.env, source)
    check_train(cfg.train, cfg.algo, source)
    check_self_play(cfg.self_play, cfg.train, source)
    check_distill(cfg.distill, cfg.train, cfg.env, source)
    check_checkpoint(cfg.checkpoint, cfg.train.backend, source)
    check_device(cfg.train.device, source)
    if cfg.train.backend == "rllib":
        check_rllib(cfg.algo, cfg.train, cfg.ray, source)
    else:
        check_sb3(cfg.algo, cfg.train, cfg.ray, source)
    return cfg


def parse_config(raw: Any, source: str, overrides: Iterable[str] = ()) -> TrainConfig:
    """Build and validate a :class:`~training.config.schema.TrainConfig` from a raw mapping (as ``yaml.safe_load``
    gives; its paths already absolute, :func:`~training.config.files.resolve_paths`), after the ``--set``
    ``overrides`` (:func:`~training.config.overrides.apply_override`).

    Raises:
        ConfigError: naming ``source`` and the key; an empty (``None``) or non-mapping ``raw``.
    """
    check_top_level(raw, source)
    raw = dict(raw)
    for assignment in overrides:
        apply_override(raw, assignment, f"{source} (--set {assignment})")
    try:
        cfg = TrainConfig.model_validate(raw)
    except ValidationError as e:
        raise _config_error(e, source) from None
    return validate(cfg, source)


def load_config(path: str | Path, overrides: Iterable[str] = ()) -> TrainConfig:
    """Read a YAML config (and its ``base`` configs), override, type-check and validate it.

    The run name defaults to the file's stem (``configs/ppo_4p.yaml`` -> ``ppo_4p``); paths in the file are
    relative to its folder (:mod:`training.config.files`).

    Raises:
        ConfigError: a missing, unreadable, binary or empty file, bad YAML, or any error of :func:`parse_config`.
    """
    path = Path(path)
    raw = read_config_file(path)
    return parse_config({"name": path.stem, **raw}, str(path), overrides)


def dump_config(cfg: TrainConfig, path: str | Path) -> None:
    """Write the resolved config as YAML (reloadable with :func:`load_config` to an equal config)."""
    Path(path).write_text(yaml.safe_dump(cfg.to_dict(), sort_keys=False))
