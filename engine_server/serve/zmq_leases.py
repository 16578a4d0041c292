"""The ZeroMQ server's side of the session store: taking a session's lease, bringing a session
back from the store (a restart, or another server that stopped), handing over the sessions
another server was asked for, and the periodic renewal and sweep.  ``zmq_server.py`` is the
socket loop that calls these; ``store.py`` the store; the rules are in docs/remote.md, "Across
restarts", and docs/scaling.md.
"""

from __future__ import annotations

import math
import time
from typing import Any, Callable

from engine_server.agents import AgentSpecError
from engine_server.log import get_logger

from .store import SessionStore, StoreError
from .zmq_sessions import KIND, STORE_DOWN, ClientSession, SessionLimits, SessionTable

log = get_logger("zmq")

class StoreSide:
    """Mixed into :class:`~engine_server.serve.zmq_server.ZmqServer`: what it holds of the
    store and its sessions, and how it opens a session."""

    store: SessionStore | None
    table: SessionTable
    config: SessionLimits
    clock: Callable[[], float]
    restored: int
    _new_session: Callable[[bytes, bytes | None], ClientSession]

    def _take_lease(self, identity: bytes) -> str | None:
        """Take the lease of ``identity``'s session for this server: None when taken, else
        why not (another server holds it, or the store cannot be reached: a session this
        server could not write is not taken on)."""
        assert self.store is not None
        try:
            lease = self.store.acquire(KIND, identity.hex())
        except StoreError as e:
            log.error("store_failed", error=str(e))
            return STORE_DOWN
        if lease is None:
            return None
        return (f"session served by another server ({lease.holder}); if that server has "
                f"stopped, send the request again in {math.ceil(lease.left):.0f} s")

    def _from_store(self, identity: bytes, user: bytes | None) -> str | None:
        """Bring the session of ``identity`` back from the store (a restart, or another
        server that stopped): None when it is back in ``sessions``, or there is none; else
        what the client is told (its session expired, is served elsewhere, is not its own, or
        the store is out of reach)."""
        assert self.store is not None
        key = identity.hex()
        try:
            why = self.store.take_expired(KIND, key)
        except StoreError as e:
            log.error("store_failed", error=str(e))
            return STORE_DOWN
        if why is not None:
            return f"session expired: {why}; the next request starts a new session"
        if not self._stored(key):
            return None   # a new client: its lease is taken with its new session
        # The lease before the state: a session another live server holds is its own,
        # however old its last write (a quiet client), and what is read under the lease is
        # the last write of the server before.
        lease = self._take_lease(identity)
        if lease is not None:
            return lease
        try:
            state = self.store.load(KIND, key)
        except StoreError as e:
            log.error("store_failed", error=str(e))
            return STORE_DOWN
        if state is None:
            return None
        return self._restore(identity, user, state)

    def _stored(self, key: str) -> bool:
        try:
            return self.store is not None and self.store.updated(KIND, key) is not None
        except StoreError:
            return True   # found out under the lease, or refused there

    def _restore(self, identity: bytes, user: bytes | None, state: dict[str, Any]
                 ) -> str | None:
        key = identity.hex()
        owner = state.get("owner")
        if owner != (None if user is None else user.hex()):
            self._release(key)
            return "this routing id belongs to another client's session"
        age = time.time() - float(state.get("saved", 0.0))
        if age > self.config.disconnected_timeout:
            self.table.forget(key)
            return (f"session expired: closed {self.config.disconnected_timeout:g} s after its "
                    "connection closed (disconnected_timeout; its server had stopped); the "
                    "next request starts a new session")
        if len(self.table.sessions) >= self.config.max_sessions and not self.table.evict(
                self.clock()):
            self._release(key)
            return "server full: too many sessions"
        cs = self._new_session(identity, user)
        try:
            self.table.restore(cs, state)
        except (ValueError, KeyError, TypeError, AgentSpecError) as e:
            log.error("session_restore_failed", client=key, error=str(e))
            self.table.close(identity, "restore failed")
            self.table.forget(key)
            return (f"session expired: it could not be restored on this server ({e}); the "
                    "next request starts a new session")
        self.restored += 1
        log.info("session_restored", client=key, moves=len(cs.session.game.moves),
                 protocol=cs.controller.protocol)
        return None

    def _hand_over(self) -> None:
        """Give back the sessions another server was asked for whose client has left this one
        (its connection closed, nothing under way): the store keeps them, and the other
        server takes them at the client's next request."""
        assert self.store is not None
        wanted: list[str] = []
        if not self.table.store_call(lambda store: wanted.extend(store.take_wanted(KIND))):
            return
        for key in wanted:
            identity = bytes.fromhex(key)
            cs = self.table.sessions.get(identity)
            if cs is not None:
                if cs.connected or cs.session.busy or cs.handling or not cs.inbox.empty() \
                        or cs.controller.owes_answer():
                    continue   # its client is here, or it is answering: kept
                with cs.session.output.lock:
                    cs.frozen = True   # nothing it still writes goes back into the store
                self.table.close(identity, "handed over", forget=False)
            self._release(key)
            log.info("session_handed_over", client=key)

    def _release(self, key: str) -> None:
        self.table.store_call(lambda store: store.release(KIND, key))

    def _store_housekeeping(self) -> None:
        assert self.store is not None
        self.table.store_call(lambda store: store.renew())
        cutoff = time.time() - self.config.disconnected_timeout
        why = (f"closed {self.config.disconnected_timeout:g} s after its connection closed "
               "(disconnected_timeout; its server had stopped)")
        self.table.store_call(lambda store: store.sweep(KIND, cutoff, why))


__all__ = ["StoreSide"]
