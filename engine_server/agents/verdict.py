"""What a played move lost, judged the way a player can trust.

A move's loss is the best move's value minus the played move's, both from one search of the
position before it (an analysis search: every move valued at the same finished depth, in the
position's canonical orientation, moves that are mirror images of each other valued alike), or
both from the opening book, or both exact.  Two values of different searches are never
compared: their difference is mostly the searches' own noise.

A loss is marked only where it is beyond that noise:

* exact values (the endgame solver): any loss of ``EXACT_MISTAKE`` discs or more is real;
* a search of depth d at e empties: ``NOISE_SIGMAS`` times sigma(e, d), the spread of a depth-d
  value against a deeper search's that the Multi-ProbCut statistics measured for these weights
  (eval/mpc.py), never under ``EXACT_MISTAKE``;
* a move of the opening book: never marked (its value is the book's, as lichess and Egaroucid
  leave book moves alone).

A blunder (``??``) is a loss of twice the mistake threshold, and at least ``EXACT_BLUNDER``.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from engine_server.eval import mpc as M
from engine_server.eval.book import BookMove
from engine_server.eval.weights import default_weights
from engine_server.game import PASS, Position
from engine_server.search.limits import MoveStat, SearchResult

EXACT_MISTAKE = 2.0     # discs: the smallest loss marked
EXACT_BLUNDER = 6.0
NOISE_SIGMAS = 2.0
TREE_DEPTH = M.MIN_DEPTH   # the noise a tree search's values are taken to have: a shallow one's
# An analysis searches every position of a game to one depth, so that the values ply to ply
# are alike (odd and even depths differ by a disc or more) and the same game analysed twice
# gets the same marks: 12 plies for 0.25 s a position, two more for each tripling of the time
# (one thread of a 2-core VM: 0.05 to 0.16 s at depth 12 in the midgame, about x3 per 2 plies).
BASE_DEPTH = 12
BASE_SECONDS = 0.25
MIN_ANALYSIS_DEPTH = 6
MAX_ANALYSIS_DEPTH = 24


def analysis_depth(seconds: float) -> int:
    """The depth of an analysis given ``seconds`` a position (always even)."""
    steps = round(math.log(max(seconds, 1e-3) / BASE_SECONDS) / math.log(3))
    return min(MAX_ANALYSIS_DEPTH, max(MIN_ANALYSIS_DEPTH, BASE_DEPTH + 2 * steps))


@dataclass(frozen=True)
class Verdict:
    move: int
    best: int | None
    value: float | None          # the played move's value, the mover's view (discs)
    best_value: float | None
    loss: float | None           # best_value - value, never negative
    exact: bool                  # both values exact
    book: bool                   # both values from the opening book
    depth: int | None            # the search's finished depth (None: book, exact or a tree)
    mistake: float               # the loss marked "?" here (discs)
    blunder: float               # the loss marked "??"
    proven: float = 0.0          # the loss the solver's bounds prove (0: none proven)

    @property
    def mark(self) -> str | None:
        if self.book or self.loss is None or self.loss < self.mistake:
            return None
        return "??" if self.loss >= self.blunder else "?"


def _half(x: float) -> float:
    return math.ceil(2 * x) / 2


@functools.lru_cache(maxsize=2)
def _sigma(rules: int) -> np.ndarray:
    """The shipped statistics' sigma table for ``rules``, looked up once: finding them checks
    the weights' fingerprint, a hash of every weight (about 13 ms), once per move otherwise."""
    try:
        return M.shipped(rules, default_weights(rules)).sigma
    except M.MpcError:   # no statistics for these rules: the other rules' are the best guess
        return M.shipped(0, default_weights(0)).sigma


def thresholds(position: Position, depth: int | None, exact: bool) -> tuple[float, float]:
    """(mistake, blunder) losses in discs for a value of ``position`` searched to ``depth``
    (None: a tree search), or exact."""
    if exact:
        return EXACT_MISTAKE, EXACT_BLUNDER
    sigma = _sigma(int(position.rules))
    d = TREE_DEPTH if depth is None else min(max(depth, M.MIN_DEPTH), M.DEPTHS - 1)
    s = float(sigma[d][position.empties])
    if s <= 0:   # a depth the fit does not cut at: its nearest shallower one's
        s = float(max(sigma[:d + 1, position.empties].max(), M.SIGMA_FLOOR))
    mistake = max(EXACT_MISTAKE, _half(NOISE_SIGMAS * s))
    return mistake, max(EXACT_BLUNDER, 2 * mistake)


def _valued(m: MoveStat) -> bool:
    return m.move != PASS and (m.visits > 0 or m.proven is not None or m.exact)


def judge(position: Position, move: int, result: SearchResult) -> Verdict:
    """The played ``move`` against the best move of one analysis search of ``position``.

    Where the endgame solver proved bounds but not both values (it ran out of nodes), a loss
    its bounds prove (the best move's lower bound over the played move's upper bound) counts
    as exact: it is marked from ``EXACT_MISTAKE``."""
    known = {m.move: m for m in result.moves if _valued(m)}
    played = known.get(move)
    best = max(known.values(), key=lambda m: m.eval, default=None)
    exact = played is not None and best is not None and played.exact and best.exact
    proven = 0.0
    if played is not None and not exact:
        proven = float(max([0] + [m.lower - played.upper for m in known.values()]))
    depth = None
    if result.search_nodes > 0 and not exact:
        depth = result.iterations
    mistake, blunder = thresholds(position, depth, exact or proven >= EXACT_MISTAKE)
    value = None if played is None else round(played.eval, 2)
    best_value = None if best is None else round(best.eval, 2)
    loss = None if value is None or best_value is None else round(max(0.0, best_value - value),
                                                                  2)
    if loss is not None and proven > loss:
        loss = proven
    return Verdict(move, None if best is None else best.move, value, best_value, loss, exact,
                   False, depth, mistake, blunder, proven)


def judge_book(position: Position, move: int, book: list[BookMove]) -> Verdict | None:
    """The played ``move`` against the book's best, when the book holds it (else None)."""
    by_move = {m.move: m for m in book}
    played = by_move.get(move)
    if played is None:
        return None
    best = max(book, key=lambda m: m.value)
    mistake, blunder = thresholds(position, None, True)
    return Verdict(move, best.move, played.value, best.value,
                   round(max(0.0, best.value - played.value), 2), False, True, None,
                   mistake, blunder)


__all__ = ["BASE_DEPTH", "EXACT_BLUNDER", "EXACT_MISTAKE", "NOISE_SIGMAS", "Verdict",
           "analysis_depth", "judge", "judge_book", "thresholds"]
