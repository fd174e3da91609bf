"""One live process at a time: an operating-system file lock (:mod:`filelock`) with its holder's details beside it.

A :class:`ProcessLock` on ``PATH`` holds ``PATH`` locked (``flock`` on POSIX, ``msvcrt`` locking on Windows) and
writes who holds it to ``PATH.json`` (process id, host, start time, and what the holder adds with
:meth:`ProcessLock.note`, such as a server's address). The operating system releases the lock when the holding
process ends, killed or not, so a process that died leaves nothing that blocks the next one; the ``.json`` file is
only informative, read to say who holds the lock (it is deleted on release, overwritten by the next holder).

Used by the play table (one server per saved-games file, :mod:`sixnimmt_env.play`) and by training (one process
per run folder or weights file, ``training.train.held_lock``).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any

__all__ = ["LockHeld", "ProcessLock", "describe"]


class LockHeld(Exception):
    """Another live process holds the lock.

    Attributes:
        path: the lock file.
        holder: the holder's details from ``PATH.json`` (``pid``, ``host``, ``started`` and what it noted); empty
            where the file is missing or unreadable (a holder that has just started, or an older one).
    """

    def __init__(self, path: Path, holder: dict[str, Any]) -> None:
        self.path = path
        self.holder = holder
        super().__init__(f"{path} is held by another process{describe(holder)}")


def describe(holder: dict[str, Any]) -> str:
    """`` (pid P on HOST since TIME)`` from a holder's details, or ``""`` where they are not known."""
    if not {"pid", "host", "started"} <= holder.keys():
        return ""
    return f" (pid {holder['pid']} on {holder['host']} since {holder['started']})"


class ProcessLock:
    """The lock file ``path`` (its folder must exist) and its details file ``path`` + ``.json``; a context manager
    (``with ProcessLock(p, command=...):``) or :meth:`acquire` / :meth:`release`.

    Args:
        path: the lock file (created if missing; left in place on release, as :mod:`filelock` does).
        details: JSON-serialisable details written for the holder beside ``pid``, ``host`` and ``started``.

    Raises (on acquiring):
        LockHeld: another live process holds it (never waits).
    """

    def __init__(self, path: str | Path, **details: Any) -> None:
        from filelock import FileLock

        self.path = Path(path)
        self.info_path = self.path.with_name(self.path.name + ".json")
        self._lock = FileLock(self.path)
        self._details = dict(details)

    @property
    def held(self) -> bool:
        """Whether this object holds the lock now."""
        return self._lock.is_locked

    def acquire(self) -> ProcessLock:
        """Take the lock at once and write the holder's details.

        Raises:
            LockHeld: another process (or another :class:`ProcessLock` object on the same file) holds it.
        """
        from filelock import Timeout

        if self._lock.is_locked:
            return self
        try:
            self._lock.acquire(timeout=0)
        except Timeout:
            raise LockHeld(self.path, self.holder()) from None
        started = datetime.now().isoformat(timespec="seconds")
        self._details = {"pid": os.getpid(), "host": socket.gethostname(), "started": started, **self._details}
        self._write()
        return self

    def note(self, **details: Any) -> None:
        """Add ``details`` to the holder's details file (e.g. the address a server listens on, once bound)."""
        self._details.update(details)
        if self._lock.is_locked:
            self._write()

    def holder(self) -> dict[str, Any]:
        """The details the current holder wrote (``{}`` where there are none or they cannot be read)."""
        with contextlib.suppress(OSError, ValueError):
            data = json.loads(self.info_path.read_text())
            if isinstance(data, dict):
                return data
        return {}

    def release(self) -> None:
        """Delete the details file and release the lock (nothing where this object does not hold it)."""
        if not self._lock.is_locked:
            return
        with contextlib.suppress(OSError):
            self.info_path.unlink()
        self._lock.release()

    def _write(self) -> None:
        tmp = self.info_path.with_name(self.info_path.name + f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(self._details) + "\n")
        os.replace(tmp, self.info_path)  # a reader sees the old details or the new ones, never half a file

    def __enter__(self) -> ProcessLock:
        return self.acquire()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()
