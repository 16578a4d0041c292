"""Anytime endgame solving of a search's root: win/draw/loss first, then the exact margin.

A :class:`RootSolver` keeps one endgame table for a whole game (proofs do not depend on the
root, so the work of one move speeds up the next) and proves bounds of the root's value step by
step, each step a finished fail-soft window search:

1. win/draw/loss, the window (-1, 1);
2. the exact margin by aspiration: a window of width 2 around a guess (the caller's, else from
   ``ASPIRATION_MIN`` empties the solver's quick estimate, :meth:`Solver.estimate`, else the
   last bound), moved by each result (fail-soft values jump over most steps; every
   final score is even, so a width-2 window around an even guess either proves that score or a
   new bound);
3. for analysis, the exact margin of every other root move (a full window below the best).

Whatever is finished stays proven: a stop or deadline in step 2 leaves the win/draw/loss proof
and the best bound so far, never a weaker result.  A move is known for every proven lower bound
(the move that reached it), so a side that wins always has a winning move to play.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Callable

from engine_server.game import PASS, Position

from .guess import even_score, window_around
from .solver import ASPIRATION_MIN, Solver, WindowResult
from .table import DEFAULT_TABLE_BITS

MAX = 64
PREFERRED_CHECKS = 4   # favourites of the search checked for keeping a won root


@dataclass
class RootProof:
    """What the solver has proven about a root (side to move's view).

    ``lower``/``upper`` bound the final disc margin with perfect play; ``move`` reaches at least
    ``lower`` (None while nothing is proven from below).  ``moves`` maps each root move searched
    to its own proven bounds.
    """

    lower: int = -MAX
    upper: int = MAX
    move: int | None = None
    moves: dict[int, tuple[int, int]] = field(default_factory=dict)
    nodes: int = 0
    seconds: float = 0.0
    pv: list[int] = field(default_factory=list)

    @property
    def exact(self) -> bool:
        return self.lower == self.upper and self.move is not None

    @property
    def decided(self) -> bool:
        """Win, draw or loss is proven."""
        return self.lower > 0 or self.upper < 0 or (self.lower == 0 and self.upper == 0)

    @property
    def proven(self) -> bool:
        """Anything at all is proven."""
        return self.lower > -MAX or self.upper < MAX

    def copy(self) -> "RootProof":
        return RootProof(self.lower, self.upper, self.move, dict(self.moves), self.nodes,
                         self.seconds, list(self.pv))

    def _move_bounds(self, move: int, lower: int, upper: int) -> None:
        lo, hi = self.moves.get(move, (-MAX, MAX))
        lo, hi = max(lo, lower), min(hi, upper)
        if lo > hi:  # proofs cannot disagree; keep the newer one
            lo, hi = lower, upper
        self.moves[move] = (lo, hi)


def _value(w: WindowResult) -> int:
    """The value of a finished window search (a stopped one has none)."""
    assert w.value is not None
    return w.value


class RootSolver:
    """Proves bounds of root values with one :class:`Solver` kept across searches.

    One search at a time (the Solver's lock serializes them); ``proof`` may be read from any
    thread while :meth:`run` works, through :meth:`snapshot`.
    """

    def __init__(self, table_bits: int = DEFAULT_TABLE_BITS, threads: int = 1):
        # threads > 1: each window searched by that many threads (see Solver)
        self.solver = Solver(table_bits, threads)
        self._lock = threading.Lock()
        self._proof = RootProof()

    def snapshot(self) -> RootProof:
        with self._lock:
            return self._proof.copy()

    def run(self, position: Position, deadline: float | None = None,
            stop: threading.Event | None = None, max_nodes: int | None = None,
            guess: float | None = None, all_moves: bool = False,
            on_update: Callable[[RootProof], None] | None = None,
            preferred: Callable[[], list[int]] | None = None) -> RootProof:
        """Prove what fits before ``deadline`` / ``stop`` / ``max_nodes`` (total nodes).

        ``guess`` (a margin estimate, side to move's view) centres the aspiration windows;
        ``all_moves`` goes on to the exact margin of every root move once the root is exact;
        ``preferred`` gives the search's favourite moves, best first: once the root is a proven
        win, they are checked in that order until one is proven to win too, so the search's
        judgement of the margin survives when the exact margin cannot be finished in time.
        """
        t0 = time.monotonic()
        proof = RootProof()
        with self._lock:
            self._proof = proof
        if position.is_game_over():
            s = position.score()
            proof.lower = proof.upper = s
            proof.seconds = time.monotonic() - t0
            return proof
        legal = position.legal_moves() or [PASS]

        def left() -> int | None:
            return None if max_nodes is None else max(0, max_nodes - proof.nodes)

        def search(pos: Position, alpha: int, beta: int) -> WindowResult:
            w = self.solver.window(pos, alpha, beta, deadline, stop, left())
            with self._lock:
                proof.nodes += w.nodes
                proof.seconds = time.monotonic() - t0
            return w

        def publish() -> None:
            if on_update is not None:
                on_update(self.snapshot())

        def record(w: WindowResult) -> bool:
            """Fold one root window into the proof; False when it was stopped."""
            with self._lock:
                if not w.finished:
                    if (w.partial_value is not None and w.partial_move is not None
                            and w.partial_value > proof.lower):  # both or neither are set
                        proof.lower = w.partial_value
                        proof.move = w.partial_move
                        proof._move_bounds(w.partial_move, w.partial_value, MAX)
                    return False
                v = _value(w)
                if v <= w.alpha:
                    proof.upper = min(proof.upper, v)
                elif v >= w.beta:
                    assert w.move is not None  # a root value above alpha is some move's
                    if v > proof.lower or proof.move is None:
                        proof.lower, proof.move = v, w.move
                    proof._move_bounds(w.move, v, MAX)
                else:
                    assert w.move is not None
                    proof.lower = proof.upper = v
                    proof.move = w.move
                    proof._move_bounds(w.move, v, v)
                for m in legal:  # no move beats the root's upper bound
                    proof._move_bounds(m, -MAX, proof.upper)
                return True

        # 1. win / draw / loss
        if not record(search(position, -1, 1)):
            publish()
            return self.snapshot()
        publish()
        # 1b. a won root: which of the search's favourites keep the win
        if preferred is not None and proof.lower > 0:
            for m in preferred()[:PREFERRED_CHECKS]:
                lo, hi = proof.moves.get(m, (-MAX, MAX))
                if lo > 0:
                    break
                if hi <= 0 or m not in legal:
                    continue
                # the child's value <= -1 (ours >= 1) or >= 0 (ours <= 0): a null window
                w = search(position.play(m), -1, 0)
                if not w.finished:
                    break
                reply = _value(w)  # the child's value, its side to move's view
                with self._lock:
                    if reply <= w.alpha:
                        proof._move_bounds(m, -reply, MAX)
                    else:
                        proof._move_bounds(m, -MAX, -reply)
                if reply <= w.alpha:
                    break
            publish()
        # 2. the exact margin, by width-2 aspiration windows
        if guess is None and self.solver.aspiration and position.empties >= ASPIRATION_MIN \
                and not proof.exact:
            # centred on a quick selective search's estimate rather than on the win/draw/loss
            # bound: fewer windows, and narrower ones, on the way to the margin
            got = self.solver.estimate(position, deadline, stop)
            guess = None if got is None else got[0]
        g = None if guess is None else even_score(guess)
        while not (proof.lower == proof.upper and proof.move is not None):
            if g is None or not proof.lower <= g <= proof.upper:
                g = proof.lower if proof.lower > -MAX else proof.upper
            if proof.lower == proof.upper:  # proven from both sides, but no move reaches it yet
                g = proof.lower
            a, b = window_around(g, proof.lower, proof.upper)
            if not record(search(position, a, b)):
                break
            g = None
            publish()
        if proof.exact and proof.move is not None:  # (exact says the move is there)
            proof.pv = self._pv(position, proof.move)
        # 3. analysis: every other move's exact margin, below the best
        if all_moves and proof.exact and len(legal) > 1:
            for m in legal:
                lo, hi = proof.moves.get(m, (-MAX, MAX))
                if lo == hi:
                    continue
                child = position.play(m)
                # the child's value from its side to move is minus ours: window (-hi-1, -lo+1)
                w = search(child, -hi - 1, -lo + 1)
                if not w.finished:
                    break
                reply = _value(w)
                v = -reply
                with self._lock:
                    if reply <= w.alpha:      # child <= alpha: ours >= -alpha
                        proof._move_bounds(m, v, MAX)
                    elif reply >= w.beta:
                        proof._move_bounds(m, -MAX, v)
                    else:
                        proof._move_bounds(m, v, v)
                publish()
        with self._lock:
            proof.seconds = time.monotonic() - t0
        return self.snapshot()

    def _pv(self, position: Position, first: int, max_len: int = 30) -> list[int]:
        """The principal variation as the table remembers it (for display only)."""
        pv = [first]
        pos = position.play(first)
        while len(pv) < max_len and not pos.is_game_over():
            if pos.must_pass():
                m = PASS
            else:
                found = self.solver.table_move(pos)
                if found is None or not pos.is_legal(found):
                    break
                m = found
            pv.append(m)
            pos = pos.play(m)
        while pv and pv[-1] == PASS:
            pv.pop()
        return pv


__all__ = ["RootSolver", "RootProof"]
