"""A helper process that draws an arena run's ``results.png``, started before the games so that matplotlib loads
on another core while the arena loads its compiled code and plays.

The arena's command line (:func:`sixnimmt_env.arena.cli.main`) starts one :class:`PlotProcess` before it plays and
hands it the results dict at the end (:func:`sixnimmt_env.arena.report.write_results` with ``plotter=``); the
helper imports matplotlib at once (about 0.9 CPU-s, the largest part of the command's start-up) and then waits on
its standard input. The PNG is the one :func:`sixnimmt_env.arena.report.plot_results` draws in-process.

The helper never outlives its command: :meth:`PlotProcess.close` (also on an error or Ctrl-C) kills it, and it
ends by itself, writing nothing, when its standard input closes without a request. It ignores SIGINT (Ctrl-C in a
terminal reaches every process of the command; the parent decides).

``python -m sixnimmt_env.arena.plotter`` is the helper's entry point; it reads one request: a JSON line
``{"path": ..., "results": ...}``.
"""

from __future__ import annotations

import gc
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from types import TracebackType
from typing import Any

__all__ = ["PlotProcess"]


class PlotProcess:
    """A running helper process that will draw one ``results.png`` (:func:`~sixnimmt_env.arena.report.plot_results`).

    Use it as a context manager (or call :meth:`close`); :meth:`plot` may be called once.
    """

    def __init__(self) -> None:
        root = str(Path(__file__).resolve().parents[2])  # the folder holding this sixnimmt_env package
        env = dict(os.environ)
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        env.setdefault("OPENBLAS_NUM_THREADS", "1")  # drawing multiplies no matrices; an idle pool would spin
        self._proc: subprocess.Popen[bytes] | None = subprocess.Popen(
            [sys.executable, "-m", "sixnimmt_env.arena.plotter"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env,
        )

    def plot(self, results: dict[str, Any], path: str | Path, timeout: float = 300.0) -> Path:
        """Have the helper draw ``results`` (a JSON-ready results dict) to the PNG file ``path``; wait for it.

        Raises:
            RuntimeError: the helper was already used or closed, failed (its error output is in the message), or
                took longer than ``timeout`` seconds.
        """
        proc = self._proc
        if proc is None or proc.stdin is None:
            raise RuntimeError("this plot process was already used or closed")
        self._proc = None
        request = json.dumps({"path": str(path), "results": results}) + "\n"
        try:
            _, err = proc.communicate(request.encode(), timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise RuntimeError(f"the plot process did not draw {str(path)!r} within {timeout:.0f} s") from None
        # a helper that ended before reading the request is no exception here (communicate ignores the broken
        # pipe): its exit status and error output tell
        if proc.returncode != 0:
            text = err.decode(errors="replace").strip()
            raise RuntimeError(f"the plot process failed drawing {str(path)!r} (exit {proc.returncode}): {text}")
        return Path(path)

    def close(self) -> None:
        """Stop the helper if it has not drawn yet (nothing is written)."""
        proc, self._proc = self._proc, None
        if proc is not None:
            proc.kill()
            proc.wait()
            for stream in (proc.stdin, proc.stderr):
                if stream is not None:
                    stream.close()

    def __enter__(self) -> PlotProcess:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()


def _serve() -> int:
    """The helper: import matplotlib, read one request from stdin, draw it; 0 also when stdin closes unused."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    gc.disable()  # a short-lived process: the collections during matplotlib's import would find no garbage
    from matplotlib.figure import Figure  # noqa: F401  (loaded now, while the arena plays)

    from sixnimmt_env.arena.report import plot_results

    line = sys.stdin.readline()
    if not line.strip():
        return 0
    request = json.loads(line)
    plot_results(request["results"], request["path"])
    gc.freeze()  # a quick exit: Python's shutdown collections skip frozen objects (matplotlib's are many)
    return 0


if __name__ == "__main__":
    raise SystemExit(_serve())
