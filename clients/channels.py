"""The channels the engine client speaks over: each moves protocol lines to and from one engine
session (the interface, :class:`~clients.engine_client.Channel`, and the errors they raise are
``clients.engine_client``'s).

* :class:`PipeChannel`: a subprocess's stdin/stdout (:func:`engine_command` and
  :func:`engine_env` start this project's engine from any working directory);
* :class:`ZmqChannel`: the engine's ZeroMQ server (framing in engine_server/serve/zmq_server.py),
  or one of several servers sharing a session store, with failover between them
  (:func:`split_endpoints`, :func:`home_index`);
* :class:`InProcessChannel`: a Session and protocol handler in this process.
"""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
import time
import zlib
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Sequence

import zmq
import zmq.auth
from zmq.utils.monitor import recv_monitor_message

from clients.engine_client import Channel, EngineClosed, EngineError, EngineTimeout
from engine_server.log import get_logger
from protocol import zmq as zframes

if TYPE_CHECKING:
    # Imported where used: they pull in the search (numba), which a client that only talks to
    # an engine elsewhere (the CS303 remote judge) keeps out of its process.
    from engine_server.commands import LineHandler
    from engine_server.commands.controller import Request
    from engine_server.session import EngineOptions

log = get_logger("engine_client")   # the engine client's log, its channels included

REPO = Path(__file__).resolve().parent.parent
HEARTBEAT_MS = 10_000   # ZMTP pings to the server; three missed: reconnect
CONNECT_WAIT = 1.0      # seconds a failover waits for each endpoint's connection


class _QueuedChannel(Channel):
    """Output lines arrive on another thread and wait in a queue; None marks end of output.
    Reading from a queue is what lets a hung engine time out instead of blocking the caller."""

    def __init__(self) -> None:
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._eof = False

    def read_line(self, deadline: float) -> str:
        if self._eof:
            raise EngineClosed(f"{self.name} closed its output")
        try:
            line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise EngineTimeout(f"no output from {self.name} by the deadline") from None
        if line is None:
            self._eof = True
            raise EngineClosed(f"{self.name} closed its output")
        return line


class PipeChannel(_QueuedChannel):
    """An engine subprocess's stdin and stdout."""

    def __init__(self, proc: "subprocess.Popen[str]", name: str | None = None):
        super().__init__()
        self.proc = proc
        self.name = name or f"engine (pid {proc.pid})"
        threading.Thread(target=self._read, name=f"pipe-reader-{proc.pid}", daemon=True).start()

    @classmethod
    def spawn(cls, args: Sequence[str], env: dict[str, str] | None = None,
              cwd: str | None = None, stderr: int | IO[str] | None = subprocess.DEVNULL
              ) -> "PipeChannel":
        """Start ``args`` with pipes; OSError when it cannot be started."""
        proc = subprocess.Popen(list(args), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=stderr, text=True, bufsize=1, env=env, cwd=cwd)
        return cls(proc, f"{Path(args[0]).name} (pid {proc.pid})")

    @classmethod
    def ours(cls, *engine_args: str, stderr: int | IO[str] | None = subprocess.DEVNULL
             ) -> "PipeChannel":
        """This project's engine, ``python -m engine_server ARGS``, importable from any cwd."""
        return cls.spawn(engine_command(*engine_args), env=engine_env(), cwd=str(REPO),
                         stderr=stderr)

    def _read(self) -> None:
        assert self.proc.stdout is not None
        try:
            for line in self.proc.stdout:
                self._lines.put(line.rstrip("\n"))
        except (OSError, ValueError):  # stdout closed under us by kill()
            pass
        self._lines.put(None)

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
        except (OSError, ValueError) as e:  # BrokenPipeError, or stdin already closed
            raise EngineClosed(f"{self.name} exited (code {self.proc.poll()}): {e}") from None

    def close(self, timeout: float = 10.0) -> int:
        """Close stdin (end of input: our engine exits cleanly on it) and wait; kill after
        ``timeout``.  The exit code."""
        try:
            if self.proc.poll() is None and self.proc.stdin:
                self.proc.stdin.close()
        except OSError:
            pass
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()

    def kill(self) -> None:
        """End the process at once (after a crash, a hang or a protocol error)."""
        try:
            self.proc.kill()
        except OSError:
            pass
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            pass
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass


