"""A helper process that draws an arena run's ``results.png``, started before the games so that matplotlib loads
on another core while the arena loads its compiled code and plays.

The arena's command line (:mod:`sixnimmt_env.arena.__main__`) starts one :class:`PlotProcess` first (none with
``--no-plot``), has it lay out the figure while the games are played (:meth:`PlotProcess.draft`) and hands it the
results dict once the tables are printed (:meth:`PlotProcess.plot`); the helper imports matplotlib at once (about
0.3 CPU-s, without the 3-D axes it does not draw: ``_import_matplotlib()``) and then waits for the requests. The
PNG is the one :func:`sixnimmt_env.arena.report.plot_results` draws in-process.

On Linux, from a process with one thread (the command line at start-up), the helper is forked after numpy and
the report module are imported, so it shares them instead of loading them again (about 0.2 CPU-s of Python's
and numpy's start-up); elsewhere, or from a process with more threads (which a fork could catch holding a lock),
it is spawned (:mod:`multiprocessing`).

The helper does not outlive its command: :meth:`PlotProcess.close` (also on an error or Ctrl-C) kills it, and it
ends by itself, writing nothing, when the request pipe closes without a request (its parent died; a parent killed
outright leaves it until the arena's forked workers, which hold the pipe too, have ended). It ignores SIGINT
(Ctrl-C in a terminal reaches every process of the command; the parent decides).
"""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import os
import signal
import sys
import traceback
from pathlib import Path
from types import TracebackType
from typing import Any

__all__ = ["PlotProcess"]


def _single_threaded() -> bool:
    """Whether this process runs one thread (Linux ``/proc``; ``False`` where it cannot tell)."""
    try:
        return len(os.listdir("/proc/self/task")) == 1
    except OSError:
        return False


class PlotProcess:
    """A running helper process that will draw one ``results.png`` (:func:`~sixnimmt_env.arena.report.plot_results`).

    Use it as a context manager (or call :meth:`close`); :meth:`plot` may be called once.

    Attributes:
        forked: the helper was forked (shares this process's imports), else spawned.
    """

    def __init__(self, fork: bool | None = None) -> None:
        """Start the helper: forked if ``fork`` (Linux only), spawned if not; by default forked from a process
        with one thread on Linux."""
        from sixnimmt_env.arena.pool import workers_ignore_ctrl_c

        self.forked = sys.platform == "linux" and (_single_threaded() if fork is None else fork)
        self._drafted = False
        if self.forked:
            import sixnimmt_env.arena.report  # noqa: F401  (numpy and the plot code, shared with the fork)

            sys.stdout.flush()  # the fork would write this process's unwritten output again
            sys.stderr.flush()
        ctx = multiprocessing.get_context("fork") if self.forked else multiprocessing.get_context("spawn")
        requests_in, self._requests = ctx.Pipe(duplex=False)
        self._replies, replies_out = ctx.Pipe(duplex=False)
        self._proc: Any = ctx.Process(
            target=_serve, args=(requests_in, replies_out, (self._requests, self._replies)), daemon=True
        )
        with workers_ignore_ctrl_c():  # a Ctrl-C while it starts is the parent's to handle
            self._proc.start()
        requests_in.close()
        replies_out.close()

    def draft(self, labels: list[str], num_players: int) -> None:
        """Have the helper lay out the plot for agents ``labels`` (position order) at tables of ``num_players``
        now, while the games are played (:func:`~sixnimmt_env.arena.report.draft_plot`); :meth:`plot` then only
        adds the results. Optional, at most once, before :meth:`plot`; a draft that does not fit the results is
        dropped (the plot is drawn whole).

        Raises:
            RuntimeError: the helper was already used or closed, or has its draft already.
        """
        if self._proc is None:
            raise RuntimeError("this plot process was already used or closed")
        if self._drafted:
            raise RuntimeError("this plot process has its draft already (one draft, then one plot)")
        self._drafted = True
        with contextlib.suppress(OSError):  # it has ended: plot() reports why
            self._requests.send({"draft": {"labels": list(labels), "num_players": int(num_players)}})

    def plot(self, results: dict[str, Any], path: str | Path, timeout: float = 300.0) -> Path:
        """Have the helper draw ``results`` (a JSON-ready results dict) to the PNG file ``path``; wait for it.

        Raises:
            RuntimeError: the helper was already used or closed, failed (its traceback is in the message), or
                took longer than ``timeout`` seconds.
        """
        proc = self._proc
        if proc is None:
            raise RuntimeError("this plot process was already used or closed")
        try:
            with contextlib.suppress(OSError):  # it ended before reading the request: its reply (or exit) tells
                self._requests.send({"path": str(path), "results": results})
            try:
                if not self._replies.poll(timeout):
                    raise RuntimeError(f"the plot process did not draw {str(path)!r} within {timeout:.0f} s")
                status, text = self._replies.recv()
            except (EOFError, OSError):  # it died without a word (EOF; a broken pipe on Windows)
                proc.join(5.0)
                status, text = "error", f"it ended with exit code {proc.exitcode}"
        finally:
            self.close()
        if status != "ok":
            raise RuntimeError(f"the plot process failed drawing {str(path)!r}: {text}")
        return Path(path)

    def close(self) -> None:
        """Stop the helper if it has not drawn yet (nothing is written); wait for it to end."""
        proc, self._proc = self._proc, None
        if proc is not None:
            if proc.is_alive():
                proc.kill()
            proc.join()
            self._requests.close()
            self._replies.close()

    def __enter__(self) -> PlotProcess:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()


