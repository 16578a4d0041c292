"""Client of the engine's ZeroMQ server: an :class:`EngineClient` over a :class:`ZmqChannel`
(clients/channels.py, which documents the framing and the "lazy pirate" retries), plus the
raw ``(seq, line)`` calls of the CS303 remote backend and ``othello-remote``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import zmq

from clients.channels import ZmqChannel
from clients.engine_client import (
    RESTART_POLL,
    RESTART_POLL_MAX,
    RESTART_WAIT,
    EngineClient,
    EngineError,
    resend_refusal,
)
from engine_server.log import get_logger

log = get_logger("remote")

# Seconds othello-remote waits for a connection before it says nothing listens there.
CONNECT_TIMEOUT = 3.0

# One error type for everything that goes wrong remotely (a '?' reply, no answer after the
# retries, a malformed frame), as before; its kinds are those of engine_client.
RemoteError = EngineError

__all__ = ["RemoteEngine", "RemoteError", "interactive_main"]


class RemoteEngine(EngineClient):
    channel: ZmqChannel

    def __init__(self, endpoint: str | Sequence[str], protocol: str = "gtp",
                 timeout: float = 10.0,
                 retries: int = 3, keys: tuple[str | Path, str | Path] | None = None,
                 identity: bytes | None = None, context: zmq.Context[Any] | None = None,
                 restart_wait: float = RESTART_WAIT):
        """``endpoint``: one server, or several sharing a session store (``tcp://a:5555,
        tcp://b:5555`` or a list: the client moves between them, ``ZmqChannel``).
        ``keys = (client_secret_key_file, server_public_key_file)`` enables CURVE.
        ``restart_wait``: how long a request a server did not run (it stops, another server
        serves the session) is resent for."""
        if protocol not in ("gtp", "nboard"):
            raise ValueError(f"protocol must be gtp or nboard, got {protocol!r}")
        super().__init__(ZmqChannel(endpoint, keys=keys, identity=identity, context=context),
                         timeout=timeout, retries=retries, restart_wait=restart_wait)
        self.protocol = protocol
        self.keys = keys

    @property
    def endpoint(self) -> str:
        """The endpoint the client is on now."""
        return self.channel.endpoint

    @property
    def identity(self) -> bytes:
        return self.channel.identity

    @property
    def seq(self) -> int:
        return self.channel.seq

    @property
    def sock(self) -> zmq.Socket[bytes] | None:
        return self.channel.sock

    def _connect(self) -> None:
        self.channel.connect()

    def _send(self, seq: int, line: str) -> None:
        self.channel.send_seq(seq, line)

    # --- raw lines ------------------------------------------------------------------------------
    def send(self, line: str) -> int:
        """Send one line as a new request; its sequence number."""
        self.channel.send(line)
        return self.channel.seq

    def read_line(self, timeout: float | None = None) -> tuple[int, str]:
        """The next line from the engine as ``(seq, line)``; EngineTimeout (a TimeoutError)
        when none comes."""
        return self.channel.recv(self.timeout if timeout is None else timeout)

    # --- request/response with retries ----------------------------------------------------------
    def gtp(self, command: str, timeout: float | None = None) -> str:
        """A GTP command; returns the result text, raises RemoteError on '?'."""
        return self.command(command, timeout)

    def nboard(self, command: str, until: str, timeout: float | None = None) -> list[str]:
        """An NBoard command and the lines up to one starting with ``until``."""
        return self.request(command, lambda ls: ls[-1].startswith(until), timeout)

    def close(self) -> None:
        self.channel.close()

    def __enter__(self) -> "RemoteEngine":
        return self


def interactive_main(argv: list[str] | None = None) -> int:
    """``othello-remote ENDPOINT[,ENDPOINT...]``: type protocol lines, see the engine's
    replies; with several endpoints (servers sharing a store) it moves to the next when its
    server dies, stops, is cut off or refers it to another, and resends what was not
    answered."""
    import argparse
    import sys

    from engine_server import __version__

    p = argparse.ArgumentParser(prog="othello-remote",
                                description="Talk to a remote othello-engine by hand.")
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    p.add_argument("endpoint", help="e.g. tcp://127.0.0.1:5555, or several servers that share "
                                    "a session store: tcp://a:5555,tcp://b:5555")
    p.add_argument("--client-key", help="client secret key file (CURVE)")
    p.add_argument("--server-key", help="server public key file (CURVE)")
    p.add_argument("--session", metavar="ID",
                   help="routing id to use (default: a random one, printed at start): run "
                        "again with the same ID to come back to the same game")
    p.add_argument("--timeout", type=float, default=10.0, metavar="S",
                   help="seconds without any answer to a request before its server counts "
                        "as lost: the request is sent again there or at the next endpoint "
                        "(default 10)")
    args = p.parse_args(argv)
    keys = (args.client_key, args.server_key) if args.client_key and args.server_key else None
    try:
        eng = RemoteEngine(args.endpoint, keys=keys, timeout=args.timeout,
                           identity=args.session.encode() if args.session else None)
    except ValueError as e:
        p.error(str(e))
    channel = eng.channel
    if not channel.wait_connected(CONNECT_TIMEOUT) and not (
            channel.several and channel.failover(CONNECT_TIMEOUT)):
        print(f"othello-remote: no server answers at {args.endpoint} (nothing listens there, "
              f"or it cannot be reached within {CONNECT_TIMEOUT:g} s); start one with "
              "othello-engine --zmq ENDPOINT --no-stdio", file=sys.stderr, flush=True)
        eng.close()
        return 1
    print(f"othello-remote: session {eng.identity.decode(errors='replace')} on "
          f"{channel.endpoint} (--session to resume)", file=sys.stderr, flush=True)
    try:
        return _Conversation(eng).run(sys.stdin)
    except KeyboardInterrupt:
        return 0
    finally:
        eng.close()


@dataclass
class _Request:
    line: str
    printed: int = 0     # lines of its answer printed
    skip: int = 0        # lines of a resent answer still to skip (printed before)
    done: bool = False   # answered (GTP: complete; NBoard: a line came)
    refused: bool = False   # a refusal came: its GTP blank line is not an answer


class _Conversation:
    """``othello-remote``'s loop: one thread owns the socket and polls it with stdin.

    Every request is kept until it is known to be done (GTP: its answer's blank line; any
    protocol: a line of a later request has come, since a session answers in order).  When the
    server is lost (no line for ``timeout`` seconds while a request waits, a dropped
    connection) or refuses a request to be sent again (it stops, another server serves the
    session, the store is out of reach), the requests not done are resent under their numbers,
    at the next endpoint where there are several; a server that has one already answers it
    from memory, and the lines printed before are not printed twice."""

    def __init__(self, eng: RemoteEngine):
        self.eng = eng
        self.channel = eng.channel
        self.open: dict[int, _Request] = {}
        self.nboard: bool | None = None   # from the first line, as the server detects it
        self.last_heard = time.monotonic()
        self.lost_since: float | None = None   # the server is lost: resending since then
        self.pause = RESTART_POLL

    def run(self, stdin: Any) -> int:
        import sys

        stdin_fd = stdin.fileno()
        stdin_open = True
        done_input = False       # input ended or `quit` was sent: leave once answered
        while True:
            poller = zmq.Poller()
            sock, monitor = self.channel.sock, self.channel.monitor
            if sock is not None:
                poller.register(sock, zmq.POLLIN)
            if monitor is not None:
                poller.register(monitor, zmq.POLLIN)
            if stdin_open:
                poller.register(stdin_fd, zmq.POLLIN)
            events = dict(poller.poll(100))
            now = time.monotonic()
            if monitor is not None and monitor in events:
                self.channel.connection_events()
                if self.channel.dropped and self.channel.several and self._waiting():
                    self._lose("its connection dropped")
            while self.channel.sock is not None and self.channel.sock.poll(0):
                self._line(*self.eng.read_line(0))
            if stdin_open and stdin_fd in events:
                line = stdin.readline()
                if not line:
                    stdin_open = False
                    done_input = True
                else:
                    self._send(line.rstrip("\n"), now)
                    done_input = done_input or line.strip() == "quit"
            idle = now - self.last_heard
            if self._waiting() and idle > self.eng.timeout:
                self._lose(f"no answer for {self.eng.timeout:g} s")
            if self.lost_since is not None and \
                    time.monotonic() - self.lost_since > self.eng.restart_wait:
                print(f"othello-remote: no server has served this session for "
                      f"{self.eng.restart_wait:g} s ({', '.join(self.channel.endpoints)})",
                      file=sys.stderr, flush=True)
                return 1
            # Piped input ends long before a search (or a server still starting) answers:
            # wait while GTP answers are missing; an NBoard command may have no answer, so
            # the last ones end by a moment of silence.
            if done_input and (not self._waiting() or (self.nboard and idle > 0.5)):
                return 0

    def _send(self, text: str, now: float) -> None:
        seq = self.eng.send(text)
        if not text.strip() or text.lstrip().startswith("#"):
            return
        if self.nboard is None:
            self.nboard = text.split()[0] == "nboard"
        if not self._waiting():
            self.last_heard = now   # silence counts from the first request waiting
        self.open[seq] = _Request(text)

    def _waiting(self) -> bool:
        return any(not r.done for r in self.open.values())

    def _line(self, seq: int, line: str) -> None:
        self.last_heard = time.monotonic()
        req = self.open.get(seq)
        if req is None:
            print(line, flush=True)   # a request no longer tracked
            return
        refused = resend_refusal(line)
        if refused is not None:
            req.refused = True
            self._lose(refused)   # not run: sent again, there or at the next server
            return
        if line == "" and req.refused:
            return   # the end of a refusal
        self.lost_since = None
        self.pause = RESTART_POLL
        # A session answers in order: every earlier request is done.
        for s in [s for s in self.open if s < seq]:
            del self.open[s]
        if req.skip > 0:
            req.skip -= 1       # printed already, before the resend
            return
        req.printed += 1
        req.done = req.done or bool(self.nboard) or line == ""
        if line == "" and not self.nboard:
            del self.open[seq]   # a GTP answer is complete
        print(line, flush=True)

    def _lose(self, why: str) -> None:
        """The server is lost, or refused to run what was sent: back off, move on, resend."""
        if self.lost_since is None:
            self.lost_since = time.monotonic()
        log.info("remote_resend", why=why, endpoint=self.channel.endpoint)
        time.sleep(self.pause)
        self.pause = min(RESTART_POLL_MAX, 2 * self.pause)
        self.channel.reset()
        for seq, req in self.open.items():
            req.skip, req.refused = req.printed, False
            self.channel.send_seq(seq, req.line)
        self.last_heard = time.monotonic()
