"""Training configs: YAML files of typed sections, checked before anything starts.

=======================================  ===============================================================
module                                   what it holds
=======================================  ===============================================================
:mod:`training.config.schema`            the sections (pydantic models) and
                                         :class:`~training.config.schema.TrainConfig`
:mod:`training.config.files`             the safe YAML reader, ``base:`` chains, paths relative to a file
:mod:`training.config.overrides`         ``--set key.sub=value``
:mod:`training.config.rllib_settings`    the ``algo`` and ``ray`` sections as RLlib's settings, the CPUs
                                         a run reserves
:mod:`training.config.checks`            the checks across sections, each taking the sections it reads
:mod:`training.config.loader`            :func:`~training.config.loader.load_config`,
                                         :func:`~training.config.loader.parse_config`,
                                         :func:`~training.config.loader.dump_config`
=======================================  ===============================================================

The names most callers need are re-exported here (documented in their modules):
``from training.config import ConfigError, TrainConfig, load_config``.
"""

from training.config.loader import dump_config as dump_config
from training.config.loader import load_config as load_config
from training.config.loader import parse_config as parse_config
from training.config.loader import validate as validate
from training.config.overrides import apply_override as apply_override
from training.config.overrides import resolve_override as resolve_override
from training.config.schema import AlgoSection as AlgoSection
from training.config.schema import CheckpointSection as CheckpointSection
from training.config.schema import ConfigError as ConfigError
from training.config.schema import DistillSection as DistillSection
from training.config.schema import EnvSection as EnvSection
from training.config.schema import EvalSection as EvalSection
from training.config.schema import OpponentEntry as OpponentEntry
from training.config.schema import RaySection as RaySection
from training.config.schema import SelfPlaySection as SelfPlaySection
from training.config.schema import TrainConfig as TrainConfig
from training.config.schema import TrainSection as TrainSection
