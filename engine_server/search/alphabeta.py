"""Midgame alpha-beta: iterative-deepening principal variation search over the pattern evaluation.

Kernels (numba, nogil): negamax PVS with fail-soft bounds, a transposition table of depth-tagged
bounds kept from one search (and move) to the next, moves ordered by the table's move first and
then by the evaluation of the position after the move (the opponent's view, so ascending), leaves
scored by :func:`engine_server.eval.features.evaluate_raw` and finished games by their exact
margin.  Scores are in quarter discs (``SCALE``): fine enough for the evaluation's precision,
coarse enough that null-window re-searches stay rare.

Control: the kernels cannot see a clock, so they poll ``ctl[STOP]`` (set by a timer thread at
the deadline or by the caller's stop event) and ``ctl[LIMIT]`` (a node budget) every 1024
nodes; after either every frame returns at once with ``ctl[ABORTED]`` set and stores nothing.
An aborted iteration still counts where it can be trusted: a root move whose full-window search
finished above the previous best replaces it (PVS proves that with a finished re-search).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np
from numba import njit, types

from engine_server.eval.features import evaluate_raw
from engine_server.game import PASS, Position
from engine_server.game.bitboard import (
    U0,
    U1,
    U,
    disc_score,
    flips,
    legal_moves,
    lowest_square,
    popcount,
)

from .bounds import table_cut

SCALE = 4                 # score units per disc
RAW_SHIFT = 4             # evaluate_raw is in 1/64 disc: >> 4 gives quarter discs
EVAL_MAX = 64 * SCALE - 1  # an evaluation never claims a certain wipe-out
INF = 30000

# ctl layout
NODES, LIMIT, ABORTED, STOP, GEN, ROOT_BEST, ROOT_SCORE, ROOT_DONE = range(8)
SCRATCH = 16
MAX_PLY = 96
SLOT = 128                # per ply: up to 64 moves, then their keys
CTL_SIZE = SCRATCH + MAX_PLY * SLOT
POLL = 1023

# tt: keys uint64 [size, 2] (P, O); data int64 [size]
_OFF = 1 << 15
_LO_SHIFT = 0
_UP_SHIFT = 16
_DEPTH_SHIFT = 32
_MOVE_SHIFT = 40
_GEN_SHIFT = 48
_RULES_SHIFT = 56
_VALID = 1 << 62
_M16 = (1 << 16) - 1
_M8 = 255
_NO_MOVE = 127
_HK1 = U(0x9E3779B97F4A7C15)
_HK2 = U(0xC2B2AE3D27D4EB4F)
_S32 = U(32)


@njit(cache=True, inline="always")
def _slot(keys, P, O):
    h = (P * _HK1) ^ (O * _HK2)
    h ^= h >> _S32
    return np.int64(h & U(keys.shape[0] - 1))


@njit(cache=True, inline="always")
def _leaf(P, O, W, rules):
    e = evaluate_raw(P, O, W) >> RAW_SHIFT
    if e > EVAL_MAX:
        return EVAL_MAX
    if e < -EVAL_MAX:
        return -EVAL_MAX
    return e


@njit(cache=True, inline="always")
def _final(P, O, rules):
    return SCALE * disc_score(popcount(P), popcount(O), rules)


@njit(cache=True, inline="always")
def _poll(ctl):
    ctl[NODES] += 1
    if (ctl[NODES] & POLL) == 0:
        if ctl[STOP] != 0 or ctl[NODES] >= ctl[LIMIT]:
            ctl[ABORTED] = 1
    return ctl[ABORTED] != 0


@njit(cache=True)
def _store(keys, data, P, O, rules, alpha, beta, best, depth, move, gen):
    i = _slot(keys, P, O)
    d = data[i]
    if d & _VALID and not (keys[i, 0] == P and keys[i, 1] == O):
        # keep a deeper entry of the current search; anything older or shallower goes
        if ((d >> _GEN_SHIFT) & _M8) == gen and ((d >> _DEPTH_SHIFT) & _M8) > depth:
            return
    lo = -INF
    up = INF
    if best > alpha:
        lo = best
    if best < beta:
        up = best
    if d & _VALID and keys[i, 0] == P and keys[i, 1] == O and \
            ((d >> _DEPTH_SHIFT) & _M8) == depth and ((d >> _RULES_SHIFT) & 3) == rules:
        # same depth: intersect the bounds
        olo = ((d >> _LO_SHIFT) & _M16) - _OFF
        oup = ((d >> _UP_SHIFT) & _M16) - _OFF
        if olo > lo and olo <= up:
            lo = olo
        if oup < up and oup >= lo:
            up = oup
    keys[i, 0] = P
    keys[i, 1] = O
    data[i] = ((lo + _OFF) << _LO_SHIFT) | ((up + _OFF) << _UP_SHIFT) | \
        (np.int64(depth) << _DEPTH_SHIFT) | (np.int64(move) << _MOVE_SHIFT) | \
        (np.int64(gen) << _GEN_SHIFT) | (np.int64(rules) << _RULES_SHIFT) | _VALID


_SIG = types.int64(types.uint64, types.uint64, types.int64, types.int64, types.int64,
                   types.int64, types.int32[:, ::1], types.int64, types.uint64[:, ::1],
                   types.int64[::1], types.int64[::1])


@njit(_SIG, cache=True, nogil=True)
def _pvs(P, O, alpha, beta, depth, ply, W, rules, keys, data, ctl):
    if _poll(ctl):
        return 0
    moves = legal_moves(P, O)
    if moves == U0:
        if legal_moves(O, P) == U0:
            return _final(P, O, rules)
        return -_pvs(O, P, -beta, -alpha, depth, ply + 1, W, rules, keys, data, ctl)
    if depth <= 0:
        return _leaf(P, O, W, rules)
    # transposition table
    hash_move = _NO_MOVE
    i = _slot(keys, P, O)
    d = data[i]
    if d & _VALID and keys[i, 0] == P and keys[i, 1] == O and ((d >> _RULES_SHIFT) & 3) == rules:
        hash_move = (d >> _MOVE_SHIFT) & _M8
        if ((d >> _DEPTH_SHIFT) & _M8) >= depth:
            cut, v, alpha, beta = table_cut(((d >> _LO_SHIFT) & _M16) - _OFF,
                                            ((d >> _UP_SHIFT) & _M16) - _OFF, alpha, beta)
            if cut:
                return v
    alpha0 = alpha
    best = -INF
    best_move = _NO_MOVE
    if depth == 1:
        # children are leaves: score them directly, the table move first
        if hash_move != _NO_MOVE and (moves >> U(hash_move)) & U1:
            m = U1 << U(hash_move)
            f = flips(P, O, m)
            v = -_pvs(O ^ f, P ^ f ^ m, -beta, -alpha, depth - 1, ply + 1, W, rules, keys, data,
                      ctl)
            best = v
            best_move = hash_move
            if v > alpha:
                alpha = v
            moves ^= m
        while moves != U0 and alpha < beta:
            m = moves & (~moves + U1)
            moves ^= m
            f = flips(P, O, m)
            v = -_pvs(O ^ f, P ^ f ^ m, -beta, -alpha, depth - 1, ply + 1, W, rules, keys, data,
                      ctl)
            if v > best:
                best = v
                best_move = lowest_square(m)
                if v > alpha:
                    alpha = v
        if ctl[ABORTED] != 0:
            return 0
        _store(keys, data, P, O, rules, alpha0, beta, best, depth, best_move, ctl[GEN])
        return best
    # order: table move, then the child's evaluation (the opponent's view: lower first)
    base = SCRATCH + ply * SLOT
    n = 0
    mm = moves
    while mm != U0:
        m = mm & (~mm + U1)
        mm ^= m
        sq = lowest_square(m)
        if sq == hash_move:
            key = -(1 << 40)
        else:
            f = flips(P, O, m)
            key = evaluate_raw(O ^ f, P ^ f ^ m, W)
        j = n
        while j > 0 and ctl[base + 64 + j - 1] > key:
            ctl[base + j] = ctl[base + j - 1]
            ctl[base + 64 + j] = ctl[base + 64 + j - 1]
            j -= 1
        ctl[base + j] = sq
        ctl[base + 64 + j] = key
        n += 1
    for k in range(n):
        sq = ctl[base + k]
        m = U1 << U(sq)
        f = flips(P, O, m)
        nP = O ^ f
        nO = P ^ f ^ m
        if k == 0:
            v = -_pvs(nP, nO, -beta, -alpha, depth - 1, ply + 1, W, rules, keys, data, ctl)
        else:
            v = -_pvs(nP, nO, -alpha - 1, -alpha, depth - 1, ply + 1, W, rules, keys, data, ctl)
            if alpha < v < beta:
                v = -_pvs(nP, nO, -beta, -v, depth - 1, ply + 1, W, rules, keys, data, ctl)
        if ctl[ABORTED] != 0:
            return 0
        if v > best:
            best = v
            best_move = sq
            if v > alpha:
                alpha = v
                if alpha >= beta:
                    break
    _store(keys, data, P, O, rules, alpha0, beta, best, depth, best_move, ctl[GEN])
    return best


@njit(cache=True, nogil=True)
def search_root(P, O, alpha, beta, depth, W, rules, keys, data, ctl, order, scores, kinds,
                analysis):
    """Search the root moves ``order`` (squares, PASS alone when forced) to ``depth``.

    ``scores[k]``/``kinds[k]`` receive each finished move's fail-soft value and whether it is
    exact (0), an upper bound (-1) or a lower bound (+1); unfinished moves get kind -2.  With
    ``analysis`` every move is searched with the full window (exact values for all).  Returns
    the best value; ``ctl[ROOT_BEST]`` holds the best finished move."""
    ctl[ABORTED] = 0
    best = -INF
    a = alpha
    for k in range(order.shape[0]):
        kinds[k] = -2
    for k in range(order.shape[0]):
        sq = order[k]
        if sq == PASS:
            nP, nO = O, P
        else:
            m = U1 << U(sq)
            f = flips(P, O, m)
            nP = O ^ f
            nO = P ^ f ^ m
        if k == 0 or analysis:
            v = -_pvs(nP, nO, -beta, -a, depth - 1, 1, W, rules, keys, data, ctl)
        else:
            v = -_pvs(nP, nO, -a - 1, -a, depth - 1, 1, W, rules, keys, data, ctl)
            if a < v < beta and ctl[ABORTED] == 0:
                v = -_pvs(nP, nO, -beta, -v, depth - 1, 1, W, rules, keys, data, ctl)
        if ctl[ABORTED] != 0:
            return best
        scores[k] = v
        if v <= a:
            kinds[k] = -1
        elif v >= beta:
            kinds[k] = 1
        else:
            kinds[k] = 0
        if v > best:
            best = v
            ctl[ROOT_BEST] = sq
            ctl[ROOT_SCORE] = v
            if v > a and not analysis:
                a = v
                if a >= beta:
                    break
    ctl[ROOT_DONE] = 1
    _store(keys, data, P, O, rules, alpha, beta, best, depth, ctl[ROOT_BEST], ctl[GEN])
    return best


@njit(cache=True)
def table_move(keys, data, P, O, rules):
    i = _slot(keys, P, O)
    d = data[i]
    if d & _VALID and keys[i, 0] == P and keys[i, 1] == O and ((d >> _RULES_SHIFT) & 3) == rules:
        m = (d >> _MOVE_SHIFT) & _M8
        return -1 if m == _NO_MOVE else m
    return -1


@njit(cache=True)
def known_children(keys, data, P, O, rules):
    """How many of the position's children the table already holds (what a previous search
    left for this one)."""
    moves = legal_moves(P, O)
    n = 0
    while moves != U0:
        m = moves & (~moves + U1)
        moves ^= m
        f = flips(P, O, m)
        nP = O ^ f
        nO = P ^ f ^ m
        i = _slot(keys, nP, nO)
        d = data[i]
        if d & _VALID and keys[i, 0] == nP and keys[i, 1] == nO and \
                ((d >> _RULES_SHIFT) & 3) == rules:
            n += 1
    return n


@njit(cache=True)
def static_eval(P, O, W, rules):
    """The evaluation in score units (quarter discs), or the exact margin of a finished game."""
    if legal_moves(P, O) == U0 and legal_moves(O, P) == U0:
        return _final(P, O, rules)
    return _leaf(P, O, W, rules)


@dataclass
class Iteration:
    depth: int
    score: int                       # score units, side to move's view
    move: int
    nodes: int
    seconds: float
    complete: bool


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


class AlphaBeta:
    """Iterative deepening over the kernels with a table kept between searches.

    One search at a time per instance (a lock serializes them)."""

    def __init__(self, weights: np.ndarray, table_bits: int = 20):
        if not 10 <= table_bits <= 28:
            raise ValueError(f"table bits must be in 10..28, got {table_bits}")
        self.W = weights
        self.keys = np.zeros((1 << table_bits, 2), np.uint64)
        self.data = np.zeros(1 << table_bits, np.int64)
        self.ctl = np.zeros(CTL_SIZE, np.int64)
        self._gen = 0
        self._reused = 0.0
        self._lock = threading.Lock()

    def clear(self) -> None:
        with self._lock:
            self.keys.fill(0)
            self.data.fill(0)

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
               moves: list[int] | None = None) -> ABResult:
        """``moves``: search only these root moves (the book builder values the moves that
        leave its book this way)."""
        with self._lock:
            return self._search(position, deadline, stop, max_depth, max_nodes, analysis,
                                on_iteration, moves)

    def _search(self, position: Position, deadline: float | None,
                stop: threading.Event | None, max_depth: int, max_nodes: int | None,
                analysis: bool, on_iteration: Callable[[ABResult], None] | None,
                only: list[int] | None) -> ABResult:
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
        ctl[:SCRATCH] = 0
        ctl[LIMIT] = np.iinfo(np.int64).max if max_nodes is None else int(max_nodes)
        self._gen = (self._gen + 1) & 255
        ctl[GEN] = self._gen
        empties = position.empties
        max_depth = max(1, min(max_depth, empties + 1))
        timer_done = threading.Event()

        def watch() -> None:
            while not timer_done.is_set():
                if stop is not None and stop.is_set():
                    break
                if deadline is not None and time.monotonic() >= deadline:
                    break
                timer_done.wait(0.002)
            ctl[STOP] = 1

        watcher = None
        if deadline is not None or stop is not None:
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
        try:
            for depth in range(1, max_depth + 1):
                ti = time.monotonic()
                ctl[ROOT_DONE] = 0
                ctl[ROOT_BEST] = -1
                arr = np.array(order, np.int64)
                v = int(search_root(P, O, np.int64(-INF), np.int64(INF), np.int64(depth),
                                    self.W, rules, self.keys, self.data, ctl, arr, scores,
                                    kinds, analysis))
                done = ctl[ROOT_DONE] == 1
                dt = time.monotonic() - ti
                for k, mv in enumerate(order):
                    if kinds[k] != -2:
                        moves_info[mv] = (scores[k] / SCALE, int(kinds[k]), depth)
                rb = int(ctl[ROOT_BEST])
                if done:
                    best = Iteration(depth, v, rb, int(ctl[NODES]), dt, True)
                elif rb >= 0 and best is not None and int(ctl[ROOT_SCORE]) > best.score \
                        and kinds[order.index(rb)] == 0:
                    # a move proven better than the previous best at the deeper depth
                    best = Iteration(depth, int(ctl[ROOT_SCORE]), rb, int(ctl[NODES]), dt,
                                     False)
                elif best is None and rb >= 0:
                    best = Iteration(depth, int(ctl[ROOT_SCORE]), rb, int(ctl[NODES]), dt,
                                     False)
                if not done:
                    stopped_by = "stop" if stop is not None and stop.is_set() else (
                        "nodes" if ctl[NODES] >= ctl[LIMIT] else "time")
                    break
                if on_iteration is not None:
                    assert best is not None  # set by the iteration that just finished
                    on_iteration(self._result(position, best, moves_info, t0, "", order))
                # next iteration: best move first, then by this iteration's values
                ranked = sorted(range(len(order)), key=lambda k: (order[k] != rb, -scores[k]))
                order = [order[k] for k in ranked]
                if depth >= empties:
                    stopped_by = "solved"
                    break
                if deadline is not None and time.monotonic() >= deadline:
                    stopped_by = "time"
                    break
        finally:
            timer_done.set()
            if watcher is not None:
                watcher.join()
            ctl[STOP] = 0
        if best is None:  # not even depth 1 finished: the first legal move
            best = Iteration(0, 0, order[0], int(ctl[NODES]), 0.0, False)
        return self._result(position, best, moves_info, t0, stopped_by, order)

    def _result(self, position: Position, best: Iteration,
                moves_info: dict[int, tuple[float, int, int]], t0: float, stopped_by: str,
                order: list[int]) -> ABResult:
        pv = self.pv(position, best.move, max(1, best.depth)) if best.move is not None else []
        return ABResult(best.move, best.score / SCALE, best.depth if best.complete else
                        max(0, best.depth - 1), int(self.ctl[NODES]),
                        time.monotonic() - t0, pv, dict(moves_info), stopped_by,
                        self._reused)


__all__ = ["AlphaBeta", "ABResult", "SCALE", "search_root", "static_eval"]
