"""The UCB1 paper ("UCB for MCTS in Othello"): Shallow Search (Alg. 3.2), Min-Max Search (Alg. 3.3)
and MCTS with UCB1 (Alg. 3.4), on the shared tree driver.

Rewards are win / draw / loss = 1 / 0.5 / 0 as in Alg. 3.1 (stored as +1 / 0 / -1).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from engine_server.agents.base import COMMON_PARAMS, TREE_PARAMS, Agent, AgentInfo, Param
from engine_server.agents.common import policy_id, rollout_param, table_maker
from engine_server.agents.tree_agent import TreeAgent
from engine_server.game import Position
from engine_server.search import mcts as T
from engine_server.search.limits import MoveStat
from engine_server.search.mcts.driver import Budget, TreeSearch, best_mean, most_visits


def _minmax_line_value(links: np.ndarray, stats: np.ndarray, root_child: int) -> float:
    """Alg. 3.3's value of a root child: the mean at the end of its greedy line."""
    node = root_child
    sign = 1.0
    while int(links[node, T.NCHILD]) > 0:
        f, c = int(links[node, T.FIRST]), int(links[node, T.NCHILD])
        if any(stats[i, T.N] == 0 for i in range(f, f + c)):
            break
        node = max(range(f, f + c), key=lambda i: stats[i, T.W] / stats[i, T.N])
        sign = -sign
    n = stats[node, T.N]
    if n == 0:
        return -2.0
    return sign * stats[node, T.W] / n


def _minmax_final(links: np.ndarray, stats: np.ndarray, first: int, count: int,
                  position: Position) -> int:
    return max(range(first, first + count), key=lambda i: _minmax_line_value(links, stats, i))


def _describe_minmax(links: np.ndarray, stats: np.ndarray, i: int, position: Position,
                     m: MoveStat) -> None:
    m.line_value = _minmax_line_value(links, stats, i)


def _make_shallow(spec: str, p: dict[str, Any]) -> Agent:
    cfg = T.tree_config(select=T.SELECT_ROUND_ROBIN, expand_at=T.NEVER_EXPAND,
                        policy=policy_id(p["rollout"]))
    budget = lambda pos: Budget(playouts=p["n"] * max(1, len(pos.legal_moves())))
    return TreeAgent(spec, p, TreeSearch("shallow", cfg, table_maker(p["rollout"]), p["seed"],
                                         budget, best_mean, p["memory"] << 20))


def _make_minmax(spec: str, p: dict[str, Any]) -> Agent:
    cfg = T.tree_config(select=T.SELECT_MINMAX, depth=p["k"], per_node=p["n"],
                        policy=policy_id(p["rollout"]))
    # Alg. 3.3 ends when every root child's line is complete ("done"); no count needed.
    budget = lambda pos: Budget()
    return TreeAgent(spec, p, TreeSearch(
        "minmax", cfg, table_maker(p["rollout"]), p["seed"], budget, _minmax_final,
        p["memory"] << 20,
        describe_move=_describe_minmax))


def _make_ucb1(spec: str, p: dict[str, Any]) -> Agent:
    cfg = T.tree_config(select=T.SELECT_UCB1, explore=p["c"], logk=2.0, q01=True,
                        parent_sum=True, expand_at=p["n"], descend=True,
                        policy=policy_id(p["rollout"]))
    budget = lambda pos: Budget(playouts=p["N"])
    return TreeAgent(spec, p, TreeSearch("ucb1", cfg, table_maker(p["rollout"]), p["seed"],
                                         budget, most_visits, p["memory"] << 20))


SHALLOW = AgentInfo(
    "shallow", "UCB1 paper, Alg. 3.2",
    "n playouts per legal move, the best mean wins; with a time limit the playouts go on "
    "round-robin until it",
    (Param("n", int, 100, "playouts per child (default budget)", min=1),
     rollout_param("random")) + COMMON_PARAMS + TREE_PARAMS, _make_shallow)

MINMAX = AgentInfo(
    "minmax", "UCB1 paper, Alg. 3.3",
    "for each move, k layers of n-playout shallow searches along the greedy min/max line",
    (Param("n", int, 10, "playouts per node", min=1),
     Param("k", int, 3, "layers looked ahead", min=1, max=60),
     rollout_param("random")) + COMMON_PARAMS + TREE_PARAMS, _make_minmax)

UCB1 = AgentInfo(
    "ucb1", "UCB1 paper, Alg. 3.4",
    "MCTS with UCB1 r/m + c*sqrt(2 ln t / m); a node is expanded after n playouts; "
    "the most played move wins",
    (Param("n", int, 50, "playouts through a node before it is expanded", min=1),
     Param("N", int, 1200, "total playouts when no limit is given", min=1),
     Param("c", float, 1.0, "exploration weight (the paper: 1)", min=0.0),
     rollout_param("random")) + COMMON_PARAMS + TREE_PARAMS, _make_ucb1)
