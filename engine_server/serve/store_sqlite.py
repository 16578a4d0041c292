"""The session store's SQLite back end: one file, shared by the servers of one machine.

The file is in WAL mode with ``synchronous=NORMAL``: a committed change survives the process
being killed (it is in the operating system's hands), and a power cut may lose the last few
changes, never the file.  Every transaction is ``BEGIN IMMEDIATE``: a writer takes the file's
lock up front, so two servers never both read a lease as free.  WAL needs memory shared by
the processes: the file must be on a local disk, not a network file system.
``PRAGMA application_id`` marks the file as ours and ``user_version`` holds the schema
version.
"""

from __future__ import annotations

import sqlite3
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from .store_backend import SCHEMA_VERSION, Backend, Cursor

APPLICATION_ID = 0x4F544C53            # "OTLS": an othello-engine session store
BUSY_TIMEOUT_S = 5.0                   # another process's write: wait this long for the lock

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS sessions (
        kind TEXT NOT NULL, key TEXT NOT NULL, state TEXT NOT NULL, updated REAL NOT NULL,
        PRIMARY KEY (kind, key))""",
    """CREATE TABLE IF NOT EXISTS leases (
        kind TEXT NOT NULL, key TEXT NOT NULL, holder TEXT NOT NULL, until REAL NOT NULL,
        fence INTEGER NOT NULL DEFAULT 0, wanted REAL, PRIMARY KEY (kind, key))""",
    "CREATE INDEX IF NOT EXISTS leases_holder ON leases (holder)",
    """CREATE TABLE IF NOT EXISTS expired (
        kind TEXT NOT NULL, key TEXT NOT NULL, why TEXT NOT NULL, at REAL NOT NULL,
        PRIMARY KEY (kind, key))""",
)
# From each version to the next.
_MIGRATIONS = {1: ("ALTER TABLE leases ADD COLUMN fence INTEGER NOT NULL DEFAULT 0",
                   "ALTER TABLE leases ADD COLUMN wanted REAL")}
_TODO = "give a writable path with --store PATH"


class _SqliteCursor(Cursor):
    def __init__(self, db: sqlite3.Connection):
        self.db = db

    def run(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        return self.db.execute(sql, params)

    def run_many(self, sql: str, rows: list[tuple[Any, ...]]) -> None:
        self.db.executemany(sql, rows)


class SqliteBackend(Backend):
    shared = False
    todo = "check the disk space and the file's permissions"
    errors = (sqlite3.Error,)

    def __init__(self, path: Path):
        self.path = path
        self.where = str(path)
        self.db = self._open()


    def _open(self) -> sqlite3.Connection:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise self.fail(f"cannot create its folder ({e.strerror})", _TODO) from None
        fresh = not self.path.exists() or self.path.stat().st_size == 0
        try:
            db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None,
                                 check_same_thread=False)
        except sqlite3.Error as e:
            raise self.fail(f"cannot be opened ({e})", _TODO) from None
        try:
            app_id = db.execute("PRAGMA application_id").fetchone()[0]
            version = db.execute("PRAGMA user_version").fetchone()[0]
            tables = db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        except sqlite3.DatabaseError as e:
            db.close()
            raise self.fail(f"is not a readable SQLite file ({e})",
                             "move it aside (it is kept as it is) and restart, or give another "
                             "file with --store PATH") from None
        if app_id != APPLICATION_ID and (app_id != 0 or tables > 0):
            db.close()
            raise self.fail("is an SQLite file of another program (application_id "
                             f"{app_id:#x})", "give this server a file of its own with "
                             "--store PATH") from None
        if version > SCHEMA_VERSION:
            db.close()
            raise self.fail(f"was written by a newer othello-engine (store version {version}, "
                             f"this one reads up to {SCHEMA_VERSION})",
                             "run the newer version, or give this one another file with "
                             "--store PATH") from None
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            if fresh or version < SCHEMA_VERSION:
                with _transaction(db):
                    if not fresh:
                        for v in range(version, SCHEMA_VERSION):
                            for statement in _MIGRATIONS.get(v, ()):
                                db.execute(statement)
                    for statement in _SCHEMA:
                        db.execute(statement)
                    db.execute(f"PRAGMA application_id={APPLICATION_ID}")
                    db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            db.execute("SELECT count(*) FROM sessions").fetchone()
        except sqlite3.Error as e:
            db.close()
            raise self.fail(f"cannot be used ({e})",
                             "check the disk and the file's permissions, or give another file "
                             "with --store PATH") from None
        return db

    @contextmanager
    def transaction(self) -> Iterator[Cursor]:
        with _transaction(self.db) as db:
            yield _SqliteCursor(db)

    def now(self, cur: Cursor) -> float:
        return time.time()

    def lock(self, cur: Cursor, kind: str, key: str) -> None:
        pass   # BEGIN IMMEDIATE serializes every writing transaction of the file already

    def close(self) -> None:
        try:
            self.db.close()
        except sqlite3.Error:
            pass


class _transaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on error)."""

    def __init__(self, db: sqlite3.Connection):
        self.db = db

    def __enter__(self) -> sqlite3.Connection:
        self.db.execute("BEGIN IMMEDIATE")
        return self.db

    def __exit__(self, kind: Any, value: Any, tb: Any) -> None:
        if kind is None:
            self.db.execute("COMMIT")
        else:
            try:
                self.db.execute("ROLLBACK")
            except sqlite3.Error:
                pass


__all__ = ["APPLICATION_ID", "SqliteBackend"]
