"""The engine over ZeroMQ: one ROUTER socket, one engine session per client routing id.

Framing (documented in docs/engine.md, "Over ZeroMQ"):

* client -> server: ``[seq, line]`` - ``seq`` is the client's request number as ASCII digits,
  ``line`` one protocol line (UTF-8); or a bare one-frame ``[line]``.
* server -> client: the reply mirrors the request.  After ``[seq, line]``: ``[seq, line]`` for
  every output line, streamed as produced, ``seq`` being the request that caused it.  After a
  bare ``[line]``: one bare frame ``[line]`` per output line (the empty line that ends a GTP
  response is an empty frame), so a plain DEALER client needs to know nothing of sequence
  numbers.

Each routing id gets its own game, rules, agent, search tree and protocol (NBoard or GTP,
detected from its first line as on stdin) and its own controller thread, so a long ``genmove``
in one session never delays another's answers.  A request whose ``seq`` was already handled is
not executed again: the server replays what it answered, which lets a client retry on a fresh
socket ("lazy pirate") without playing a move twice.

Resuming.  A session belongs to its routing id, so a client that sets its own
(``ZMQ_ROUTING_ID``: 1-255 bytes, not starting with a zero byte; ``ZmqChannel`` draws a random
one) finds its game again from any new socket: after a network blip (libzmq reconnects by
itself), a timeout that made it open a fresh socket, or a restart of the client process that
kept the id.  ``ROUTER_HANDOVER`` gives the id to the newest connection.  A client that sets
none gets an id from libzmq that dies with its connection: its session is closed as soon as
that connection closes, since nobody can reach it any more.

Liveness.  The server watches its connections: a socket monitor reports each accepted and each
closed connection by its file descriptor, and every message carries the descriptor it came on
(``ZMQ_SRCFD``), which ties routing ids to connections.  ZMTP heartbeats (``heartbeat``
seconds; a peer silent for three intervals is dropped) turn a vanished host into a closed
connection.  A session is closed (never while it searches):

* ``disconnected_timeout`` after its client's connection closed;
* ``new_session_timeout`` after its last request when it has no game (no move played, no
  position set);
* ``idle_timeout`` after its last request otherwise.

When every slot is taken, a new client evicts the session quiet longest among those that are
not searching and whose client has disconnected or that have no game; a connected client in the
middle of a game is never evicted.  A client with its own routing id that comes back to a
closed or evicted session, or one without that is still on the same connection, is told
``? session expired: WHY`` (NBoard: ``status session expired: WHY``) once; its next request
starts a new session.

Bad input.  A request over ``max_message_bytes``, a malformed frame list, a bad ``seq``, a line
that is not UTF-8 or holds several lines: answered in the session's protocol (``? ...`` and the
blank line, NBoard ``status ...``), in order with its other answers, and nothing changes.
libzmq itself refuses only messages over the transport cap (16 MiB or 16 times the limit,
whichever is larger; it bounds memory): it closes that connection, and a client with its own
routing id comes back to its session, unanswered for that one message.

This module is the socket loop: frames in, lines out.  The sessions' bookkeeping (opening,
closing, expiry, eviction, which connection each client is on) is ``zmq_sessions.py``'s; the
session store's side (leases, restoring, handing over) ``zmq_leases.py``'s; who may bind where,
and CURVE, is ``zmq_security.py``'s.
"""

from __future__ import annotations

import errno
import math
import os
import queue
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import zmq

if TYPE_CHECKING:
    from zmq.auth.thread import ThreadAuthenticator

from engine_server.agents.policy import AgentPolicy
from engine_server.commands import detect_protocol, refusal_lines
from engine_server.commands.controller import Request
from engine_server.log import get_logger
from engine_server.session import EngineOptions
from protocol import zmq as zframes

from .store import SessionStore
from .zmq_leases import StoreSide
from .zmq_security import SecurityError, generate_keys, is_loopback_endpoint, secure
from .zmq_sessions import KIND, ClientSession, SessionTable

log = get_logger("zmq")

