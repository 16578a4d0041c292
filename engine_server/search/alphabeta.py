"""Midgame alpha-beta: iterative-deepening principal variation search over the pattern evaluation.

Kernels (numba, nogil): negamax PVS with fail-soft bounds, a transposition table of depth-tagged
bounds kept from one search (and move) to the next, moves ordered by the table's move first and
then by the evaluation of the position after the move (the opponent's view, so ascending), leaves
scored by :func:`engine_server.eval.features.evaluate_moves` (``evaluate_raw``'s value from the
merged tables of ``eval_tables``) and finished games by their exact margin.  Scores are in
quarter discs (``SCALE``): fine enough for the evaluation's precision, coarse enough that
null-window re-searches stay rare.

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

from engine_server.eval.features import eval_tables, evaluate_moves, evaluate_raw
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
NODES, LIMIT, ABORTED, STOP, GEN, ROOT_BEST, ROOT_SCORE, ROOT_DONE, SEL, PC_NEST, HALT = \
    range(11)
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
_SEL_SHIFT = 58           # the selectivity the bounds were found at (SEL_EXACT: none)
_VALID = 1 << 62
_M16 = (1 << 16) - 1
_M8 = 255
_NO_MOVE = 127
_HK1 = U(0x9E3779B97F4A7C15)
_HK2 = U(0xC2B2AE3D27D4EB4F)
_S32 = U(32)
_CORNERS = U(0x8100000000000081)
SORT_MOBILITY_DEPTH = 4   # up to this depth moves are sorted by mobility alone
ETC_DEPTH = 4             # from this depth children are looked up in the table first
ASPIRATION_DEPTH = 4      # from this iteration the root searches a window around the last value
ASPIRATION = 2 * SCALE    # its half width
PARALLEL_DEPTH = 5        # from this iteration helper threads split the root

# Multi-ProbCut (Buro 1997, in Edax's form): at depth >= MPC_MIN_DEPTH a null-window search of
# the shallow depth predicts the deep value; when it lies beyond the window by the margin
# t * sigma(empties, depth) the node is cut.  Levels 0..4 are Egaroucid's confidences; SEL_EXACT
# searches full width.  ``mpc`` tables hold the margin in score units per [depth, empties].
SELECTIVITY_T = (1.13, 1.55, 1.81, 2.32, 2.57)
SELECTIVITY_PCT = (74, 88, 93, 98, 99)
SEL_EXACT = len(SELECTIVITY_T)
MPC_MIN_DEPTH = 3
PC_MAX_NEST = 2           # probes inside probes, at most (Edax: 2)
MPC_SHAPE = (61, 65)      # [depth, empties]
NO_MPC = np.zeros(MPC_SHAPE, np.int64)


@njit(cache=True, inline="always")
def _slot(keys, P, O):
    h = (P * _HK1) ^ (O * _HK2)
    h ^= h >> _S32
    return np.int64(h & U(keys.shape[0] - 1))


@njit(cache=True, inline="always")
def _leaf(P, O, W, moves):
    """The evaluation in score units; ``moves``: the mover's legal moves."""
    e = evaluate_moves(P, O, W, moves) >> RAW_SHIFT
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
        # STOP: the clock or the caller; HALT: this thread's speculative work is not needed
        if ctl[STOP] != 0 or ctl[HALT] != 0 or ctl[NODES] >= ctl[LIMIT]:
            ctl[ABORTED] = 1
    return ctl[ABORTED] != 0


@njit(cache=True, inline="always")
def _holds(keys, data, i, P, O):
    """Entry ``i`` is (P, O)'s.  The keys are stored xor-ed with the data word, so an entry
    torn by another search thread writing it at the same time never matches."""
    d = data[i]
    w = U(d)
    return (d & _VALID) != 0 and (keys[i, 0] ^ w) == P and (keys[i, 1] ^ w) == O


