"""The play table's saved games: one SQLite file (the standard library's :mod:`sqlite3`) in the user's data folder.

Every game a server plays is written as it is played, after each move, as its ``sixnimmt-game`` record
(:mod:`sixnimmt_env.records`, the round in progress included) and the state of its agents' and coach's random
streams (:meth:`sixnimmt_env.play.table.Table.rng_states`), so a restarted server continues every unfinished game
exactly (:func:`restore`) and the person's history (:mod:`sixnimmt_env.play.history`) outlives the server.

The file is in write-ahead-log mode (``journal_mode=WAL``): readers do not wait for a writer, and a server's threads
share it. One connection serves a :class:`GameDB`, guarded by a lock. One live server plays the games of a file
(:meth:`GameDB.claim_for_server`: an operating-system lock on ``FILE.lock``, its holder's address in
``FILE.lock.json``), so no game is continued by two servers; readers (``--history``, ``--export``) need no claim.
Table ``games``, one row per game:

==================  ============================================================================================
column              meaning
==================  ============================================================================================
``id``              the game's id (22 random URL-safe characters, the page's ``#game=`` id)
``tab``             SHA-256 (hex) of the token of the tab that holds the game (the token itself is not stored)
``created``         when the game was first saved (Unix time, seconds); ``updated``: its last move
``finished``        1 once the game is over (R12), else 0
``human``           the person's seat, ``NULL`` for a watched game
``version``         the table's version (engine steps played) at the last save
``coach_samples``   worlds the game's coach searches
``seed``, ``game``  the record's seed and game index (game ``k`` of seed ``S`` deals from ``default_rng([S, k])``)
``record``          the ``sixnimmt-game`` record (JSON)
``rngs``            :meth:`~sixnimmt_env.play.table.Table.rng_states` (JSON)
==================  ============================================================================================
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sixnimmt_env.agents import Agent
from sixnimmt_env.locks import LockHeld, ProcessLock, describe
from sixnimmt_env.records import GameRecord

__all__ = ["DatabaseInUse", "GameDB", "SavedGame", "default_db_path", "restore", "tab_hash"]

SCHEMA_VERSION = 1
"""``PRAGMA user_version`` of the files this module writes; another version is refused."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS games (
    id TEXT PRIMARY KEY,
    tab TEXT NOT NULL,
    created REAL NOT NULL,
    updated REAL NOT NULL,
    finished INTEGER NOT NULL,
    human INTEGER,
    version INTEGER NOT NULL,
    coach_samples INTEGER NOT NULL,
    seed INTEGER NOT NULL,
    game INTEGER NOT NULL,
    record TEXT NOT NULL,
    rngs TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS games_by_state ON games (finished, updated);
CREATE INDEX IF NOT EXISTS games_by_seed ON games (seed, game);
"""


def default_db_path() -> Path:
    """``<user data folder>/sixnimmt/play.sqlite3`` (:func:`platformdirs.user_data_dir`: e.g.
    ``~/.local/share/sixnimmt`` on Linux, ``~/Library/Application Support/sixnimmt`` on macOS)."""
    import platformdirs

    return Path(platformdirs.user_data_dir("sixnimmt", appauthor=False)) / "play.sqlite3"


def tab_hash(tab: str) -> str:
    """SHA-256 (hex) of a tab token: what is kept of it, in memory and in the file."""
    return hashlib.sha256(tab.encode()).hexdigest()


@dataclass(frozen=True)
class SavedGame:
    """One saved game (a row of ``games``).

    Attributes:
        id: the game's id.
        tab: SHA-256 of the holding tab's token (:func:`tab_hash`).
        created: Unix time of the first save; ``updated``: of the last.
        finished: the game is over.
        human: the person's seat, ``None`` for a watched game.
        version: engine steps played.
        coach_samples: worlds the coach searches.
        record: the game so far.
        rng_states: the agents' and the coach's random streams at the last save.
    """

    id: str
    tab: str
    created: float
    updated: float
    finished: bool
    human: int | None
    version: int
    coach_samples: int
    record: GameRecord
    rng_states: dict[str, Any]


class DatabaseInUse(ValueError):
    """Another live play server has claimed the saved-games file (:meth:`GameDB.claim_for_server`); the message names
    the file, the server's process and the address it serves the table at."""


