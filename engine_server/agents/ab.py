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
from dataclasses import replace
from typing import Any, Callable

import numpy as np

from engine_server.eval import mpc as M
from engine_server.eval.weights import WeightsError, default_weights, load, load_or_default
from engine_server.game import PASS, Position
from engine_server.game.symmetry import canonical, orbits, square_image, square_preimage
from engine_server.log import get_logger
from engine_server.search.alphabeta import (
    SCALE,
    SEL_EXACT,
    SELECTIVITY_PCT,
    SELECTIVITY_T,
    ABResult,
    AlphaBeta,
)
from engine_server.search.limits import Limits, MoveStat, ProgressCallback, SearchResult

from .base import COMMON_PARAMS, Agent, AgentInfo, AgentSpecError, Param
from .root_solving import ROOT_PARAMS, RootSolvingAgent

DEFAULT_DEPTH = 8          # plies, when the search has no budget at all

log = get_logger("ab")


class AlphaBetaAgent(Agent):
    name = "ab"

    def __init__(self, spec: str, params: dict[str, Any]):
        super().__init__(spec, params)
        self._weights_file = params["weights"]
        self._engines: dict[int, AlphaBeta] = {}
        self._raw: dict[int, np.ndarray] = {}     # the weights each engine was built from
        self._rng = _random.Random(params["seed"])
        self.depth = params["depth"]
        self.random_plies = params["random"]
        self.table_bits = params["table"]
        self._threads = params.get("threads", 1) or max(1, os.cpu_count() or 1)
        pct = int(params.get("selectivity", 100))
        self.selectivity = SEL_EXACT if pct == 100 else SELECTIVITY_PCT.index(pct)
        self._mpc_file = params.get("mpc_file", "")
        self._mpc: dict[int, M.MpcStats | None] = {}

    @property
    def threads(self) -> int:
        # The midgame search runs them all over one shared table (ABDADA); in the endgame
        # RootSolvingAgent, which wraps this agent, lends one of them to the root solver.
        return int(self._threads)

    def preferred_moves(self, position: Position) -> list[int]:
        # the transposition table's move for the root: the last iteration's best (with helper
        # threads, possibly that of a deeper iteration one of them finished at the root)
        k, canon = canonical(position)
        m = self._engine(int(position.rules)).table_move(canon)
        return [] if m is None else [square_preimage(m, k)]

    def _engine(self, rules: int) -> AlphaBeta:
        e = self._engines.get(rules)
        if e is None:
            # One table at a time: a session that switches rules must not hold two (the
            # memory limits of config.py count one).
            self._engines.clear()
            self._raw.clear()
            if self._weights_file:
                w, _ = load(self._weights_file, rules)
            else:
                w = default_weights(rules)
            e = AlphaBeta(w, self.table_bits)
            self._engines[rules] = e
            self._raw[rules] = w
        return e

    def margins(self, rules: int, weights: np.ndarray,
                level: int | None = None) -> np.ndarray | None:
        """The probe margins of the selectivity (or of ``level``) for ``rules`` (None: full
        width)."""
        level = self.selectivity if level is None else level
        if level == SEL_EXACT:
            return None
        if rules not in self._mpc:
            try:
                stats = M.load(self._mpc_file, weights, rules) if self._mpc_file else \
                    M.shipped(rules, weights)
                self._mpc = {rules: stats}
            except M.MpcError as e:  # statistics for the other rules only: search full width
                log.warning("mpc_unavailable", rules=rules, error=str(e))
                self._mpc = {rules: None}
        found = self._mpc[rules]
        return None if found is None else found.margins(SELECTIVITY_T[level], SCALE)

    def endgame_levels(self, rules: int,
                       weights: np.ndarray) -> list[tuple[int, np.ndarray | None]]:
        """The levels a selective search rises through once it reaches the end of the game
        with time left: every higher confidence, then full width (an exact solve)."""
        if self.selectivity == SEL_EXACT or self.margins(rules, weights) is None:
            return []
        return [(lv, self.margins(rules, weights, lv))
                for lv in range(self.selectivity + 1, SEL_EXACT + 1)]

    def reset(self) -> None:
        for e in self._engines.values():
            e.clear()

    def search(self, position: Position, limits: Limits | None = None,
               progress: ProgressCallback | None = None,
               progress_interval: float = 0.5, threads: int | None = None) -> SearchResult:
        # ``threads``, when given, replaces the agent's own count: RootSolvingAgent passes
        # what is left beside its root solver.
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
        rules = int(position.rules)
        engine = self._engine(rules)
        margins = self.margins(rules, self._raw[rules])
        # a depth budget (NBoard's levels, depth=) means that depth at this selectivity: only a
        # clock or a node budget spends what is left on higher levels at the end of the game
        capped = limits.depth is not None or bool(self.depth)
        levels = [] if capped else self.endgame_levels(rules, self._raw[rules])
        # Every position is searched in its canonical orientation (game/symmetry.py), so that a
        # position and its mirror images get the same values and share the table's entries.
        k, canon = canonical(position)
        analysis = limits.analysis
        callback = tick = None
        if progress is not None:
            callback, tick = self._reporters(
                lambda r: self._convert(position, r, t0, k, analysis, final=False), t0,
                progress, progress_interval)
        r = engine.search(canon, deadline, limits.stop, max_depth, nodes, limits.analysis,
                          callback, selectivity=self.selectivity if margins is not None
                          else SEL_EXACT, mpc=margins,
                          threads=self.threads if threads is None else max(1, threads),
                          raise_to=levels, on_tick=tick, tick_interval=progress_interval)
        return self._convert(position, r, t0, k, analysis)

    @staticmethod
    def _reporters(convert: Callable[[ABResult], SearchResult], t0: float,
                   progress: ProgressCallback, interval: float
                   ) -> tuple[Callable[[ABResult], None], Callable[[int, int], None]]:
        """The search's two callbacks for ``progress``: one at every finished iteration, and
        one for the clock's ticks, which repeats the last finished iteration with the nodes so
        far and the depth under way once no report has gone out for ``interval`` seconds (a
        deep iteration takes minutes, and NBoard would show nothing meanwhile)."""
        last: list[SearchResult] = []
        reported = [time.monotonic()]

        def iteration(r: ABResult) -> None:
            result = convert(r)
            last[:] = [result]
            reported[0] = time.monotonic()
            progress(result)

        def tick(depth: int, nodes: int) -> None:
            now = time.monotonic()
            if not last or now - reported[0] < interval:
                return
            reported[0] = now
            done = last[0]
            # copies: wrappers (the root solver's proof, the book's marks) edit what they get
            progress(replace(done, moves=[replace(m) for m in done.moves], pv=list(done.pv),
                             search_nodes=nodes, elapsed=now - t0, searching=depth))

        return iteration, tick

    def _convert(self, position: Position, r: ABResult, t0: float, k: int, analysis: bool,
                 final: bool = True) -> SearchResult:
        """The engine's result of the image of ``position`` under symmetry ``k``, on the
        board of ``position``.  An analysis gives moves that are images of each other in a
        symmetric position one value: the first of them in the canonical orientation's."""
        legal = position.legal_moves()
        solved = r.stopped_by == "solved"
        stats = []
        for mv in legal:
            info = r.moves.get(square_image(mv, k))
            if info is None:
                stats.append(MoveStat(mv, 0, 0.0))
                continue
            discs, kind, depth = info
            st = MoveStat(mv, depth, float(np.clip(discs / 64.0, -1.0, 1.0)), margin=discs)
            st.margin_bound = kind
            if solved and kind == 0:
                st.bound(int(round(discs)), int(round(discs)))
            stats.append(st)
        if analysis:
            by_move = {st.move: st for st in stats}
            for group in orbits(position, legal):
                if len(group) > 1:
                    rep = by_move[min(group, key=lambda m: square_image(m, k))]
                    for m in group:
                        by_move[m] = replace(rep, move=m)
            stats = [by_move[mv] for mv in legal]
        best = square_preimage(r.move, k) if r.move is not None else legal[0]
        stats.sort(key=lambda m: (m.move != best, -(m.margin if m.margin is not None
                                                   else -1e9)))
        pv = [square_preimage(m, k) for m in r.pv]
        res = SearchResult(best, stats, pv or [best],
                           float(np.clip(r.score / 64.0, -1.0, 1.0)), iterations=r.depth,
                           elapsed=time.monotonic() - t0, stopped_by=r.stopped_by,
                           agent=self.spec, final=final, search_nodes=r.nodes,
                           reused_fraction=r.reused,
                           selectivity=100 if r.selectivity == SEL_EXACT
                           else SELECTIVITY_PCT[r.selectivity])
        if solved and stats and stats[0].exact:
            res.lower = res.upper = stats[0].lower
        return res


