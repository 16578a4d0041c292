"""Client of the engine's ZeroMQ server (framing in engine_server/serve/zmq_server.py).

``RemoteEngine`` keeps one DEALER socket with a stable routing id, so the server keeps the same
session (game, tree) across reconnects.  A request that gets no answer in time is retried on a
fresh socket with the *same* sequence number ("lazy pirate"): the server answers a repeated
number from memory instead of executing it again, so no move is played twice.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import zmq
import zmq.auth

from engine_server.log import get_logger

log = get_logger("remote")


class RemoteError(RuntimeError):
    """The engine answered with an error, or could not be reached."""


class RemoteEngine:
    def __init__(self, endpoint: str, protocol: str = "gtp", timeout: float = 10.0,
                 retries: int = 3, keys: tuple[str | Path, str | Path] | None = None,
                 identity: bytes | None = None, context: zmq.Context | None = None):
        """``keys = (client_secret_key_file, server_public_key_file)`` enables CURVE."""
        if protocol not in ("gtp", "nboard"):
            raise ValueError(f"protocol must be gtp or nboard, got {protocol!r}")
        self.endpoint = endpoint
        self.protocol = protocol
        self.timeout = timeout
        self.retries = retries
        self.keys = keys
        self.identity = identity or b"c-" + os.urandom(8).hex().encode()
        self.ctx = context or zmq.Context.instance()
        self.seq = 0
        self.sock: zmq.Socket | None = None
        self._pending: list[tuple[int, str]] = []
        self._connect()

    def _connect(self) -> None:
        if self.sock is not None:
            self.sock.close(0)
        s = self.ctx.socket(zmq.DEALER)
        s.setsockopt(zmq.LINGER, 0)
        s.setsockopt(zmq.ROUTING_ID, self.identity)
        if self.keys is not None:
            pub, sec = zmq.auth.load_certificate(str(self.keys[0]))
            server_pub, _ = zmq.auth.load_certificate(str(self.keys[1]))
            s.curve_secretkey = sec
            s.curve_publickey = pub
            s.curve_serverkey = server_pub
        s.connect(self.endpoint)
        self.sock = s

    # --- raw lines ------------------------------------------------------------------------------
    def send(self, line: str) -> int:
        self.seq += 1
        self._send(self.seq, line)
        return self.seq

    def _send(self, seq: int, line: str) -> None:
        assert self.sock is not None
        self.sock.send_multipart([str(seq).encode(), line.encode("utf-8")])

    def read_line(self, timeout: float | None = None) -> tuple[int, str]:
        """The next line from the engine as ``(seq, line)``; TimeoutError when none comes."""
        if self._pending:
            return self._pending.pop(0)
        assert self.sock is not None
        t = self.timeout if timeout is None else timeout
        if not self.sock.poll(int(t * 1000)):
            raise TimeoutError(f"no reply from {self.endpoint} within {t} s")
        frames = self.sock.recv_multipart()
        if len(frames) != 2:
            raise RemoteError(f"malformed reply frames: {frames!r}")
        return int(frames[0]), frames[1].decode("utf-8")

    # --- request/response with retries --------------------------------------------------------
    def request(self, line: str, done, timeout: float | None = None) -> list[str]:
        """Send ``line`` and collect reply lines of that request until ``done(lines)``."""
        self.seq += 1
        seq = self.seq
        t = self.timeout if timeout is None else timeout
        for attempt in range(self.retries + 1):
            self._send(seq, line)
            lines: list[str] = []
            end = time.monotonic() + t
            try:
                while True:
                    left = end - time.monotonic()
                    if left <= 0:
                        raise TimeoutError
                    rseq, text = self.read_line(left)
                    if rseq != seq:
                        continue  # a late line of an earlier request
                    lines.append(text)
                    if done(lines):
                        return lines
            except TimeoutError:
                log.warning("remote_retry", endpoint=self.endpoint, attempt=attempt + 1,
                            line=line[:80])
                self._connect()
        raise RemoteError(f"no answer to {line!r} from {self.endpoint} after "
                          f"{self.retries + 1} tries")

    def gtp(self, command: str, timeout: float | None = None) -> str:
        """A GTP command; returns the result text, raises RemoteError on '?'."""
        lines = self.request(command, lambda ls: len(ls) >= 2 and ls[-1] == "", timeout)
        head = lines[0]
        if head.startswith("?"):
            raise RemoteError(f"{command!r} failed: {head}")
        first = re.sub(r"^=\d*\s?", "", head)
        return "\n".join([first] + lines[1:-1]).strip()

    def nboard(self, command: str, until: str, timeout: float | None = None) -> list[str]:
        """An NBoard command and the lines up to one starting with ``until``."""
        return self.request(command, lambda ls: ls[-1].startswith(until), timeout)

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close(0)
            self.sock = None

    def __enter__(self) -> "RemoteEngine":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def interactive_main(argv: list[str] | None = None) -> int:
    """``othello-remote ENDPOINT``: type protocol lines, see the engine's replies."""
    import argparse
    import sys

    p = argparse.ArgumentParser(prog="othello-remote",
                                description="Talk to a remote othello-engine by hand.")
    p.add_argument("endpoint", help="e.g. tcp://127.0.0.1:5555")
    p.add_argument("--client-key", help="client secret key file (CURVE)")
    p.add_argument("--server-key", help="server public key file (CURVE)")
    args = p.parse_args(argv)
    keys = (args.client_key, args.server_key) if args.client_key and args.server_key else None
    eng = RemoteEngine(args.endpoint, keys=keys)
    assert eng.sock is not None
    # One thread owns the socket: poll it together with stdin.
    poller = zmq.Poller()
    poller.register(eng.sock, zmq.POLLIN)
    stdin_fd = sys.stdin.fileno()
    poller.register(stdin_fd, zmq.POLLIN)
    stdin_open = True
    quit_at = None
    try:
        while True:
            events = dict(poller.poll(100))
            if eng.sock in events:
                while eng.sock.poll(0):
                    _, line = eng.read_line(0)
                    print(line, flush=True)
            if stdin_open and stdin_fd in events:
                line = sys.stdin.readline()
                if not line:
                    stdin_open = False
                    poller.unregister(stdin_fd)
                    quit_at = time.monotonic() + 0.5
                else:
                    eng.send(line.rstrip("\n"))
                    if line.strip() == "quit":
                        quit_at = time.monotonic() + 0.5
            if quit_at is not None and time.monotonic() > quit_at:
                break
    except KeyboardInterrupt:
        pass
    eng.close()
    return 0
