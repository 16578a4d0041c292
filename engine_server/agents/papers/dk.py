"""The MCTS blog post ("A Reversi Playing Agent and the MCTS Algorithm"): MCTS with domain
knowledge.

Each iteration selects a leaf by UCT (w/n + c*sqrt(ln N / n)), expands it with all its
children and plays ``nSims`` pseudo-random playouts from it; wins and the leaf's mobility are
back-propagated (mobility to the nodes with the leaf's side to move).  After ``max_iter``
iterations the move with the highest adjusted score is played:

    UCTFinal = UCT + InnerScore - GreedPenalty - PositionPenalty
    InnerScore   = a * UCT / sqrt((i - 3.5)^2 + (j - 3.5)^2)
    GreedPenalty = (own - opp) / (own + opp)^b    (disc counts after the move)
    PositionPenalty = c * UCT on X-squares, d * UCT on C-squares

Our readings of the post, where it is ambiguous: the sign factor (-1)^t of the greed penalty is
taken as "from the mover's point of view"; the inner-score denominator is the distance to the
centre (the post's ``(j-3.5^2)`` is a typo).  The post gives no values for a, b, c, d; the
defaults below are ours (0 <= d <= c < 1 as the post requires).  Under reversed rules the
position penalty with weight c falls on the corners instead of the X-squares and d is unused
(the CS303 report: corners are worthless there).  ``mobility`` (default 0, our extension) adds that
weight times the child's mean back-propagated mobility, scaled to [0, 1] by /30.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

from engine_server.agents.base import COMMON_PARAMS, TREE_PARAMS, Agent, AgentInfo, Param
from engine_server.agents.common import table_maker
from engine_server.agents.tree_agent import TreeAgent
from engine_server.game import REVERSED, Position
from engine_server.game.valuemaps import C_SQUARES, CORNERS, X_SQUARES
from engine_server.search import mcts as T
from engine_server.search.limits import MoveStat
from engine_server.search.mcts.driver import Budget, TreeSearch

from .playouts import AVOID


def adjusted_score(move: int, n: float, win_rate: float, total: float, position: Position,
                   p: Mapping[str, Any], mobility: float = 0.0) -> float:
    """The MCTS blog post's UCTFinal of one move from its visits ``n`` and win rate (see module
    doc)."""
    if n <= 0:
        return float("inf")
    uct = win_rate + p["uct_c"] * math.sqrt(math.log(max(total, 1.0)) / n)
    if move == 64:
        return uct
    r, c = divmod(move, 8)
    inner = p["a"] * uct / math.sqrt((r - 3.5) ** 2 + (c - 3.5) ** 2)
    after = position.play(move)
    own = after.black.bit_count() if position.side == 0 else after.white.bit_count()
    opp = after.white.bit_count() if position.side == 0 else after.black.bit_count()
    greed = (own - opp) / (own + opp) ** p["b"]
    bit = 1 << move
    if int(position.rules) == REVERSED:
        pen = p["c"] * uct if bit & int(CORNERS) else 0.0
    else:
        pen = (p["c"] * uct if bit & int(X_SQUARES) else
               p["d"] * uct if bit & int(C_SQUARES) else 0.0)
    return uct + inner - greed - pen + p.get("mobility", 0.0) * mobility / 30.0


def adjusted_scores(links: np.ndarray, stats: np.ndarray, first: int, count: int,
                    position: Position, p: Mapping[str, Any]) -> dict[int, float]:
    total = sum(stats[i, T.N] for i in range(first, first + count))
    out = {}
    for i in range(first, first + count):
        n = stats[i, T.N]
        win_rate = 0.5 * (stats[i, T.W] / n + 1.0) if n > 0 else 0.0
        mob = stats[i, T.MOB] / n if n > 0 else 0.0
        out[i] = adjusted_score(int(links[i, T.MOVE]), n, win_rate, total, position, p, mob)
    return out


DEFAULT_KNOWLEDGE = {"uct_c": 1.414, "a": 0.1, "b": 1.5, "c": 0.5, "d": 0.25}


def knowledge_choice(moves: list[MoveStat], position: Position,
                     p: Mapping[str, Any] = DEFAULT_KNOWLEDGE) -> int:
    """The move with the best adjusted score among MoveStats (for agents that borrow the MCTS blog
    post's final choice)."""
    total = sum(m.visits for m in moves)
    return max(moves, key=lambda m: (adjusted_score(m.move, m.visits, m.win_rate, total,
                                                    position, p), m.visits)).move


def _make(spec: str, p: dict[str, Any]) -> Agent:
    if p["d"] > p["c"]:
        from engine_server.agents.base import AgentSpecError
        raise AgentSpecError(f"dk: the post requires d <= c, got c={p['c']}, d={p['d']}")
    cfg = T.tree_config(select=T.SELECT_UCB1, explore=p["uct_c"], logk=1.0, q01=True,
                        expand_at=0, descend=False, sims=p["nSims"], policy=AVOID[p["avoid"]])

    def final(links: np.ndarray, stats: np.ndarray, first: int, count: int,
              position: Position) -> int:
        s = adjusted_scores(links, stats, first, count, position, p)
        return max(s, key=lambda i: (s[i], stats[i, T.N]))

    def describe(links: np.ndarray, stats: np.ndarray, i: int, position: Position,
                 m: MoveStat) -> None:
        n = stats[i, T.N]
        m.mobility = float(stats[i, T.MOB] / n) if n else 0.0

    budget = lambda pos: Budget(iterations=p["max_iter"])
    return TreeAgent(spec, p, TreeSearch("dk", cfg, table_maker("random"), p["seed"], budget,
                                         final, p["memory"] << 20, describe_move=describe))


DK = AgentInfo(
    "dk", "MCTS blog post (MCTS + domain knowledge)",
    "UCT with nSims pseudo-random playouts per expanded node, mobility back-propagation, "
    "final choice by the adjusted UCT score",
    (Param("nSims", int, 50, "playouts per expanded node", min=1),
     Param("max_iter", int, 200, "iterations when no limit is given", min=1),
     Param("uct_c", float, 1.414, "exploration constant of the UCT score", min=0.0),
     Param("a", float, 0.1, "inner-score weight", min=0.0),
     Param("b", float, 1.5, "greed-penalty exponent", min=0.0),
     Param("c", float, 0.5, "X-square penalty (fraction of UCT)", min=0.0, max=0.999),
     Param("d", float, 0.25, "C-square penalty (fraction of UCT)", min=0.0, max=0.999),
     Param("mobility", float, 0.0, "weight of mean mobility in the final score (ours)",
           min=0.0),
     Param("avoid", str, "xc", "squares the pseudo-random playouts re-draw: xc X- and "
           "C-squares (ours), x the X-squares only (the post's source code)",
           choices=("xc", "x"))) + COMMON_PARAMS + TREE_PARAMS, _make)
