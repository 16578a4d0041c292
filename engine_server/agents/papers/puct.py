"""PUCT selection (Alphello Zero's AlphaZero-style search) on the shared driver.

Selection is ``Q + c_puct * P * sqrt(N) / (1 + n)`` over the PRIOR column of the tree.

* With a policy/value network (``net``: the shipped one for the position's rules, or a file),
  leaves are evaluated in batches of ``batch`` by ONNX Runtime with virtual loss spreading each
  batch (``search/mcts/batched.py``); priors and values come from the network, proven bounds,
  leaf solving (``solve_empties``) and the exact root solver play the endgame.
  An iteration is a root visit: one network evaluation, or an exact result where a descent
  ends at a terminal or proven position (``SearchResult.playouts`` counts the evaluations),
  so ``Limits(iterations=K)`` is K evaluations before the endgame.  A file for the other rules
  is not used: those positions are searched as without a network (with a warning).
* Without one (``net=none``, or no shipped file), the seed's stand-in as before: uniform priors
  (or the pattern evaluation's, ``eval``) and a rollout / evaluation leaf value, one leaf at a
  time, with the same moves and visits for a seed as before the network existed; ``rollout``,
  ``eval`` and ``eval_scale`` apply only here.
"""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path
from typing import Any

from engine_server.agents.base import (
    COMMON_PARAMS,
    TREE_PARAMS,
    Agent,
    AgentInfo,
    AgentSpecError,
    Param,
)
from engine_server.agents.common import (
    eval_params,
    policy_id,
    rollout_param,
    table_maker,
    weights_maker,
)
from engine_server.agents.root_solving import ROOT_PARAMS, RootSolvingAgent
from engine_server.agents.tree_agent import TreeAgent
from engine_server.eval.evaluator import Evaluator, NetEvaluator
from engine_server.eval.net import NetError, NetModel, default_net_path, load_net
from engine_server.game import Position
from engine_server.game.bitboard import REVERSED, STANDARD
from engine_server.log import get_logger
from engine_server.search import mcts as T
from engine_server.search.limits import Limits, ProgressCallback, SearchResult
from engine_server.search.mcts.batched import BatchedTreeSearch
from engine_server.search.mcts.driver import Budget, TreeSearch, most_visits

log = get_logger("agents")

RULE_NAMES = {STANDARD: "standard", REVERSED: "reversed"}
LEAF_SOLVE_NODES = 20000   # as mcts: one leaf solve stays within a few milliseconds

_warned: set[tuple[str, int]] = set()
_warned_lock = threading.Lock()


def _warn_once(what: str, rules: int, **fields: object) -> None:
    """One warning per process and rules: a session builds its agent many times."""
    with _warned_lock:
        if (what, rules) in _warned:
            return
        _warned.add((what, rules))
    log.warning(what, rules=RULE_NAMES[rules], **fields)


class _Nets:
    """The networks an agent's spec names, per rules: ``None`` where it has none."""

    def __init__(self, net: str, threads: int):
        self.models: dict[int, NetModel | None] = {}
        if net == "none":
            self.models = {STANDARD: None, REVERSED: None}
        elif net == "default":
            for rules in (STANDARD, REVERSED):
                path = default_net_path(rules)
                # loaded now, so a broken shipped file fails when the agent is built
                self.models[rules] = load_net(path, threads) if path.is_file() else None
        else:
            model = load_net(Path(net).expanduser(), threads)
            self.models = {r: (model if model.rules == r else None)
                           for r in (STANDARD, REVERSED)}
        self.net = net

    @property
    def any(self) -> bool:
        return any(m is not None for m in self.models.values())

    def evaluator(self, rules: int) -> Evaluator | None:
        model = self.models.get(int(rules))
        if model is None:
            if self.net == "default":
                _warn_once("puct_no_network", int(rules),
                           expected=str(default_net_path(rules)),
                           playing="without a network: uniform priors and rollouts")
            elif self.net != "none":
                _warn_once("puct_network_rules", int(rules), net=self.net,
                           playing="without a network: the file is for the other rules")
            return None
        return NetEvaluator(model)


