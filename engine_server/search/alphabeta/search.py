"""Iterative deepening with aspiration windows over the kernels of ``pvs.py``, and the
Python API: :class:`AlphaBeta` (a table kept between searches) and :class:`ABResult`."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from engine_server.eval.features import eval_tables
from engine_server.game import PASS, Position
from engine_server.log import get_logger

from .probcut import (
    MPC_SHAPE,
    NO_MPC,
    SEL_EXACT,
)
from .pvs import (
    SCALE,
    search_root,
)
from .table import (
    CTL_SIZE,
    GEN,
    INF,
    KILLER,
    LIMIT,
    NODES,
    ROOT_BEST,
    ROOT_DONE,
    ROOT_SCORE,
    SCRATCH,
    SEL,
    SLOT,
    STOP,
    known_children,
    new_table,
    table_move,
)
from .threads import PARALLEL_DEPTH, shared_root

ASPIRATION_DEPTH = 4      # from this iteration the root searches a window around the last value
ASPIRATION = 2 * SCALE    # its half width
# Once an iteration's depth comes within END_JUMP plies of the end of the game (and is at least
# END_JUMP_FROM), the next one searches to the end where the depth allowed reaches it: its leaves
# are final scores and its nodes near the end go to the exact solver's kernels
# (pvs.ENDGAME_EMPTIES), so it costs about what the iterations in between would, and the answer
# is the end of the game at the search's selectivity, reached in a fraction of the time
# (docs/search.md, "Near the end").
END_JUMP = 8
END_JUMP_FROM = 10

log = get_logger("alphabeta")


@dataclass
class Iteration:
    depth: int
    score: int                       # score units, side to move's view
    move: int
    nodes: int
    seconds: float
    complete: bool
    sel: int = SEL_EXACT             # the probes' level it was searched at


@dataclass
class ABResult:
    move: int | None
    score: float                     # discs, side to move's view
    depth: int                       # deepest finished iteration
    nodes: int
    seconds: float
    pv: list[int]
    moves: dict[int, tuple[float, int, int]]  # move -> (discs, kind, depth searched)
    stopped_by: str = ""
    reused: float = 0.0              # share of the root's children the table already held
    selectivity: int = SEL_EXACT     # level of the probes (SEL_EXACT: full width)


class AlphaBeta:
    """Iterative deepening over the kernels with a table kept between searches.

    One search at a time per instance (a lock serializes them)."""

    def __init__(self, weights: np.ndarray, table_bits: int = 20):
        if not 10 <= table_bits <= 28:
            raise ValueError(f"table bits must be in 10..28, got {table_bits}")
        self.W = eval_tables(weights)  # the evaluation's merged int16 tables
        if self.W.dtype != np.int16:
            raise ValueError("these weights are too large for the search's int16 tables "
                             "(a merged entry exceeds 32767/64 discs)")
        self.keys, self.data = new_table(table_bits)   # data: the entries, then busy marks
        self.ctl = np.zeros(CTL_SIZE, np.int64)
        self._helpers: list[np.ndarray] = []   # the helper threads' control arrays
        self._gen = 0
        self._reused = 0.0
        self._searching: list[np.ndarray] = []   # the control arrays of the search under way
        self._lock = threading.Lock()

    def clear(self) -> None:
        # as new: the generation too, so that a search after a clear is the one a fresh
        # table would make (the same game analysed twice gets the same values)
        with self._lock:
            self.keys.fill(0)
            self.data.fill(0)
            self._gen = 0

    def table_move(self, position: Position) -> int | None:
        P, O = position.bitboards()
        m = int(table_move(self.keys, self.data, P, O, np.int64(int(position.rules))))
        return None if m < 0 else m

    def pv(self, position: Position, first: int, length: int) -> list[int]:
        out = [first]
        pos = position.play(first)
        seen = {pos.bitboards()}
        while len(out) < length and not pos.is_game_over():
            legal = pos.legal_moves()
            if legal == [PASS]:
                m = PASS
            else:
                found = self.table_move(pos)
                if found is None or found not in legal:
                    break
                m = found
            out.append(m)
            pos = pos.play(m)
            if pos.bitboards() in seen:
                break
            seen.add(pos.bitboards())
        return out

    def search(self, position: Position, deadline: float | None = None,
               stop: threading.Event | None = None, max_depth: int = 60,
               max_nodes: int | None = None, analysis: bool = False,
               on_iteration: Callable[[ABResult], None] | None = None,
               moves: list[int] | None = None,
               selectivity: int = SEL_EXACT, mpc: np.ndarray | None = None,
               threads: int = 1,
               raise_to: Sequence[tuple[int, np.ndarray | None]] = (),
               on_tick: Callable[[int, int], None] | None = None,
               tick_interval: float = 0.5) -> ABResult:
        """``moves``: search only these root moves (the book builder values the moves that
        leave its book this way).  ``selectivity`` < SEL_EXACT probes with the margins ``mpc``
        (int64 [61, 65], see eval/mpc.py).  ``threads`` > 1 adds helper threads that search
        each iteration from ``PARALLEL_DEPTH`` over the shared table, a move another thread is
        searching taken last (ABDADA, threads.py); the first thread to finish answers.

        ``raise_to``: (level, margins) pairs of rising confidence, ``(SEL_EXACT, None)`` last.
        Once a selective iteration reaches the end of the game with budget left, the search
        goes on at the same depth with each of them in turn, as Edax's endgame raises its
        selectivity (73% ... 100%) instead of stopping: the time left is spent on a surer
        answer, and the last level is an exact solve.

        ``on_tick(depth, nodes)``: called every ``tick_interval`` seconds from the clock's
        thread with the depth of the iteration under way and the nodes of every thread so far,
        so that a long iteration still reports (``on_iteration`` comes only as one ends)."""
        # the first level and the ones it may rise to, checked alike
        levels: list[tuple[int, np.ndarray]] = []
        for k, (lv, m) in enumerate([(selectivity, mpc), *raise_to]):
            if k and not levels[-1][0] < lv <= SEL_EXACT:
                raise ValueError(f"raise_to levels must rise above {selectivity} up to "
                                 f"{SEL_EXACT}, got {[lv for lv, _ in raise_to]}")
            if lv < SEL_EXACT and (m is None or m.shape != MPC_SHAPE):
                raise ValueError("a selective search needs the margins table (61 x 65)")
            levels.append((int(lv), NO_MPC if m is None else m))
        sel, margins = levels.pop(0)
        with self._lock:
            return self._search(position, deadline, stop, max_depth, max_nodes, analysis,
                                on_iteration, moves, sel, margins, max(1, int(threads)), levels,
                                on_tick, tick_interval)

    def _helper_ctls(self, n: int) -> list[np.ndarray]:
        while len(self._helpers) < n:
            self._helpers.append(np.zeros(CTL_SIZE, np.int64))
        return self._helpers[:n]

    def _search(self, position: Position, deadline: float | None,
                stop: threading.Event | None, max_depth: int, max_nodes: int | None,
                analysis: bool, on_iteration: Callable[[ABResult], None] | None,
                only: list[int] | None, sel: int, mpc: np.ndarray, threads: int,
                levels: list[tuple[int, np.ndarray]],
                on_tick: Callable[[int, int], None] | None = None,
                tick_interval: float = 0.5) -> ABResult:
        t0 = time.monotonic()
        P, O = position.bitboards()
        rules = np.int64(int(position.rules))
        legal = position.legal_moves()
        if only is not None:
            legal = [m for m in legal if m in only]
        if not legal:
            return ABResult(None, 0.0, 0, 0, 0.0, [], {})
        ctl = self.ctl
        known = int(known_children(self.keys, self.data, P, O, rules))
        self._reused = known / len(legal) if legal != [PASS] else 0.0
        helpers = self._helper_ctls(threads - 1)
        self._searching = [ctl] + helpers
        self._gen = (self._gen + 1) & 255
        for c in [ctl] + helpers:
            c[:SCRATCH] = 0
            # killers start empty, so that a search depends on its table alone
            c[SCRATCH + KILLER::SLOT] = 0
            c[SCRATCH + KILLER + 1::SLOT] = 0
            c[SEL] = sel
            c[GEN] = self._gen
            c[LIMIT] = np.iinfo(np.int64).max
        ctl[LIMIT] = np.iinfo(np.int64).max if max_nodes is None else int(max_nodes)
        empties = position.empties
        max_depth = max(1, min(max_depth, empties + 1))
        timer_done = threading.Event()
        depth = 0   # the iteration under way, which the clock's progress ticks report

        def tick() -> None:
            assert on_tick is not None
            try:
                on_tick(depth, self._nodes())
            except Exception:  # a failed report must not stop the clock that ends the search
                log.exception("progress_tick_failed")

        def watch() -> None:
            next_tick = t0 + tick_interval
            while not timer_done.is_set():
                if stop is not None and stop.is_set():
                    break
                now = time.monotonic()
                if deadline is not None and now >= deadline:
                    break
                if on_tick is not None and now >= next_tick:
                    tick()
                    next_tick = now + tick_interval
                timer_done.wait(0.002)
            ctl[STOP] = 1
            for c in helpers:
                c[STOP] = 1

        watcher = None
        if deadline is not None or stop is not None or on_tick is not None:
            watcher = threading.Thread(target=watch, name="ab-clock", daemon=True)
            watcher.start()
        order = list(legal)
        hm = self.table_move(position)
        if hm in order:
            order.remove(hm)
            order.insert(0, hm)
        best: Iteration | None = None
        moves_info: dict[int, tuple[float, int, int]] = {}
        stopped_by = "depth"
        scores = np.zeros(len(order), np.int64)
        kinds = np.zeros(len(order), np.int64)
        values: dict[int, int] = {}   # finished iterations' root values
        done_sel = sel                # the level of the last finished iteration
        raised = False                # searching the end again at a higher level
        try:
            while depth < max_depth or raised:
                if not raised:
                    depth += 1
                    if END_JUMP_FROM <= depth < empties <= max_depth \
                            and depth >= empties - END_JUMP:
                        depth = empties
                ti = time.monotonic()
                ctl[ROOT_DONE] = 0
                ctl[ROOT_BEST] = -1
                lo, hi = -INF, INF
                if raised and not analysis:
                    # the same depth again: the last level's value is the best guess
                    lo, hi = values[depth] - ASPIRATION, values[depth] + ASPIRATION
                elif depth >= ASPIRATION_DEPTH and depth - 2 in values and not analysis:
                    # aspiration: a window around the value two plies shallower (the values
                    # of odd and even depths differ); a miss searches again with no window
                    lo, hi = values[depth - 2] - ASPIRATION, values[depth - 2] + ASPIRATION
                v = self._iteration(P, O, rules, order, depth, lo, hi, analysis, mpc, ctl,
                                    helpers, scores, kinds)
                if ctl[ROOT_DONE] == 1 and (v <= lo or v >= hi):
                    ctl[ROOT_DONE] = 0
                    ctl[ROOT_BEST] = -1
                    v = self._iteration(P, O, rules, order, depth, -INF, INF, analysis, mpc,
                                        ctl, helpers, scores, kinds)
                done = ctl[ROOT_DONE] == 1
                if done:
                    values[depth] = v
                    done_sel = sel
                dt = time.monotonic() - ti
                # An analysis compares the moves with each other: an unfinished iteration would
                # leave some at this depth and the rest one shallower, and values of odd and
                # even depths differ by a disc or more, so it keeps the last finished one.
                if done or not analysis or not moves_info:
                    for k, mv in enumerate(order):
                        if kinds[k] != -2:
                            moves_info[mv] = (scores[k] / SCALE, int(kinds[k]), depth)
                rb = int(ctl[ROOT_BEST])
                if done:
                    best = Iteration(depth, v, rb, int(ctl[NODES]), dt, True, sel)
                elif rb >= 0 and best is not None and int(ctl[ROOT_SCORE]) > best.score \
                        and kinds[order.index(rb)] == 0:
                    # a move proven better than the previous best at the deeper depth (or
                    # the higher level)
                    best = Iteration(depth, int(ctl[ROOT_SCORE]), rb, int(ctl[NODES]), dt,
                                     False, sel)
                elif best is None and rb >= 0:
                    best = Iteration(depth, int(ctl[ROOT_SCORE]), rb, int(ctl[NODES]), dt,
                                     False, sel)
                if not done:
                    stopped_by = "stop" if stop is not None and stop.is_set() else (
                        "nodes" if ctl[NODES] >= ctl[LIMIT] else "time")
                    break
                if on_iteration is not None:
                    assert best is not None  # set by the iteration that just finished
                    on_iteration(self._result(position, best, moves_info, t0, "", order,
                                              done_sel))
                # next iteration: best move first, then by this iteration's values
                ranked = sorted(range(len(order)), key=lambda k: (order[k] != rb, -scores[k]))
                order = [order[k] for k in ranked]
                if depth >= empties:
                    # to the end of the game: exact unless the probes cut
                    stopped_by = "solved" if sel == SEL_EXACT else "depth"
                    if sel == SEL_EXACT or not levels:
                        break
                    sel, mpc = levels.pop(0)
                    raised = True
                    for c in [ctl] + helpers:
                        c[SEL] = sel
                if deadline is not None and time.monotonic() >= deadline:
                    stopped_by = "time"
                    break
        finally:
            timer_done.set()
            if watcher is not None:
                watcher.join()
            ctl[STOP] = 0
        if best is None:  # not even depth 1 finished: the first legal move
            best = Iteration(0, 0, order[0], int(ctl[NODES]), 0.0, False, sel)
        return self._result(position, best, moves_info, t0, stopped_by, order, done_sel)

    def _iteration(self, P: np.uint64, O: np.uint64, rules: np.int64, order: list[int],
                   depth: int, lo: int, hi: int, analysis: bool, mpc: np.ndarray,
                   ctl: np.ndarray, helpers: list[np.ndarray], scores: np.ndarray,
                   kinds: np.ndarray) -> int:
        """One iteration of the root: the root's kernel on one thread; with helper threads
        (from PARALLEL_DEPTH) every thread searches it over the shared table.  Fills
        scores/kinds and ctl's ROOT_BEST, ROOT_SCORE and ROOT_DONE as search_root does;
        returns the best value."""
        if not helpers or depth < PARALLEL_DEPTH or len(order) == 1:
            return int(search_root(P, O, np.int64(lo), np.int64(hi), np.int64(depth), self.W,
                                   rules, self.keys, self.data, ctl,
                                   np.array(order, np.int64), scores, kinds, analysis, mpc))
        return shared_root(self.W, self.keys, self.data, P, O, rules, order, depth, lo, hi,
                           analysis, mpc, ctl, helpers, scores, kinds)

    def _nodes(self) -> int:
        """Nodes of the search under way so far, every thread's: the progress reports, at the
        end of an iteration or at a tick, count them alike."""
        return sum(int(c[NODES]) for c in self._searching)

    def _result(self, position: Position, best: Iteration,
                moves_info: dict[int, tuple[float, int, int]], t0: float, stopped_by: str,
                order: list[int], done_sel: int) -> ABResult:
        pv = self.pv(position, best.move, max(1, best.depth)) if best.move is not None else []
        # an unfinished iteration's move reports the last finished depth: one less, or the
        # same end of the game when the iteration was one at a higher level
        depth = best.depth if best.complete or best.sel != done_sel else max(0, best.depth - 1)
        return ABResult(best.move, best.score / SCALE, depth, self._nodes(),
                        time.monotonic() - t0, pv, dict(moves_info), stopped_by,
                        self._reused, done_sel)


# the public API first, then every other name alphabeta.py held before the split, for
