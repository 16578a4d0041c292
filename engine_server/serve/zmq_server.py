"""The engine over ZeroMQ: one ROUTER socket, one engine session per client identity.

Framing (documented in the README):

* client -> server: ``[seq, line]`` - ``seq`` is the client's request number as ASCII digits,
  ``line`` one protocol line (UTF-8); or a bare one-frame ``[line]``.
* server -> client: the reply mirrors the request.  After ``[seq, line]``: ``[seq, line]`` for
  every output line, streamed as produced, ``seq`` being the request that caused it.  After a
  bare ``[line]``: one bare frame ``[line]`` per output line (the empty line that ends a GTP
  response is an empty frame), so a plain DEALER client needs to know nothing of sequence
  numbers.

Each identity gets its own game, rules, agent, search tree and protocol (NBoard or GTP, detected
from its first line as on stdin) and its own controller thread, so a long ``genmove`` in one
session never delays another's answers.  A request whose ``seq`` was already handled is not
executed again: the server replays what it answered, which lets a client retry on a fresh socket
("lazy pirate") without playing a move twice.
"""

from __future__ import annotations

import ipaddress
import os
import queue
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import zmq
import zmq.auth

if TYPE_CHECKING:
    from zmq.auth.thread import ThreadAuthenticator

from engine_server.agents.policy import AgentPolicy
from engine_server.log import get_logger
from engine_server.protocol import detect_protocol
from engine_server.protocol.controller import Controller, Request
from engine_server.session import EngineOptions, Output, Session

log = get_logger("zmq")

MAX_LINE_BYTES = 64 * 1024
DEFAULT_MAX_SESSIONS = 16
DEFAULT_IDLE_TIMEOUT = 1800.0


class SecurityError(RuntimeError):
    """The requested bind would expose the engine without authentication."""


def is_loopback_endpoint(endpoint: str) -> bool:
    """``tcp://127.x`` / ``[::1]`` / ``localhost`` and ``ipc://``/``inproc://`` are local."""
    scheme, _, rest = endpoint.partition("://")
    if scheme in ("ipc", "inproc"):
        return True
    if scheme != "tcp":
        return False
    host = rest.rsplit(":", 1)[0].strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # "*", interface names and host names may reach the network


@dataclass
class ServerConfig:
    endpoint: str = "tcp://127.0.0.1:5555"
    max_sessions: int = DEFAULT_MAX_SESSIONS
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT
    insecure: bool = False
    server_secret_key: Path | None = None   # zmq.auth secret key file of the server
    allowed_clients: Path | None = None     # directory of allowed clients' public key files
    # What a remote session may choose (agents, threads, memory, time per move).
    remote_policy: AgentPolicy = field(default_factory=AgentPolicy)


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