def engine_command(*engine_args: str) -> list[str]:
    """The command line of this project's engine, run by the current interpreter."""
    return [sys.executable, "-m", "engine_server", *engine_args]


def engine_env() -> dict[str, str]:
    """The environment that lets ``python -m engine_server`` import this checkout from any
    working directory."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def split_endpoints(endpoints: str | Sequence[str]) -> list[str]:
    """``tcp://a:5555,tcp://b:5555`` (or a list) as a list; ValueError when empty."""
    items = endpoints.split(",") if isinstance(endpoints, str) else list(endpoints)
    found = [e.strip() for e in items if e.strip()]
    if not found:
        raise ValueError("no endpoint given (e.g. tcp://127.0.0.1:5555)")
    return found


def home_index(identity: bytes, n: int) -> int:
    """The endpoint a routing id starts on: a stable hash, the same in every process, so that
    a client that comes back returns to the same server while it lives."""
    return zlib.crc32(identity) % n


class ZmqChannel(Channel):
    """A DEALER socket to the engine's ZeroMQ server, or to one of several servers that share
    a session store (``endpoint``: ``tcp://a:5555,tcp://b:5555`` or a list).

    Frames are ``[seq, line]`` both ways.  The routing id is the client's own (random unless
    ``identity`` is given) and stays the same on every socket the channel opens, so the server
    keeps the session (game, tree) across reconnects: libzmq's own after a network blip, a
    fresh socket after a timeout, or a new process that passes the same ``identity``.
    ``read_line`` returns only lines of the latest request and drops late lines of earlier
    ones; ``recv`` returns every line with its ``seq``.  A request resent under the same
    ``seq`` ("lazy pirate") is answered from the server's memory, not executed again, so no move
    is played twice.  ZMTP heartbeats make a connection to a vanished server fail, and libzmq
    reconnect, instead of waiting forever.  A session the server has closed answers
    ``? session expired: WHY`` (:class:`EngineSessionExpired`).

    With several endpoints the channel starts on the one its routing id hashes to (the same
    client returns to the same live server), and :meth:`reset` moves it to the next one that
    accepts a connection: the session follows through the store.  A connection that drops
    while a request waits fails the wait at once (:class:`EngineClosed`), so that the client
    moves on instead of waiting for a dead server."""

    resend_is_safe = True

    def __init__(self, endpoint: str | Sequence[str],
                 keys: tuple[str | Path, str | Path] | None = None,
                 identity: bytes | None = None, context: zmq.Context[Any] | None = None):
        """``keys = (client_secret_key_file, server_public_key_file)`` enables CURVE."""
        self.endpoints = split_endpoints(endpoint)
        self.several = len(self.endpoints) > 1
        self.keys = keys
        self.identity = identity or b"c-" + os.urandom(8).hex().encode()
        if not 1 <= len(self.identity) <= 255 or self.identity.startswith(b"\0"):
            # libzmq's rule: ids starting with a zero byte are its own, made per connection.
            raise ValueError("a routing id is 1-255 bytes and does not start with a zero byte")
        self.index = home_index(self.identity, len(self.endpoints))
        self.ctx = context or zmq.Context.instance()
        # Request numbers go on growing across channels with the same routing id (a restarted
        # client): the server answers a number it has handled from memory, so a new process
        # that counted from 1 again would have its first requests taken for resends.
        self.seq = time.time_ns() // 1000
        self.sock: zmq.Socket[bytes] | None = None
        # The socket's connection events: a request in flight when the connection dropped
        # (the server was killed, a network cut) is resent as soon as it is back, or (several
        # endpoints) at the next one.
        self.monitor: zmq.Socket[bytes] | None = None
        self._poller: zmq.Poller | None = None   # the socket and its monitor
        self._dropped = False
        self._connected = False
        self._refused = False    # the last connection attempt was refused
        self._last = ""
        self.failovers = 0       # moves to another endpoint
        self.connect()

    @property
    def endpoint(self) -> str:
        """The endpoint the channel is on now."""
        return self.endpoints[self.index]

    @property
    def name(self) -> str:  # type: ignore[override]
        return self.endpoint

    @property
    def dropped(self) -> bool:
        """The connection dropped and has not come back."""
        return self._dropped

    def _close_socket(self) -> None:
        if self.monitor is not None:
            try:
                self._socket().disable_monitor()
            except zmq.ZMQError:
                pass
            self.monitor.close(0)
            self.monitor = None
            self._poller = None
        if self.sock is not None:
            self.sock.close(0)

    def connect(self) -> None:
        """A fresh socket with the same routing id (the old one is dropped with its queue)."""
        self._close_socket()
        s = self.ctx.socket(zmq.DEALER)
        s.setsockopt(zmq.LINGER, 0)
        s.setsockopt(zmq.ROUTING_ID, self.identity)
        s.setsockopt(zmq.HEARTBEAT_IVL, HEARTBEAT_MS)
        s.setsockopt(zmq.HEARTBEAT_TIMEOUT, 3 * HEARTBEAT_MS)
        if self.keys is not None:
            pub, sec = zmq.auth.load_certificate(str(self.keys[0]))
            server_pub, _ = zmq.auth.load_certificate(str(self.keys[1]))
            s.curve_secretkey = sec
            s.curve_publickey = pub
            s.curve_serverkey = server_pub
        self.monitor = s.get_monitor_socket(zmq.EVENT_CONNECTED | zmq.EVENT_DISCONNECTED
                                            | zmq.EVENT_CONNECT_RETRIED)
        self._poller = zmq.Poller()
        self._poller.register(s, zmq.POLLIN)
        self._poller.register(self.monitor, zmq.POLLIN)
        self._dropped = self._connected = self._refused = False
        s.connect(self.endpoint)
        self.sock = s

    def _socket(self) -> zmq.Socket[bytes]:
        if self.sock is None:
            raise EngineClosed(f"the channel to {self.endpoint} is closed")
        return self.sock

    def wait_connected(self, timeout: float) -> bool:
        """Whether the connection is up within ``timeout`` seconds; False at once when it is
        refused (nothing listens there)."""
        deadline = time.monotonic() + timeout
        while not self._connected:
            left = deadline - time.monotonic()
            if self._refused or left <= 0 or self.monitor is None:
                return False
            if self.monitor.poll(max(1, int(left * 1000))):
                self.connection_events()
        return True

    def failover(self, connect_wait: float = CONNECT_WAIT) -> bool:
        """Move to the next endpoint that accepts a connection within ``connect_wait`` seconds
        each (round the list once; else onto the next one, where libzmq keeps trying).
        Whether one was found."""
        start = self.index
        for step in range(1, len(self.endpoints) + 1):
            self.index = (start + step) % len(self.endpoints)
            self.connect()
            if self.wait_connected(connect_wait):
                self.failovers += 1
                log.info("engine_failover", endpoint=self.endpoint)
                return True
        self.index = (start + 1) % len(self.endpoints)
        self.connect()
        self.failovers += 1
        return False

    def send(self, line: str) -> None:
        self.seq += 1
        self._last = line
        self.send_seq(self.seq, line)

    def send_seq(self, seq: int, line: str) -> None:
        """One frame pair with a chosen sequence number (a retry reuses the request's).

        Never blocks.  A server that refuses the handshake (CURVE keys it does not know, or
        no CURVE where it wants it) makes libzmq drop the connection's pipe for good, and a
        DEALER with no pipe blocks a send forever, whatever timeout the command has: that is
        reported at once as a closed channel (a retry's reset makes a fresh socket)."""
        try:
            self._socket().send_multipart(zframes.request_frames(seq, line), flags=zmq.NOBLOCK)
        except zmq.Again:
            raise EngineClosed(f"cannot send to {self.endpoint}: no connection to queue it on "
                               "(the server refused the handshake?) or a full queue") from None

    def resend(self) -> None:
        self.send_seq(self.seq, self._last)

    def reset(self) -> None:
        if self.sock is None:  # a closed channel stays closed
            return
        if self.several:
            self.failover()
        else:
            self.connect()

    def recv(self, timeout: float) -> tuple[int, str]:
        """The next line from the server as ``(seq, line)``; :class:`EngineTimeout` when none
        comes within ``timeout`` seconds."""
        sock = self._socket()
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if self.monitor is None or self._poller is None:
                ready = bool(sock.poll(max(0, int(left * 1000))))
            else:
                events = dict(self._poller.poll(max(0, int(left * 1000))))
                if self.monitor in events:
                    self.connection_events()
                ready = sock in events
            if ready:
                break
            if self._dropped and self.several:
                raise EngineClosed(f"the connection to {self.endpoint} dropped")
            if time.monotonic() >= deadline:
                raise EngineTimeout(f"no reply from {self.endpoint} within {timeout} s")
        try:
            return zframes.parse_reply(sock.recv_multipart())
        except ValueError as e:
            raise EngineError(str(e)) from None

    def connection_events(self) -> None:
        """A connection that dropped and came back (a restarted server, a network blip): the
        request it carried may be lost with the old one, so it is resent under its number (a
        server that has it answers from memory)."""
        assert self.monitor is not None
        while True:
            try:
                event = recv_monitor_message(self.monitor, flags=zmq.NOBLOCK)
            except (zmq.Again, zmq.ZMQError):
                return
            if event["event"] == zmq.EVENT_DISCONNECTED:
                self._dropped = True
                self._connected = False
            elif event["event"] == zmq.EVENT_CONNECT_RETRIED:
                self._refused = not self._connected
            elif event["event"] == zmq.EVENT_CONNECTED:
                self._connected, self._refused = True, False
                if self._dropped:
                    self._dropped = False
                    if self._last:
                        self.resend()

    def read_line(self, deadline: float) -> str:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise EngineTimeout(f"no reply from {self.endpoint} by the deadline")
            seq, line = self.recv(left)
            if seq == self.seq:
                return line

    def close(self) -> None:
        self._close_socket()
        self.sock = None

    def __del__(self) -> None:
        # A channel dropped without close(): pyzmq would close its two sockets in whatever
        # order the collector frees them, and a monitor reader closed while monitoring is on
        # blocks the context's I/O thread for good at the next connection event (every socket
        # of the process then stops).  Stop monitoring first, as close() does.
        try:
            self._close_socket()
        except Exception:
            pass


