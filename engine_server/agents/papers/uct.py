"""The CS303 report ("MCTS for Reversed Reversi"): UCT that expands a leaf with all its children and
simulates each child once, Q/N + c*sqrt(2 ln N / N'), c = 1.414, rollouts random / value map /
Roxanne.  ``reward=ratio,form=plain,c=1,expand=one`` is the OCBA paper's UCT baseline.

``expand=one`` is the plain UCT of Kocsis and Szepesvari (Browne et al. 2012, Alg. 2), which
the OCBA paper describes: each iteration adds one child to the tree and simulates it once.  The
kernel already has it (``expand_at=1, descend=True``): a node is expanded on its second visit, and
the UCB1 rule takes a not yet visited child first, so an iteration ends at exactly one new node with
one playout; untried children are taken in move order (a1 first), where Browne's pseudocode
leaves the order open.  The default ``expand=all`` keeps the CS303 report's Algorithm 1: a leaf is
expanded with all its children and each is simulated once in the same iteration.
"""

from __future__ import annotations

from typing import Any

from engine_server.agents.base import COMMON_PARAMS, TREE_PARAMS, Agent, AgentInfo, Param
from engine_server.agents.common import (
    eval_params,
    policy_id,
    rollout_param,
    table_maker,
    weights_maker,
)
from engine_server.agents.root_solving import ROOT_PARAMS
from engine_server.search import mcts as T
from engine_server.search.mcts.driver import Budget, TreeSearch, most_visits


def _make(spec: str, p: dict[str, Any]) -> Agent:
    from engine_server.agents.tree_agent import TreeAgent

    reward = T.REWARD_RATIO if p["reward"] == "ratio" else T.REWARD_WIN
    logk = 2.0 if p["form"] == "seed001" else 1.0
    one = p["expand"] == "one"
    cfg = T.tree_config(select=T.SELECT_UCB1, explore=p["c"], logk=logk,
                        q01=reward == T.REWARD_WIN, expand_at=1 if one else 0,
                        sim_all=not one, descend=one, reward=reward,
                        policy=policy_id(p["rollout"]), solver=bool(p["solver"]), eval=p["eval"],
                        eval_scale=p["eval_scale"])
    budget = lambda pos: Budget(iterations=p["iterations"])
    agent = TreeAgent(spec, p, TreeSearch("uct", cfg, table_maker(p["rollout"]), p["seed"],
                                          budget, most_visits, p["memory"] << 20,
                                          make_weights=weights_maker()))
    if p["solver"] and p["root_solve"] != 0:
        from engine_server.agents.root_solving import RootSolvingAgent

        return RootSolvingAgent(agent, spec, p)
    return agent


UCT = AgentInfo(
    "uct", "the CS303 report (UCT, Algorithm 1); reward=ratio,form=plain,c=1,expand=one is seed "
    "002's UCT",
    "UCT: expand a leaf with all children, simulate each (expand=one: one child and one "
    "playout per iteration); most visited move wins",
    (Param("c", float, 1.414, "exploration constant", min=0.0),
     rollout_param("random", "rollout policy: random (the CS303 report's best), "
                   "valuemap (table 2), "
                   "roxanne (table 1 as priorities), pseudo, heuristic"),
     Param("reward", str, "win", "win: 1/0.5/0 win rate; ratio: (a-b)/(a+b) (the OCBA paper)",
           choices=("win", "ratio")),
     Param("form", str, "seed001", "seed001: c*sqrt(2 ln N/n); plain: c*sqrt(ln N/n)",
           choices=("seed001", "plain")),
     Param("expand", str, "all", "all: expand a leaf with every child and simulate each "
           "(the CS303 report, Algorithm 1); one: plain UCT, one new child and one playout per "
           "iteration (the OCBA paper's baseline)", choices=("all", "one")),
     Param("iterations", int, 500, "iterations when no limit is given (CS303 report: 500 in ~1 s)",
           min=1),
     Param("solver", bool, False, "score-bounded MCTS-Solver back-ups and an exact root "
           "solver in the endgame: play proven wins, the best exact margin once the root is "
           "solved, avoid proven losses (not in the paper)"))
    + eval_params() + ROOT_PARAMS + COMMON_PARAMS + TREE_PARAMS, _make)
