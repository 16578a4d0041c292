"""The exact solver's root kernels (:func:`solve_root_eval`, :func:`solve_root`) and its Python
API: :class:`Solver` (chunks under a deadline, a table kept between solves), :func:`solve`,
:func:`solve_move_scores`.  How the layers fit together: the package's docstring."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import numpy as np
from numba import njit, types

from engine_server.eval.features import eval_tables
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
from engine_server.log import get_logger

from .deep import order_key, solve_node
from .guess import Estimator, even_score, window_around
from .last import odd_quadrants
from .table import (
    ABORTED,
    BEST,
    CTL_SIZE,
    DEFAULT_TABLE_BITS,
    GENERATION,
    INF,
    KEYS,
    LIMIT,
    LOCAL,
    NO_SQ,
    NODES,
    SCRATCH,
    SHARED,
    SLOT,
    claim,
    entry_move,
    new_table,
    release,
    tt_index,
    tt_probe,
)

log = get_logger("endgame")


_SIG_ROOT = types.UniTuple(types.int64, 2)(types.uint64, types.uint64, types.int64, types.int64,
                                             types.int64, types.uint64[:, ::1], types.int64[::1])
_SIG_ROOT_EVAL = types.UniTuple(types.int64, 2)(
    types.uint64, types.uint64, types.int64, types.int64, types.int64, types.uint64[:, ::1],
    types.int64[::1], types.int16[:, ::1])
# no evaluation: move ordering by mobility, stability and parity only
_NO_W = np.zeros((1, 1), np.int16)


@njit(_SIG_ROOT_EVAL, cache=True, nogil=True)
def solve_root_eval(P, O, alpha, beta, rules, tt, ctl, W):
    """Fail-soft negamax value of (P, O) in the window (alpha, beta), and a best move.

    ``W``: pattern-evaluation weights for the rules, used to order moves at nodes with at
    least ``EVAL_ORDER_MIN`` empties (a (1, 1) array turns that off).

    For MCTS kernels and :func:`solve`: plain arguments, the table ``tt`` from :func:`new_table`
    and the control array ``ctl`` from :func:`new_control`.  Nodes are added to ``ctl[NODES]``;
    the search gives up once that count passes ``ctl[LIMIT]`` (an absolute count, so set it to
    ``ctl[NODES] + budget``), and ``ctl[GENERATION]`` tags new table entries.  A value ``v`` with
    ``alpha < v < beta`` is exact, ``v <= alpha`` an upper bound and ``v >= beta`` a lower
    bound.  The move is ``PASS`` when the side to move must pass and -1 when the game is over.
    When ``ctl[ABORTED]`` is set on return the node budget ran out and neither value means
    anything.
    """
    ctl[ABORTED] = 0
    n = 64 - popcount(P | O)
    moves = legal_moves(P, O)
    if moves == U0:
        if legal_moves(O, P) == U0:
            return disc_score(popcount(P), popcount(O), rules), -1
        v = -solve_node(O, P, -beta, -alpha, n, rules, tt, ctl, W)
        return v, PASS
    odd = odd_quadrants(~(P | O))
    base = SCRATCH + 64 * SLOT
    count = 0
    hash_move = NO_SQ
    j, d = tt_probe(tt, tt_index(tt, P, O), P, O, rules)
    if j >= 0:
        hash_move = entry_move(d)
    mm = moves
    while mm != U0:
        m = mm & (~mm + U1)
        mm ^= m
        sq = lowest_square(m)
        key = -1 << 20 if sq == hash_move else order_key(P, O, m, flips(P, O, m), odd)
        # insertion sort: the root list is short and sorted once
        i = count
        while i > 0 and ctl[base + KEYS + i - 1] > key:
            ctl[base + i] = ctl[base + i - 1]
            ctl[base + KEYS + i] = ctl[base + KEYS + i - 1]
            i -= 1
        ctl[base + i] = sq
        ctl[base + KEYS + i] = key
        count += 1
    best = -INF
    best_move = np.int64(ctl[base])
    child_n = n - 1
    # threads sharing the tree: busy moves after the others, as in _deep
    shared = ctl[SHARED] != 0
    total = count
    row, col, tag = 0, 0, U0   # the busy mark of the move under search
    i = 0
    while i < total:
        sq = ctl[base + i]
        i += 1
        m = U1 << U(sq)
        f = flips(P, O, m)
        nP = O ^ f
        nO = P ^ f ^ m
        if shared:
            row, col, tag, total = claim(tt, ctl, base, nP, nO, sq,
                                          i <= count and best != -INF, total)
            if tag == U0:
                continue
        if best == -INF or beta - alpha <= 1:
            v = -solve_node(nP, nO, -beta, -alpha, child_n, rules, tt, ctl, W)
        else:
            v = -solve_node(nP, nO, -alpha - 1, -alpha, child_n, rules, tt, ctl, W)
            if alpha < v < beta and ctl[ABORTED] == 0:
                v = -solve_node(nP, nO, -beta, -alpha, child_n, rules, tt, ctl, W)
        if shared:
            release(tt, row, col, tag)
        if ctl[ABORTED] != 0:
            ctl[BEST] = best_move if best > -INF else -1
            return best, best_move
        if v > best:
            best = v
            best_move = sq
            if v >= beta:
                break
            if v > alpha:
                alpha = v
    ctl[BEST] = best_move
    return best, best_move


@njit(_SIG_ROOT, cache=True, nogil=True)
def solve_root(P, O, alpha, beta, rules, tt, ctl):
    """Fail-soft negamax value of (P, O) in the window (alpha, beta), and a best move; see
    :func:`solve_root_eval` (this one orders moves without the evaluation)."""
    return solve_root_eval(P, O, alpha, beta, rules, tt, ctl, np.zeros((1, 1), np.int16))


@njit(cache=True)
def _table_move(tt, P, O, rules):
    j, d = tt_probe(tt, tt_index(tt, P, O), P, O, rules)
    if j < 0:
        return -1
    m = entry_move(d)
    return -1 if m == NO_SQ else m



def new_control() -> np.ndarray:
    """The control array of :func:`solve_root`, with no node limit."""
    ctl = np.zeros(CTL_SIZE, dtype=np.int64)
    ctl[LIMIT] = np.iinfo(np.int64).max
    return ctl


# --- Python API -------------------------------------------------------------------------------

MODES = ("exact", "wld")
# From this many empties an exact solve first estimates its score (guess.py); below,
# a full window costs less than the estimate
ASPIRATION_MIN = 18
CHUNK_SECONDS = 0.02     # a stop or deadline is noticed within about this long
FIRST_CHUNK = 100_000    # nodes of the first chunk, before the rate is measured
_NO_LIMIT = np.iinfo(np.int64).max


@dataclass(frozen=True)
class SolveResult:
    """Outcome of a solve.

    ``score``: mode ``exact``, the final disc difference for the side to move with perfect play
    (rules applied, empties to the winner); mode ``wld``, +1 / 0 / -1 for a win / draw / loss.
    It is None when the search stopped before proving it (``exact`` False).
    ``best_move``: a move reaching ``score`` (``PASS`` when the side to move must pass, None
    when the game is over); after a stop, the best root move proven so far, or None.
    """

    score: int | None
    best_move: int | None
    nodes: int
    seconds: float
    exact: bool
    mode: str = "exact"
    guess: int | None = None   # the score the exact windows started from (None: full window)
    guess_nodes: int = 0       # the midgame search's nodes behind that guess (not in ``nodes``)


@dataclass(frozen=True)
class WindowResult:
    """One fail-soft search in the window (``alpha``, ``beta``), side to move's view.

    Finished: ``value <= alpha`` is an upper bound of the position's score, ``value >= beta`` a
    lower bound reached by ``move``, anything between is exact and ``move`` reaches it.
    Stopped (``finished`` False): ``partial_value``, when not None, is a lower bound above
    ``alpha`` that ``partial_move`` reaches (the root moves searched before the stop).
    """

    finished: bool
    value: int | None
    move: int | None
    nodes: int
    alpha: int
    beta: int
    partial_value: int | None = None
    partial_move: int | None = None
    best_so_far: int | None = None   # the best root move searched so far, proven or not


class Solver:
    """A transposition table and a control array, kept from one solve to the next.

    Solves on one Solver are serialized by a lock; give each thread its own Solver to solve
    different positions in parallel.  ``threads`` > 1 searches each solve with that many
    threads over the one table (Weill's ABDADA: every thread searches the whole tree, a move
    another thread is searching is taken after the others, the first thread to finish
    answers), except under ``max_nodes``, whose results must not depend on timing.
    """

    def __init__(self, table_bits: int = DEFAULT_TABLE_BITS, threads: int = 1,
                 aspiration: bool = True):
        if threads < 1:
            raise ValueError(f"threads must be at least 1, got {threads}")
        self.aspiration = aspiration
        self._estimator: Estimator | None = None
        self.tt = new_table(table_bits)
        self.ctl = new_control()
        self.threads = threads
        self._helper_ctl = [new_control() for _ in range(threads - 1)]
        self._generation = 0
        self._lock = threading.Lock()
        self._w: dict[int, np.ndarray] = {}

    def _weights(self, rules: int) -> np.ndarray:
        # the shipped evaluation orders moves near the root; without it, mobility alone
        w = self._w.get(rules)
        if w is None:
            try:
                from engine_server.eval.weights import default_weights
                w = eval_tables(default_weights(rules))
            except Exception as e:  # a missing weights file must not stop the solver
                log.warning("solver_without_eval", error=str(e))
                w = _NO_W
            self._w[rules] = w
        return w

    def clear(self) -> None:
        """Forget every stored result (they stay valid; this only frees the tables)."""
        with self._lock:
            self.tt.fill(0)
            for c in [self.ctl] + self._helper_ctl:
                c[LOCAL:] = 0

    def solve(self, position: Position, mode: str = "exact", deadline: float | None = None,
              stop: threading.Event | None = None,
              max_nodes: int | None = None, guess: int | None = None) -> SolveResult:
        """See :func:`solve`.  ``guess`` (mode ``exact``) centres the first window; without
        one a solver with ``aspiration`` estimates it from ``ASPIRATION_MIN`` empties up
        (:meth:`estimate`), below that it searches the full window."""
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; accepted: {', '.join(MODES)}")
        if mode == "exact" and guess is None and self.aspiration \
                and position.empties >= ASPIRATION_MIN and not position.is_game_over() \
                and not (stop is not None and stop.is_set()) \
                and not (deadline is not None and time.monotonic() >= deadline):
            got = self.estimate(position, deadline, stop)
            extra = 0 if got is None else got[1]
            guess = None if got is None else got[0]
        else:
            extra = 0
        with self._lock:
            if mode == "exact" and guess is not None:
                return self._aspire(position, guess, extra, deadline, stop, max_nodes)
            return self._solve(position, mode, deadline, stop, max_nodes)

    def estimate(self, position: Position, deadline: float | None = None,
                 stop: threading.Event | None = None) -> tuple[int, int] | None:
        """A guess of ``position``'s exact margin from a quick selective search, and the
        nodes it took (:class:`~engine_server.search.endgame.guess.Estimator`); None when
        there is no evaluation to search with."""
        if self._estimator is None:
            self._estimator = Estimator()
        return self._estimator.estimate(position, deadline, stop)

    def _aspire(self, position: Position, guess: int, extra: int, deadline: float | None,
                stop: threading.Event | None, max_nodes: int | None) -> SolveResult:
        # Windows of width 2 around the guess, each moved to the bound the last one returned
        # (fail-soft bounds jump over most steps): the exact score is the first value strictly
        # inside one.  ``extra``: the estimate's nodes, reported beside the solver's.
        t0 = time.monotonic()
        g = start = max(-64, min(64, even_score(guess)))
        lower, upper = -64, 64
        lower_move: int | None = None
        nodes = 0
        while True:
            left = None if max_nodes is None else max_nodes - nodes
            if left is not None and left <= 0:
                break
            a, b = window_around(g, lower, upper)
            w = self._window(position, a, b, deadline, stop, left)
            nodes += w.nodes
            if not w.finished:
                if w.partial_value is not None and w.partial_value > lower:
                    lower_move = w.partial_move
                best = lower_move if lower_move is not None else w.best_so_far
                log.debug("solve_stopped", nodes=nodes, seconds=time.monotonic() - t0,
                          empties=position.empties)
                return SolveResult(None, best, nodes, time.monotonic() - t0, False,
                                   guess=start, guess_nodes=extra)
            assert w.value is not None  # a finished window has its value
            v = w.value
            if a < v < b:
                return SolveResult(v, w.move, nodes, time.monotonic() - t0, True,
                                   guess=start, guess_nodes=extra)
            if v <= a:
                upper = v
            else:
                lower, lower_move = v, w.move
            if lower == upper and lower_move is not None:
                return SolveResult(lower, lower_move, nodes, time.monotonic() - t0,
                                   True, guess=start, guess_nodes=extra)
            g = v
        return SolveResult(None, lower_move, nodes, time.monotonic() - t0, False,
                           guess=start, guess_nodes=extra)

    def _solve(self, position: Position, mode: str, deadline: float | None,
               stop: threading.Event | None, max_nodes: int | None) -> SolveResult:
        t0 = time.monotonic()
        lo, hi = (-1, 1) if mode == "wld" else (-INF, INF)
        w = self._window(position, lo, hi, deadline, stop, max_nodes)
        if w.finished:
            score = w.value
            assert score is not None  # a finished window has its value
            if mode == "wld":
                score = (score > 0) - (score < 0)
            return SolveResult(score, w.move, w.nodes, time.monotonic() - t0, True, mode)
        log.debug("solve_stopped", nodes=w.nodes, seconds=time.monotonic() - t0,
                  empties=position.empties)
        return SolveResult(None, w.best_so_far, w.nodes, time.monotonic() - t0, False, mode)

    def window(self, position: Position, alpha: int, beta: int,
               deadline: float | None = None, stop: threading.Event | None = None,
               max_nodes: int | None = None) -> "WindowResult":
        """One fail-soft search of ``position`` in the window (alpha, beta), anytime.

        Call with the lock free (it takes it).  See :class:`WindowResult` for what a finished
        and a stopped search tell."""
        with self._lock:
            return self._window(position, alpha, beta, deadline, stop, max_nodes)

    def _window(self, position: Position, alpha: int, beta: int, deadline: float | None,
                stop: threading.Event | None, max_nodes: int | None) -> "WindowResult":
        P, O = position.bitboards()
        rules = np.int64(int(position.rules))
        a, b = np.int64(alpha), np.int64(beta)
        # The generation only steers table replacement towards entries of earlier solves.
        self._generation = (self._generation + 1) & 255
        ctl = self.ctl
        ctl[GENERATION] = self._generation
        ctl[NODES] = 0
        ctl[BEST] = -1
        for c in self._helper_ctl:
            c[NODES] = 0
        watched = deadline is not None or stop is not None
        cap = _NO_LIMIT if max_nodes is None else max(0, int(max_nodes))
        forced = legal_moves(P, O) == U0
        W = self._weights(int(rules))
        won: list[tuple[int, int]] = []
        helpers = self._start_helpers(P, O, a, b, rules, W, won) \
            if self.threads > 1 and max_nodes is None else []
        try:
            return self._chunks(P, O, a, b, rules, W, alpha, beta, deadline, stop, cap,
                                forced, watched, won)
        finally:
            self._stop_helpers(helpers)

    def _chunks(self, P: np.uint64, O: np.uint64, a: np.int64, b: np.int64, rules: np.int64,
                W: np.ndarray, alpha: int, beta: int, deadline: float | None,
                stop: threading.Event | None, cap: int, forced: bool, watched: bool,
                won: list[tuple[int, int]]) -> "WindowResult":
        ctl = self.ctl
        chunk = FIRST_CHUNK
        partial_value, partial_move = None, None
        while True:
            if won:
                break
            if stop is not None and stop.is_set():
                break
            if deadline is not None and time.monotonic() >= deadline:
                break
            done = int(ctl[NODES])
            if done >= cap:
                break
            # Unwatched searches run in one call; watched ones in chunks of ~CHUNK_SECONDS.
            # An aborted chunk leaves its finished subtrees in the table, so the next chunk
            # walks back to where it stopped through table cutoffs.
            ctl[LIMIT] = done + (min(cap - done, chunk) if watched else cap - done)
            if won:   # a helper finished (and zeroed the limit) just before it was set
                break
            tc = time.monotonic()
            score, move = solve_root_eval(P, O, a, b, rules, self.tt, ctl, W)
            dt = time.monotonic() - tc
            if ctl[ABORTED] == 0:
                return WindowResult(True, int(score), None if move < 0 else int(move),
                                    self._nodes(), alpha, beta)
            if not forced and int(score) > alpha and int(move) >= 0:
                # the root moves searched to the end before the stop: a proven lower bound
                if partial_value is None or int(score) > partial_value:
                    partial_value, partial_move = int(score), int(move)
            used = int(ctl[NODES]) - done
            if used > 0 and dt > 0:
                target = CHUNK_SECONDS
                if deadline is not None:
                    target = min(target, max(0.001, deadline - time.monotonic()))
                chunk = int(min(max(10_000, used / dt * target), chunk * 4))
        if won:
            # a helper finished the window first: its answer is as good as ours
            score, move = won[0]
            return WindowResult(True, score, None if move < 0 else move, self._nodes(), alpha,
                                beta)
        best = int(ctl[BEST])
        return WindowResult(False, None, None, self._nodes(), alpha, beta, partial_value,
                            partial_move, None if best < 0 else best)

    def _nodes(self) -> int:
        return int(self.ctl[NODES]) + sum(int(c[NODES]) for c in self._helper_ctl)

    def _start_helpers(self, P: np.uint64, O: np.uint64, a: np.int64, b: np.int64,
                       rules: np.int64, W: np.ndarray,
                       won: list[tuple[int, int]]) -> list[threading.Thread]:
        """Helper threads searching the same window over the same table; the first to finish
        puts (score, move) in ``won`` and ends the main thread's chunk."""
        lock = threading.Lock()
        self.ctl[SHARED] = 1

        def helper(c: np.ndarray) -> None:
            score, move = solve_root_eval(P, O, a, b, rules, self.tt, c, W)
            if c[ABORTED] == 0:
                with lock:
                    if not won:
                        won.append((int(score), int(move)))
                        self.ctl[LIMIT] = 0

        threads = []
        for c in self._helper_ctl:
            c[NODES] = 0
            c[LIMIT] = _NO_LIMIT
            c[BEST] = -1
            c[GENERATION] = self.ctl[GENERATION]
            c[SHARED] = 1
            t = threading.Thread(target=helper, args=(c,), daemon=True)
            t.start()
            threads.append(t)
        return threads

    def _stop_helpers(self, threads: list[threading.Thread]) -> None:
        for c in self._helper_ctl:
            c[LIMIT] = 0
        for t in threads:
            t.join()
        self.ctl[SHARED] = 0
        for c in self._helper_ctl:
            c[SHARED] = 0

    def table_move(self, position: Position) -> int | None:
        """The best move the table holds for ``position`` (None when it has none)."""
        P, O = position.bitboards()
        m = int(_table_move(self.tt, P, O, np.int64(int(position.rules))))
        return None if m < 0 else m

    def move_scores(self, position: Position) -> dict[int, int]:
        """Exact score of every legal move (``PASS`` when forced), side to move's view."""
        out = {}
        for mv in position.legal_moves():
            r = self.solve(position.play(mv))
            assert r.score is not None  # no deadline, stop or node budget: always exact
            out[mv] = -int(r.score)
        return out


