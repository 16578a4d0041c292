"""Agents without a tree: ``random`` and the MCTS blog post's ``pseudo-random``."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from engine_server.agents.base import COMMON_PARAMS, Agent, AgentInfo, Param
from engine_server.game import PASS, Position
from engine_server.game import bitboard as bb
from engine_server.search.limits import Limits, MoveStat, ProgressCallback, SearchResult
from engine_server.search.mcts import rollout as R


class PolicyAgent(Agent):
    """Plays one move of a rollout policy: the baselines the seeds measure against."""

    def __init__(self, spec: str, params: dict[str, Any], policy: int, name: str):
        super().__init__(spec, params)
        self.name = name
        self._policy = policy
        self._rng = bb.make_rng(params["seed"])
        self._table = np.zeros(64, dtype=np.int64)

    def search(self, position: Position, limits: Limits | None = None,
               progress: ProgressCallback | None = None,
               progress_interval: float = 0.5, threads: int | None = None) -> SearchResult:
        t0 = time.monotonic()
        P, O = position.bitboards()
        mv = int(R.choose_move(P, O, self._policy, int(position.rules), self._table, self._rng))
        legal = position.legal_moves()
        best = None if mv < 0 else mv
        moves = [MoveStat(move=m, visits=0, value=0.0, prior=1.0 / len(legal)) for m in legal]
        moves.sort(key=lambda s: s.move != best)
        return SearchResult(best_move=best, moves=moves, pv=[] if best is None else [best],
                            root_value=0.0, elapsed=time.monotonic() - t0,
                            stopped_by="forced" if best == PASS else "done", agent=self.name)


RANDOM = AgentInfo(
    "random", "UCB1 paper, Alg. 3.1 (the playout's move choice)", "uniform over legal moves",
    COMMON_PARAMS, lambda spec, p: PolicyAgent(spec, p, R.RANDOM, "random"))

# Which squares the MCTS blog post's simRandPlus re-draws: "xc" (X- and C-squares) is this agent's
# original reading of the post; "x" is the post's own source (reversi.go, veryBadPositions), the
# definition that reproduces its Table 1 (docs/papers/dk.md).  Both draw the same way.
AVOID = {"xc": R.PSEUDO, "x": R.PSEUDO_X}


def avoid_param(help_text: str) -> Param:
    return Param("avoid", str, "xc", help_text, choices=tuple(AVOID))


PSEUDO_RANDOM = AgentInfo(
    "pseudo-random", "MCTS blog post, simRandPlus",
    "uniform, but a drawn X/C-square (corner under reversed rules) is re-drawn up to twice",
    (avoid_param("squares re-drawn under standard rules: xc X- and C-squares (ours), x the "
                 "X-squares only (the post's source code; matches its Table 1)"),)
    + COMMON_PARAMS,
    lambda spec, p: PolicyAgent(spec, p, AVOID[p["avoid"]], "pseudo-random"))
