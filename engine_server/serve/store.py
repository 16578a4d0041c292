"""The session store: what the ZeroMQ and web sessions need to outlive their server, in one
SQLite file (docs/remote.md, "Across restarts"; docs/scaling.md for many machines).

A session is one row: its kind (``zmq`` or ``web``), its key (the client's routing id in hex,
the page's token) and a JSON document of its durable state, written whole in one transaction
on every change.  What cannot be written (the search tree, the transposition table) is rebuilt
by the restored session on its first search.  Beside the sessions the store keeps

* leases: which server serves a session now.  A server takes a session's lease before it
  restores or opens it, renews all of its leases every few seconds, and gives them back when
  it stops; another server may take a lease that has run out, or at once when its holder is a
  process of this machine that no longer exists (a server killed with -9);
* the keys of sessions that ended, with why, so that a client coming back is told, also by a
  server that was started after its session ended.

The file is in WAL mode with ``synchronous=NORMAL``: a committed change survives the process
being killed (it is in the operating system's hands), and a power cut may lose the last few
changes, never the file.  ``PRAGMA application_id`` marks the file as ours and ``user_version``
holds the schema version, so that a foreign file, a corrupt one or one written by a newer
version is refused with a :class:`StoreError` that names the file and what to do; callers then
serve without a store, saying so (``open_store``).
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from engine_server.log import get_logger

log = get_logger("store")

SCHEMA_VERSION = 1
APPLICATION_ID = 0x4F544C53            # "OTLS": an othello-engine session store
DEFAULT_LEASE_S = 15.0                 # a lease not renewed for this long may be taken over
BUSY_TIMEOUT_S = 5.0                   # another process's write: wait this long for the lock
EXPIRED_KEEP = 4096                    # ended sessions remembered per kind (oldest forgotten)

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS sessions (
        kind TEXT NOT NULL, key TEXT NOT NULL, state TEXT NOT NULL, updated REAL NOT NULL,
        PRIMARY KEY (kind, key))""",
    """CREATE TABLE IF NOT EXISTS leases (
        kind TEXT NOT NULL, key TEXT NOT NULL, holder TEXT NOT NULL, until REAL NOT NULL,
        PRIMARY KEY (kind, key))""",
    "CREATE INDEX IF NOT EXISTS leases_holder ON leases (holder)",
    """CREATE TABLE IF NOT EXISTS expired (
        kind TEXT NOT NULL, key TEXT NOT NULL, why TEXT NOT NULL, at REAL NOT NULL,
        PRIMARY KEY (kind, key))""",
)


class StoreError(Exception):
    """A store that cannot be used; the message names the file and what to do."""


def default_store_path() -> Path:
    """``$XDG_DATA_HOME/othello-engine/sessions.sqlite3`` (``~/.local/share/...``)."""
    base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return base / "othello-engine" / "sessions.sqlite3"


def server_id() -> str:
    """This process as a lease holder: host, process id and a random part (a pid is reused)."""
    return f"{socket.gethostname()}/{os.getpid()}/{os.urandom(4).hex()}"


def _holder_gone(holder: str) -> bool:
    """The holder is a process of this machine that no longer runs (killed, crashed)."""
    host, _, rest = holder.partition("/")
    pid_text = rest.partition("/")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False   # someone else's live process
    return False


@dataclass(frozen=True)
class Lease:
    """Who serves a session, and until when unless renewed (the store's wall clock)."""

    holder: str
    until: float