class PuctAgent(RootSolvingAgent):
    """The tree agent with the exact root solver; ``root_solve=-1`` (by the time) solves only
    where a network plays, so ``net=none`` keeps the seed's behaviour in the endgame too."""

    def __init__(self, inner: TreeAgent, spec: str, params: dict, nets: _Nets):
        super().__init__(inner, spec, params)
        self.nets = nets

    def search(self, position: Position, limits: Limits | None = None,
               progress: ProgressCallback | None = None,
               progress_interval: float = 0.5, threads: int | None = None) -> SearchResult:
        if self.root_empties < 0 and self.nets.models.get(int(position.rules)) is None:
            return self.inner.search(position, limits, progress, progress_interval, threads)
        return super().search(position, limits, progress, progress_interval, threads)


# root_solve=-1 means "by the time" only where a network plays (PuctAgent)
_ROOT_PARAMS = tuple(
    dataclasses.replace(q, help="solve the root exactly at or below this many empties (-1: by "
                        "the time per move, 23 at 1 s, with a network only; 0: never)")
    if q.name == "root_solve" else q for q in ROOT_PARAMS)


def _make(spec: str, p: dict[str, Any]) -> Agent:
    plain = T.tree_config(select=T.SELECT_PUCT, explore=p["c_puct"], expand_at=0,
                          descend=False, sims=1, policy=policy_id(p["rollout"]), eval=p["eval"],
                          eval_scale=p["eval_scale"])
    budget = lambda pos: Budget(iterations=p["iterations"])
    try:
        nets = _Nets(p["net"], p["net_threads"])
    except NetError as e:  # a bad file is a bad spec: say so when the agent is chosen
        raise AgentSpecError(f"puct: net={p['net']!r}: {e}") from e
    if nets.any:
        net_cfg = T.tree_config(plain, solver=True, solve_empties=p["solve_empties"],
                                solve_nodes=LEAF_SOLVE_NODES, eval=0.0, reward=T.REWARD_WIN)
        search: TreeSearch = BatchedTreeSearch(
            "puct", net_cfg, nets.evaluator, plain, table_maker(p["rollout"]), p["seed"],
            budget, most_visits, p["memory"] << 20, batch=p["batch"], vloss=p["vloss"],
            noise=p["noise"], noise_alpha=p["noise_alpha"], make_weights=weights_maker())
    else:
        if p["net"] == "default":
            for rules in (STANDARD, REVERSED):
                nets.evaluator(rules)  # the warning, now rather than at the first search
        search = TreeSearch("puct", plain, table_maker(p["rollout"]), p["seed"], budget,
                            most_visits, p["memory"] << 20, make_weights=weights_maker())
    return PuctAgent(TreeAgent(spec, p, search), spec, p, nets)


PUCT = AgentInfo(
    "puct", "Alphello Zero (AlphaZero-style PUCT): a policy/value network when one is shipped or "
    "given, else the rollout stand-in",
    "PUCT selection; leaves evaluated in batches by a network (ONNX), or one rollout with "
    "uniform priors without one",
    (Param("c_puct", float, 1.5, "PUCT exploration constant", min=0.0),
     Param("iterations", int, 800, "iterations (root visits) when no limit is given", min=1),
     Param("net", str, "default", "policy/value network: default (the shipped one for the "
           "position's rules, none when it is not there), none (rollouts, uniform priors), "
           "or the path of an .onnx file"),
     Param("batch", int, 8, "leaves per network evaluation", min=1, max=256),
     Param("vloss", float, 1.0, "virtual loss per descent in flight (spreads a batch)",
           min=0.0),
     Param("noise", float, 0.0, "weight of Dirichlet noise on the root's priors (self-play)",
           min=0.0, max=1.0),
     Param("noise_alpha", float, 0.5, "Dirichlet concentration of the root noise", min=1e-3),
     Param("net_threads", int, 1, "ONNX Runtime threads per evaluation", min=1, max=64),
     Param("solve_empties", int, 12, "with a network: exact solve at leaves with at most this "
           "many empties", min=0, max=30),
     rollout_param("random")) + eval_params() + _ROOT_PARAMS + COMMON_PARAMS + TREE_PARAMS,
    _make)