def _serve(requests: Any, replies: Any, parent_ends: tuple[Any, ...]) -> None:
    """The helper: import matplotlib, take a draft (if one comes first) and one request from ``requests``, draw
    it, reply ``("ok", None)`` or ``("error", traceback)`` on ``replies``; nothing when ``requests`` closes
    unused."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for end in parent_ends:  # a forked child holds the parent's ends too: closed, the pipe's EOF reaches here
        end.close()
    gc.disable()  # a short-lived process: the collections during matplotlib's import would find no garbage
    try:
        _import_matplotlib()
        from sixnimmt_env.arena.report import PlotDraft, finish_plot, plot_results
    except Exception:
        replies.send(("error", traceback.format_exc()))
        return
    draft: PlotDraft | None = None
    try:
        request = requests.recv()
        if "draft" in request:
            try:
                draft = PlotDraft(request["draft"]["labels"], request["draft"]["num_players"])
            except Exception:  # an unusual label: the whole plot is drawn at the end, where an error is reported
                draft = None
            request = requests.recv()
    except EOFError:  # the arena ended without asking for a plot
        return
    try:
        results, path = request["results"], request["path"]
        if draft is not None and draft.fits(results):
            finish_plot(draft, results, path)
        else:
            plot_results(results, path)
    except Exception:
        replies.send(("error", traceback.format_exc()))
        return
    replies.send(("ok", None))


def _import_matplotlib() -> None:
    """Import matplotlib's ``Figure`` (now, while the arena plays), without its 3-D axes.

    matplotlib registers its projections on import, the 3-D one included (``mpl_toolkits.mplot3d``, about 10 % of
    the import); a failed import of it only leaves the projection out, with a warning. The helper draws two panels
    of bars and no 3-D axes: here that import fails at once (``None`` in ``sys.modules``) and its warning is not
    shown. A process that imported the 3-D axes already keeps them.
    """
    import warnings

    hidden = "mpl_toolkits.mplot3d" not in sys.modules
    if hidden:
        sys.modules["mpl_toolkits.mplot3d"] = None  # type: ignore[assignment]  # its import raises ImportError
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Unable to import Axes3D")
            from matplotlib.figure import Figure  # noqa: F401
    finally:
        if hidden and sys.modules.get("mpl_toolkits.mplot3d", 0) is None:
            del sys.modules["mpl_toolkits.mplot3d"]  # a later import of the 3-D axes works
