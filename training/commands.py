"""The training commands as console scripts (``[project.scripts]`` in pyproject.toml), immune to a user's module
named ``training`` in the working folder.

``python -m training.train`` puts the working folder first on ``sys.path``: a ``training.py`` of the user's there
hides this package, and Python stops before any code of ours runs (``__path__ attribute not found on
'training'``). A console script's ``sys.path`` starts with its own ``bin`` folder instead, so these commands
find this package wherever they are typed:

=======================  ==============================
console script           same as
=======================  ==============================
``sixnimmt-train``       ``python -m training.train``
``sixnimmt-evaluate``    ``python -m training.evaluate``
``sixnimmt-champion``    ``python -m training.champion``
=======================  ==============================

Each takes the arguments of its module's ``main`` and returns its exit status.
"""

from __future__ import annotations

import os


def train() -> int:
    """``sixnimmt-train``: :func:`training.train.main`, with one BLAS thread as ``python -m training.train``."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy loads (training.train's docstring)
    from training.train import main

    return main()


def evaluate() -> int:
    """``sixnimmt-evaluate``: :func:`training.evaluate.main`."""
    from training.evaluate import main

    return main()


def champion() -> int:
    """``sixnimmt-champion``: :func:`training.champion.main`, with one BLAS thread (as ``python -m``)."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from training.champion import main

    return main()
