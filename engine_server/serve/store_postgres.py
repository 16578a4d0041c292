"""The session store's PostgreSQL back end: one database, shared by servers on many machines
(``--store postgresql://user@host:port/database``; psycopg 3, the package's ``postgres``
extra).

* One connection per server (and per web game's process), in autocommit mode with explicit
  transactions; a connection lost (the database restarted, a network cut) is opened again at
  the next operation, and the operation that found it broken is tried once more.
* Leases are measured on the database's clock (``clock_timestamp()``), one clock for every
  machine: a server's own clock may be off by seconds.
* Taking a lease holds a transaction-level advisory lock on the session's key, so two servers
  never both read a lease as free; a write reads its lease ``FOR UPDATE``, so a lease is not
  taken over in the middle of a write under it.
* A table ``othello_store`` (one row: the application and the schema version) marks the
  database as ours.  A database that has tables of our names without it belongs to another
  program, and is refused rather than written to.
* Connections and statements have time limits (``CONNECT_TIMEOUT_S``, ``STATEMENT_TIMEOUT_MS``,
  TCP keepalives): a database out of reach fails an operation in seconds instead of hanging
  the server.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator
from urllib.parse import urlsplit, urlunsplit

from .store_backend import SCHEMA_VERSION, Backend, Cursor, StoreError, first_line

APPLICATION = "othello-engine session store"
CONNECT_TIMEOUT_S = 5
STATEMENT_TIMEOUT_MS = 10_000
LOCK_TIMEOUT_MS = 5_000
# The advisory lock that creating the schema takes (two servers starting at once); the
# sessions' locks are hashes of their keys in the other of the two-key lock spaces.
SCHEMA_LOCK = (0x4F544C53, 0)
LEASE_LOCK_SPACE = 0x4F544C54

_SCHEMA = (
    """CREATE TABLE othello_store (app TEXT NOT NULL, version INTEGER NOT NULL)""",
    """CREATE TABLE sessions (
        kind TEXT NOT NULL, key TEXT NOT NULL, state TEXT NOT NULL,
        updated DOUBLE PRECISION NOT NULL, PRIMARY KEY (kind, key))""",
    """CREATE TABLE leases (
        kind TEXT NOT NULL, key TEXT NOT NULL, holder TEXT NOT NULL,
        until DOUBLE PRECISION NOT NULL, fence BIGINT NOT NULL, wanted DOUBLE PRECISION,
        PRIMARY KEY (kind, key))""",
    "CREATE INDEX leases_holder ON leases (holder)",
    """CREATE TABLE expired (
        kind TEXT NOT NULL, key TEXT NOT NULL, why TEXT NOT NULL,
        at DOUBLE PRECISION NOT NULL, PRIMARY KEY (kind, key))""",
)
OUR_TABLES = ("sessions", "leases", "expired")


def redact(dsn: str) -> str:
    """The address without its password, for messages and logs."""
    parts = urlsplit(dsn)
    if parts.password is None:
        return dsn
    host = parts.hostname or ""
    netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


class _PgCursor(Cursor):
    def __init__(self, cur: Any):
        self.cur = cur

    def run(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        self.cur.execute(sql.replace("?", "%s"), params)
        return self.cur

    def run_many(self, sql: str, rows: list[tuple[Any, ...]]) -> None:
        if rows:
            self.cur.executemany(sql.replace("?", "%s"), rows)


class PostgresBackend(Backend):
    shared = True
    todo = ("check that the database server runs and this machine reaches it; the request "
            "is refused, not lost: its client sends it again")
    for_update = " FOR UPDATE"

    def __init__(self, dsn: str):
        self.dsn = dsn
        self.where = redact(dsn)
        try:
            import psycopg
        except ImportError:
            raise StoreError(
                f"session store {self.where}: PostgreSQL needs the psycopg package; install "
                "it with pip install 'othello-engine-server[postgres]' (or use an SQLite "
                "file: --store PATH)") from None
        self.psycopg = psycopg
        self.errors = (psycopg.Error,)
        self.conn: Any = None
        self._broke = False   # the last transaction found its connection broken
        self.conn = self._connect()
        self._check_schema()


    def _open_connection(self) -> Any:
        return self.psycopg.connect(
            self.dsn, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S,
            application_name="othello-engine", keepalives=1, keepalives_idle=10,
            keepalives_interval=3, keepalives_count=3,
            options=f"-c statement_timeout={STATEMENT_TIMEOUT_MS} "
                    f"-c lock_timeout={LOCK_TIMEOUT_MS}")

    def _connect(self) -> Any:
        psycopg = self.psycopg
        try:
            return self._open_connection()
        except psycopg.OperationalError as e:
            text = first_line(e)
            if "does not exist" in text and "database" in text:
                todo = ("create it (createdb, or CREATE DATABASE as its owner) and start "
                        "again, or give another database with --store postgresql://...")
            elif "password" in text or "authentication" in text or "role" in text:
                todo = ("check the user and password in the address (or ~/.pgpass) and the "
                        "server's pg_hba.conf")
            else:
                todo = ("start the database server, or check the address's host and port "
                        "(--store postgresql://USER@HOST:PORT/DATABASE)")
            raise self.fail(f"cannot connect ({text})", todo) from None
        except psycopg.Error as e:
            raise self.fail(f"cannot connect ({first_line(e)})",
                             "check the address given with --store") from None

    def _check_schema(self) -> None:
        psycopg = self.psycopg
        try:
            with self.conn.transaction():
                cur = self.conn.cursor()
                cur.execute("SELECT pg_advisory_xact_lock(%s, %s)", SCHEMA_LOCK)
                cur.execute("SELECT to_regclass('othello_store') IS NOT NULL")
                marked = cur.fetchone()[0]
                if marked:
                    cur.execute("SELECT app, version FROM othello_store")
                    row = cur.fetchone()
                    if row is None or row[0] != APPLICATION:
                        raise self.fail(
                            "has a table othello_store that is not ours", "give the engine a "
                            "database of its own (createdb othello)")
                    version = int(row[1])
                    if version > SCHEMA_VERSION:
                        raise self.fail(
                            f"was written by a newer othello-engine (store version {version}, "
                            f"this one reads up to {SCHEMA_VERSION})", "run the newer version "
                            "on every server, or give this one another database")
                    return
                cur.execute("SELECT table_name FROM information_schema.tables WHERE "
                            "table_schema = current_schema() AND table_name = ANY(%s)",
                            (list(OUR_TABLES),))
                theirs = sorted(r[0] for r in cur.fetchall())
                if theirs:
                    raise self.fail(
                        f"holds tables of another program ({', '.join(theirs)}) and is not "
                        "marked as an othello-engine store", "give the engine a database of "
                        "its own (createdb othello); nothing was written to this one")
                for statement in _SCHEMA:
                    cur.execute(statement)
                cur.execute("INSERT INTO othello_store (app, version) VALUES (%s, %s)",
                            (APPLICATION, SCHEMA_VERSION))
        except psycopg.Error as e:
            self.close()
            raise self.fail(f"cannot be used ({first_line(e)})",
                             "check that the user may create tables in this database (or "
                             "create them as its owner by starting a server once)") from None
        except StoreError:
            self.close()
            raise

    @contextmanager
    def transaction(self) -> Iterator[Cursor]:
        self._broke = False
        if self.conn is None or self.conn.broken or self.conn.closed:
            self.close()
            self.conn = self._reconnect()
        try:
            with self.conn.transaction():
                yield _PgCursor(self.conn.cursor())
        except self.psycopg.OperationalError:
            if self.conn is not None and (self.conn.broken or self.conn.closed):
                self.close()   # opened again by the next transaction
                self._broke = True
            raise

    def lost_connection(self) -> bool:
        return self._broke

    def _reconnect(self) -> Any:
        try:
            return self._open_connection()
        except self.psycopg.Error as e:
            raise self.psycopg.OperationalError(f"cannot connect: {first_line(e)}") from None

    def now(self, cur: Cursor) -> float:
        return float(cur.run("SELECT extract(epoch FROM clock_timestamp())::float8")
                     .fetchone()[0])

    def lock(self, cur: Cursor, kind: str, key: str) -> None:
        cur.run("SELECT pg_advisory_xact_lock(?, hashtext(?))", (LEASE_LOCK_SPACE,
                                                                 f"{kind}/{key}"))

    def close(self) -> None:
        if self.conn is not None:
            try:
                self.conn.close()
            except Exception:
                pass
            self.conn = None


__all__ = ["APPLICATION", "PostgresBackend", "redact"]
