"""``mcts``: our strongest tree agent (it was ``best`` until the alpha-beta agent beat it;
docs/best-agent.md has the matches behind each choice).

UCT with full expansion (the CS303 report's tree policy), score-bounded MCTS-Solver back-ups, an
endgame solve at leaves with few empties, tree reuse, root parallelism over ``threads`` trees
(one per core by default), and an exact root solver that decides the move in the endgame
(root_solving.py).  Pondering is the engine's (``--ponder``).
"""

from __future__ import annotations

import os
from typing import Any

from engine_server.search import mcts as T
from engine_server.search.mcts.driver import Budget, TreeSearch, most_visits

from .base import COMMON_PARAMS, TREE_PARAMS, Agent, AgentInfo, Param
from .common import eval_params, policy_id, rollout_param, table_maker, weights_maker
from .parallel import ParallelAgent
from .root_solving import ROOT_PARAMS, RootSolvingAgent


def _make(spec: str, p: dict[str, Any]) -> Agent:
    cfg = T.tree_config(select=T.SELECT_UCB1, explore=p["c"], logk=2.0, q01=True, expand_at=0,
                        sim_all=True, reward=T.REWARD_WIN, policy=policy_id(p["rollout"]),
                        solver=True, solve_empties=p["solve_empties"],
                        solve_nodes=p["solve_nodes"], bias=p["bias"], eval=p["eval"],
                        eval_scale=p["eval_scale"])

    threads = p["threads"] or max(1, min(4, os.cpu_count() or 1))
    budget = lambda pos: Budget(iterations=p["iterations"])
    memory = (p["memory"] << 20) // threads

    def make_tree(j: int) -> TreeSearch:
        return TreeSearch("mcts", cfg, table_maker(p["rollout"]), p["seed"] * 7919 + j, budget,
                          most_visits, memory, early_stop=p["early_stop"],
                          make_weights=weights_maker())

    choose = None
    if p["knowledge"]:
        from .papers.dk import knowledge_choice
        choose = knowledge_choice
    return RootSolvingAgent(ParallelAgent(spec, p, make_tree, threads, "mcts", choose), spec, p)


MCTS = AgentInfo(
    "mcts", "ours: the CS303 report's UCT + MCTS-Solver + exact endgame + root parallelism",
    "our strongest tree search (``best`` before the learned evaluation); see "
    "docs/best-agent.md for the matches behind each choice",
    (Param("c", float, 0.4, "UCT exploration constant (c*sqrt(2 ln N / n))", min=0.0),
     rollout_param("valuemap"),
     Param("threads", int, 0, "trees searched in parallel (0: one per core, at most 4)",
           min=0, max=64),
     Param("solve_empties", int, 12, "exact solve at leaves with at most this many empties",
           min=0, max=30),
     Param("solve_nodes", int, 20000, "node budget of one leaf solve (keeps batches short)",
           min=100),
     Param("bias", float, 0.0, "progressive bias weight: + bias * prior / (n + 1), priors "
           "from the rollout's square table", min=0.0),
     Param("knowledge", bool, False, "final move by the MCTS blog post's adjusted UCT score "
           "(X/C-square "
           "penalties, inner score, greed penalty) instead of the most visits"),
     Param("early_stop", bool, False, "answer before the time is up once no other move can "
           "catch the most-visited one (off: at a fixed time per move it lost 6-13 to full "
           "searches, docs/best-agent.md)"),
     Param("iterations", int, 20000, "iterations per tree when no limit is given", min=1))
    + eval_params() + ROOT_PARAMS + COMMON_PARAMS + TREE_PARAMS, _make)
