"""Split points for the midgame search's helper threads: from ``PARALLEL_DEPTH`` an iteration is
split along the principal variation (young brothers wait, with a guess), the helpers taking the
other moves of every node down the first moves while ``SPLIT_DEPTH`` plies remain
(:func:`split_root`); each move is one :func:`alphabeta_pvs.search_move` over the shared table.
The search is described in engine_server/search/alphabeta.py."""

from __future__ import annotations

import collections
import threading

import numpy as np
from numba import njit

from engine_server.game.bitboard import U0, U1, U, flips, legal_moves, lowest_square, popcount

from .alphabeta_pvs import search_move
from .alphabeta_table import (
    ABORTED,
    GEN,
    HALT,
    INF,
    ROOT_BEST,
    ROOT_DONE,
    ROOT_SCORE,
    SEL,
    STOP,
    store_root,
    table_move,
)

PARALLEL_DEPTH = 5        # from this iteration helper threads split the root
SPLIT_DEPTH = 6           # and every node down the first moves with this much depth left


@njit(cache=True)
def child_mobility(P, O, sqs, mob):
    """The moves of (P, O) into ``sqs`` and the opponent's mobility after each into ``mob``;
    returns how many."""
    n = 0
    mm = legal_moves(P, O)
    while mm != U0:
        m = mm & (~mm + U1)
        mm ^= m
        f = flips(P, O, m)
        sqs[n] = lowest_square(m)
        mob[n] = popcount(legal_moves(O ^ f, P ^ f ^ m))
        n += 1
    return n


@njit(cache=True)
def child_position(P, O, sq):
    """(P, O) after the move ``sq``, from the opponent's view."""
    m = U1 << U(sq)
    f = flips(P, O, m)
    return O ^ f, P ^ f ^ m


class _SplitPoint:
    """A node of the principal variation whose moves several threads search (see split_root)."""

    def __init__(self, P: np.uint64, O: np.uint64, moves: list[int], depth: int, lo: int,
                 hi: int, guess: int | None, root: bool, analysis: bool) -> None:
        self.P, self.O, self.moves, self.depth, self.lo, self.hi = P, O, moves, depth, lo, hi
        self.root, self.analysis = root, analysis
        self.speculate = guess is not None and not analysis
        self.g = min(max(guess, lo), hi - 1) if guess is not None else lo
        self.alpha, self.best, self.move = lo, -INF, moves[0]
        self.queue = collections.deque(range(1, len(moves)))
        self.spec: list[tuple[int, int]] = []
        self.known = analysis   # the first move's value (analysis: no window to wait for)
        self.cut = False
        self.busy = 0


def split_order(keys: np.ndarray, data: np.ndarray, P: np.uint64, O: np.uint64,
                rules: np.int64) -> list[int]:
    """The moves of a PV node below the root in the order a split searches them: the
    table's move first, then by the opponent's mobility after the move (fewest first)."""
    sqs = np.zeros(64, np.int64)
    mob = np.zeros(64, np.int64)
    n = int(child_mobility(P, O, sqs, mob))
    order = [int(sq) for _, sq in sorted(zip(mob[:n].tolist(), sqs[:n].tolist()))]
    tm = int(table_move(keys, data, P, O, rules))
    if tm in order:
        order.remove(tm)
        order.insert(0, tm)
    return order