class GameDB:
    """The saved games of the play table in the SQLite file ``path`` (created with its folders if missing;
    thread-safe).

    Raises:
        ValueError: the file is not a database of this module (another ``user_version``, not SQLite), naming it.
        OSError: the folder cannot be created.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30.0)
        try:
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")  # in WAL mode: durable at each checkpoint, never corrupt
            version = self._conn.execute("PRAGMA user_version").fetchone()[0]
            if version not in (0, SCHEMA_VERSION):
                raise ValueError(f"{self.path}: saved games of schema version {version}; this version reads only 1")
            self._conn.executescript(_SCHEMA)
            self._conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        except sqlite3.DatabaseError as e:
            self._conn.close()
            raise ValueError(f"{self.path}: not a database of saved games ({e})") from None
        except ValueError:
            self._conn.close()
            raise

    def save(self, gid: str, tab: str, table: Any, now: float | None = None) -> None:
        """Write game ``gid`` as ``table`` (a :class:`~sixnimmt_env.play.table.Table`) holds it now, held by the tab
        whose token hashes to ``tab``. Call it with the table's lock held, so the record and the streams agree."""
        record = json.dumps(table.record().to_dict(), separators=(",", ":"))
        rngs = json.dumps(table.rng_states(), separators=(",", ":"))
        now = time.time() if now is None else now
        with self._lock:
            self._conn.execute(
                "INSERT INTO games (id, tab, created, updated, finished, human, version, coach_samples, seed, game,"
                " record, rngs) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET"
                " tab = excluded.tab, updated = excluded.updated, finished = excluded.finished,"
                " version = excluded.version, record = excluded.record, rngs = excluded.rngs",
                (gid, tab, now, now, int(table.state.done), table.human, table.version, table.coach_samples,
                 table.seed, table.index, record, rngs),
            )  # fmt: skip

    def set_tab(self, gid: str, tab: str) -> None:
        """Give game ``gid`` (if saved) to the tab whose token hashes to ``tab``."""
        with self._lock:
            self._conn.execute("UPDATE games SET tab = ? WHERE id = ?", (tab, gid))

    def load(self, gid: str) -> SavedGame | None:
        """Game ``gid``, or ``None`` if it was never saved.

        Raises:
            ValueError: the row's record is not a valid ``sixnimmt-game`` record (naming the game).
        """
        with self._lock:
            row = self._conn.execute(f"SELECT {_COLUMNS} FROM games WHERE id = ?", (gid,)).fetchone()
        return None if row is None else _saved(row)

    def games(self, finished: bool | None = None) -> list[SavedGame]:
        """Every saved game (only the finished or unfinished ones with ``finished``), oldest first.

        Raises:
            ValueError: a row whose record is not valid (naming the game).
        """
        where = "" if finished is None else f" WHERE finished = {int(finished)}"
        with self._lock:
            rows = self._conn.execute(f"SELECT {_COLUMNS} FROM games{where} ORDER BY created, id").fetchall()
        return [_saved(r) for r in rows]

    def next_index(self, seed: int) -> int:
        """The index of the next game of a server seeded ``seed``: one more than the highest saved, else 0."""
        with self._lock:
            top = self._conn.execute("SELECT MAX(game) FROM games WHERE seed = ?", (seed,)).fetchone()[0]
        return 0 if top is None else int(top) + 1

    def claim_for_server(self, **details: Any) -> ProcessLock:
        """Claim the file for this process's play server: the operating-system lock ``FILE.lock``, held until it is
        released or the process ends (killed or not: the operating system drops it, so a dead server leaves nothing
        that blocks the next). Add the address once the server listens: ``lock.note(url=...)``; the claim refused to
        another server names it.

        Args:
            details: JSON-serialisable details for the holder's file (beside pid, host and start time).

        Raises:
            DatabaseInUse: another live server holds the claim (the message names the file, that server's pid and
                address, and the ways out: stop it, ``--no-save``, another ``--db``). The lock sits beside the file's
                real path (symbolic links resolved); a hard link to the file is another path and not detected.
            ValueError: the lock file cannot be created or opened (e.g. no permission), naming it.
        """
        real = self.path.resolve()  # one lock whatever the path's spelling (relative, symbolic links)
        lock = ProcessLock(real.with_name(real.name + ".lock"), **details)
        try:
            return lock.acquire()
        except LockHeld as e:
            url = e.holder.get("url")
            reach = f"the table is at {url}" if url else "it is starting; its terminal shows the table's address"
            raise DatabaseInUse(
                f"the saved games {real} are in use by another play server{describe(e.holder)}: {reach}. "
                "Two servers would both continue the same unfinished games: use the table already running, stop "
                "that server first (Ctrl-C), or start this one with another --db, or with --no-save and no --db"
            ) from None
        except OSError as e:
            why = e.strerror or e
            raise ValueError(f"the saved games {real}: cannot take their lock {lock.path} ({why})") from None

    def close(self) -> None:
        """Close the connection (the file stays)."""
        with self._lock:
            self._conn.close()


_COLUMNS = "id, tab, created, updated, finished, human, version, coach_samples, record, rngs"


def _saved(row: tuple[Any, ...]) -> SavedGame:
    gid, tab, created, updated, finished, human, version, coach_samples, record, rngs = row
    try:
        parsed = GameRecord.from_dict(json.loads(record))
    except ValueError as e:
        raise ValueError(f"saved game {gid}: {e}") from None
    return SavedGame(
        gid, tab, created, updated, bool(finished), human, version, coach_samples, parsed, json.loads(rngs)
    )


def restore(saved: SavedGame, agents: Mapping[int, Agent] | None = None) -> Any:
    """The :class:`~sixnimmt_env.play.table.Table` of a saved game, where it was saved: its moves re-played
    through the engine from its deal, its agents' and coach's streams set to the saved states.

    Args:
        saved: the game.
        agents: built agents by seat (others are built from the record's specs).

    Raises:
        ValueError: the record does not re-play to itself (a move the engine refuses, another deal or other
            penalties: the message names the game), an agent spec that cannot be built.
    """
    from sixnimmt_env.play.table import Table

    record = saved.record
    n = record.config.num_players
    moves = [step.actions(n) for rnd in record.rounds for step in rnd.steps]
    try:
        table = Table(
            record.config,
            record.agents,
            seed=record.seed,
            index=record.game,
            coach_samples=saved.coach_samples,
            agents=agents,
            moves=moves,
            rng_states=saved.rng_states,
        )
    except ValueError as e:
        raise ValueError(f"saved game {saved.id} cannot be continued: {e}") from None
    if table.record() != record:
        raise ValueError(f"saved game {saved.id} cannot be continued: its moves re-played give another game")
    return table
