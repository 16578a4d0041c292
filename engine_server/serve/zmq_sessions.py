"""The ZeroMQ server's sessions: one per client routing id, with the connection its client was
last seen on, closed when its client has gone or been quiet too long, evicted for a newcomer
when every slot is taken (the rules are in ``zmq_server.py``'s docstring, "Resuming" and
"Liveness").

:class:`SessionTable` owns this bookkeeping; the socket loop (``zmq_server.py``) feeds it what
arrives and what the socket monitor reports, and sends what the sessions write.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

import zmq
from zmq.utils.monitor import recv_monitor_message

from engine_server.commands import refusal_lines
from engine_server.commands.controller import Controller, Request
from engine_server.game import Position
from engine_server.log import get_logger
from engine_server.session import EngineOptions, Output, Session

from .store import SessionStore, StoreError

log = get_logger("zmq")

# Routing ids of closed sessions remembered to tell a returning client why (oldest forgotten).
EXPIRED_MEMORY = 4096
# A connected session without a game is evicted only once it has been quiet this long: a
# client that has just connected is setting up, not abandoned.
EVICT_NEW_AFTER = 5.0
# A message that arrives on a connection whose close was seen longer ago than this came on a
# connection whose accept event was lost (the monitor's queue overflowed): its client is live.
STALE_CLOSE_S = 2.0
CLOSED_MEMORY = 4096
# Answers kept per session for resent requests.
RECENT_REPLIES = 8
# The sessions' kind in the store.
KIND = "zmq"
TAKEN_OVER = ("session taken over by another server sharing the store (this one had not "
              "renewed its lease in time): this request was not run; send it again")
STORE_DOWN = ("session store unavailable: this request was not run; send it again in a few "
              "seconds")

# What a session's output is handed to: (routing id, seq or None for a bare request, line).
Deliver = Callable[[bytes, int | None, str], None]


class SessionLimits(Protocol):
    """The part of the server's configuration the sessions obey (``ServerConfig``)."""

    max_sessions: int
    idle_timeout: float
    new_session_timeout: float
    disconnected_timeout: float


@dataclass
class ClientSession:
    identity: bytes
    session: Session
    controller: Controller
    inbox: queue.Queue[Request | None] = field(default_factory=queue.Queue)
    last_seen: float = field(default_factory=time.monotonic)
    last_seq: int = -1
    replies: dict[int, list[str]] = field(default_factory=dict)  # seq -> lines (recent only)
    current_seq: int = 0
    current_bare: bool = False   # the request being answered came as one bare frame
    thread: threading.Thread | None = None
    closed: bool = False
    owner: bytes | None = None   # the CURVE client key (ZAP user id) that opened it
    conn: int | None = None      # the connection its last message came on (None: unknown)
    connected: bool = True
    disconnected_at: float | None = None
    # The session store's bookkeeping (``SessionTable.persist``): the last request whose
    # answer is complete and written; whether a request is being handled now (its lines are
    # part of a change still to be written); a checkpoint queued for a search's late answer;
    # frozen: a stopping server interrupted the request, whose answer is dropped and whose
    # effects are never written (the client's resend is served after the restart).
    done_seq: int = -1
    committed_seq: int = -1      # the request last written with its answer (Session.commit)
    handling: bool = False
    checkpoint_queued: bool = False
    frozen: bool = False
    deliver: Deliver | None = None   # to the client, past the session's output

    @property
    def key(self) -> str:
        """The session's key in the store: its routing id in hex."""
        return self.identity.hex()

    @property
    def own_id(self) -> bool:
        """The client chose its routing id (libzmq's own start with a zero byte): it can come
        back to this session from another connection."""
        return not self.identity.startswith(b"\0")

    def has_game(self) -> bool:
        """A move was played or a position set: something a client would lose."""
        game = self.session.game
        return bool(game.moves) or game.start != Position.start(game.rules)



class Connections:
    """The server's open connections as the socket monitor reports them: each accepted
    connection gets a number, kept for its file descriptor until the descriptor's close."""

    def __init__(self) -> None:
        self.by_fd: dict[int, int] = {}
        self.closed: OrderedDict[int, float] = OrderedDict()   # connection -> when it closed
        self._next = 0

    def accepted(self, fd: int) -> None:
        self._next += 1
        self.by_fd[fd] = self._next

    def disconnected(self, fd: int, now: float) -> int | None:
        conn = self.by_fd.get(fd)
        if conn is not None:
            self.closed[conn] = now
            while len(self.closed) > CLOSED_MEMORY:
                self.closed.popitem(last=False)
        return conn