MAX_LINE_BYTES = 64 * 1024
DEFAULT_MAX_SESSIONS = 16
DEFAULT_IDLE_TIMEOUT = 1800.0
DEFAULT_NEW_SESSION_TIMEOUT = 60.0
DEFAULT_DISCONNECTED_TIMEOUT = 300.0
DEFAULT_HEARTBEAT = 10.0
# libzmq drops (with the connection) only messages over this: far above the protocol's limit,
# so that an oversized request is read and answered, yet a bound on what one frame may cost.
TRANSPORT_CAP_MIN = 16 << 20
TRANSPORT_CAP_FACTOR = 16
# A newcomer that finds every slot in use waits this long before "server full": a client that
# has just closed its socket may not be seen gone yet (its close and the newcomer's message are
# reported by different queues).
FULL_WAIT_S = 1.0
DEFAULT_DRAIN_TIMEOUT = 10.0
# After a drain, requests are still refused (not dropped in the close) until none has come for
# DRAIN_QUIET_S, for DRAIN_LINGER_S at most.
DRAIN_QUIET_S = 0.1
DRAIN_LINGER_S = 1.0
# Seconds between the store's housekeeping: renewing this server's leases (a third of their
# length) and ending stored sessions nobody came back to.
SWEEP_INTERVAL = 30.0
# A port found in use is tried again for this long before the bind fails: a server restarted on
# its port can find it held for a moment by the closing of the socket before it (libzmq closes
# in the background) or by a local client reconnecting to it, whose connection to a port with
# no listener can end up connected to itself.
BIND_RETRY_S = 5.0
STOPPING = ("server stopping (a restart or a shutdown): this request was not run; send it "
            "again in a few seconds")
LOST_ON_STOP = ("session lost: the server is stopping and this session cannot move to the next "
                "one (its client set no routing id of its own); the next request starts a new "
                "game")
INTERRUPTED = ("interrupted: the server is stopping (a restart or a shutdown); send the "
               "request again in a few seconds")


def transport_cap(max_message_bytes: int) -> int:
    return max(TRANSPORT_CAP_MIN, TRANSPORT_CAP_FACTOR * max_message_bytes)


@dataclass
class ServerConfig:
    endpoint: str = "tcp://127.0.0.1:5555"
    max_sessions: int = DEFAULT_MAX_SESSIONS
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT
    new_session_timeout: float = DEFAULT_NEW_SESSION_TIMEOUT
    disconnected_timeout: float = DEFAULT_DISCONNECTED_TIMEOUT
    heartbeat: float = DEFAULT_HEARTBEAT        # seconds between ZMTP pings; 0: none
    max_message_bytes: int = MAX_LINE_BYTES
    insecure: bool = False
    server_secret_key: Path | None = None   # zmq.auth secret key file of the server
    allowed_clients: Path | None = None     # directory of allowed clients' public key files
    # What a remote session may choose (agents, threads, memory, time per move).
    remote_policy: AgentPolicy = field(default_factory=AgentPolicy)
    # A stop with draining (SIGTERM) lets requests under way finish for this long; those
    # still running are then interrupted, their clients told to send them again.
    drain_timeout: float = DEFAULT_DRAIN_TIMEOUT