class ZmqServer:
    def __init__(self, options: EngineOptions, config: ServerConfig,
                 context: zmq.Context | None = None):
        self.options = options
        self.config = config
        self.ctx = context or zmq.Context.instance()
        self.sessions: dict[bytes, ClientSession] = {}
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
        # Every session starts with the default agent: it must pass the remote policy.
        config.remote_policy.admit(options.agent, options.catalog.presets)
        self.socket = self._bind()

    # --- socket and security ------------------------------------------------------------------
    def _bind(self) -> zmq.Socket:
        cfg = self.config
        local = is_loopback_endpoint(cfg.endpoint)
        sock = self.ctx.socket(zmq.ROUTER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.MAXMSGSIZE, MAX_LINE_BYTES)
        sock.setsockopt(zmq.ROUTER_MANDATORY, 0)
        # A client reconnecting with its routing id takes its session over at once.
        sock.setsockopt(zmq.ROUTER_HANDOVER, 1)
        sock.setsockopt(zmq.SNDHWM, 10000)
        if cfg.server_secret_key is not None:
            from zmq.auth.thread import ThreadAuthenticator

            if cfg.allowed_clients is None:
                raise SecurityError("CURVE needs --allowed-clients DIR (client public keys)")
            public, secret = zmq.auth.load_certificate(str(cfg.server_secret_key))
            if secret is None:
                raise SecurityError(f"{cfg.server_secret_key} holds no secret key")
            self._auth = ThreadAuthenticator(self.ctx)
            self._auth.start()
            self._auth.configure_curve(domain="*", location=str(cfg.allowed_clients))
            sock.curve_secretkey = secret
            sock.curve_publickey = public
            sock.curve_server = True
        elif not local:
            if not cfg.insecure:
                sock.close(0)
                raise SecurityError(
                    f"refusing to bind {cfg.endpoint} without CURVE authentication: pass "
                    "--curve-key and --allowed-clients, or --insecure to accept the risk")
            log.warning("insecure_bind", endpoint=cfg.endpoint,
                        note="anyone who can reach this address controls the engine")
        sock.bind(cfg.endpoint)
        self.endpoint = sock.getsockopt_string(zmq.LAST_ENDPOINT)
        log.info("zmq_listening", endpoint=self.endpoint, curve=self._auth is not None)
        return sock

    # --- sessions -----------------------------------------------------------------------------
    def _new_session(self, identity: bytes) -> ClientSession:
        cs_holder: list[ClientSession] = []

        def sink(line: str) -> None:
            cs = cs_holder[0]
            seq = cs.current_seq
            lst = cs.replies.get(seq)
            if lst is not None:
                lst.append(line)
            self.outbox.put((identity, None if cs.current_bare else seq, line))
            self._wake()

        opts = replace(self.options, warmup=False, policy=self.config.remote_policy)
        session = Session(opts, Output(sink))
        cs = ClientSession(identity, session, Controller(session))
        cs_holder.append(cs)
        cs.thread = threading.Thread(target=self._run_session, args=(cs,),
                                     name=f"zmq-session-{identity.hex()[:8]}", daemon=True)
        cs.thread.start()
        self.sessions[identity] = cs
        log.info("session_open", client=identity.hex(), sessions=len(self.sessions))
        return cs

    def _run_session(self, cs: ClientSession) -> None:
        def before(req: Request) -> None:
            seq, bare = req.tag
            cs.current_seq = seq
            cs.current_bare = bare
            cs.replies[seq] = []
            for old in [s for s in cs.replies if s < seq - 8]:
                del cs.replies[old]  # keep a few recent answers for retries

        try:
            cs.controller.run(cs.inbox, before)
        finally:
            cs.closed = True

    def _close_session(self, identity: bytes, reason: str) -> None:
        cs = self.sessions.pop(identity, None)
        if cs is None:
            return
        cs.session.interrupt()
        cs.inbox.put(None)
        log.info("session_close", client=identity.hex(), reason=reason,
                 sessions=len(self.sessions))

    # --- main loop ----------------------------------------------------------------------------
    def _handle_frames(self, frames: list[bytes]) -> None:
        identity = frames[0]
        payload = frames[1:]
        if payload and payload[0] == b"":
            payload = payload[1:]  # a REQ client's delimiter
        bare = len(payload) == 1
        if bare:
            seq_b, line_b = b"0", payload[0]
        elif len(payload) == 2:
            seq_b, line_b = payload
        else:
            self._send(identity, 0, "? malformed request: expected [seq, line] or [line]")
            return
        reply_seq = None if bare else 0
        try:
            seq = int(seq_b.decode("ascii"))
            text = line_b.decode("utf-8")
        except (UnicodeDecodeError, ValueError):
            self._send(identity, reply_seq, "? malformed request: seq must be digits, line UTF-8")
            return
        if not bare:
            reply_seq = seq
        if "\n" in text.rstrip("\r\n"):
            self._send(identity, reply_seq, "? malformed request: one line per message")
            return
        cs = self.sessions.get(identity)
        if cs is None:
            if len(self.sessions) >= self.config.max_sessions:
                # The protocol's error form: GTP "?", NBoard "status".
                msg = ("status server full" if detect_protocol(text) == "nboard"
                       else "? server full: too many sessions")
                self._send(identity, reply_seq, msg)
                if not msg.startswith("status"):
                    self._send(identity, reply_seq, "")
                return
            cs = self._new_session(identity)
        cs.last_seen = time.monotonic()
        if seq != 0 and seq <= cs.last_seq:
            # A retry of a request already handled: answer again, do not execute again.
            for line in cs.replies.get(seq, []):
                self._send(identity, reply_seq, line)
            return
        if seq != 0:
            cs.last_seq = seq
        cs.controller.arrived(text)
        cs.inbox.put(Request(text, time.monotonic(), (seq, bare)))

    def _send(self, identity: bytes, seq: int | None, line: str) -> None:
        """One output line to a client: ``[seq, line]``, or ``[line]`` when ``seq`` is None (the
        request came as a bare frame)."""
        frames = [identity, line.encode("utf-8")] if seq is None else \
            [identity, str(seq).encode(), line.encode("utf-8")]
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

    def _reap(self) -> None:
        now = time.monotonic()
        for identity, cs in list(self.sessions.items()):
            if cs.closed:
                self.sessions.pop(identity, None)
                log.info("session_ended", client=identity.hex())
            elif now - cs.last_seen > self.config.idle_timeout and not cs.session.busy:
                self._close_session(identity, "idle")

    def serve_forever(self, poll_ms: int = 100) -> None:
        """Serve until :meth:`stop`; ``poll_ms`` bounds how late a stop or the reaper runs
        (replies do not wait for it: queued lines wake the loop)."""
        poller = zmq.Poller()
        poller.register(self.socket, zmq.POLLIN)
        poller.register(self._wake_r, zmq.POLLIN)
        last_reap = time.monotonic()
        try:
            while not self._stop.is_set():
                events = dict(poller.poll(poll_ms))
                if self.socket in events:
                    for _ in range(100):
                        try:
                            frames = self.socket.recv_multipart(flags=zmq.NOBLOCK)
                        except zmq.Again:
                            break
                        try:
                            self._handle_frames(frames)
                        except Exception:
                            log.exception("bad_frames")
                self._flush_outbox()
                if time.monotonic() - last_reap > 1.0:
                    self._reap()
                    last_reap = time.monotonic()
        finally:
            self.close()

    def stop(self) -> None:
        self._stop.set()
        self._woken.clear()
        self._wake()

    def close(self) -> None:
        for identity in list(self.sessions):
            self._close_session(identity, "server stop")
        self.socket.close(0)
        with self._pipe_lock:
            for fd in (self._wake_r, self._wake_w):
                if fd >= 0:
                    os.close(fd)
            self._wake_r = self._wake_w = -1
        if self._auth is not None:
            self._auth.stop()
            self._auth = None


def generate_keys(directory: str | Path, name: str) -> tuple[Path, Path]:
    """A CURVE key pair ``NAME.key`` (public) and ``NAME.key_secret`` in ``directory``."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    public, secret = zmq.auth.create_certificates(str(d), name)
    return Path(public), Path(secret)


__all__ = ["ZmqServer", "ServerConfig", "SecurityError", "is_loopback_endpoint",
           "generate_keys"]
