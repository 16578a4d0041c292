"""A throwaway PostgreSQL server on loopback, in a temporary folder: for the store's tests, the
soak with machines lost and the store's cost benchmark (the real thing, Debian's
``postgresql`` package: ``initdb`` and ``pg_ctl``; never a mock).

PostgreSQL refuses to run as root: as root the server runs as the ``postgres`` user, in a
folder that user owns.  Durability is turned off (``fsync``, ``synchronous_commit``): these
servers live for one test run, and what is measured with them says so.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from .common import free_port


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL server can be started here; the message says why."""


def find_bindir() -> Path:
    """Where initdb and pg_ctl are: on PATH, else Debian's /usr/lib/postgresql/N/bin (the
    newest)."""
    on_path = shutil.which("initdb")
    if on_path:
        return Path(on_path).parent
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                   key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0)
    if not found:
        raise PostgresUnavailable("PostgreSQL's server programs (initdb, pg_ctl) are not "
                                  "installed: apt-get install postgresql")
    return Path(found[-1]).parent


class LocalPostgres:
    """``start()`` a server, ``dsn(db)`` its addresses, ``create_db()`` a fresh database,
    ``halt()`` and ``resume()`` it (an outage), ``stop()`` it and remove its folder."""

    def __init__(self, durable: bool = False):
        self.bindir = find_bindir()
        self.durable = durable
        self.port = 0
        self.dir: Path | None = None
        self.as_postgres = os.geteuid() == 0
        self._dbs = 0

    def _cmd(self, *args: str) -> list[str]:
        return (["runuser", "-u", "postgres", "--"] if self.as_postgres else []) + list(args)

    def start(self, timeout: float = 60.0) -> "LocalPostgres":
        self.dir = Path(tempfile.mkdtemp(prefix="othello-pg-"))
        data = self.dir / "data"
        if self.as_postgres:
            try:
                shutil.chown(self.dir, "postgres")
            except (LookupError, OSError) as e:
                raise PostgresUnavailable(f"running as root, and there is no postgres user to "
                                          f"run the server as ({e})") from None
        run = subprocess.run(self._cmd(str(self.bindir / "initdb"), "-D", str(data), "-U",
                                       "postgres", "--auth=trust", "-E", "UTF8",
                                       "--no-sync"),
                             capture_output=True, text=True, timeout=timeout)
        if run.returncode != 0:
            raise PostgresUnavailable(f"initdb failed: {run.stderr.strip()[-500:]}")
        self.port = free_port()
        self.resume(timeout)
        return self

    def resume(self, timeout: float = 60.0) -> None:
        """Start the server (again, after :meth:`halt`) on its port, with its data."""
        assert self.dir is not None
        opts = (f"-c listen_addresses=127.0.0.1 -c port={self.port} "
                f"-c unix_socket_directories={self.dir} -c max_connections=200")
        if not self.durable:
            opts += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        run = subprocess.run(self._cmd(str(self.bindir / "pg_ctl"), "-D",
                                       str(self.dir / "data"), "-o", opts, "-l",
                                       str(self.dir / "log"), "-w", "-t", str(int(timeout)),
                                       "start"),
                             capture_output=True, text=True, timeout=timeout + 10)
        if run.returncode != 0:
            log = (self.dir / "log").read_text(errors="replace")[-500:] \
                if (self.dir / "log").exists() else run.stderr
            self.stop()
            raise PostgresUnavailable(f"pg_ctl start failed: {log.strip()}")

    def halt(self) -> None:
        """Stop the server (``-m fast``: its connections cut, what was committed kept, which
        an immediate stop would not promise with ``synchronous_commit`` off): the database
        out of reach until :meth:`resume`."""
        assert self.dir is not None
        subprocess.run(self._cmd(str(self.bindir / "pg_ctl"), "-D", str(self.dir / "data"),
                                 "-m", "fast", "-w", "stop"),
                       capture_output=True, timeout=60, check=True)

    def dsn(self, db: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{db}"

    def sql(self, statement: str, db: str = "postgres") -> None:
        import psycopg

        with psycopg.connect(self.dsn(db), autocommit=True) as conn:
            conn.execute(statement)  # type: ignore[arg-type]

    def create_db(self, name: str | None = None) -> str:
        """A new empty database; its address."""
        self._dbs += 1
        name = name or f"t{os.getpid()}_{self._dbs}_{time.monotonic_ns() % 10**6}"
        self.sql(f'CREATE DATABASE "{name}"')
        return self.dsn(name)

    def stop(self) -> None:
        if self.dir is None:
            return
        data = self.dir / "data"
        if (data / "postmaster.pid").exists():
            subprocess.run(self._cmd(str(self.bindir / "pg_ctl"), "-D", str(data), "-m",
                                     "immediate", "-w", "stop"),
                           capture_output=True, timeout=60)
        shutil.rmtree(self.dir, ignore_errors=True)
        self.dir = None

    def __enter__(self) -> "LocalPostgres":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


__all__ = ["LocalPostgres", "PostgresUnavailable", "find_bindir"]