_default: Solver | None = None
_default_lock = threading.Lock()


def default_solver() -> Solver:
    """The module-wide Solver behind :func:`solve` (its table is allocated on first use)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Solver()
        return _default


def solve(position: Position, mode: str = "exact", deadline: float | None = None,
          stop: threading.Event | None = None, max_nodes: int | None = None,
          guess: int | None = None) -> SolveResult:
    """Solve ``position`` exactly (``mode='exact'``) or to win/draw/loss (``mode='wld'``).

    ``deadline`` is a ``time.monotonic()`` value and ``stop`` an event another thread may set;
    with either, the search runs in chunks of about ``CHUNK_SECONDS`` and returns soon after
    one of them fires.  ``max_nodes`` caps the nodes searched.  A search cut short returns
    ``exact=False`` and ``score=None``.  In mode ``exact`` the windows are centred on
    ``guess``, or on an estimate from ``ASPIRATION_MIN`` empties up (:meth:`Solver.solve`).
    Uses :func:`default_solver`.
    """
    return default_solver().solve(position, mode, deadline, stop, max_nodes, guess)


def solve_move_scores(position: Position) -> dict[int, int]:
    """Exact score of each legal move of ``position`` for its side to move."""
    return default_solver().move_scores(position)



# the public API first, then every other name endgame.py held before the split, for