class SessionStore:
    """One SQLite file shared by every thread of a server, and by servers of one machine.

    Every method is one transaction.  Writes that fail (a full disk, a file removed under the
    server) raise :class:`StoreError`; the caller keeps the session in memory and tries again
    at its next change, so nothing is lost while the server runs."""

    def __init__(self, path: str | os.PathLike[str], holder: str | None = None,
                 lease_s: float = DEFAULT_LEASE_S, clock: Callable[[], float] = time.time):
        self.path = Path(path)
        self.holder = holder or server_id()
        self.lease_s = lease_s
        self.clock = clock
        self._lock = threading.Lock()
        self._db = self._open()

    # --- opening ------------------------------------------------------------------------------
    def _fail(self, what: str, todo: str) -> StoreError:
        return StoreError(f"session store {self.path}: {what}; {todo}")

    def _open(self) -> sqlite3.Connection:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise self._fail(f"cannot create its folder ({e.strerror})",
                             "give a writable path with --store PATH") from None
        fresh = not self.path.exists() or self.path.stat().st_size == 0
        try:
            db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None,
                                 check_same_thread=False)
        except sqlite3.Error as e:
            raise self._fail(f"cannot be opened ({e})",
                             "give a writable path with --store PATH") from None
        try:
            app_id = db.execute("PRAGMA application_id").fetchone()[0]
            version = db.execute("PRAGMA user_version").fetchone()[0]
            tables = db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        except sqlite3.DatabaseError as e:
            db.close()
            raise self._fail(f"is not a readable SQLite file ({e})",
                             "move it aside (it is kept as it is) and restart, or give another "
                             "file with --store PATH") from None
        if app_id != APPLICATION_ID and (app_id != 0 or tables > 0):
            db.close()
            raise self._fail("is an SQLite file of another program (application_id "
                             f"{app_id:#x})", "give this server a file of its own with "
                             "--store PATH") from None
        if version > SCHEMA_VERSION:
            db.close()
            raise self._fail(f"was written by a newer othello-engine (store version {version}, "
                             f"this one reads up to {SCHEMA_VERSION})",
                             "run the newer version, or give this one another file with "
                             "--store PATH") from None
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            if fresh or version < SCHEMA_VERSION:
                with _transaction(db):
                    for statement in _SCHEMA:
                        db.execute(statement)
                    db.execute(f"PRAGMA application_id={APPLICATION_ID}")
                    db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            db.execute("SELECT count(*) FROM sessions").fetchone()
        except sqlite3.Error as e:
            db.close()
            raise self._fail(f"cannot be used ({e})",
                             "check the disk and the file's permissions, or give another file "
                             "with --store PATH") from None
        return db

    def close(self) -> None:
        with self._lock:
            try:
                self._db.close()
            except sqlite3.Error:
                pass

    def _run(self, fn: Callable[[sqlite3.Connection], Any], what: str) -> Any:
        with self._lock:
            try:
                with _transaction(self._db):
                    return fn(self._db)
            except sqlite3.Error as e:
                raise self._fail(f"{what} failed ({e})",
                                 "check the disk space and the file's permissions") from None

    # --- sessions -----------------------------------------------------------------------------
    def _held_elsewhere(self, db: sqlite3.Connection, kind: str, key: str) -> bool:
        """Another server holds the session's lease: it is that server's to write and end."""
        row = db.execute("SELECT holder FROM leases WHERE kind = ? AND key = ?",
                         (kind, key)).fetchone()
        return row is not None and row[0] != self.holder

    def save(self, kind: str, key: str, state: dict[str, Any]) -> bool:
        """Write a session's state (the whole document, one transaction).  False, and nothing
        written, when another server holds the session's lease: it took the session over
        (this server failed to renew in time), and its state wins."""
        text = json.dumps(state, separators=(",", ":"))
        now = self.clock()

        def run(db: sqlite3.Connection) -> bool:
            if self._held_elsewhere(db, kind, key):
                return False
            db.execute("INSERT INTO sessions (kind, key, state, updated) VALUES (?, ?, ?, ?) "
                       "ON CONFLICT (kind, key) DO UPDATE SET state = excluded.state, "
                       "updated = excluded.updated", (kind, key, text, now))
            return True
        return bool(self._run(run, "saving a session"))

    def load(self, kind: str, key: str) -> dict[str, Any] | None:
        row = self._run(lambda db: db.execute(
            "SELECT state FROM sessions WHERE kind = ? AND key = ?", (kind, key)).fetchone(),
            "reading a session")
        if row is None:
            return None
        try:
            state = json.loads(row[0])
        except ValueError:
            log.error("store_bad_row", kind=kind, key=key)
            return None
        return state if isinstance(state, dict) else None

    def updated(self, kind: str, key: str) -> float | None:
        """When the session was last written (the store's wall clock), or None."""
        row = self._run(lambda db: db.execute(
            "SELECT updated FROM sessions WHERE kind = ? AND key = ?", (kind, key)).fetchone(),
            "reading a session")
        return None if row is None else float(row[0])

    def touch(self, kind: str, keys: list[str]) -> None:
        """Mark sessions as current without rewriting them (their client is still there): a
        sweep, or a server restoring them, counts their age from now."""
        now = self.clock()
        self._run(lambda db: db.executemany(
            "UPDATE sessions SET updated = ? WHERE kind = ? AND key = ?",
            [(now, kind, key) for key in keys]), "marking sessions current")

    def keys(self, kind: str) -> list[str]:
        rows = self._run(lambda db: db.execute(
            "SELECT key FROM sessions WHERE kind = ? ORDER BY updated", (kind,)).fetchall(),
            "listing sessions")
        return [r[0] for r in rows]

    def end(self, kind: str, key: str, why: str | None) -> bool:
        """The session is over: its row and lease go; ``why`` (if any) is what its client is
        told if it comes back.  False, and nothing changed, when another server holds its
        lease: it took the session over, and it is not this server's to end."""
        now = self.clock()

        def run(db: sqlite3.Connection) -> bool:
            if self._held_elsewhere(db, kind, key):
                return False
            _end_rows(db, kind, [key], why, now)
            return True
        return bool(self._run(run, "ending a session"))

    def sweep(self, kind: str, older_than: float, why: str) -> list[str]:
        """End the sessions of ``kind`` last written before ``older_than`` (the store's wall
        clock) that no live server holds: their clients are told ``why``.  The keys ended."""
        now = self.clock()

        def run(db: sqlite3.Connection) -> list[str]:
            rows = db.execute(
                "SELECT s.key, l.holder, l.until FROM sessions s LEFT JOIN leases l "
                "ON l.kind = s.kind AND l.key = s.key WHERE s.kind = ? AND s.updated < ?",
                (kind, older_than)).fetchall()
            ended = [key for key, holder, until in rows
                     if holder is None or until <= now or _holder_gone(holder)]
            _end_rows(db, kind, ended, why, now)
            return ended
        return self._run(run, "ending old sessions")

    def take_expired(self, kind: str, key: str) -> str | None:
        """Why the session of ``key`` ended, once (the entry is removed), or None."""
        def run(db: sqlite3.Connection) -> str | None:
            row = db.execute("SELECT why FROM expired WHERE kind = ? AND key = ?",
                             (kind, key)).fetchone()
            if row is not None:
                db.execute("DELETE FROM expired WHERE kind = ? AND key = ?", (kind, key))
            return None if row is None else str(row[0])
        return self._run(run, "reading ended sessions")

    # --- leases -------------------------------------------------------------------------------
    def acquire(self, kind: str, key: str) -> Lease | None:
        """Take the session's lease for this server: None when it is taken, else the lease
        that stands in the way (held by a live server, not run out)."""
        now = self.clock()

        def run(db: sqlite3.Connection) -> Lease | None:
            row = db.execute("SELECT holder, until FROM leases WHERE kind = ? AND key = ?",
                             (kind, key)).fetchone()
            if row is not None and row[0] != self.holder and row[1] > now \
                    and not _holder_gone(row[0]):
                return Lease(row[0], float(row[1]))
            db.execute("INSERT OR REPLACE INTO leases (kind, key, holder, until) "
                       "VALUES (?, ?, ?, ?)", (kind, key, self.holder, now + self.lease_s))
            return None
        return self._run(run, "taking a lease")

    def holds(self, kind: str, key: str) -> bool:
        row = self._run(lambda db: db.execute(
            "SELECT holder FROM leases WHERE kind = ? AND key = ?", (kind, key)).fetchone(),
            "reading a lease")
        return row is not None and row[0] == self.holder

    def renew(self) -> int:
        """Extend every lease this server holds; how many it holds."""
        until = self.clock() + self.lease_s
        cur = self._run(lambda db: db.execute(
            "UPDATE leases SET until = ? WHERE holder = ?", (until, self.holder)),
            "renewing leases")
        return int(cur.rowcount)

    def release(self, kind: str, key: str | None = None) -> None:
        """Give back one lease, or (``key`` None) every lease of ``kind`` this server holds."""
        if key is None:
            self._run(lambda db: db.execute(
                "DELETE FROM leases WHERE kind = ? AND holder = ?", (kind, self.holder)),
                "giving back leases")
        else:
            self._run(lambda db: db.execute(
                "DELETE FROM leases WHERE kind = ? AND key = ? AND holder = ?",
                (kind, key, self.holder)), "giving back a lease")


