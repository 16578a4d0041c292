"""A judge backend that forwards to a long-running engine over ZeroMQ.

The judge's process stays small (no numba, no tree) and the engine keeps its tree between
calls: boards are turned back into moves (``play``) whenever the new board follows from the
last one, and only an unrelated board is sent whole (``othello-setboard``).  The search runs as
``lz-genmove_analyze`` under a Canadian clock of one move, so the engine stops by the deadline
and streams its best-so-far, which feeds the anytime candidate list.
"""

from __future__ import annotations

import time
from pathlib import Path

from clients.backend import Progress, moves_between
from clients.engine_client import EngineClient, EngineError
from clients.remote import RemoteEngine
from engine_server.game import Color, Position, parse_move, square_name
from engine_server.log import get_logger
from engine_server.search.limits import MoveStat, SearchResult

log = get_logger("judge.remote")

NETWORK_MARGIN = 0.05   # seconds kept for the last reply to travel back
ENGINE_LAG = 0.15       # the engine's own lag buffer (TimeManager.lag_buffer)


def _color(side: Color) -> str:
    return "black" if side == Color.BLACK else "white"


def parse_info(line: str) -> list[MoveStat]:
    """``info move D3 visits 12 winrate 5100 prior ... pv D3 C5 info move ...`` -> MoveStats."""
    stats: list[MoveStat] = []
    for chunk in line.split("info move ")[1:]:
        f = chunk.split()
        try:
            move = parse_move(f[0])
            kv = dict(zip(f[1:-1:2], f[2::2]))
            visits = int(kv.get("visits", "0"))
            win = int(kv.get("winrate", "5000")) / 10000.0
        except (ValueError, IndexError):
            continue
        stats.append(MoveStat(move=move, visits=visits, value=2 * win - 1))
    return stats


class RemoteBackend:
    def __init__(self, endpoint: str, rules: str = "reversed", timeout: float = 30.0,
                 keys: tuple[str | Path, str | Path] | None = None,
                 engine: EngineClient | None = None):
        self.engine = engine or RemoteEngine(endpoint, protocol="gtp", timeout=timeout, keys=keys)
        self.rules = rules
        self._remote: Position | None = None  # the position on the engine's board
        self.engine.command(f"othello-rules {rules}")

    def reset(self) -> None:
        self._remote = None

    def _sync(self, position: Position) -> None:
        pos = self._remote
        line = moves_between(pos, position) if pos is not None else None
        if pos is not None and line is not None:
            try:
                for m in line:
                    self.engine.play(_color(pos.side), square_name(m))
                    pos = pos.play(m)
                self._remote = pos
                return
            except EngineError as e:
                log.warning("remote_replay_failed", error=str(e))
        self.engine.command(f"othello-setboard {position.to_string()} "
                            f"{'X' if position.side == Color.BLACK else 'O'}")
        self._remote = position

    def search(self, position: Position, deadline: float,
               progress: Progress | None = None) -> SearchResult:
        t0 = time.monotonic()
        self._sync(position)
        budget = max(0.02, deadline - time.monotonic() - NETWORK_MARGIN)
        self.engine.command(f"time_settings 0 {budget + ENGINE_LAG:.3f} 1")
        moves: list[MoveStat] = []
        best = None
        # The engine answers by its own deadline; the 5 s beyond it only catch a lost engine.
        analysis = self.engine.stream(f"lz-genmove_analyze {_color(position.side)} 5",
                                      timeout=max(0.05, deadline + 5.0 - time.monotonic()))
        for line in analysis:
            if line.startswith("info "):
                moves = parse_info(line) or moves
                if moves and progress is not None:
                    progress(SearchResult(best_move=moves[0].move, moves=moves,
                                          pv=[moves[0].move], root_value=moves[0].value,
                                          final=False, agent="remote"))
            elif line.startswith("play "):
                best = parse_move(line.split()[1])
        if best is None:
            raise EngineError("the engine ended lz-genmove_analyze without a move")
        self._remote = position.play(best)  # genmove played it on the engine's board
        return SearchResult(best_move=best, moves=moves, pv=[best],
                            root_value=moves[0].value if moves else 0.0,
                            elapsed=time.monotonic() - t0, agent="remote")
