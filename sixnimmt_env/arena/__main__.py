"""``python -m sixnimmt_env.arena``: the arena's command line (:func:`sixnimmt_env.arena.cli.main`)."""

import gc

from sixnimmt_env.arena.cli import main

main()
# Every object stays until the process exits: frozen, they are not visited by the collections of Python's
# shutdown, which take about 0.5 s once numba is loaded.
gc.freeze()
