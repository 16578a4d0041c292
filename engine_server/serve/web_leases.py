"""The web server's side of the session store: the games' leases (a new game's taken before its
process starts, and the fence that process's writes carry), bringing a game back from the store
(a restart, or another server that stopped), dropping a copy another server took over, handing
over the games another server was asked for, and the periodic renewal and sweep.  ``web.py`` is
the server that calls these; ``web_game.py`` a game's process, which writes its game to the
store; ``store.py`` the store; the rules are in docs/web.md, "Restarts", and docs/scaling.md.

The server holds a lease on each game it serves (renewed every third of the lease's length,
given back when it stops).  A page that comes back with a token this server does not know finds
its game restored from the store, in a new process, as if it came back to a live game.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any, Awaitable, Callable, Protocol

from starlette.websockets import WebSocket

from engine_server.log import get_logger
from protocol import web

from .store import SessionStore, StoreError
from .web_game import CLOSE_EXPIRED, FRAME, MOVED, STORE_KIND, WORKER_EXIT_S, Tab

log = get_logger("web")

NO_LEASE = ("the session store is out of reach, so a game begun now could not be kept; this "
            "page tries again in a moment")
# Seconds between the store's housekeeping (renewing this server's leases, marking the games
# whose page is open as current, ending stored games nobody came back to), at most.
SWEEP_INTERVAL = 30.0
# A restored game's process has this long to say whether the game could be taken back.
RESTORE_WAIT_S = 30.0


class StoreLimits(Protocol):
    """The part of the server's configuration the store side obeys (``WebConfig``)."""

    resume_timeout: float


