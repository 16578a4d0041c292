"""CS303 ``AI`` files as players (``cs303:PATH.py``), run as the course judge runs them."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO

from clients.channels import PipeChannel
from clients.engine_client import EngineTimeout
from clients.engine_process import EngineProcess
from engine_server.game import PASS, Color, Game
from engine_server.log import get_logger

from .base import (
    Player,
    PlayerCrash,
    PlayerError,
    PlayerIllegal,
    PlayerMemory,
    PlayerProtocolError,
    PlayerSpec,
    PlayerTimeout,
    Reply,
    TimeControl,
    Turn,
)

log = get_logger("match.cs303")

CS303_DEFAULT_TIME_OUT = 5.0  # the course judge's limit, when --move-time does not say
# Kept in step with clients.match.cs303_worker.MEMORY_EXIT, which is not imported here: the
# worker module imports numpy, which a referee that seats no CS303 player need not load.
WORKER_MEMORY_EXIT = 86
# What a process says on stderr as it dies of a failed allocation: Python's fatal errors, C and
# C++ libraries (LLVM under numba, OpenBLAS), glibc's malloc.
_OUT_OF_MEMORY = re.compile(r"MemoryError|Cannot allocate memory|out of memory|bad_alloc|"
                            r"allocation failed|memory allocation", re.IGNORECASE)
STDERR_TAIL = 4096


def _kill(proc: EngineProcess | PipeChannel) -> None:
    proc.kill()


def _exit_text(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            pass
    return f"exit code {code}"


class _StderrTail:
    """The last bytes a worker wrote to stderr, read as they come so that the pipe never fills
    and blocks it; read after it died, to tell a death from memory from another."""

    def __init__(self, stream: IO[str] | None):
        self._tail = b""
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True,
                                        name="cs303-stderr")
        self._thread.start()

    def _read(self, stream: IO[str] | None) -> None:
        if stream is None:
            return
        raw = stream.buffer  # type: ignore[attr-defined]
        try:
            while chunk := raw.read1(STDERR_TAIL):
                self._tail = (self._tail + chunk)[-STDERR_TAIL:]
        except (OSError, ValueError):
            pass
        finally:
            try:
                stream.close()
            except OSError:
                pass

    def text(self, wait: float) -> str:
        """The tail, once the process's stderr is closed or ``wait`` seconds have passed."""
        self._thread.join(wait)
        return self._tail.decode("utf-8", "replace")



