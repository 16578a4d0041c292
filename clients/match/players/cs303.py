"""CS303 ``AI`` files as players (``cs303:PATH.py``), run as the course judge runs them."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from clients.engine_client import EngineTimeout, PipeChannel
from clients.engine_process import EngineProcess
from engine_server.game import PASS, Color, Game

from .base import (
    Player,
    PlayerCrash,
    PlayerIllegal,
    PlayerProtocolError,
    PlayerSpec,
    PlayerTimeout,
    Reply,
    TimeControl,
    Turn,
)

CS303_DEFAULT_TIME_OUT = 5.0  # the course judge's limit, when --move-time does not say


def _kill(proc: EngineProcess | PipeChannel) -> None:
    proc.kill()



class Cs303Player(Player):
    """A CS303 ``AI`` class in its own worker process (``clients.match.cs303_worker``), one
    process per game as the course platform runs one judge process per game.  The worker calls
    ``AI(8, color, time_out).go(board)`` under the judge's SIGALRM timer and returns
    ``candidate_list``; its last element is the move, an empty list a pass."""

    wants_pass_turns = True

    def __init__(self, spec: PlayerSpec, tc: TimeControl):
        super().__init__(spec, tc)
        self.proc: EngineProcess | None = None
        self.time_out = tc.move_time if tc.move_time is not None else CS303_DEFAULT_TIME_OUT
        self.engine_name = Path(spec.target).stem if spec.name == spec.text else spec.name

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
            raise PlayerCrash(f"the AI's process exited in {where} (code "
                              f"{self.proc.proc.poll()})") from None
        try:
            reply = json.loads(line)
        except json.JSONDecodeError:
            raise PlayerProtocolError(f"worker said {line[:200]!r}") from None
        if reply.get("error"):
            raise PlayerCrash(f"exception in {where}: {reply['error']}")
        return reply

    def new_game(self, game: Game, color: Color, seed: int) -> None:
        self.kill()  # a fresh process each game: module and class state start clean
        args = [sys.executable, "-m", "clients.match.cs303_worker", str(Path(self.spec.target))]
        env = dict(os.environ)
        repo = str(Path(__file__).resolve().parents[3])
        env["PYTHONPATH"] = repo + os.pathsep + env.get("PYTHONPATH", "")
        self.proc = EngineProcess(args, env=env)
        self._request({"op": "load", "seed": seed}, self.tc.setup, "import")
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

