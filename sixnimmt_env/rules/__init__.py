"""The rules of *6 nimmt!* (``docs/RULES.md``), written once per tier, side by side, and nothing else.

- :mod:`sixnimmt_env.rules.engine`: the reference tier, the readable specification. Immutable states and pure
  functions: ``GameConfig``, ``State``, ``new_game``, ``deal_round``, the legality rule ``choices`` (listed by
  ``legal_actions``, checked by ``step``), ``step``, the turn resolver ``resolve_turn`` (R6-R9),
  ``cheapest_row_index`` (R9b), ``immediate_cost``, ``view`` and ``views``.
- :mod:`sixnimmt_env.rules.kernel`: the compiled tier, the same rules as numba functions over arrays (dealing, the
  draft, legality, a turn, the observation and the masks). The compiled modules (:mod:`sixnimmt_env.compiled`)
  play through it.
- :mod:`sixnimmt_env.rules.params`: beneath the kernel, a ``GameConfig`` as the kernel's config vector, the random
  streams' first states and the step codes (``OK``, ``PENALTIES``, ``OVER``) of every env backend; no numba.
- :mod:`sixnimmt_env.rules.observation_layout`: beneath both encoders, the observation's pieces, offsets and
  scales.
- :mod:`sixnimmt_env.rules.learner_step`: the learner-step contract every environment calls: integer and legal
  actions, the error of a bad or illegal one, the illegal-action modes and their reward, the end of an episode.

A rule change goes here and nowhere else: into ``docs/RULES.md``, ``engine.py`` (the resolver ``_resolve`` if it
changes where a card goes or what a row costs), and the same rule into ``kernel.py``; a new game option is also a
``GameConfig`` field and an entry of ``params.config_vector``. The parity tests (``tests/test_rules.py``,
``test_resolver.py``, ``test_rules_backends.py``, ``test_batched.py``, ``test_kernel.py``) fail until both tiers
agree. ``docs/architecture.md`` walks through it.

The room imports numpy (and numba, in :mod:`.kernel` only) and no other module of the project: everything else
imports from it. Importing this package imports nothing.
"""
