"""Client side of an engine subprocess speaking GTP or NBoard over pipes.

Used by the timing benchmark, the tests and the referee.  Reading happens on a thread so that a
hung engine cannot block the caller past its timeout.
"""

from __future__ import annotations

import os
import re
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


class EngineTimeout(TimeoutError):
    pass


class EngineProcess:
    def __init__(self, args: list[str], env: dict | None = None, cwd: str | None = None,
                 stderr=subprocess.DEVNULL):
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=stderr, text=True, bufsize=1, env=env, cwd=cwd)
        self._lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    @classmethod
    def ours(cls, *engine_args: str, stderr=subprocess.DEVNULL) -> "EngineProcess":
        env = dict(os.environ)
        env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
        return cls([sys.executable, "-m", "engine_server", *engine_args], env=env,
                   cwd=str(REPO), stderr=stderr)

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line.rstrip("\n"))
        self._lines.put(None)

    def send(self, line: str) -> float:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        return time.monotonic()

    def read_line(self, timeout: float = 30.0) -> str:
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise EngineTimeout(f"no output within {timeout} s") from None
        if line is None:
            raise EOFError("engine closed its output")
        return line

    def read_until(self, predicate, timeout: float = 30.0) -> list[str]:
        end = time.monotonic() + timeout
        got = []
        while True:
            line = self.read_line(max(0.0, end - time.monotonic()))
            got.append(line)
            if predicate(line):
                return got

    def gtp(self, command: str, timeout: float = 60.0) -> str:
        """Send a GTP command, return the response text (raises on '?')."""
        self.send(command)
        lines = []
        while True:
            line = self.read_line(timeout)
            if line == "" and lines:
                break
            if line == "" and not lines:
                continue
            lines.append(line)
        head = lines[0]
        if head.startswith("?"):
            raise RuntimeError(f"{command!r} failed: {head}")
        first = re.sub(r"^=\d*\s?", "", head)
        return "\n".join([first] + lines[1:]).strip()

    def close(self, timeout: float = 10.0) -> int:
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
