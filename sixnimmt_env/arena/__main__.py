"""``python -m sixnimmt_env.arena``: the arena's command line (:func:`sixnimmt_env.arena.command.main`)."""

import gc
import os

# The command never multiplies matrices on its own (an agent that does, runs one per core): numpy's OpenBLAS
# thread pool would only spin at start-up (about 0.1 CPU-s per process). Set before numpy loads (the packages'
# __init__ import none); the worker processes and the plot helper inherit it. A user's own setting wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

# The imports make tens of thousands of objects and no garbage: the cyclic collector is off while they run, and
# what they made is frozen (never walked by a collection) before the command starts.
gc.disable()

from sixnimmt_env.arena.plotter import PlotProcess  # noqa: E402  (the standard library only)

# The plot helper starts first: it imports matplotlib on the other core while this process imports the arena
# (also for --help or a refused option, when it is stopped at once, having written nothing).
with PlotProcess() as plotter:
    from sixnimmt_env.arena.command import main

    gc.freeze()
    gc.enable()
    main(plotter=plotter)
# Every object stays until the process exits: frozen, they are not visited by the collections of Python's
# shutdown, which take about 0.5 s once numba is loaded.
gc.freeze()