class StoreSide:
    """Mixed into :class:`~engine_server.serve.web.WebServer`: what it holds of the store and
    its games, and how it starts a game's process."""

    store: SessionStore | None
    store_failing: bool
    config: StoreLimits
    games: dict[str, Tab]
    restored: int
    _restoring: dict[str, asyncio.Event]   # tokens being restored now
    _spawn: Callable[[str | None, dict[str, Any] | None], Awaitable[Tab | str]]
    _send: Callable[[WebSocket, dict[str, Any]], Awaitable[None]]

    def _store_call(self, fn: Callable[[SessionStore], Any]) -> Any:
        """Run a store call (one transaction); a failure (a full disk) is logged once until
        the store works again, and the games go on in memory.  None when there is no store
        or it failed."""
        if self.store is None:
            return None
        try:
            out = fn(self.store)
        except StoreError as e:
            if not self.store_failing:
                log.error("store_failed", error=str(e))
            self.store_failing = True
            return None
        if self.store_failing:
            log.warning("store_recovered", store=self.store.where)
        self.store_failing = False
        return out

    # --- leases -------------------------------------------------------------------------------
    def _new_lease(self, token: str) -> str | None:
        """Take the lease of a new game's token (nobody else holds it) before its process
        starts, whose writes carry the lease's fence: None when taken or there is no store,
        else why not (a game that could write nothing is not begun)."""
        if self.store is None:
            return None
        try:
            held = self.store.acquire(STORE_KIND, token)
        except StoreError as e:
            log.error("store_failed", error=str(e))
            return NO_LEASE
        return None if held is None else NO_LEASE

    def _fence(self, token: str) -> int | None:
        """The fence of this server's lease on ``token``, which the game's writes carry."""
        return None if self.store is None else self.store.fence(STORE_KIND, token)

    def _release(self, token: str) -> None:
        self._store_call(lambda store: store.release(STORE_KIND, token))

    def _release_all(self) -> None:
        """Give back every lease of this server and close the store (the server stops)."""
        self._store_call(lambda store: store.release(STORE_KIND))
        if self.store is not None:
            self.store.close()

    async def _still_held(self, tab: Tab) -> bool:
        """Whether this server still holds ``tab``'s game.  One taken over while this server
        was frozen or cut off is a stale copy: it is dropped, and the page is served where
        the game is now (or handed it from there)."""
        if self.store is None or tab.ended or \
                self._store_call(lambda store: store.holds(STORE_KIND, tab.token)) is not False:
            return True
        await self._drop_stale(tab)
        return False

    async def _drop_stale(self, tab: Tab) -> None:
        """A game another server took over (this one was frozen or cut off past its lease):
        its process ends without a write, nothing is ended in the store, and a page still on
        it is told to reload (where the game is served now)."""
        tab.ended = True
        self.games.pop(tab.token, None)
        log.warning("web_session_taken_over", sessions=len(self.games))
        ws, tab.ws = tab.ws, None
        if ws is not None:
            await self._send(ws, web.error(MOVED, fatal=True))
            try:
                await ws.close(code=CLOSE_EXPIRED, reason="served by another server")
            except Exception:
                pass
        tab.writer.close()

    async def _hand_over(self) -> None:
        """Give back the games another server was asked for whose page has left this one (a
        balancer sends the page there after a failover and a failback): the game's process
        ends, the store keeping the game, and the lease is given back once it has."""
        for token in self._store_call(lambda store: store.take_wanted(STORE_KIND)) or []:
            tab = self.games.get(token)
            if tab is not None:
                if tab.ws is not None or tab.searching or tab.ended:
                    continue   # its page is here: kept
                tab.ended = True   # not a game that died: nothing is ended in the store
                self.games.pop(token, None)
                tab.writer.close()   # end of input: the process writes what it has and exits
                if tab.pump is not None:
                    await asyncio.wait([tab.pump], timeout=WORKER_EXIT_S + 1)
            self._release(token)
            log.info("web_session_handed_over", sessions=len(self.games))

    # --- restoring ----------------------------------------------------------------------------
    def _gone_why(self) -> str:
        return (f"closed {self.config.resume_timeout:g} s after its page closed "
                "(resume_timeout; its server had stopped)")

    async def _restore_once(self, token: str
                            ) -> tuple[Tab | None, str | None, str | None]:
        """:meth:`_from_store`, while a second page with the same token (a duplicated tab)
        waits for the game to be back (``_restoring``)."""
        self._restoring[token] = asyncio.Event()
        try:
            return await self._from_store(token)
        finally:
            self._restoring.pop(token).set()

    async def _from_store(self, token: str) -> tuple[Tab | None, str | None, str | None]:
        """The game of ``token`` back from the store (a restart, or another server that
        stopped): (its tab, None, None); or (None, why it ended, None) when it had ended or
        cannot be taken back; (None, None, why not now) when another live server serves it;
        (None, None, None) when the store has nothing for it."""
        store = self.store
        assert store is not None
        try:
            why = store.take_expired(STORE_KIND, token)
            stored = why is None and store.updated(STORE_KIND, token) is not None
        except StoreError as e:
            log.error("store_failed", error=str(e))
            return None, None, None
        if not stored:
            return None, why, None
        try:
            # The lease before the state: what is read under it is the last write of the
            # server before.
            lease = store.acquire(STORE_KIND, token)
            state = None if lease is not None else store.load(STORE_KIND, token)
            updated = None if state is None else store.updated(STORE_KIND, token)
        except StoreError as e:
            log.error("store_failed", error=str(e))
            return None, None, ("the session store is out of reach; this page tries again "
                                "in a moment")
        if lease is not None:
            return None, None, (f"this game is served by another server ({lease.holder}); "
                                f"if that server has stopped, this page takes the game over "
                                f"within {lease.left + 1:.0f} s")
        if state is None:
            return None, None, None
        if updated is not None and store.clock() - updated > self.config.resume_timeout:
            why = self._gone_why()
            self._store_call(lambda s: s.end(STORE_KIND, token, None))
            return None, why, None
        spawned = await self._spawn(token, state)
        if isinstance(spawned, str):
            log.info("web_restore_failed", error=spawned)
            self._store_call(lambda s: s.end(STORE_KIND, token, None))
            return None, (f"it could not be restored on this server ({spawned})"), None
        self.restored += 1
        moves = state.get("game", {}).get("moves", []) if isinstance(state.get("game"), dict) \
            else []
        spawned.ply = len(moves)
        log.info("web_session_restored", pid=spawned.proc.pid, moves=len(moves))
        return spawned, None, None

    @staticmethod
    async def _restored(reader: asyncio.StreamReader) -> str | None:
        """A restored game's first frame: None when its process took the game back, else
        why not."""
        try:
            head = await asyncio.wait_for(reader.readexactly(FRAME.size), RESTORE_WAIT_S)
            reply = json.loads(await reader.readexactly(FRAME.unpack(head)[0]))
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.TimeoutError,
                ValueError):
            return "its process did not start"
        if isinstance(reply, dict) and reply.get("ok") is True:
            return None
        return str(reply.get("error") if isinstance(reply, dict) else reply)

    # --- housekeeping -------------------------------------------------------------------------
    def _touch_open_pages(self) -> None:
        """Mark the games whose page is open as current (their resume_timeout counts from
        when the page leaves)."""
        open_pages = [t.token for t in self.games.values() if t.ws is not None]
        if open_pages:
            self._store_call(lambda store: store.touch(STORE_KIND, open_pages))

    def _sweep_gone(self) -> None:
        """End the stored games nobody came back to within resume_timeout."""
        cutoff = time.time() - self.config.resume_timeout
        self._store_call(lambda store: store.sweep(STORE_KIND, cutoff, self._gone_why()))

    async def _housekeeping(self) -> None:
        """Renew this server's leases, drop the games another server took over meanwhile,
        mark the games whose page is open as current, and end the stored games nobody came
        back to within resume_timeout."""
        self._store_call(lambda store: store.renew())
        held = self._store_call(lambda store: store.held(STORE_KIND))
        if held is not None:
            for tab in [t for t in self.games.values() if t.token not in held and not t.ended]:
                await self._drop_stale(tab)
        self._touch_open_pages()
        self._sweep_gone()

    def housekeeping_interval(self) -> float:
        if self.store is None:
            return SWEEP_INTERVAL
        return min(SWEEP_INTERVAL, self.store.lease_s / 3)


__all__ = ["NO_LEASE", "StoreLimits", "StoreSide"]