def _make(spec: str, p: dict[str, Any]) -> Agent:
    if p["weights"]:
        try:
            load(p["weights"])
        except Exception as e:  # a bad file is a bad spec: say so when the agent is chosen
            raise AgentSpecError(f"ab: weights={p['weights']!r}: {e}") from None
    if int(p.get("selectivity", 100)) != 100:
        # the statistics must belong to the weights: say so now, not at the first search
        if p["weights"] and not p["mpc_file"]:
            raise AgentSpecError(f"ab: selectivity={p['selectivity']} with weights= needs "
                                 "mpc_file=, statistics fitted for those weights (othello-train "
                                 "mpc --weights FILE)")
        try:
            if p["mpc_file"]:
                rules = M.file_rules(p["mpc_file"])
                w = load_or_default(p["weights"] or None, rules)
                M.load(p["mpc_file"], w, rules)
            else:
                # stale statistics are an error; missing ones for one rule variant only mean
                # full width there (logged when it happens)
                found = 0
                for rules in (0, 1):
                    if M.default_path(rules).is_file():
                        M.shipped(rules, default_weights(rules))
                        found += 1
                if not found:
                    M.shipped(0, default_weights(0))  # raises, naming the missing file
        except (M.MpcError, WeightsError) as e:
            raise AgentSpecError(f"ab: selectivity={p['selectivity']}: {e}") from None
    inner = AlphaBetaAgent(spec, p)
    return RootSolvingAgent(inner, spec, p)


