"""Client of the engine's ZeroMQ server: an :class:`EngineClient` over a :class:`ZmqChannel`
(clients/engine_client.py, which documents the framing and the "lazy pirate" retries), plus the
raw ``(seq, line)`` calls of the CS303 remote backend and ``othello-remote``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import zmq

from clients.engine_client import RESTART_WAIT, EngineClient, EngineError, ZmqChannel

# One error type for everything that goes wrong remotely (a '?' reply, no answer after the
# retries, a malformed frame), as before; its kinds are those of engine_client.
RemoteError = EngineError

__all__ = ["RemoteEngine", "RemoteError", "interactive_main"]


class RemoteEngine(EngineClient):
    channel: ZmqChannel

    def __init__(self, endpoint: str, protocol: str = "gtp", timeout: float = 10.0,
                 retries: int = 3, keys: tuple[str | Path, str | Path] | None = None,
                 identity: bytes | None = None, context: zmq.Context[Any] | None = None,
                 restart_wait: float = RESTART_WAIT):
        """``keys = (client_secret_key_file, server_public_key_file)`` enables CURVE.
        ``restart_wait``: how long a request that a stopping server refused is resent for."""
        if protocol not in ("gtp", "nboard"):
            raise ValueError(f"protocol must be gtp or nboard, got {protocol!r}")
        super().__init__(ZmqChannel(endpoint, keys=keys, identity=identity, context=context),
                         timeout=timeout, retries=retries, restart_wait=restart_wait)
        self.endpoint = endpoint
        self.protocol = protocol
        self.keys = keys

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
    """``othello-remote ENDPOINT``: type protocol lines, see the engine's replies."""
    import argparse
    import sys

    from engine_server import __version__

    p = argparse.ArgumentParser(prog="othello-remote",
                                description="Talk to a remote othello-engine by hand.")
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    p.add_argument("endpoint", help="e.g. tcp://127.0.0.1:5555")
    p.add_argument("--client-key", help="client secret key file (CURVE)")
    p.add_argument("--server-key", help="server public key file (CURVE)")
    p.add_argument("--session", metavar="ID",
                   help="routing id to use (default: a random one, printed at start): run "
                        "again with the same ID to come back to the same game")
    args = p.parse_args(argv)
    keys = (args.client_key, args.server_key) if args.client_key and args.server_key else None
    try:
        eng = RemoteEngine(args.endpoint, keys=keys,
                           identity=args.session.encode() if args.session else None)
    except ValueError as e:
        p.error(str(e))
    print(f"othello-remote: session {eng.identity.decode(errors='replace')} "
          f"(--session to resume)", file=sys.stderr, flush=True)
    assert eng.sock is not None
    # One thread owns the socket: poll it together with stdin.
    poller = zmq.Poller()
    poller.register(eng.sock, zmq.POLLIN)
    stdin_fd = sys.stdin.fileno()
    poller.register(stdin_fd, zmq.POLLIN)
    stdin_open = True
    done = False      # input ended or `quit` was sent: leave once the answers are in
    sent = answered = 0   # lines sent; GTP answers received (each ends with an empty line)
    last = time.monotonic()
    try:
        while True:
            events = dict(poller.poll(100))
            now = time.monotonic()
            if eng.sock in events:
                while eng.sock.poll(0):
                    _, line = eng.read_line(0)
                    print(line, flush=True)
                    answered += line == ""
                    last = now
            if stdin_open and stdin_fd in events:
                line = sys.stdin.readline()
                if not line:
                    stdin_open = False
                    poller.unregister(stdin_fd)
                    done = True
                else:
                    eng.send(line.rstrip("\n"))
                    sent += bool(line.strip()) and not line.lstrip().startswith("#")
                    last = now
                    done = done or line.strip() == "quit"
            # Piped input ends long before a search (or a server still starting) answers: wait
            # while GTP answers are missing, up to the client's timeout of silence (NBoard
            # commands may have no answer, so they end by the timeout).
            idle = now - last
            if done and (idle > eng.timeout or (answered >= sent and idle > 0.5)):
                break
    except KeyboardInterrupt:
        pass
    eng.close()
    return 0
