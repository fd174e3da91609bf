"""``python -m sixnimmt_env.arena``: the arena's command line (:func:`sixnimmt_env.arena.command.main`)."""

import contextlib
import gc
import os
import sys

# The command never multiplies matrices on its own (an agent that does, runs one per core): numpy's OpenBLAS
# thread pool would only spin at start-up (about 0.1 CPU-s per process). Set before numpy loads (the packages'
# __init__ import none); the worker processes and the plot helper inherit it. A user's own setting wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

# The imports make tens of thousands of objects and no garbage: the cyclic collector is off while they run, and
# what they made is frozen (never walked by a collection) before the command starts.
gc.disable()

from sixnimmt_env.arena.plotter import PlotProcess  # noqa: E402  (the standard library only)


def _exit_now() -> None:
    """End the process as its exit would, less the interpreter's teardown of every module (about 20 ms once numba
    is loaded): the output flushed, the ``atexit`` functions run (a coverage tool's among them), then
    ``os._exit(0)``. Only where this module is the program (``python -m sixnimmt_env.arena``), not where another
    program runs it (``sixnimmt arena``, ``runpy`` in a test), which ends as it chooses."""
    argv = getattr(sys, "orig_argv", [])
    if "-m" not in argv or argv[argv.index("-m") + 1 :][:1] != ["sixnimmt_env.arena"]:
        return
    import atexit

    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except OSError:  # a closed pipe: the interpreter's own exit reports it
        return
    os._exit(0)


# The plot helper starts first: it imports matplotlib on the other core while this process imports the arena
# (also for --help or a refused option, when it is stopped at once, having written nothing). --no-plot starts
# none (an abbreviation of it is not seen here: the helper is started and left unused).
with PlotProcess() if "--no-plot" not in sys.argv[1:] else contextlib.nullcontext() as plotter:
    from sixnimmt_env.arena.command import main

    gc.freeze()
    gc.enable()
    main(plotter=plotter)
# Every object stays until the process exits: frozen, they are not visited by the collections of Python's
# shutdown, which take about 0.5 s once numba is loaded.
gc.freeze()
_exit_now()
