"""What the GTP and NBoard handlers share: NBoard levels as limits, a win rate's lower bound,
and a search result's depth token."""

from __future__ import annotations

import math

from engine_server.search.limits import Limits, SearchResult
from protocol import nboard as nb


def depth_limits(depth: int) -> Limits:
    """NBoard ``set depth N``: the depth itself for alpha-beta agents, and for MCTS agents a
    playout budget growing as 2000 * N^2 (depth 1: 2 000, depth 10: 200 000, depth 20:
    800 000, depth 60: 7 200 000)."""
    d = max(1, min(int(depth), 60))
    return Limits(playouts=2000 * d * d, depth=d)


def lcb(win_rate: float, visits: int) -> float:
    if visits <= 0:
        return 0.0
    return max(0.0, win_rate - 1.96 * math.sqrt(max(win_rate * (1 - win_rate), 1e-9) / visits))


def depth_token(result: SearchResult, depth: int) -> str:
    """NBoard's depth field: ``100%`` for an exact solve, ``100%W`` for a win/draw/loss solve,
    the depth reached by a depth-first search (``22@93%`` when Multi-ProbCut cut at 93%
    confidence, as Edax writes it), else the set depth."""
    if not (result.exact or result.wld) and result.search_nodes > 0 and result.iterations > 0:
        return nb.depth_token(False, False, result.iterations, result.selectivity)
    return nb.depth_token(result.exact, result.wld, depth)
