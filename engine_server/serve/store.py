"""The session store: what the ZeroMQ and web sessions need to outlive their server, and to move
between servers (docs/remote.md, "Across restarts"; docs/scaling.md for many machines).

Two back ends behind one class: an SQLite file, the embedded default that servers of one
machine share (``store_sqlite.py``), and a PostgreSQL database that servers of many machines
share (``store_postgres.py``; ``--store postgresql://...``).  They differ only in connecting,
marking their schema as ours, transactions and which clock leases are measured on; every
operation below is the same SQL on both.

A session is one row: its kind (``zmq`` or ``web``), its key (the client's routing id in hex,
the page's token) and a JSON document of its durable state, written whole in one transaction
on every change.  What cannot be written (the search tree, the transposition table) is rebuilt
by the restored session on its first search.  Beside the sessions the store keeps

* leases: which server serves a session now.  A server takes a session's lease before it
  restores or opens it, renews all of its leases every few seconds, and gives them back when
  it stops.  Another server may take a lease that has run out, or at once when its holder is a
  process of this machine that no longer runs (a server killed with -9; only where the holder
  names this machine: a holder on another machine is waited out);
* handing over: a server that is refused a session's lease marks it as wanted, and the
  holder gives the session back (closes it, the store keeping it, and releases the lease) if
  its client has left it: a page that a balancer sends to another server after a failover
  and a failback, a client that moved on;
* fencing: every lease taken gets a fresh random token, and every write of a session
  (``save``, ``end``) carries the token of the lease it was made under.  A write whose lease
  is no longer this server's with that token (the server was frozen past its lease, or cut
  off, and another server took the session over, even if that one has given it back since) is
  refused: the old server learns it lost the session and writes nothing more, so a game is
  never forked;
* the keys of sessions that ended, with why, so that a client coming back is told, also by a
  server that was started after its session ended.

The schema is marked as ours with a version, so that a foreign database, a corrupt file or one
written by a newer version is refused with a :class:`StoreError` that names the store and what
to do.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from engine_server.log import get_logger

from .store_backend import SCHEMA_VERSION, Backend, Cursor, StoreError, first_line

log = get_logger("store")

DEFAULT_LEASE_S = 15.0                 # a lease not renewed for this long may be taken over
EXPIRED_KEEP = 4096                    # ended sessions remembered per kind (oldest forgotten)
DSN_SCHEMES = ("postgresql://", "postgres://")


def default_store_path() -> Path:
    """``$XDG_DATA_HOME/othello-engine/sessions.sqlite3`` (``~/.local/share/...``)."""
    base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return base / "othello-engine" / "sessions.sqlite3"


def is_dsn(location: str | os.PathLike[str]) -> bool:
    """A PostgreSQL address (``postgresql://user@host:port/database``), not a file."""
    return str(location).startswith(DSN_SCHEMES)


def server_id(name: str | None = None) -> str:
    """This process as a lease holder: its server's name (the host's unless given), process id
    and a random part (a pid is reused).  Servers of one machine given different names treat
    each other as if on separate machines."""
    return f"{name or socket.gethostname()}/{os.getpid()}/{os.urandom(4).hex()}"


def holder_gone(holder: str) -> bool:
    """The holder is a process of this machine that no longer runs (killed, crashed, or a
    zombie its parent has not reaped yet).  False for a holder named after another machine:
    whether that one runs cannot be seen from here."""
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
    try:
        # "pid (comm) S ...": the state follows the last parenthesis; Z is a dead process.
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat[stat.rindex(")") + 2:].startswith("Z")
    except (OSError, ValueError):
        return False


def new_fence() -> int:
    """A lease's fencing token: random, 63 bits (a signed 64-bit column on both back ends)."""
    return int.from_bytes(os.urandom(8), "big") >> 1


@dataclass(frozen=True)
class Lease:
    """Who serves a session, and how many seconds until the lease runs out unless renewed."""

    holder: str
    left: float


class SessionStore:
    """The sessions, their leases and the ended ones, in an SQLite file or a PostgreSQL
    database (``location``: a path, or a ``postgresql://`` address).  Shared by every thread
    of a server; each server (and each web game's process) has a connection of its own.

    Every method is one transaction.  Failures (a full disk, a database out of reach) raise
    :class:`StoreError`; the caller keeps the session in memory and tries again at its next
    change where the store is on this machine, and refuses the request where it is shared
    (:attr:`shared`)."""

    def __init__(self, location: str | os.PathLike[str], holder: str | None = None,
                 lease_s: float = DEFAULT_LEASE_S, clock: Callable[[], float] | None = None):
        """``clock``: the wall clock of writes, and of leases too where given (tests move
        it); by default the machine's, and the database's for PostgreSQL's leases."""
        self.holder = holder or server_id()
        self.lease_s = lease_s
        self.clock = clock or time.time
        self._lease_clock = clock
        self._lock = threading.Lock()
        # The fencing token of each lease this store took (or was given): its writes carry it.
        self._fences: dict[tuple[str, str], int] = {}
        self.location = str(location)
        self.backend: Backend
        if "://" in self.location and not is_dsn(location):
            raise StoreError(f"session store {self.location}: not a file path nor a PostgreSQL "
                             "address; give --store PATH or --store "
                             "postgresql://USER@HOST:PORT/DATABASE")
        if is_dsn(location):
            from .store_postgres import PostgresBackend

            self.backend = PostgresBackend(self.location)
        else:
            from .store_sqlite import SqliteBackend

            self.backend = SqliteBackend(Path(location))

    @property
    def where(self) -> str:
        return self.backend.where

    @property
    def shared(self) -> bool:
        return self.backend.shared

    def close(self) -> None:
        with self._lock:
            self.backend.close()

    def _run(self, fn: Callable[[Cursor], Any], what: str) -> Any:
        with self._lock:
            for attempt in (0, 1):
                try:
                    with self.backend.transaction() as cur:
                        return fn(cur)
                except self.backend.errors as e:
                    if attempt == 0 and self.backend.lost_connection():
                        continue   # a connection that broke since the last call: once more
                    raise self.backend.fail(f"{what} failed ({first_line(e)})",
                                            self.backend.todo) from None

    def _lease_now(self, cur: Cursor) -> float:
        return self._lease_clock() if self._lease_clock is not None else self.backend.now(cur)

    def _fenced(self, cur: Cursor, kind: str, key: str) -> bool:
        """This store holds the session's lease under the token it was taken with."""
        fence = self._fences.get((kind, key))
        if fence is None:
            return False
        row = cur.run("SELECT holder, fence FROM leases WHERE kind = ? AND key = ?"
                      + self.backend.for_update, (kind, key)).fetchone()
        return row is not None and row[0] == self.holder and int(row[1]) == fence

    # --- sessions -----------------------------------------------------------------------------
    def save(self, kind: str, key: str, state: dict[str, Any]) -> bool:
        """Write a session's state (the whole document, one transaction).  False, and nothing
        written, when this server does not hold the session's lease under its token: another
        server took the session over (this one failed to renew in time), and its state wins."""
        text = json.dumps(state, separators=(",", ":"))
        now = self.clock()

        def run(cur: Cursor) -> bool:
            if not self._fenced(cur, kind, key):
                return False
            cur.run("INSERT INTO sessions (kind, key, state, updated) VALUES (?, ?, ?, ?) "
                    "ON CONFLICT (kind, key) DO UPDATE SET state = excluded.state, "
                    "updated = excluded.updated", (kind, key, text, now))
            return True
        return bool(self._run(run, "saving a session"))

    def load(self, kind: str, key: str) -> dict[str, Any] | None:
        row = self._run(lambda cur: cur.run(
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
        row = self._run(lambda cur: cur.run(
            "SELECT updated FROM sessions WHERE kind = ? AND key = ?", (kind, key)).fetchone(),
            "reading a session")
        return None if row is None else float(row[0])

    def touch(self, kind: str, keys: list[str]) -> None:
        """Mark sessions as current without rewriting them (their client is still there): a
        sweep, or a server restoring them, counts their age from now."""
        now = self.clock()
        self._run(lambda cur: cur.run_many(
            "UPDATE sessions SET updated = ? WHERE kind = ? AND key = ?",
            [(now, kind, key) for key in keys]), "marking sessions current")

    def keys(self, kind: str) -> list[str]:
        rows = self._run(lambda cur: cur.run(
            "SELECT key FROM sessions WHERE kind = ? ORDER BY updated", (kind,)).fetchall(),
            "listing sessions")
        return [r[0] for r in rows]

    def end(self, kind: str, key: str, why: str | None) -> bool:
        """The session is over: its row and lease go; ``why`` (if any) is what its client is
        told if it comes back.  False, and nothing changed, when this server does not hold
        its lease under its token: another server took it over, and it is not this one's to
        end."""
        now = self.clock()

        def run(cur: Cursor) -> bool:
            if not self._fenced(cur, kind, key):
                return False
            _end_rows(cur, kind, [key], why, now)
            return True
        ended = bool(self._run(run, "ending a session"))
        self._fences.pop((kind, key), None)
        return ended

    def sweep(self, kind: str, older_than: float, why: str) -> list[str]:
        """End the sessions of ``kind`` last written before ``older_than`` (the store's wall
        clock) that no live server holds: their clients are told ``why``.  The keys ended."""
        now = self.clock()

        def run(cur: Cursor) -> list[str]:
            old = cur.run("SELECT key FROM sessions WHERE kind = ? AND updated < ?",
                          (kind, older_than)).fetchall()
            ended = []
            lease_now = self._lease_now(cur)
            for (key,) in old:
                # Under the lock that taking its lease takes: not ended while another server
                # is taking it back.
                self.backend.lock(cur, kind, key)
                lease = cur.run("SELECT holder, until FROM leases WHERE kind = ? AND key = ?",
                                (kind, key)).fetchone()
                if lease is None or lease[1] <= lease_now or holder_gone(lease[0]):
                    ended.append(key)
            _end_rows(cur, kind, ended, why, now)
            return ended
        return list(self._run(run, "ending old sessions"))

    def take_expired(self, kind: str, key: str) -> str | None:
        """Why the session of ``key`` ended, once (the entry is removed), or None."""
        row = self._run(lambda cur: cur.run(
            "DELETE FROM expired WHERE kind = ? AND key = ? RETURNING why",
            (kind, key)).fetchone(), "reading ended sessions")
        return None if row is None else str(row[0])

    # --- leases -------------------------------------------------------------------------------
    def acquire(self, kind: str, key: str) -> Lease | None:
        """Take the session's lease for this server, under a new fencing token: None when it
        is taken, else the lease that stands in the way (held by another server that may be
        live and has not run out), which is then marked as wanted: its holder hands the
        session over if its client has left it (:meth:`take_wanted`)."""
        fence = new_fence()

        def run(cur: Cursor) -> Lease | None:
            self.backend.lock(cur, kind, key)
            now = self._lease_now(cur)
            row = cur.run("SELECT holder, until FROM leases WHERE kind = ? AND key = ?",
                          (kind, key)).fetchone()
            if row is not None and row[0] != self.holder and row[1] > now \
                    and not holder_gone(row[0]):
                cur.run("UPDATE leases SET wanted = ? WHERE kind = ? AND key = ?",
                        (now, kind, key))
                return Lease(row[0], float(row[1]) - now)
            cur.run("INSERT INTO leases (kind, key, holder, until, fence, wanted) "
                    "VALUES (?, ?, ?, ?, ?, NULL) "
                    "ON CONFLICT (kind, key) DO UPDATE SET holder = excluded.holder, "
                    "until = excluded.until, fence = excluded.fence, wanted = NULL",
                    (kind, key, self.holder, now + self.lease_s, fence))
            return None
        lease = self._run(run, "taking a lease")
        if lease is None:
            self._fences[(kind, key)] = fence
        return lease

    def fence(self, kind: str, key: str) -> int | None:
        """The token of this store's lease of the session (None: it took none)."""
        return self._fences.get((kind, key))

    def adopt(self, kind: str, key: str, fence: int) -> None:
        """Write under a lease another connection of this server took (a web game's process
        under its server's lease)."""
        self._fences[(kind, key)] = fence

    def take_wanted(self, kind: str) -> list[str]:
        """The sessions of ``kind`` this server holds that another server was asked for since
        the last call (their client went there), the marks cleared: each is to be handed over
        (closed here, its lease given back) if its client has left this server, else kept (an
        ask that comes again marks it again)."""
        rows = self._run(lambda cur: cur.run(
            "UPDATE leases SET wanted = NULL WHERE kind = ? AND holder = ? "
            "AND wanted IS NOT NULL RETURNING key", (kind, self.holder)).fetchall(),
            "reading wanted leases")
        return [r[0] for r in rows]

    def held(self, kind: str) -> set[str]:
        """The keys of ``kind`` whose lease this server holds (its copies of any other session
        are stale: another server took them over)."""
        rows = self._run(lambda cur: cur.run(
            "SELECT key FROM leases WHERE kind = ? AND holder = ?", (kind, self.holder))
            .fetchall(), "reading leases")
        return {r[0] for r in rows}

    def holds(self, kind: str, key: str) -> bool:
        return bool(self._run(lambda cur: self._fenced(cur, kind, key), "reading a lease"))

    def renew(self) -> int:
        """Extend every lease this server holds; how many it holds."""
        def run(cur: Cursor) -> int:
            until = self._lease_now(cur) + self.lease_s
            return int(cur.run("UPDATE leases SET until = ? WHERE holder = ?",
                               (until, self.holder)).rowcount)
        return int(self._run(run, "renewing leases"))

    def release(self, kind: str, key: str | None = None) -> None:
        """Give back one lease, or (``key`` None) every lease of ``kind`` this server holds."""
        if key is None:
            self._run(lambda cur: cur.run(
                "DELETE FROM leases WHERE kind = ? AND holder = ?", (kind, self.holder)),
                "giving back leases")
            for k in [k for k in self._fences if k[0] == kind]:
                del self._fences[k]
        else:
            self._run(lambda cur: cur.run(
                "DELETE FROM leases WHERE kind = ? AND key = ? AND holder = ?",
                (kind, key, self.holder)), "giving back a lease")
            self._fences.pop((kind, key), None)


def _end_rows(cur: Cursor, kind: str, keys: list[str], why: str | None, now: float) -> None:
    """Sessions over: their rows and leases go, and ``why`` (if any) is kept for their clients
    (the newest EXPIRED_KEEP of a kind)."""
    for key in keys:
        cur.run("DELETE FROM sessions WHERE kind = ? AND key = ?", (kind, key))
        cur.run("DELETE FROM leases WHERE kind = ? AND key = ?", (kind, key))
        if why is not None:
            cur.run("INSERT INTO expired (kind, key, why, at) VALUES (?, ?, ?, ?) "
                    "ON CONFLICT (kind, key) DO UPDATE SET why = excluded.why, at = excluded.at",
                    (kind, key, why, now))
    if keys and why is not None:
        cur.run("DELETE FROM expired WHERE kind = ? AND at < (SELECT at FROM expired "
                "WHERE kind = ? ORDER BY at DESC LIMIT 1 OFFSET ?)",
                (kind, kind, EXPIRED_KEEP - 1))


def open_store(location: str | os.PathLike[str] | None, warn: Callable[[str], None],
               **kwargs: Any) -> SessionStore | None:
    """The store at ``location``, or None: no location, or a file that cannot be used, in
    which case ``warn`` is told why and that the server goes on without one.  A shared store
    (PostgreSQL) that cannot be used raises :class:`StoreError`: servers that share their
    games must not serve them alone, each from its own memory."""
    if location is None:
        return None
    try:
        return SessionStore(location, **kwargs)
    except StoreError as e:
        if is_dsn(location):
            raise
        warn(f"{e}. Serving without a session store: sessions will not outlive this server.")
        return None


def store_from_settings(settings: dict[str, Any], prog: str) -> SessionStore | None:
    """The store a configuration's ``[store]`` table asks for (``enabled``, ``path``: a file
    or a ``postgresql://`` address, ``lease``, ``server_name``; ``--store``, ``--no-store``,
    ``--server-name``), or None: turned off, or a file that cannot be used (``PROG: why`` on
    stderr; the server then serves without one).  :class:`StoreError` for a PostgreSQL store
    that cannot be used."""
    if not settings["enabled"]:
        return None
    location = settings["path"] or default_store_path()
    return open_store(location, lambda text: print(f"{prog}: {text}", file=sys.stderr,
                                                   flush=True),
                      lease_s=float(settings["lease"]),
                      holder=server_id(settings.get("server_name")))


__all__ = ["Backend", "Cursor", "DEFAULT_LEASE_S", "Lease", "SCHEMA_VERSION", "SessionStore",
           "StoreError", "default_store_path", "holder_gone", "is_dsn", "new_fence",
           "open_store", "server_id", "store_from_settings"]
