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
    SETUP_TIMEOUT,
    Player,
    PlayerCrash,
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

    def _request(self, msg: dict, timeout: float) -> dict:
        assert self.proc is not None
        try:
            self.proc.send(json.dumps(msg))
            line = self.proc.read_line(timeout)
        except EngineTimeout:
            raise PlayerTimeout(f"no answer within {timeout:.3g} s") from None
        except (EOFError, BrokenPipeError, OSError):
            raise PlayerCrash(f"AI process exited (code {self.proc.proc.poll()})") from None
        try:
            reply = json.loads(line)
        except json.JSONDecodeError:
            raise PlayerProtocolError(f"worker said {line[:200]!r}") from None
        if reply.get("error"):
            raise PlayerCrash(reply["error"])
        return reply

    def new_game(self, game: Game, color: Color, seed: int) -> None:
        self.kill()  # a fresh process each game: module and class state start clean
        args = [sys.executable, "-m", "clients.match.cs303_worker", str(Path(self.spec.target))]
        env = dict(os.environ)
        repo = str(Path(__file__).resolve().parents[3])
        env["PYTHONPATH"] = repo + os.pathsep + env.get("PYTHONPATH", "")
        self.proc = EngineProcess(args, env=env)
        self._request({"op": "load", "seed": seed}, SETUP_TIMEOUT)
        self._request({"op": "new", "color": -1 if color == Color.BLACK else 1,
                       "time_out": self.time_out}, self.time_out + SETUP_TIMEOUT)

    def genmove(self, turn: Turn) -> Reply:
        board = turn.game.position.to_cs303().tolist()
        reply = self._request({"op": "go", "board": board}, turn.wait or 1e9)
        cands = reply.get("candidates", [])
        if not cands:
            return Reply(PASS, stats={"timed_out": reply.get("timed_out", False)})
        last = cands[-1]
        try:
            r, c = int(last[0]), int(last[1])
            if len(last) != 2 or not (0 <= r < 8 and 0 <= c < 8):
                raise ValueError
        except (TypeError, ValueError, IndexError):
            raise PlayerProtocolError(f"candidate_list[-1] = {last!r} is not a (row, col) on "
                                      "the board") from None
        return Reply(c + 8 * r, stats={"timed_out": reply.get("timed_out", False)})

    def close(self) -> None:
        self.kill()

    def kill(self) -> None:
        if self.proc is not None:
            _kill(self.proc)
            self.proc = None