class Cs303Player(Player):
    """A CS303 ``AI`` class in its own worker process (``clients.match.cs303_worker``), one
    process per game as the course platform runs one judge process per game.  The worker calls
    ``AI(8, color, time_out).go(board)`` under the judge's SIGALRM timer and returns
    ``candidate_list``; its last element is the move, an empty list a pass.  The worker's data
    segment is capped at its start-up size plus ``tc.cs303_memory_mb`` (the course's 100 MB);
    going past it loses the game with ``memory limit exceeded``."""

    wants_pass_turns = True

    def __init__(self, spec: PlayerSpec, tc: TimeControl):
        super().__init__(spec, tc)
        self.proc: EngineProcess | None = None
        self.stderr: _StderrTail | None = None
        self.time_out = tc.move_time if tc.move_time is not None else CS303_DEFAULT_TIME_OUT
        self.memory_mb = tc.cs303_memory_mb
        # What the worker reported of its memory limit (baseline and limit in bytes).
        self.memory: dict = {}
        self.engine_name = Path(spec.target).stem if spec.name == spec.text else spec.name

    def _over_memory(self, where: str, what: str) -> PlayerMemory:
        return PlayerMemory(f"memory limit exceeded ({self.memory_mb:g} MB) in {where}: {what}")

    def _died(self, where: str) -> PlayerError:
        """The fault of a worker that exited in ``where``: the memory limit when it says so (the
        worker's own exit status, an out-of-memory message on stderr) or was killed with SIGKILL,
        the out-of-memory killer's signal, nothing here sending it mid-step; else a crash."""
        assert self.proc is not None
        try:
            code = self.proc.proc.wait(5)
        except subprocess.TimeoutExpired:
            code = None
        tail = self.stderr.text(5) if self.stderr is not None else ""
        said = [line.strip() for line in tail.splitlines() if _OUT_OF_MEMORY.search(line)]
        how = _exit_text(code)
        if self.memory_mb is not None:
            if code == WORKER_MEMORY_EXIT:
                return self._over_memory(where, "MemoryError, with no room left to report more")
            if said:
                return self._over_memory(where, f"the AI's process died ({how}) saying "
                                                f"{said[-1][:300]!r}")
            if code == -signal.SIGKILL:
                return self._over_memory(where, "the AI's process was killed by SIGKILL, the "
                                                "out-of-memory killer's signal")
        return PlayerCrash(f"the AI's process exited in {where} (code {code})")

    def _request(self, msg: dict, timeout: float, where: str) -> dict:
        """One request to the worker; ``where`` names the step as the course does
        (``import``, ``__init__``, ``go``) in the fault it can end in."""
        assert self.proc is not None
        try:
            self.proc.send(json.dumps(msg))
            line = self.proc.read_line(timeout)
        except EngineTimeout:
            raise PlayerTimeout(f"{where} did not return within {timeout:.3g} s") from None
        except (EOFError, BrokenPipeError, OSError):
            raise self._died(where) from None
        try:
            reply = json.loads(line)
        except json.JSONDecodeError:
            raise PlayerProtocolError(f"worker said {line[:200]!r}") from None
        if reply.get("error"):
            if reply.get("memory") and self.memory_mb is not None:
                raise self._over_memory(where, reply["error"])
            raise PlayerCrash(f"exception in {where}: {reply['error']}")
        return reply

    def new_game(self, game: Game, color: Color, seed: int) -> None:
        self.kill()  # a fresh process each game: module and class state start clean
        args = [sys.executable, "-m", "clients.match.cs303_worker", str(Path(self.spec.target))]
        if self.memory_mb is not None:
            args += ["--memory-mb", f"{self.memory_mb:g}"]
        env = dict(os.environ)
        repo = str(Path(__file__).resolve().parents[3])
        env["PYTHONPATH"] = repo + os.pathsep + env.get("PYTHONPATH", "")
        self.proc = EngineProcess(args, env=env, stderr=subprocess.PIPE)
        self.stderr = _StderrTail(self.proc.proc.stderr)
        loaded = self._request({"op": "load", "seed": seed}, self.tc.setup, "import")
        self.memory = loaded.get("memory") or {}
        if self.memory_mb is not None and not self.memory.get("applied"):
            log.warning("cs303_memory_limit_not_applied", player=self.spec.name,
                        why=self.memory.get("why", "the worker did not say"))
        self._request({"op": "new", "color": -1 if color == Color.BLACK else 1,
                       "time_out": self.time_out}, self.time_out + self.tc.setup, "__init__")

    def genmove(self, turn: Turn) -> Reply:
        """The last element of ``candidate_list``, read as the course judge reads it; each
        fault is named in the course's words (the project PDF, its checker and judge):
        ``timeout`` (go ran past time_out with nothing to play), ``exception in go``, an
        ``empty candidate_list`` while a move exists, a square ``outside the board`` or
        ``occupied``, a move that ``flips nothing``."""
        pos = turn.game.position
        board = pos.to_cs303().tolist()
        reply = self._request({"op": "go", "board": board}, turn.wait or 1e9, "go")
        timed_out = bool(reply.get("timed_out", False))
        # The judge's verdict, not the referee's clock (which counts the process round trip):
        # cut by the timer, or returned after time_out (a go that swallowed the timer's
        # exception).  The move is still played: the judge plays the last element.
        over = timed_out or float(reply.get("elapsed", 0.0)) > self.time_out
        stats = {"timed_out": timed_out, "over_limit": over}
        cands = reply.get("candidates", [])
        legal = ", ".join(f"({m // 8}, {m % 8})" for m in pos.legal_moves() if m != PASS)
        if not cands:
            if pos.must_pass():
                return Reply(PASS, stats=stats)
            if timed_out:
                raise PlayerTimeout(f"timeout: go ran past time_out ({self.time_out:g} s) with "
                                    f"an empty candidate_list, so the judge had no move to "
                                    f"play (legal: {legal})", waited=False)
            raise PlayerIllegal(f"empty candidate_list (a pass) while moves exist: {legal}")
        last = cands[-1]
        cut = " (go ran past time_out; the judge plays the last element)" if timed_out else ""
        try:
            if len(last) != 2:
                raise ValueError
            r, c = int(last[0]), int(last[1])
        except (TypeError, ValueError, IndexError):
            raise PlayerIllegal(f"candidate_list[-1] = {last!r} is not a (row, col) "
                                f"tuple{cut}") from None
        if pos.must_pass():
            raise PlayerIllegal(f"candidate_list ends with ({r}, {c}) but there is no legal "
                                f"move: it must stay empty (a pass){cut}")
        if not (0 <= r < 8 and 0 <= c < 8):
            raise PlayerIllegal(f"candidate_list[-1] = ({r}, {c}) is outside the board{cut}")
        move = c + 8 * r
        if (pos.black | pos.white) >> move & 1:
            raise PlayerIllegal(f"candidate_list[-1] = ({r}, {c}) is an occupied square{cut}")
        if not pos.is_legal(move):
            raise PlayerIllegal(f"candidate_list[-1] = ({r}, {c}) flips nothing (legal: "
                                f"{legal}){cut}")
        return Reply(move, stats=stats)

    def fault_detail(self, kind: str, detail: str) -> str:
        """The course's words for the referee's faults: the game clock is the platform's
        180 s per battle ("excess total time"); a move over the limit is a timeout (a go the
        judge's timer did not cut: its exception swallowed by an except clause, or held by a
        long C call)."""
        if kind == "clock":
            return f"excess total time: {detail}"
        return f"timeout: {detail}"

    def close(self) -> None:
        self.kill()

    def kill(self) -> None:
        if self.proc is not None:
            _kill(self.proc)
            self.proc = None
            self.stderr = None  # its reader closes the pipe at the dead process's end of file

