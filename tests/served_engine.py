"""An engine process serving ZeroMQ (no stdio protocol), for tests that talk to it as a remote
engine: its stderr read all along, and its threads' stacks at hand when it stops answering.
(``clients.engine_process.EngineProcess`` is the other kind: an engine driven over its pipes.)

A test that reads only the first lines of a child's stderr leaves the rest in the pipe; a child
that writes more than the pipe holds (64 KiB) then blocks for good, which reads as an engine
that stopped answering.  Here a thread reads every line, so the child never blocks on stderr,
and :meth:`ServedEngine.stacks` asks a stuck engine for its threads' stacks (faulthandler, on
SIGABRT) so that a failure says where it was.
"""

from __future__ import annotations

import signal
import subprocess
import threading
import time

from clients.channels import REPO, engine_command, engine_env


class ServedEngine:
    """``python -m engine_server ARGS`` with stdin and stdout closed to it."""

    def __init__(self, args: list[str]):
        env = dict(engine_env(), PYTHONFAULTHANDLER="1")
        self.proc = subprocess.Popen(engine_command(*args),
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True, cwd=REPO, env=env)
        self.lines: list[str] = []
        self._new = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            with self._new:
                self.lines.append(line.rstrip("\n"))
                self._new.notify_all()
        with self._new:
            self._new.notify_all()

    def line(self, index: int, timeout: float) -> str:
        """Its stderr line ``index`` (0 is the first), waiting for it; '' if it exited first."""
        deadline = time.monotonic() + timeout
        with self._new:
            while len(self.lines) <= index:
                left = deadline - time.monotonic()
                if left <= 0 or not self._reader.is_alive():
                    break
                self._new.wait(min(left, 0.5))
            return self.lines[index] if len(self.lines) > index else ""

    def said(self) -> str:
        with self._new:
            return "\n".join(self.lines)

    def stacks(self, timeout: float = 10.0) -> str:
        """Everything it wrote to stderr, with its threads' stacks if it was still running (it is
        aborted to get them)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGABRT)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._reader.join(timeout)
        return self.said()

    def terminate(self, timeout: float) -> int:
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self._reader.join(10)
