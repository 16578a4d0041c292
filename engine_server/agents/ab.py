"""``ab``: iterative-deepening alpha-beta over the learned pattern evaluation, with the exact
root solver taking over in the endgame (root_solving.py).

The transposition table is kept between moves (the previous search's entries order the next
one).  Budgets: a clock (deadline) stops the deepest iteration, keeping the best finished move;
``depth`` (or NBoard's ``set depth``) caps the plies; ``iterations``/``playouts`` limits are
read as a node budget, which makes a search reproducible.
"""

from __future__ import annotations

import os
import random as _random
import time
from typing import Any

import numpy as np

from engine_server.eval.weights import default_weights, load
from engine_server.game import PASS, Position
from engine_server.search.alphabeta import SCALE, ABResult, AlphaBeta
from engine_server.search.limits import Limits, MoveStat, ProgressCallback, SearchResult

from .base import COMMON_PARAMS, Agent, AgentInfo, AgentSpecError, Param
from .root_solving import ROOT_PARAMS, RootSolvingAgent

DEFAULT_DEPTH = 8          # plies, when the search has no budget at all


class AlphaBetaAgent(Agent):
    name = "ab"

    def __init__(self, spec: str, params: dict[str, Any]):
        super().__init__(spec, params)
        self._weights_file = params["weights"]
        self._engines: dict[int, AlphaBeta] = {}
        self._rng = _random.Random(params["seed"])
        self.depth = params["depth"]
        self.random_plies = params["random"]
        self.table_bits = params["table"]
        self._threads = params.get("threads", 1) or (2 if (os.cpu_count() or 1) >= 2 else 1)

    @property
    def threads(self) -> int:
        # The alpha-beta itself runs on one; a second is the root solver's, beside it in the
        # endgame (RootSolvingAgent, which wraps this agent, lends it).
        return int(self._threads)

    def preferred_moves(self, position: Position) -> list[int]:
        # the transposition table's move for the root: the last iteration's best
        m = self._engine(int(position.rules)).table_move(position)
        return [] if m is None else [m]

    def _engine(self, rules: int) -> AlphaBeta:
        e = self._engines.get(rules)
        if e is None:
            # One table at a time: a session that switches rules must not hold two (the
            # memory limits of config.py count one).
            self._engines.clear()
            if self._weights_file:
                w, _ = load(self._weights_file, rules)
            else:
                w = default_weights(rules)
            e = AlphaBeta(w, self.table_bits)
            self._engines[rules] = e
        return e

    def reset(self) -> None:
        for e in self._engines.values():
            e.clear()

    def search(self, position: Position, limits: Limits | None = None,
               progress: ProgressCallback | None = None,
               progress_interval: float = 0.5, threads: int | None = None) -> SearchResult:
        # ``threads`` changes nothing: the alpha-beta searches on one thread.
        t0 = time.monotonic()
        limits = limits or Limits()
        legal = position.legal_moves()
        if not legal:
            return SearchResult(None, [], [], 0.0, stopped_by="done", agent=self.spec)
        if self.random_plies and 60 - position.empties < self.random_plies:
            mv = self._rng.choice(legal)
            return SearchResult(mv, [MoveStat(mv, 0, 0.0)], [mv], 0.0, stopped_by="random",
                                agent=self.spec, elapsed=time.monotonic() - t0)
        deadline = limits.absolute_deadline(t0)
        nodes = limits.playouts if limits.playouts is not None else limits.iterations
        if limits.depth is not None:
            max_depth = limits.depth
            nodes = None   # NBoard depth: the depth is the budget
        elif self.depth:
            max_depth = self.depth
        elif not limits.has_budget():
            max_depth = DEFAULT_DEPTH   # a stop event alone is no budget (sessions pass one)
        else:
            max_depth = 60
        if self.depth:
            max_depth = min(max_depth, self.depth)
        engine = self._engine(int(position.rules))
        callback = None
        if progress is not None:
            callback = lambda r: progress(self._convert(position, r, t0, final=False))  # noqa
        r = engine.search(position, deadline, limits.stop, max_depth, nodes, limits.analysis,
                          callback)
        return self._convert(position, r, t0)

    def _convert(self, position: Position, r: ABResult, t0: float,
                 final: bool = True) -> SearchResult:
        legal = position.legal_moves()
        solved = r.stopped_by == "solved"
        stats = []
        for mv in legal:
            info = r.moves.get(mv)
            if info is None:
                stats.append(MoveStat(mv, 0, 0.0))
                continue
            discs, kind, depth = info
            st = MoveStat(mv, depth, float(np.clip(discs / 64.0, -1.0, 1.0)), margin=discs)
            st.margin_bound = kind
            if solved and kind == 0:
                st.bound(int(round(discs)), int(round(discs)))
            stats.append(st)
        best = r.move if r.move is not None else legal[0]
        stats.sort(key=lambda m: (m.move != best, -(m.margin if m.margin is not None
                                                   else -1e9)))
        res = SearchResult(best, stats, r.pv or [best],
                           float(np.clip(r.score / 64.0, -1.0, 1.0)), iterations=r.depth,
                           elapsed=time.monotonic() - t0, stopped_by=r.stopped_by,
                           agent=self.spec, final=final, search_nodes=r.nodes,
                           reused_fraction=r.reused)
        if solved and stats and stats[0].exact:
            res.lower = res.upper = stats[0].lower
        return res


def _make(spec: str, p: dict[str, Any]) -> Agent:
    if p["weights"]:
        try:
            load(p["weights"])
        except Exception as e:  # a bad file is a bad spec: say so when the agent is chosen
            raise AgentSpecError(f"ab: weights={p['weights']!r}: {e}") from None
    inner = AlphaBetaAgent(spec, p)
    return RootSolvingAgent(inner, spec, p)


_AB_PARAMS = (
    Param("depth", int, 0, f"maximum depth in plies (0: as deep as the time allows; "
          f"{DEFAULT_DEPTH} without any budget)", min=0, max=60),
    Param("table", int, 20, "transposition table size as a power of two (24 bytes an entry)",
          min=10, max=26),
    Param("random", int, 0, "play the first N plies of a game at random (self-play "
          "diversity; seeded)", min=0, max=60),
    Param("weights", str, "", "evaluation weights file (default: the shipped weights)"))

AB = AgentInfo(
    "ab", "ours: alpha-beta over learned pattern weights (docs/evaluation.md)",
    "iterative-deepening PVS with a transposition table kept between moves, the WTHOR-trained "
    "pattern evaluation at the leaves, and the exact solver in the endgame",
    _AB_PARAMS + (Param("threads", int, 1, "1: one thread; 2: the root solver searches beside "
                        "the alpha-beta in the endgame", min=1, max=2),)
    + ROOT_PARAMS + COMMON_PARAMS, _make)

BEST = AgentInfo(
    "best", "ours: ab with the settings that won our matches (docs/best-agent.md)",
    "the strongest agent we have: alpha-beta over the learned evaluation, exact endgames",
    _AB_PARAMS + (Param("threads", int, 0, "0: two when the machine has two cores; 1: one "
                        "thread; 2: the root solver searches beside the alpha-beta in the "
                        "endgame", min=0, max=2),)
    + ROOT_PARAMS + COMMON_PARAMS, _make)

__all__ = ["AB", "BEST", "AlphaBetaAgent", "SCALE", "PASS"]