_AB_PARAMS = (
    Param("depth", int, 0, f"maximum depth in plies (0: as deep as the time allows; "
          f"{DEFAULT_DEPTH} without any budget)", min=0, max=60),
    Param("table", int, 20, "transposition table size as a power of two (24 bytes an entry)",
          min=10, max=26),
    Param("random", int, 0, "play the first N plies of a game at random (self-play "
          "diversity; seeded)", min=0, max=60),
    Param("weights", str, "", "evaluation weights file (default: the shipped weights)"),
    Param("selectivity", int, 100, "Multi-ProbCut confidence in percent (50, 60, 74, 88, 93, 98, "
          "99; 100: full width): the midgame search cuts a node when a shallow search predicts "
          "with this confidence that it will not matter", choices=(*SELECTIVITY_PCT, 100)),
    Param("mpc_file", str, "", "Multi-ProbCut statistics for weights= (made by othello-train "
          "mpc --weights FILE; default: the shipped ones, for the shipped weights)"))

AB = AgentInfo(
    "ab", "ours: alpha-beta over learned pattern weights (docs/evaluation.md)",
    "iterative-deepening PVS with a transposition table kept between moves, the WTHOR-trained "
    "pattern evaluation at the leaves, and the exact solver in the endgame",
    _AB_PARAMS + (Param("threads", int, 1, "search threads: the midgame search runs them "
                        "over one shared table (ABDADA); in the endgame the root solver takes "
                        "one of them", min=1, max=64),)
    + ROOT_PARAMS + COMMON_PARAMS, _make)

# best probes at 74% confidence: 93% beat full width and 74% beat 93%, and no other level was
# stronger than 74% (docs/best-agent.md; the matches in docs/notes/2026-11-best-agent-history.md)
BEST_SELECTIVITY = 74

BEST = AgentInfo(
    "best", "ours: ab with the settings that won our matches (docs/best-agent.md)",
    "the strongest agent we have: alpha-beta over the learned evaluation, exact endgames",
    tuple(replace(p, default=BEST_SELECTIVITY) if p.name == "selectivity" else p
          for p in _AB_PARAMS)
    + (Param("threads", int, 0, "search threads (0: one per core): the midgame search runs "
             "them over one shared table (ABDADA); in the endgame the root solver takes one "
             "of them", min=0, max=64),)
    + ROOT_PARAMS + COMMON_PARAMS, _make)

__all__ = ["AB", "BEST", "AlphaBetaAgent", "SCALE", "PASS"]