def _end_rows(db: sqlite3.Connection, kind: str, keys: list[str], why: str | None,
              now: float) -> None:
    """Sessions over: their rows and leases go, and ``why`` (if any) is kept for their clients
    (the newest EXPIRED_KEEP of a kind)."""
    for key in keys:
        db.execute("DELETE FROM sessions WHERE kind = ? AND key = ?", (kind, key))
        db.execute("DELETE FROM leases WHERE kind = ? AND key = ?", (kind, key))
        if why is not None:
            db.execute("INSERT OR REPLACE INTO expired (kind, key, why, at) VALUES (?, ?, ?, ?)",
                       (kind, key, why, now))
    if keys and why is not None:
        db.execute("DELETE FROM expired WHERE kind = ? AND at < (SELECT at FROM expired "
                   "WHERE kind = ? ORDER BY at DESC LIMIT 1 OFFSET ?)",
                   (kind, kind, EXPIRED_KEEP - 1))


class _transaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on error): a writer takes the file's
    lock up front, so two servers never both read a lease as free."""

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


def open_store(path: str | os.PathLike[str] | None, warn: Callable[[str], None],
               **kwargs: Any) -> SessionStore | None:
    """The store at ``path``, or None (no store: ``path`` None, or the file cannot be used, in
    which case ``warn`` is told why and that the server goes on without one)."""
    if path is None:
        return None
    try:
        return SessionStore(path, **kwargs)
    except StoreError as e:
        warn(f"{e}. Serving without a session store: sessions will not outlive this server.")
        return None


def store_from_settings(settings: dict[str, Any], prog: str) -> SessionStore | None:
    """The store a configuration's ``[store]`` table asks for (``enabled``, ``path``,
    ``lease``; ``--store PATH``, ``--no-store``), or None: turned off, or a file that cannot be
    used (``PROG: why`` on stderr; the server then serves without one)."""
    if not settings["enabled"]:
        return None
    path = settings["path"] or default_store_path()
    return open_store(path, lambda text: print(f"{prog}: {text}", file=sys.stderr, flush=True),
                      lease_s=float(settings["lease"]))


__all__ = ["DEFAULT_LEASE_S", "Lease", "SCHEMA_VERSION", "SessionStore", "StoreError",
           "default_store_path", "open_store", "server_id", "store_from_settings"]
