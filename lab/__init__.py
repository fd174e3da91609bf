"""The lab: how the shipped ``champion`` agent was made. Not part of the installed package.

The repository holds three parts, each importing only the ones below it:

=================  ===================================================================================
part               what it is
=================  ===================================================================================
``sixnimmt_env``   the product: the game, the environments, the agents (``champion`` included), the
                   arena, the play table; installed by ``pip install sixnimmt``
``training``       the kit: training from YAML configs on SB3 or RLlib, evaluation; installed with the
                   product (its ``train`` extra)
``lab``            this package: the champion's recipe and stage configs, the weights of its past
                   stages, the promotion rule, the one-off benchmarks and the experiment log; run from
                   a checkout's root, never installed, imported by nothing outside it
=================  ===================================================================================

Its commands, from the repository's root (``make champion`` runs the whole recipe)::

    python -m lab.recipe lab/configs/recipes/champion.yaml --all --force   # every stage of champion, in order
    python -m lab.train_champion lab/configs/champion_short.yaml --out mine.npz   # one stage, its weights exported
    python -m lab.promote champion:mine.npz --incumbent champion --games 4000      # promote or keep

=========================  ============================================================================
path                       what
=========================  ============================================================================
:mod:`lab.train_champion`  trains one stage (``python -m training.train``) and exports its weights (.npz)
:mod:`lab.recipe`          trains the stages of a recipe file in order (``lab/configs/recipes/``)
:mod:`lab.promote`         a candidate against the incumbent and a league: promote or keep
``lab/configs/``           the champion's stage configs (``base:`` chains; paths relative to each file)
``lab/weights/``           the weights of its past stages, its exploiter and its whole-game variant
``lab/benchmarks/``        scripts that measured one change once (their figures are in ``lab/docs/``)
``lab/docs/``              the experiment log of the champion and of the training speed-ups
``lab/tests/``             the lab's tests (run with the others: ``pytest``'s ``testpaths``)
=========================  ============================================================================
"""