class SessionTable:
    """The sessions by routing id, the connections their clients are on, and the routing ids
    of closed sessions with why (told once, when they come back)."""

    def __init__(self, limits: SessionLimits, clock: Callable[[], float],
                 store: SessionStore | None = None):
        self.limits = limits
        self.clock = clock
        # Where sessions are written on every change, to outlive the server (None: nowhere).
        self.store = store
        self.store_failing = False
        # Sessions another server took over (found when writing them): closed by ``reap``.
        self.taken_over: list[bytes] = []
        self.sessions: dict[bytes, ClientSession] = {}
        # Routing ids whose session the server closed -> why (told once, when they come back).
        self.expired: OrderedDict[bytes, str] = OrderedDict()
        self.evictions = 0
        self.conns = Connections()
        self.just_closed: list[tuple[int, float]] = []

    # --- sessions -----------------------------------------------------------------------------
    def open(self, identity: bytes, owner: bytes | None, options: EngineOptions,
             deliver: Deliver) -> ClientSession:
        """A new session for ``identity`` with its own controller thread; what it writes goes
        to ``deliver`` (and into its memory of recent answers, for retries)."""
        cs_holder: list[ClientSession] = []

        def sink(line: str) -> None:
            cs = cs_holder[0]
            if cs.frozen:
                return   # interrupted by a stopping server: the client is told so instead
            seq = cs.current_seq
            lst = cs.replies.get(seq)
            if lst is not None:
                lst.append(line)
            deliver(identity, None if cs.current_bare else seq, line)
            if self.store is not None and not cs.handling and not cs.checkpoint_queued:
                # A search's answer, written on its own thread: the controller writes the
                # session once it is complete.
                cs.checkpoint_queued = True
                cs.inbox.put(Request("", time.monotonic(), checkpoint=True))

        session = Session(options, Output(sink))
        cs = ClientSession(identity, session, Controller(session), owner=owner,
                           last_seen=self.clock())
        cs_holder.append(cs)
        cs.deliver = deliver
        if self.store is not None:
            session.persist = lambda answer: self.persist(cs, answer)
        cs.thread = threading.Thread(target=self._run, args=(cs,),
                                     name=f"zmq-session-{identity.hex()[:8]}", daemon=True)
        cs.thread.start()
        self.sessions[identity] = cs
        log.info("session_open", client=identity.hex(), own_id=cs.own_id,
                 sessions=len(self.sessions))
        return cs

    def _run(self, cs: ClientSession) -> None:
        def before(req: Request) -> None:
            seq, bare = req.tag
            with cs.session.output.lock:
                cs.handling = True
                cs.current_seq = seq
                cs.current_bare = bare
                cs.replies[seq] = []
                for old in sorted(cs.replies)[:-RECENT_REPLIES]:
                    del cs.replies[old]  # keep a few recent answers for retries

        def after(req: Request) -> None:
            if req.checkpoint:
                cs.checkpoint_queued = False
                if cs.controller.owes_answer():
                    return   # more to come; the session has not changed meanwhile
            else:
                with cs.session.output.lock:
                    cs.handling = False
                if cs.committed_seq == cs.current_seq and cs.current_seq > 0:
                    return   # written with its answer, before the answer went out
            self.persist(cs)

        try:
            cs.controller.run(cs.inbox, before, after=after)
        finally:
            cs.closed = True

    # --- the store ----------------------------------------------------------------------------
    def persist(self, cs: ClientSession, answer: list[str] | None = None) -> None:
        """Write ``cs`` to the store (from its controller's thread): its state, the last
        request whose answer is complete, and the recent answers a resend is given.
        ``answer``: the lines the request being handled is about to write (they count as
        written: the store has them before the client does)."""
        if self.store is None or cs.frozen or not cs.own_id:
            return   # libzmq's routing ids die with their connection: nobody could come back
        seq = cs.current_seq
        with cs.session.output.lock:
            replies = {s: list(v) for s, v in cs.replies.items()}
        if answer is not None:
            replies[seq] = replies.get(seq, []) + list(answer)
            cs.done_seq = max(cs.done_seq, seq)
            cs.committed_seq = seq
        elif not cs.controller.owes_answer():
            cs.done_seq = max(cs.done_seq, seq)
        state = {"controller": cs.controller.snapshot(), "done_seq": cs.done_seq,
                 "replies": {str(s): v for s, v in replies.items() if 0 < s <= cs.done_seq},
                 "owner": None if cs.owner is None else cs.owner.hex(),
                 "saved": time.time()}
        saved: list[bool] = []
        written = self.store_call(lambda store: saved.append(store.save(KIND, cs.key, state)))
        if saved == [False] or (not written and self.store.shared):
            # Another server took the session over (this one failed to renew its lease in
            # time): its state wins.  Or a shared store is out of this server's reach, where
            # going on from memory could fork the game (another server may take it over from
            # what the store has).  This copy stops writing and answering, leaves memory, and
            # the request is refused (not run, as far as the client can know): its resend is
            # run on what the store has, here or on the server that holds the lease.
            with cs.session.output.lock:
                cs.frozen = True
            if cs.deliver is not None:
                why = TAKEN_OVER if saved == [False] else STORE_DOWN
                for line in refusal_lines(cs.controller.protocol, why):
                    cs.deliver(cs.identity, None if cs.current_bare else seq, line)
            self.taken_over.append(cs.identity)
            log.warning("session_taken_over" if saved == [False] else "session_dropped",
                        client=cs.key)

    def forget(self, key: str, why: str | None = None) -> None:
        """The session of ``key`` is over: out of the store (``why``: what a returning client
        is told)."""
        if self.store is not None:
            self.store_call(lambda store: store.end(KIND, key, why))

    def store_call(self, fn: Callable[[SessionStore], object]) -> bool:
        """Run a write; a failure (a full disk) is logged once until writes work again, and
        the session goes on in memory (its next change tries again)."""
        assert self.store is not None
        try:
            fn(self.store)
        except StoreError as e:
            if not self.store_failing:
                log.error("store_failed", error=str(e))
            self.store_failing = True
            return False
        if self.store_failing:
            log.warning("store_recovered", store=self.store.where)
        self.store_failing = False
        return True

    def restore(self, cs: ClientSession, state: dict[str, Any]) -> None:
        """Give a new session the state a store kept (ValueError, KeyError, TypeError or
        AgentSpecError when it does not fit this server)."""
        cs.controller.restore(state["controller"])
        done = int(state["done_seq"])
        cs.last_seq = cs.done_seq = done
        replies = state.get("replies") or {}
        cs.replies = {int(s): [str(x) for x in v] for s, v in replies.items()}

    def close(self, identity: bytes, reason: str, expired: str | None = None,
              forget: bool = True) -> None:
        """End a session; ``expired`` is what its client is told if it comes back (only a
        client with its own routing id can).  ``forget=False`` (a server stopping): the
        session stays in the store for the next server."""
        cs = self.sessions.pop(identity, None)
        if cs is None:
            return
        cs.session.interrupt()
        cs.inbox.put(None)
        if expired is not None:
            # A client without a routing id of its own can be told too while its connection
            # lives (its id dies with it, and libzmq never gives it out again).
            self.expired[identity] = expired
            self.expired.move_to_end(identity)
            while len(self.expired) > EXPIRED_MEMORY:
                self.expired.popitem(last=False)
        if self.store is not None and forget:
            cs.frozen = True   # nothing it still writes goes back into the store
            why = expired if cs.own_id else None
            self.store_call(lambda store: store.end(KIND, cs.key, why))
        log.info("session_close", client=identity.hex(), reason=reason,
                 sessions=len(self.sessions))

    def evict(self, now: float) -> bool:
        """Free a slot for a new client: the session quiet longest among those not searching
        whose client has gone or that hold no game.  False when every session is in use."""
        self.apply_closes()   # clients whose close has been reported are gone
        for identity, cs in list(self.sessions.items()):
            if cs.closed:   # ended by quit, not reaped yet
                self.sessions.pop(identity, None)
                self.forget(cs.key)
                return True
        if len(self.sessions) < self.limits.max_sessions:
            return True   # a plain client's session ended with its connection just now
        best: tuple[float, bytes, str] | None = None
        for identity, cs in self.sessions.items():
            if cs.session.busy:
                continue
            idle = now - cs.last_seen
            if not cs.connected:
                why = "its connection had closed"
            elif not cs.has_game() and idle >= EVICT_NEW_AFTER:
                why = "it had no game"
            else:
                continue
            if best is None or idle > best[0]:
                best = (idle, identity, why)
        if best is None:
            return False
        idle, identity, why = best
        self.evictions += 1
        self.close(identity, "evicted", expired=(
            f"evicted for a new client when all {self.limits.max_sessions} sessions were "
            f"taken, after {idle:.0f} s without a request ({why})"))
        return True

    def close_taken_over(self) -> None:
        """Close the sessions found taken over (or whose write a shared store refused)."""
        taken, self.taken_over = self.taken_over, []
        for identity in taken:
            # Not remembered as expired: a client that comes back here is told where it is
            # served (the lease in the store), or finds its session as the store has it.
            self.close(identity, "taken over", forget=False)

    def reap(self, now: float) -> None:
        """Close the sessions whose client has gone or been quiet too long."""
        cfg = self.limits
        self.close_taken_over()
        for identity, cs in list(self.sessions.items()):
            if cs.closed:
                self.sessions.pop(identity, None)
                log.info("session_ended", client=identity.hex())
                self.forget(cs.key)
                continue
            if not cs.connected and not cs.own_id:
                self.close(identity, "disconnected")
                continue
            if cs.session.busy:
                cs.last_seen = now   # a search is activity: quiet time counts from its end
                continue
            idle = now - cs.last_seen
            gone = None if cs.connected or cs.disconnected_at is None else \
                now - cs.disconnected_at
            if gone is not None and gone > cfg.disconnected_timeout and \
                    idle > cfg.disconnected_timeout:
                self.close(identity, "disconnected", expired=(
                    f"closed {cfg.disconnected_timeout:g} s after its connection closed "
                    "(disconnected_timeout)"))
            elif idle > cfg.new_session_timeout and not cs.has_game():
                self.close(identity, "idle_new", expired=(
                    f"closed after {cfg.new_session_timeout:g} s without a request before any "
                    "game (new_session_timeout)"))
            elif idle > cfg.idle_timeout:
                self.close(identity, "idle", expired=(
                    f"closed after {cfg.idle_timeout:g} s without a request (idle_timeout)"))

    # --- connections --------------------------------------------------------------------------
    def drain_monitor(self, monitor: zmq.Socket | None, now: float) -> None:
        """Bring the connection table up to date.  Closes are applied to the table at once and
        to sessions after the messages received with them (``apply_closes``): those came
        before the close."""
        if monitor is None:
            return
        while True:
            try:
                event = recv_monitor_message(monitor, flags=zmq.NOBLOCK)
            except zmq.Again:
                return
            except zmq.ZMQError:
                return
            kind, fd = event["event"], int(event["value"])
            if kind == zmq.EVENT_ACCEPTED:
                self.conns.accepted(fd)
            elif kind == zmq.EVENT_DISCONNECTED:
                conn = self.conns.disconnected(fd, now)
                if conn is not None:
                    self.just_closed.append((conn, now))

    def apply_closes(self) -> None:
        closed, self.just_closed = self.just_closed, []
        for conn, when in closed:
            for identity, cs in list(self.sessions.items()):
                if cs.conn != conn or not cs.connected:
                    continue
                cs.connected = False
                cs.disconnected_at = when
                if not cs.own_id:
                    # Its routing id died with the connection: nobody can reach it again.
                    self.close(identity, "disconnected")

    def attribute(self, cs: ClientSession, fd: int | None, now: float) -> None:
        """Where ``cs``'s client is, from the connection its latest message came on."""
        conn = None if fd is None else self.conns.by_fd.get(fd)
        closed_at = None if conn is None else self.conns.closed.get(conn)
        if conn is not None and closed_at is not None and now - closed_at < STALE_CLOSE_S:
            # Sent just before that connection closed.
            cs.conn, cs.connected, cs.disconnected_at = conn, False, closed_at
        else:
            # An open connection, or one the monitor did not report (inproc): alive.
            cs.conn = conn if closed_at is None else None
            cs.connected, cs.disconnected_at = True, None


__all__ = ["ClientSession", "Connections", "Deliver", "SessionLimits", "SessionTable"]
