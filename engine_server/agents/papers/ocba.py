"""The OCBA paper ("OCBA for MCTS in Othello"): the MCTS-OCBA tree policy.

Choices the paper leaves open (docs/reference/design-notes.md section 3), all parameters:

* OCBA runs at every node with negamax sign flips (our extension of the one-player rule);
* a node's children each get ``n0`` samples first (one rollout per iteration, iteration ends
  there), then the "most starving" child under the OCBA ratios is descended into;
* a sample's standard deviation is the population one, floored at ``sigma0`` below two samples;
  ``sigma=equal`` (ours) gives all siblings one deviation, so the allocation follows the gaps
  to the best mean alone: the OCBA paper's greedy heuristic rollout is nearly deterministic (a
  median of 3 distinct final scores in 100 rollouts from a position), its per-child deviations are
  zero or tiny, and the sample rule then starves the close rivals (docs/papers/ocba.md);
* back-up is the plain mean of returns; the reward is (a - b) / (a + b);
* the final move is the best mean.
"""

from __future__ import annotations

from typing import Any

from engine_server.agents.base import COMMON_PARAMS, TREE_PARAMS, Agent, AgentInfo, Param
from engine_server.agents.common import policy_id, rollout_param, table_maker
from engine_server.agents.tree_agent import TreeAgent
from engine_server.search import mcts as T
from engine_server.search.mcts.driver import Budget, TreeSearch, best_mean


def _make(spec: str, p: dict[str, Any]) -> Agent:
    select = T.SELECT_OCBA_EQUAL if p["sigma"] == "equal" else T.SELECT_OCBA
    cfg = T.tree_config(select=select, n0=p["n0"], sigma0=p["sigma0"], expand_at=1,
                        descend=True, reward=T.REWARD_RATIO, policy=policy_id(p["rollout"]))
    budget = lambda pos: Budget(playouts=p["simulations"])
    return TreeAgent(spec, p, TreeSearch("ocba", cfg, table_maker(p["rollout"]), p["seed"],
                                         budget, best_mean, p["memory"] << 20))


OCBA = AgentInfo(
    "ocba", "the OCBA paper (MCTS-OCBA); docs/reference/design-notes.md section 3",
    "OCBA allocation at every node, reward (a-b)/(a+b), best mean wins",
    (Param("n0", int, 5, "initial samples per child", min=1),
     Param("sigma0", float, 1.0, "std. deviation assumed with fewer than 2 samples", min=1e-6),
     Param("sigma", str, "sample", "sample: each child's own sample std. deviation (the "
           "paper's rule); equal: one for all siblings, allocation by the mean gaps alone "
           "(for near-deterministic rollouts such as heuristic)", choices=("sample", "equal")),
     Param("simulations", int, 100, "playouts when no limit is given (paper: 50/100/500)",
           min=1),
     rollout_param("random", "rollout policy: random or heuristic (the OCBA paper), or others"))
    + COMMON_PARAMS + TREE_PARAMS, _make)
