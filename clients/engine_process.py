"""An engine subprocess speaking GTP or NBoard over pipes: an :class:`EngineClient` over a
:class:`PipeChannel` (clients/channels.py), plus the raw line calls the timing benchmark,
the tests and the CS303 worker use (``send``, ``read_line``, ``read_until``).
"""

from __future__ import annotations

import subprocess
import time
from typing import IO, Callable, Sequence

from clients.channels import REPO, PipeChannel, engine_command, engine_env
from clients.engine_client import EngineClient, EngineTimeout

__all__ = ["REPO", "EngineProcess", "EngineTimeout"]


class EngineProcess(EngineClient):
    channel: PipeChannel

    def __init__(self, args: Sequence[str], env: dict[str, str] | None = None,
                 cwd: str | None = None, stderr: int | IO[str] | None = subprocess.DEVNULL):
        super().__init__(PipeChannel.spawn(args, env=env, cwd=cwd, stderr=stderr), timeout=60.0)

    @classmethod
    def ours(cls, *engine_args: str,
             stderr: int | IO[str] | None = subprocess.DEVNULL) -> "EngineProcess":
        return cls(engine_command(*engine_args), env=engine_env(), cwd=str(REPO), stderr=stderr)

    @property
    def proc(self) -> "subprocess.Popen[str]":
        return self.channel.proc

    def send(self, line: str) -> float:
        """Send one line; the time it left (``time.monotonic()``), from which latencies count."""
        self.channel.send(line)
        return time.monotonic()

    def read_line(self, timeout: float = 30.0) -> str:
        return self.channel.read_line(time.monotonic() + timeout)

    def read_until(self, predicate: Callable[[str], bool], timeout: float = 30.0) -> list[str]:
        """Lines up to and including the first that satisfies ``predicate``."""
        end = time.monotonic() + timeout
        got = []
        while True:
            line = self.channel.read_line(end)
            got.append(line)
            if predicate(line):
                return got

    def gtp(self, command: str, timeout: float = 60.0) -> str:
        """Send a GTP command, return the response text (EngineCommandError on '?')."""
        return self.command(command, timeout)

    def close(self, timeout: float = 10.0) -> int:
        return self.channel.close(timeout)

    def kill(self) -> None:
        self.channel.kill()
