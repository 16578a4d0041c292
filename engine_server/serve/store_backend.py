"""What a session store's back end provides (``store.py`` holds the operations, the same SQL on
every back end): transactions with ``?`` placeholders, the clock leases are measured on, a lock
per session for taking its lease, and the errors it raises.  ``store_sqlite.py`` and
``store_postgres.py`` implement it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from contextlib import AbstractContextManager
from typing import Any

# 2: leases carry a fencing token, and whether another server asked for their session.
SCHEMA_VERSION = 2


class StoreError(Exception):
    """A store that cannot be used; the message names the store and what to do."""


class Cursor(ABC):
    """One transaction's statements (``?`` placeholders on both back ends)."""

    @abstractmethod
    def run(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        """Execute; the DB-API cursor, for ``fetchone``/``fetchall``/``rowcount``."""

    @abstractmethod
    def run_many(self, sql: str, rows: list[tuple[Any, ...]]) -> None: ...


class Backend(ABC):
    """What differs between SQLite and PostgreSQL."""

    #: What messages name: the file, or the database's address without its password.
    where: str
    #: On another machine, reached over a network: it can be out of reach of one server while
    #: others reach it, so a server whose write failed must not go on from memory.
    shared: bool
    #: What to do when an operation fails.
    todo: str
    #: Appended to a SELECT of a lease that a write depends on (PostgreSQL: ``FOR UPDATE``).
    for_update: str = ""

    def fail(self, what: str, todo: str) -> StoreError:
        """The error naming this store, what went wrong and what to do."""
        return StoreError(f"session store {self.where}: {what}; {todo}")

    @abstractmethod
    def transaction(self) -> AbstractContextManager[Cursor]:
        """One transaction; raises the back end's own errors (:attr:`errors`)."""

    @abstractmethod
    def now(self, cur: Cursor) -> float:
        """The clock leases are measured on (PostgreSQL: the database's, one for every
        machine)."""

    @abstractmethod
    def lock(self, cur: Cursor, kind: str, key: str) -> None:
        """Serialize the transactions that take one session's lease."""

    def lost_connection(self) -> bool:
        """The last failure was a connection that broke, which the next transaction opens
        again (a database restarted since the last call): worth one more try."""
        return False

    @abstractmethod
    def close(self) -> None: ...

    errors: tuple[type[BaseException], ...]


def first_line(e: BaseException) -> str:
    """An error's first line (a database's errors run on with details and hints)."""
    return (str(e).strip().splitlines() or [type(e).__name__])[0]


__all__ = ["Backend", "Cursor", "SCHEMA_VERSION", "StoreError", "first_line"]