@njit(cache=True, inline="always")
def _shallow(depth):
    """The probe depth of Multi-ProbCut: about half, same parity (Edax: 4->2, 8->4, 9->5)."""
    return 2 * (depth // 4) + (depth & 1)


@njit(cache=True)
def _store(keys, data, P, O, rules, alpha, beta, best, depth, move, gen, sel):
    i = _slot(keys, P, O)
    d = data[i]
    same = _holds(keys, data, i, P, O)
    if d & _VALID and not same:
        # keep a deeper entry of the current search; anything older or shallower goes
        if ((d >> _GEN_SHIFT) & _M8) == gen and ((d >> _DEPTH_SHIFT) & _M8) > depth:
            return
    lo = -INF
    up = INF
    if best > alpha:
        lo = best
    if best < beta:
        up = best
    if same and ((d >> _DEPTH_SHIFT) & _M8) == depth and ((d >> _RULES_SHIFT) & 3) == rules \
            and ((d >> _SEL_SHIFT) & 7) == sel:
        # same depth: intersect the bounds
        olo = ((d >> _LO_SHIFT) & _M16) - _OFF
        oup = ((d >> _UP_SHIFT) & _M16) - _OFF
        if olo > lo and olo <= up:
            lo = olo
        if oup < up and oup >= lo:
            up = oup
    nd = ((lo + _OFF) << _LO_SHIFT) | ((up + _OFF) << _UP_SHIFT) | \
        (np.int64(depth) << _DEPTH_SHIFT) | (np.int64(move) << _MOVE_SHIFT) | \
        (np.int64(gen) << _GEN_SHIFT) | (np.int64(rules) << _RULES_SHIFT) | \
        (np.int64(sel) << _SEL_SHIFT) | _VALID
    data[i] = nd
    keys[i, 0] = P ^ U(nd)
    keys[i, 1] = O ^ U(nd)


_SIG = types.int64(types.uint64, types.uint64, types.int64, types.int64, types.int64,
                   types.int64, types.int16[:, ::1], types.int64, types.uint64[:, ::1],
                   types.int64[::1], types.int64[::1], types.int64[:, ::1])


@njit(_SIG, cache=True, nogil=True)
def _pvs(P, O, alpha, beta, depth, ply, W, rules, keys, data, ctl, mpc):
    if _poll(ctl):
        return 0
    moves = legal_moves(P, O)
    if moves == U0:
        if legal_moves(O, P) == U0:
            return _final(P, O, rules)
        return -_pvs(O, P, -beta, -alpha, depth, ply + 1, W, rules, keys, data, ctl, mpc)
    if depth <= 0:
        return _leaf(P, O, W, moves)
    if depth == 1:
        # children are leaves: score them directly (a table costs more than it saves here)
        best = -INF
        while moves != U0:
            m = moves & (~moves + U1)
            moves ^= m
            f = flips(P, O, m)
            # depth - 1, never a literal 0: a recursive call typed with a literal argument
            # breaks numba's cache in the next process (numba #6061)
            v = -_pvs(O ^ f, P ^ f ^ m, -beta, -alpha, depth - 1, ply + 1, W, rules, keys, data,
                      ctl, mpc)
            if v > best:
                best = v
                if v > alpha:
                    alpha = v
                    if alpha >= beta:
                        break
        return 0 if ctl[ABORTED] != 0 else best
    # transposition table
    hash_move = _NO_MOVE
    sel = ctl[SEL]
    i = _slot(keys, P, O)
    d = data[i]
    if _holds(keys, data, i, P, O) and ((d >> _RULES_SHIFT) & 3) == rules:
        hash_move = (d >> _MOVE_SHIFT) & _M8
        # bounds found at least as deep and with at least this confidence decide
        if ((d >> _DEPTH_SHIFT) & _M8) >= depth and ((d >> _SEL_SHIFT) & 7) >= sel:
            cut, v, alpha, beta = table_cut(((d >> _LO_SHIFT) & _M16) - _OFF,
                                            ((d >> _UP_SHIFT) & _M16) - _OFF, alpha, beta)
            if cut:
                return v
    if depth >= MPC_MIN_DEPTH and sel < SEL_EXACT and ctl[PC_NEST] < PC_MAX_NEST:
        margin = mpc[depth, 64 - popcount(P | O)]
        if margin > 0:
            ds = _shallow(depth)
            ctl[PC_NEST] += 1
            cut = 0
            hi = beta + margin
            if hi < EVAL_MAX:
                v = _pvs(P, O, hi - 1, hi, ds, ply, W, rules, keys, data, ctl, mpc)
                if v >= hi:
                    cut = 1
            lo = alpha - margin
            if cut == 0 and lo > -EVAL_MAX:
                v = _pvs(P, O, lo, lo + 1, ds, ply, W, rules, keys, data, ctl, mpc)
                if v <= lo:
                    cut = -1
            ctl[PC_NEST] -= 1
            if ctl[ABORTED] != 0:
                return 0
            if cut == 1:
                return beta
            if cut == -1:
                return alpha
    alpha0 = alpha
    best = -INF
    best_move = _NO_MOVE
    # order: table move, then the child's evaluation (the opponent's view: lower first)
    base = SCRATCH + ply * SLOT
    n = 0
    mm = moves
    etc = depth >= ETC_DEPTH
    while mm != U0:
        m = mm & (~mm + U1)
        mm ^= m
        sq = lowest_square(m)
        if etc:
            # enhanced transposition cutoff: a child the table already refutes enough
            f = flips(P, O, m)
            nP = O ^ f
            nO = P ^ f ^ m
            j = _slot(keys, nP, nO)
            dj = data[j]
            if _holds(keys, data, j, nP, nO) and ((dj >> _RULES_SHIFT) & 3) == rules and \
                    ((dj >> _DEPTH_SHIFT) & _M8) >= depth - 1 and \
                    ((dj >> _SEL_SHIFT) & 7) >= sel:
                cu = ((dj >> _UP_SHIFT) & _M16) - _OFF
                if -cu >= beta:
                    return -cu
        if sq == hash_move:
            key = np.int64(-(1 << 40))
        else:
            # fastest first: the opponent's mobility after the move, corners counted twice;
            # deeper, plus the evaluation of the move (a move of the opponent ~ 4 discs)
            f = flips(P, O, m)
            nP = O ^ f
            nO = P ^ f ^ m
            om = legal_moves(nP, nO)
            key = popcount(om) + popcount(om & _CORNERS) - 4 * np.int64((m & _CORNERS) != U0)
            if depth > SORT_MOBILITY_DEPTH:
                key = 256 * key + evaluate_moves(nP, nO, W, om)
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
            v = -_pvs(nP, nO, -beta, -alpha, depth - 1, ply + 1, W, rules, keys, data, ctl, mpc)
        else:
            v = -_pvs(nP, nO, -alpha - 1, -alpha, depth - 1, ply + 1, W, rules, keys, data, ctl,
                      mpc)
            if alpha < v < beta:
                v = -_pvs(nP, nO, -beta, -v, depth - 1, ply + 1, W, rules, keys, data, ctl, mpc)
        if ctl[ABORTED] != 0:
            return 0
        if v > best:
            best = v
            best_move = sq
            if v > alpha:
                alpha = v
                if alpha >= beta:
                    break
    _store(keys, data, P, O, rules, alpha0, beta, best, depth, best_move, ctl[GEN], sel)
    return best


@njit(cache=True, nogil=True)
def search_root(P, O, alpha, beta, depth, W, rules, keys, data, ctl, order, scores, kinds,
                analysis, mpc):
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
            v = -_pvs(nP, nO, -beta, -a, depth - 1, 1, W, rules, keys, data, ctl, mpc)
        else:
            v = -_pvs(nP, nO, -a - 1, -a, depth - 1, 1, W, rules, keys, data, ctl, mpc)
            if a < v < beta and ctl[ABORTED] == 0:
                v = -_pvs(nP, nO, -beta, -v, depth - 1, 1, W, rules, keys, data, ctl, mpc)
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
    _store(keys, data, P, O, rules, alpha, beta, best, depth, ctl[ROOT_BEST], ctl[GEN],
           ctl[SEL])
    return best


@njit(cache=True, nogil=True)
def search_move(P, O, sq, alpha, beta, depth, W, rules, keys, data, ctl, mpc):
    """The root move ``sq`` (PASS when forced) searched to ``depth`` in the window (alpha,
    beta), from the root's view: one root move of a split root (threads > 1)."""
    ctl[ABORTED] = 0
    if sq == PASS:
        nP, nO = O, P
    else:
        m = U1 << U(sq)
        f = flips(P, O, m)
        nP = O ^ f
        nO = P ^ f ^ m
    return -_pvs(nP, nO, -beta, -alpha, depth - 1, 1, W, rules, keys, data, ctl, mpc)


@njit(cache=True)
def store_root(keys, data, P, O, rules, alpha, beta, best, depth, move, gen, sel):
    _store(keys, data, P, O, rules, alpha, beta, best, depth, move, gen, sel)


@njit(cache=True)
def table_move(keys, data, P, O, rules):
    i = _slot(keys, P, O)
    d = data[i]
    if _holds(keys, data, i, P, O) and ((d >> _RULES_SHIFT) & 3) == rules:
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
        if _holds(keys, data, i, nP, nO) and ((data[i] >> _RULES_SHIFT) & 3) == rules:
            n += 1
    return n


@njit(cache=True)
def static_eval(P, O, W, rules):
    """What the search scores a leaf, from the raw weights ``W`` through ``evaluate_raw`` (the
    search itself reads the merged tables: tests compare the two): quarter discs, or the exact
    margin of a finished game."""
    if legal_moves(P, O) == U0 and legal_moves(O, P) == U0:
        return _final(P, O, rules)
    e = evaluate_raw(P, O, W) >> RAW_SHIFT
    return min(max(e, -EVAL_MAX), EVAL_MAX)


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
        self.keys = np.zeros((1 << table_bits, 2), np.uint64)
        self.data = np.zeros(1 << table_bits, np.int64)
        self.ctl = np.zeros(CTL_SIZE, np.int64)
        self._helpers: list[np.ndarray] = []   # the helper threads' control arrays
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
               moves: list[int] | None = None,
               selectivity: int = SEL_EXACT, mpc: np.ndarray | None = None,
               threads: int = 1) -> ABResult:
        """``moves``: search only these root moves (the book builder values the moves that
        leave its book this way).  ``selectivity`` < SEL_EXACT probes with the margins ``mpc``
        (int64 [61, 65], see eval/mpc.py).  ``threads`` > 1 adds helper threads that search
        the same root over the shared table (Lazy SMP); the result is the main thread's."""
        if selectivity < SEL_EXACT and (mpc is None or mpc.shape != MPC_SHAPE):
            raise ValueError("a selective search needs the margins table (61 x 65)")
        with self._lock:
            return self._search(position, deadline, stop, max_depth, max_nodes, analysis,
                                on_iteration, moves, selectivity,
                                NO_MPC if mpc is None else mpc, max(1, int(threads)))

    def _helper_ctls(self, n: int) -> list[np.ndarray]:
        while len(self._helpers) < n:
            self._helpers.append(np.zeros(CTL_SIZE, np.int64))
        return self._helpers[:n]

    def _search(self, position: Position, deadline: float | None,
                stop: threading.Event | None, max_depth: int, max_nodes: int | None,
                analysis: bool, on_iteration: Callable[[ABResult], None] | None,
                only: list[int] | None, sel: int, mpc: np.ndarray, threads: int) -> ABResult:
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
        self._gen = (self._gen + 1) & 255
        for c in [ctl] + helpers:
            c[:SCRATCH] = 0
            c[SEL] = sel
            c[GEN] = self._gen
            c[LIMIT] = np.iinfo(np.int64).max
        ctl[LIMIT] = np.iinfo(np.int64).max if max_nodes is None else int(max_nodes)
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
            for c in helpers:
                c[STOP] = 1

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
        values: dict[int, int] = {}   # finished iterations' root values
        try:
            for depth in range(1, max_depth + 1):
                ti = time.monotonic()
                ctl[ROOT_DONE] = 0
                ctl[ROOT_BEST] = -1
                lo, hi = -INF, INF
                if depth >= ASPIRATION_DEPTH and depth - 2 in values and not analysis:
                    # aspiration: a window around the value two plies shallower (the values
                    # of odd and even depths differ); a miss searches again with no window
                    lo, hi = values[depth - 2] - ASPIRATION, values[depth - 2] + ASPIRATION
                v = self._iteration(P, O, rules, order, depth, lo, hi, analysis, mpc, ctl,
                                    helpers, scores, kinds, max_depth)
                if ctl[ROOT_DONE] == 1 and (v <= lo or v >= hi):
                    ctl[ROOT_DONE] = 0
                    ctl[ROOT_BEST] = -1
                    v = self._iteration(P, O, rules, order, depth, -INF, INF, analysis, mpc,
                                        ctl, helpers, scores, kinds, max_depth)
                done = ctl[ROOT_DONE] == 1
                if done:
                    values[depth] = v
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
                    # to the end of the game: exact unless the probes cut
                    stopped_by = "solved" if sel == SEL_EXACT else "depth"
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
        r = self._result(position, best, moves_info, t0, stopped_by, order)
        r.nodes += sum(int(c[NODES]) for c in helpers)
        return r

    def _iteration(self, P: np.uint64, O: np.uint64, rules: np.int64, order: list[int],
                   depth: int, lo: int, hi: int, analysis: bool, mpc: np.ndarray,
                   ctl: np.ndarray, helpers: list[np.ndarray], scores: np.ndarray,
                   kinds: np.ndarray, max_depth: int) -> int:
        """One iteration of the root: the root's kernel on one thread; with helper threads
        (from PARALLEL_DEPTH) the root is split instead.  Fills scores/kinds and ctl's
        ROOT_BEST, ROOT_SCORE and ROOT_DONE as search_root does; returns the best value."""
        if not helpers or depth < PARALLEL_DEPTH or len(order) == 1:
            return int(search_root(P, O, np.int64(lo), np.int64(hi), np.int64(depth), self.W,
                                   rules, self.keys, self.data, ctl,
                                   np.array(order, np.int64), scores, kinds, analysis, mpc))
        return self._split(P, O, rules, order, depth, lo, hi, analysis, mpc, ctl, helpers,
                           scores, kinds, max_depth)

    def _split(self, P: np.uint64, O: np.uint64, rules: np.int64, order: list[int],
               depth: int, lo: int, hi: int, analysis: bool, mpc: np.ndarray,
               ctl: np.ndarray, helpers: list[np.ndarray], scores: np.ndarray,
               kinds: np.ndarray, max_depth: int) -> int:
        """A split root (young brothers wait at the root): the first move alone, the helpers
        meanwhile searching it a ply deeper (never past ``max_depth``: a fixed-depth search
        gives the one-thread value) so that the main thread finds their entries in the shared
        table; then every thread takes the next root move with a null window at the best value
        so far, searching again in full when it beats it."""
        kinds[:] = -2
        W, keys, data = self.W, self.keys, self.data
        d64, lo64, hi64 = np.int64(depth), np.int64(lo), np.int64(hi)
        first = order[0]
        for c in helpers:
            c[HALT] = 0
        lazy = [threading.Thread(target=search_move, daemon=True,
                                 args=(P, O, np.int64(first), np.int64(-INF), np.int64(INF),
                                       np.int64(min(depth + 1, max_depth)), W, rules, keys,
                                       data, c, mpc))
                for c in helpers]
        for t in lazy:
            t.start()
        v0 = int(search_move(P, O, np.int64(first), lo64, hi64, d64, W, rules, keys, data, ctl,
                             mpc))
        for c in helpers:
            c[HALT] = 1
        for t in lazy:
            t.join()
        for c in helpers:
            c[HALT] = 0
        if ctl[ABORTED] != 0:
            return -INF
        scores[0] = v0
        kinds[0] = -1 if v0 <= lo else 1 if v0 >= hi else 0
        state = {"alpha": max(lo, v0) if not analysis else lo, "best": v0, "move": first,
                 "next": 1,
                 "aborted": False, "fail_high": v0 >= hi}
        if v0 >= hi and not analysis:
            ctl[ROOT_BEST], ctl[ROOT_SCORE], ctl[ROOT_DONE] = first, v0, 1
            return v0
        lock = threading.Lock()

        def work(c: np.ndarray) -> None:
            while True:
                with lock:
                    if state["aborted"] or state["fail_high"] or state["next"] >= len(order):
                        return
                    k = state["next"]
                    state["next"] = k + 1
                    a = int(state["alpha"])
                sq = np.int64(order[k])
                if analysis:
                    v = int(search_move(P, O, sq, lo64, hi64, d64, W, rules, keys, data, c, mpc))
                else:
                    v = int(search_move(P, O, sq, np.int64(a), np.int64(a + 1), d64, W, rules,
                                        keys, data, c, mpc))
                    if a < v < hi and c[ABORTED] == 0:
                        v = int(search_move(P, O, sq, np.int64(a), hi64, d64, W, rules, keys,
                                            data, c, mpc))
                with lock:
                    if c[ABORTED] != 0:
                        state["aborted"] = True
                        return
                    scores[k] = v
                    kinds[k] = -1 if v <= a else 1 if v >= hi else 0
                    if v > state["best"]:
                        state["best"], state["move"] = v, order[k]
                        if not analysis and v > state["alpha"]:
                            state["alpha"] = v
                            if v >= hi:
                                state["fail_high"] = True

        threads = [threading.Thread(target=work, args=(c,), daemon=True) for c in helpers]
        for t in threads:
            t.start()
        work(ctl)
        for t in threads:
            t.join()
        ctl[ROOT_BEST] = state["move"]
        ctl[ROOT_SCORE] = state["best"]
        if state["aborted"]:
            return int(state["best"])
        ctl[ROOT_DONE] = 1
        store_root(keys, data, P, O, rules, lo64, hi64, np.int64(state["best"]), d64,
                   np.int64(state["move"]), ctl[GEN], ctl[SEL])
        return int(state["best"])

    def _result(self, position: Position, best: Iteration,
                moves_info: dict[int, tuple[float, int, int]], t0: float, stopped_by: str,
                order: list[int]) -> ABResult:
        pv = self.pv(position, best.move, max(1, best.depth)) if best.move is not None else []
        return ABResult(best.move, best.score / SCALE, best.depth if best.complete else
                        max(0, best.depth - 1), int(self.ctl[NODES]),
                        time.monotonic() - t0, pv, dict(moves_info), stopped_by,
                        self._reused, int(self.ctl[SEL]))


__all__ = ["AlphaBeta", "ABResult", "MPC_SHAPE", "SCALE", "SELECTIVITY_PCT", "SELECTIVITY_T",
           "SEL_EXACT", "search_root", "static_eval"]