def split_root(W: np.ndarray, keys: np.ndarray, data: np.ndarray, P: np.uint64,
               O: np.uint64, rules: np.int64, order: list[int], depth: int, lo: int,
               hi: int, analysis: bool, mpc: np.ndarray, ctl: np.ndarray,
               helpers: list[np.ndarray], scores: np.ndarray, kinds: np.ndarray,
               guess: int | None) -> int:
    """Split points along the principal variation (young brothers wait, with a guess).

    The main thread walks down the first moves from the root while the remaining depth is
    at least SPLIT_DEPTH; each node on that path is a split point whose other moves the
    helpers take, the deepest first.  Before a node's first move has its value, a helper
    searches another move with a null window at ``guess`` (the value of a shallower
    iteration, negated every ply): most moves fail low against any value near the first
    move's, and a result that proves its move no better than the first stands; any other
    is searched again.  Once the first move's value is known every thread takes the next
    move with a null window at the best value so far, searching again in full when it
    beats it; a move that reaches the node's beta ends the node and halts the helpers
    still on it.  With ``analysis`` every root move gets the full window."""
    kinds[:] = -2
    cond = threading.Condition()
    stack: list[_SplitPoint] = []
    glob = {"aborted": False, "finished": False, "move": order[0]}
    working: dict[int, _SplitPoint | None] = {}

    def child(c: np.ndarray, sp: _SplitPoint, k: int, a: int, b: int) -> int:
        return int(search_move(sp.P, sp.O, np.int64(sp.moves[k]), np.int64(a), np.int64(b),
                               np.int64(sp.depth), W, rules, keys, data, c, mpc))

    def record(sp: _SplitPoint, k: int, v: int, a: int) -> None:
        if sp.root:
            scores[k] = v
            kinds[k] = -1 if v <= a else 1 if v >= sp.hi else 0
        if v > sp.best:
            sp.best, sp.move = v, sp.moves[k]
            if not sp.analysis and v > sp.alpha:
                sp.alpha = v
                if v >= sp.hi:
                    sp.cut = True
                    for i, w in working.items():   # their moves are not needed
                        if w is sp:
                            helpers[i][HALT] = 1

    def run(c: np.ndarray, i: int, sp: _SplitPoint, k: int, known: bool, a: int) -> None:
        if sp.analysis:
            v = child(c, sp, k, sp.lo, sp.hi)
        else:
            v = child(c, sp, k, a, a + 1)
            if known and a < v < sp.hi and c[ABORTED] == 0:
                v = child(c, sp, k, a, sp.hi)
        with cond:
            sp.busy -= 1
            if i >= 0:
                working[i] = None
            if c[ABORTED] != 0:
                if i < 0 or c[STOP] != 0:   # the clock, the caller or the node limit
                    glob["aborted"] = True
            elif sp.cut:
                pass
            elif known:
                record(sp, k, v, a)
            elif not sp.known:
                sp.spec.append((k, v))
            elif v <= sp.g <= sp.alpha:
                record(sp, k, v, sp.alpha)
            else:
                sp.queue.appendleft(k)
            c[HALT] = 0
            cond.notify_all()

    def take() -> tuple | None:
        for sp in reversed(stack):
            if sp.cut or not sp.queue or not (sp.known or sp.speculate):
                continue
            k = sp.queue.popleft()
            sp.busy += 1
            return sp, k, sp.known, sp.alpha if sp.known else sp.g
        return None

    def helper(i: int) -> None:
        c = helpers[i]
        while True:
            with cond:
                while True:
                    if glob["aborted"] or glob["finished"]:
                        return
                    task = take()
                    if task is not None:
                        working[i] = task[0]
                        break
                    cond.wait()
            run(c, i, *task)

    def node(nP: np.uint64, nO: np.uint64, moves: list[int], d: int, a0: int, b0: int,
             g: int | None, root: bool) -> int | None:
        sp = _SplitPoint(nP, nO, moves, d, a0, b0, g, root, analysis and root)
        with cond:
            stack.append(sp)
            cond.notify_all()
        cP, cO = (np.uint64(x) for x in child_position(nP, nO, np.int64(moves[0])))
        sub = (split_order(keys, data, cP, cO, rules)
               if d - 1 >= SPLIT_DEPTH and not sp.analysis else [])
        if len(sub) >= 2:
            r = node(cP, cO, sub, d - 1, -b0, -a0, None if g is None else -g, False)
            v0 = None if r is None else -r
        else:
            v0 = child(ctl, sp, 0, a0, b0)
            if ctl[ABORTED] != 0:
                v0 = None
        with cond:
            if v0 is None or glob["aborted"]:
                glob["aborted"] = True
            else:
                record(sp, 0, v0, a0)
                sp.known = True
                for k, v in sp.spec:
                    if v <= sp.g <= sp.alpha:
                        record(sp, k, v, sp.alpha)
                    else:
                        sp.queue.appendleft(k)
            cond.notify_all()
        while True:
            with cond:
                if glob["aborted"] or sp.cut or (not sp.queue and sp.busy == 0):
                    stack.remove(sp)
                    break
                if not sp.queue:
                    cond.wait()
                    continue
                k = sp.queue.popleft()
                sp.busy += 1
                a = sp.alpha
            run(ctl, -1, sp, k, True, a)
        if glob["aborted"]:
            if root and sp.known:
                ctl[ROOT_BEST], ctl[ROOT_SCORE] = sp.move, sp.best
            return None
        if root:
            glob["move"] = sp.move
        store_root(keys, data, nP, nO, rules, np.int64(a0), np.int64(b0),
                   np.int64(sp.best), np.int64(d), np.int64(sp.move), ctl[GEN], ctl[SEL])
        return sp.best

    for c in helpers:
        c[HALT] = 0
    threads = [threading.Thread(target=helper, args=(i,), daemon=True)
               for i in range(len(helpers))]
    for t in threads:
        t.start()
    try:
        best = node(P, O, order, depth, lo, hi, guess, True)
    finally:
        with cond:
            glob["finished"] = True
            for c in helpers:   # whatever they still search is not needed
                c[HALT] = 1
            cond.notify_all()
        for t in threads:
            t.join()
        for c in helpers:
            c[HALT] = 0
    if best is None:
        return -INF if ctl[ROOT_BEST] < 0 else int(ctl[ROOT_SCORE])
    ctl[ABORTED] = 0
    ctl[ROOT_BEST], ctl[ROOT_SCORE], ctl[ROOT_DONE] = glob["move"], best, 1
    return best