class ZmqServer(StoreSide):
    config: ServerConfig

    def __init__(self, options: EngineOptions, config: ServerConfig,
                 context: zmq.Context | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 store: SessionStore | None = None):
        """``clock`` measures how long sessions have been quiet or disconnected (tests pass
        one they can move on); searches' deadlines always use the monotonic clock.
        ``store``: where sessions are written to outlive this server (None: in memory only)."""
        self.options = options
        self.config = config
        self.clock = clock
        self.ctx = context or zmq.Context.instance()
        self.store = store
        # The sessions, their clients' connections, and what returning clients are told.
        self.table = SessionTable(config, clock, store)
        self.restored = 0
        self._drain_started: float | None = None   # when draining started (None: serving)
        self.outbox: queue.Queue = queue.Queue()
        # Session threads may not touch the ROUTER socket; a byte on this pipe wakes the
        # socket's thread as soon as they queue a line (waiting for a poll timeout cost ~2 ms
        # per reply).
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._woken = threading.Event()
        self._pipe_lock = threading.Lock()
        self._stop = threading.Event()
        self._auth: ThreadAuthenticator | None = None
        # Requests of newcomers waiting for a slot: (give up at, frames, fd, user), in order.
        self._waiting: list[tuple[float, list[bytes], int | None, bytes | None]] = []
        # Every session starts with the default agent: it must pass the remote policy.
        config.remote_policy.admit(options.agent, options.catalog.presets)
        self.socket = self._bind()
        self.monitor: zmq.Socket | None = self.socket.get_monitor_socket(
            zmq.EVENT_ACCEPTED | zmq.EVENT_DISCONNECTED)

    @property
    def sessions(self) -> dict[bytes, ClientSession]:
        return self.table.sessions

    @property
    def expired(self) -> OrderedDict[bytes, str]:
        """Routing ids whose session the server closed -> why (told once, when they come
        back)."""
        return self.table.expired

    @property
    def evictions(self) -> int:
        return self.table.evictions

    # --- socket and security ------------------------------------------------------------------
    def _bind(self) -> zmq.Socket:
        cfg = self.config
        sock = self.ctx.socket(zmq.ROUTER)
        sock.setsockopt(zmq.LINGER, 0)
        # Far above the protocol's limit: what is over that limit is read and refused with an
        # answer; only beyond this cap does libzmq drop the message and its connection.
        sock.setsockopt(zmq.MAXMSGSIZE, transport_cap(cfg.max_message_bytes))
        sock.setsockopt(zmq.ROUTER_MANDATORY, 0)
        # A client reconnecting with its routing id takes its session over at once.
        sock.setsockopt(zmq.ROUTER_HANDOVER, 1)
        sock.setsockopt(zmq.SNDHWM, 10000)
        if cfg.heartbeat > 0:
            # A peer that has vanished without closing (a dead host, a cut cable) stops
            # answering pings and is dropped: its session then counts as disconnected.
            ivl = max(1, int(cfg.heartbeat * 1000))
            sock.setsockopt(zmq.HEARTBEAT_IVL, ivl)
            sock.setsockopt(zmq.HEARTBEAT_TIMEOUT, 3 * ivl)
            sock.setsockopt(zmq.HEARTBEAT_TTL, min(3 * ivl, 6_553_500))
        self._auth = secure(sock, self.ctx, cfg.endpoint, cfg.server_secret_key,
                            cfg.allowed_clients, cfg.insecure)
        try:
            _bind_when_free(sock, cfg.endpoint)
        except zmq.ZMQError:
            sock.close(0)
            self._stop_auth()
            raise
        self.endpoint = sock.getsockopt_string(zmq.LAST_ENDPOINT)
        log.info("zmq_listening", endpoint=self.endpoint, curve=self._auth is not None)
        return sock

    def ready_line(self, prog: str = "othello-engine") -> str:
        """What the command prints on stderr once the socket is bound: where it listens and
        how many sessions it serves."""
        cfg = self.config
        security = "CURVE" if self._auth is not None else "no CURVE"
        kept = (f"sessions kept in {self.store.where}" if self.store is not None
                else "no session store")
        return (f"{prog}: serving ZeroMQ on {self.endpoint} (at most {cfg.max_sessions} "
                f"sessions, {security}, {kept})")

    # --- sessions (zmq_sessions.py) -----------------------------------------------------------
    def _new_session(self, identity: bytes, owner: bytes | None) -> ClientSession:
        opts = replace(self.options, warmup=False, policy=self.config.remote_policy)
        return self.table.open(identity, owner, opts, self._deliver)

    def _deliver(self, identity: bytes, seq: int | None, line: str) -> None:
        """A session's output line, from its thread: queued for the socket's thread."""
        self.outbox.put((identity, seq, line))
        self._wake()

    # --- main loop ----------------------------------------------------------------------------
    def _reply_form(self, cs: ClientSession | None, text: str | None) -> str:
        """The protocol to answer in: the session's, else the one the line would select."""
        if cs is not None and cs.controller.handler is not None:
            return cs.controller.protocol
        return detect_protocol(text) if text else "gtp"

    def _answer(self, identity: bytes, seq: int | None, protocol: str, message: str) -> None:
        """An error sent by the server itself (no session thread), in ``protocol``'s form."""
        for line in refusal_lines(protocol, message):
            self._send(identity, seq, line)

    def _handle_frames(self, frames: list[bytes], fd: int | None = None,
                       user: bytes | None = None, give_up: float | None = None) -> None:
        now = self.clock()
        received = time.monotonic()   # deadlines of the searches it starts count from here
        identity = frames[0]
        if give_up is None and any(w[1][0] == identity for w in self._waiting):
            # Behind its own first request, which waits for a slot.
            self._waiting.append((received + FULL_WAIT_S, frames, fd, user))
            return
        # The size is the line's (the request number does not count), or all of a malformed
        # list's.
        bare, seq, line_b, size = zframes.parse_request(frames[1:])
        reply_seq = None if bare else (seq or 0)
        text: str | None = None
        if line_b is not None and size <= self.config.max_message_bytes:
            try:
                text = line_b.decode("utf-8")
            except UnicodeDecodeError:
                text = None

        if self.table.taken_over:
            # Taken over by another server: out of memory before anything else, so that its
            # client's resend looks in the store.
            self.table.close_taken_over()
        cs = self.sessions.get(identity)
        if cs is None and self._drain_started is not None:
            self._answer(identity, reply_seq, self._reply_form(None, text), STOPPING)
            return
        stored = self.store is not None and not identity.startswith(b"\0")
        if cs is None and identity in self.expired:
            why = self.expired.pop(identity)
            if not stored:
                self._answer(identity, reply_seq, self._reply_form(None, text),
                             f"session expired: {why}; the next request starts a new session")
                return
            # A stored session's ending is the store's to tell (below): what this server
            # remembers may be stale, another server having served the client since.
        if cs is None and stored:
            refused = self._from_store(identity, user)
            if refused is not None:
                self._answer(identity, reply_seq, self._reply_form(None, text), refused)
                return
            cs = self.sessions.get(identity)
        if cs is not None and cs.owner != user:
            # Another client key presenting this routing id: the session is not its own.
            self._answer(identity, reply_seq, self._reply_form(None, text),
                         "this routing id belongs to another client's session")
            return
        if cs is not None:
            self.table.attribute(cs, fd, now)
            cs.last_seen = now
            if seq and seq <= cs.last_seq:
                # A retry of a request already handled: answer again, do not execute again.
                # The session writes each answer in one hold of its output lock and queues its
                # lines as it goes: read under that lock and queued behind them, the copy is
                # the whole answer or none of it and follows what went out live, instead of
                # running into the rest of a half-written answer ("= a1" "= a1" "").
                with cs.session.output.lock:
                    for line in list(cs.replies.get(seq, [])):
                        self._deliver(identity, reply_seq, line)
                return
            if self._drain_started is not None:
                # Not run, and not counted as handled: its resend runs after the restart.
                # A client with libzmq's routing id cannot find its session on the next
                # server: it is told now, while it can be.
                self._answer(identity, reply_seq, self._reply_form(cs, text),
                             STOPPING if cs.own_id else LOST_ON_STOP)
                return

        error = None
        if size > self.config.max_message_bytes:
            error = (f"request of {size} bytes is over this server's limit of "
                     f"{self.config.max_message_bytes} bytes")
        elif line_b is None:
            error = "malformed request: expected [seq, line] or [line]"
        elif seq is None or text is None:
            error = "malformed request: seq must be digits, line UTF-8"
        elif "\n" in text.rstrip("\r\n"):
            error = "malformed request: one line per message"
        if error is not None:
            if cs is None:
                self._answer(identity, reply_seq, self._reply_form(None, text), error)
                return
            # In order with the session's other answers, in its protocol; a resend of the
            # same request number gets the same answer from memory.
            if seq:
                cs.last_seq = seq
            cs.inbox.put(Request("", received, (seq or 0, bare), refusal=error))
            return
        assert text is not None and seq is not None

        if cs is None:
            if len(self.sessions) >= self.config.max_sessions and not self.table.evict(now):
                if give_up is None or received < give_up:
                    self._waiting.append((give_up or received + FULL_WAIT_S, frames, fd, user))
                    return
                self._answer(identity, reply_seq, self._reply_form(None, text),
                             "server full" if detect_protocol(text) == "nboard"
                             else "server full: too many sessions")
                return
            if self.store is not None and not identity.startswith(b"\0"):
                lease = self._take_lease(identity)
                if lease is not None:
                    self._answer(identity, reply_seq, self._reply_form(None, text), lease)
                    return
            cs = self._new_session(identity, user)
            self.table.attribute(cs, fd, now)
        if seq != 0:
            cs.last_seq = seq
        cs.controller.arrived(text)
        cs.inbox.put(Request(text, received, (seq, bare)))

    # --- draining -----------------------------------------------------------------------------
    def _drained(self) -> bool:
        """Every request under way has been answered, or the drain's time is up (those still
        running are then interrupted: their answer is dropped, the client told to resend)."""
        assert self._drain_started is not None
        busy = [cs for cs in self.sessions.values()
                if not cs.closed and (cs.handling or not cs.inbox.empty()
                                      or cs.controller.owes_answer())]
        if not busy:
            return True
        if time.monotonic() < self._drain_started + self.config.drain_timeout:
            return False
        for cs in busy:
            with cs.session.output.lock:
                cs.frozen = True
                seq, bare = cs.current_seq, cs.current_bare
            cs.session.interrupt()
            self._answer(cs.identity, None if bare else seq, cs.controller.protocol,
                         INTERRUPTED)
            log.info("session_interrupted", client=cs.key)
        return True

    def _linger(self, poller: zmq.Poller) -> None:
        """The last moments of a drain: what arrives is refused with ``server stopping`` (its
        client resends it to the next server) until the socket has been quiet for a moment,
        rather than lost in the close."""
        self._flush_outbox()
        end = time.monotonic() + DRAIN_LINGER_S
        quiet_since = time.monotonic()
        while time.monotonic() < end and time.monotonic() - quiet_since < DRAIN_QUIET_S:
            events = dict(poller.poll(10))
            if self.socket in events or self.monitor in events:
                self._receive()
                quiet_since = time.monotonic()
            self._flush_outbox()

    def _send(self, identity: bytes, seq: int | None, line: str) -> None:
        """One output line to a client: ``[seq, line]``, or ``[line]`` when ``seq`` is None (the
        request came as a bare frame)."""
        frames = [identity, *zframes.reply_frames(seq, line)]
        try:
            self.socket.send_multipart(frames, flags=zmq.NOBLOCK)
        except zmq.Again:
            log.warning("send_dropped", client=identity.hex())
        except zmq.ZMQError as e:
            log.warning("send_failed", client=identity.hex(), error=str(e))

    def _wake(self) -> None:
        if not self._woken.is_set():
            self._woken.set()
            with self._pipe_lock:  # never write to a descriptor number close() gave back
                if self._wake_w >= 0:
                    try:
                        os.write(self._wake_w, b"\0")
                    except (BlockingIOError, OSError):
                        pass  # a full pipe: the loop is awake already

    def _flush_outbox(self) -> None:
        # Clear first: a line queued while flushing sets it again and writes a new byte.
        self._woken.clear()
        try:
            os.read(self._wake_r, 4096)
        except (BlockingIOError, OSError):
            pass
        while True:
            try:
                identity, seq, line = self.outbox.get_nowait()
            except queue.Empty:
                return
            self._send(identity, seq, line)

    def _receive(self) -> None:
        """Read what has arrived, then the monitor (which has each message's connection by
        then: libzmq reports an accept before the connection's first message), then handle."""
        batch = []
        for _ in range(100):
            try:
                batch.append(self.socket.recv_multipart(flags=zmq.NOBLOCK, copy=False))
            except zmq.Again:
                break
        now = self.clock()
        self.table.drain_monitor(self.monitor, now)
        for frames in batch:
            try:
                self._handle_frames([f.bytes for f in frames], _frame_fd(frames[-1]),
                                    _frame_user(frames[-1]))
            except Exception:
                log.exception("bad_frames")
        self.table.apply_closes()

    def _retry_waiting(self) -> None:
        waiting, self._waiting = self._waiting, []
        for give_up, frames, fd, user in waiting:
            try:
                self._handle_frames(frames, fd, user, give_up)
            except Exception:
                log.exception("bad_frames")

    def serve_forever(self, poll_ms: int = 100) -> None:
        """Serve until :meth:`stop`; ``poll_ms`` bounds how late a stop or the reaper runs
        (replies do not wait for it: queued lines wake the loop)."""
        poller = zmq.Poller()
        poller.register(self.socket, zmq.POLLIN)
        poller.register(self._wake_r, zmq.POLLIN)
        if self.monitor is not None:
            poller.register(self.monitor, zmq.POLLIN)
        last_reap = time.monotonic()
        renew_every = SWEEP_INTERVAL if self.store is None else min(
            SWEEP_INTERVAL, self.store.lease_s / 3)
        last_sweep = -math.inf
        try:
            while not self._stop.is_set():
                draining = self._drain_started is not None
                events = dict(poller.poll(20 if self._waiting or draining else poll_ms))
                if self.socket in events or self.monitor in events:
                    self._receive()
                if self._waiting:
                    self._retry_waiting()
                self._flush_outbox()
                if draining and self._drained():
                    self._linger(poller)
                    break
                if time.monotonic() - last_reap > 1.0:
                    self.table.reap(self.clock())
                    if self.store is not None:
                        self._hand_over()
                    last_reap = time.monotonic()
                if self.store is not None and time.monotonic() - last_sweep > renew_every:
                    self._store_housekeeping()
                    last_sweep = time.monotonic()
        finally:
            self.close()

    def stop(self, drain: bool = False) -> None:
        """Stop serving.  ``drain`` (SIGTERM): new clients and new requests are refused with a
        reason, requests under way get up to ``drain_timeout`` to finish, then the server
        stops; sessions stay in the store for the next server.  Thread- and signal-safe."""
        if drain and not self._stop.is_set():
            if self._drain_started is None:
                self._drain_started = time.monotonic()
                log.info("zmq_draining", sessions=len(self.sessions))
        else:
            self._stop.set()
        self._woken.clear()
        self._wake()

    def close(self) -> None:
        for identity in list(self.sessions):
            # A stopping server leaves its sessions in the store for the next one.
            self.table.close(identity, "server stop", forget=False)
        if self.store is not None:
            self.table.store_call(lambda store: store.release(KIND))
        self._stop_monitor()
        self.socket.close(0)
        with self._pipe_lock:
            for fd in (self._wake_r, self._wake_w):
                if fd >= 0:
                    os.close(fd)
            self._wake_r = self._wake_w = -1
        self._stop_auth()

    def _stop_auth(self) -> None:
        if self._auth is not None:
            self._auth.stop()
            self._auth = None

    def _stop_monitor(self) -> None:
        # Monitoring off before its reader closes: a reader closed while it is on blocks the
        # context's I/O thread for good at the next connection event.
        if self.monitor is not None:
            try:
                self.socket.disable_monitor()
            except zmq.ZMQError:
                pass
            self.monitor.close(0)
            self.monitor = None

    def __del__(self) -> None:
        # A server made and never served (or never closed): its sockets would otherwise close
        # in the collector's order.
        try:
            self._stop_monitor()
        except Exception:
            pass


def _bind_when_free(sock: zmq.Socket, endpoint: str) -> None:
    retry_s = BIND_RETRY_S
    deadline = time.monotonic() + retry_s
    told = False
    while True:
        try:
            sock.bind(endpoint)
            return
        except zmq.ZMQError as e:
            if e.errno != errno.EADDRINUSE or time.monotonic() >= deadline:
                raise
            if not told:
                log.info("zmq_address_in_use", endpoint=endpoint, retry_s=retry_s)
                told = True
            time.sleep(0.05)


def _frame_fd(frame: zmq.Frame) -> int | None:
    """The descriptor of the connection a message came on; None where there is none
    (inproc)."""
    try:
        fd = int(frame.get(zmq.SRCFD))
    except (zmq.ZMQError, ValueError, TypeError):
        return None
    return fd if fd >= 0 else None


def _frame_user(frame: zmq.Frame) -> bytes | None:
    """The ZAP user id (CURVE: the client's public key); None without authentication."""
    try:
        user = frame.get("User-Id")
    except zmq.ZMQError:
        return None
    return user.encode() if isinstance(user, str) else None


__all__ = ["ZmqServer", "ServerConfig", "SecurityError", "is_loopback_endpoint",
           "generate_keys"]
