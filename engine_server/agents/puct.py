"""PUCT selection (seed 003's AlphaZero-style search) on the shared driver.

Selection is ``Q + c_puct * P * sqrt(N) / (1 + n)`` over the PRIOR column of the tree.  Until a
network evaluator arrives, leaves are valued by rollouts and priors are uniform; the evaluator
slot is the PRIOR column (set at expansion) plus the leaf value fed to back-propagation.
"""

from __future__ import annotations

from engine_server.search import tree as T
from engine_server.search.driver import Budget, TreeSearch, most_visits

from .base import COMMON_PARAMS, TREE_PARAMS, AgentInfo, Param
from .common import eval_params, policy_id, rollout_param, table_maker, weights_maker
from .tree_agent import TreeAgent


def _make(spec, p):
    cfg = T.tree_config(select=T.SELECT_PUCT, explore=p["c_puct"], expand_at=0, descend=False,
                        sims=1, policy=policy_id(p["rollout"]), eval=p["eval"],
                        eval_scale=p["eval_scale"])
    budget = lambda pos: Budget(iterations=p["iterations"])
    return TreeAgent(spec, p, TreeSearch("puct", cfg, table_maker(p["rollout"]), p["seed"],
                                         budget, most_visits, p["memory"] << 20,
                                         make_weights=weights_maker()))


PUCT = AgentInfo(
    "puct", "seed 003 (AlphaZero-style PUCT), rollout evaluator until a network exists",
    "PUCT selection, leaf value from one rollout, uniform priors",
    (Param("c_puct", float, 1.5, "PUCT exploration constant", min=0.0),
     Param("iterations", int, 800, "iterations when no limit is given", min=1),
     rollout_param("random")) + eval_params() + COMMON_PARAMS + TREE_PARAMS, _make)
