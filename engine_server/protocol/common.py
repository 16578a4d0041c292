"""Input cleaning and the shared pieces of the text protocols (no I/O)."""

from __future__ import annotations

import math

from engine_server.game import PASS, square_name
from engine_server.search.limits import Limits, SearchResult


def clean_line(raw: str, cut_comments: bool = False) -> str:
    """Drop ``\\r`` and other control characters (tabs become spaces), optionally cut a GTP
    ``#`` comment, and strip the ends."""
    out = []
    for ch in raw:
        if ch == "\t":
            out.append(" ")
        elif ch >= " " and ch != "\x7f":
            out.append(ch)
    line = "".join(out)
    if cut_comments:
        line = line.split("#", 1)[0]
    return line.strip()


def depth_limits(depth: int) -> Limits:
    """NBoard ``set depth N``: the depth itself for alpha-beta agents, and for MCTS agents a
    playout budget growing as 2000 * N^2 (depth 1: 2 000, depth 10: 200 000, depth 20:
    800 000, depth 60: 7 200 000)."""
    d = max(1, min(int(depth), 60))
    return Limits(playouts=2000 * d * d, depth=d)


def move_text(move: int, upper: bool = True) -> str:
    if move == PASS:
        return "PA" if upper else "pass"
    s = square_name(move)
    return s.upper() if upper else s


def lcb(win_rate: float, visits: int) -> float:
    if visits <= 0:
        return 0.0
    return max(0.0, win_rate - 1.96 * math.sqrt(max(win_rate * (1 - win_rate), 1e-9) / visits))


def depth_token(result: SearchResult, depth: int) -> str:
    """NBoard's depth field: ``100%`` for an exact solve, ``100%W`` for a win/draw/loss solve,
    the depth reached by a depth-first search (``22@93%`` when Multi-ProbCut cut at 93%
    confidence, as Edax writes it), else the set depth."""
    if result.exact:
        return "100%"
    if result.wld:
        return "100%W"
    if result.search_nodes > 0 and result.iterations > 0:
        d = result.iterations
        return f"{d}@{result.selectivity}%" if result.selectivity < 100 else str(d)
    return str(depth)