class InProcessChannel(_QueuedChannel):
    """A Session and its protocol handler in this process, driven as the stdio front end drives
    them: lines go to a controller thread that calls the I/O-free ``handle_line`` (a ``genmove``
    blocks there, not in the caller), and what the session writes through its Output is read
    back line by line.  ``protocol`` is ``gtp``, ``nboard`` or ``auto`` (from the first line)."""

    def __init__(self, options: EngineOptions | None = None, protocol: str = "auto"):
        from engine_server.commands.controller import Controller
        from engine_server.session import EngineOptions, Output, Session

        super().__init__()
        self.name = "in-process engine"
        self.session = Session(options or EngineOptions(), Output(self._lines.put))
        self.controller = Controller(self.session, protocol)
        self._inbox: queue.Queue[Request | None] = queue.Queue()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="in-process-engine", daemon=True)
        self._thread.start()

    @property
    def handler(self) -> LineHandler | None:
        return self.controller.handler

    def _run(self) -> None:
        try:
            self.controller.run(self._inbox)
        finally:
            self._closed = True
            self._lines.put(None)

    def send(self, line: str) -> None:
        from engine_server.commands.controller import Request

        if self._closed:
            raise EngineClosed(f"{self.name} has quit")
        # The controller may be inside a long genmove: "quit" makes it return now.
        self.controller.arrived(line)
        self._inbox.put(Request(line, time.monotonic()))

    def close(self, timeout: float = 10.0) -> None:
        self._closed = True
        self.session.interrupt()
        self._inbox.put(None)
        self._thread.join(timeout)


__all__ = [
    "CONNECT_WAIT", "HEARTBEAT_MS", "REPO", "InProcessChannel", "PipeChannel", "ZmqChannel",
    "engine_command", "engine_env", "home_index", "split_endpoints",
]
