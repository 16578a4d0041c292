"""A quick estimate of an endgame's exact margin, to centre the exact solver's windows.

The exact solver searches a window of width 2 around a guess (every final score is even, so
such a window either proves the guess or returns a bound to move it to), as Edax and
Egaroucid solve after their selective passes.  With a good guess most of the tree is searched
against a null window instead of the full one (docs/endgame.md, "Aspiration from a quick
estimate").

The guess is the value of the midgame search over the evaluation, at the lowest Multi-ProbCut
selectivity (74%) and ``GUESS_DEPTH`` plies, on a small table of its own: quick at 20-26
empties, and usually within 2 discs of the exact score on FFO #40-#59.  Depth 14 took longer
for no better a guess and no fewer solver nodes after it (the measurements:
docs/notes/2026-11-endgame-tuning.md, "Aspiration from a quick estimate").
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import numpy as np

from engine_server.game import Position
from engine_server.log import get_logger

if TYPE_CHECKING:
    from ..alphabeta import AlphaBeta

GUESS_DEPTH = 12       # plies of the selective search
GUESS_LEVEL = 74       # its Multi-ProbCut confidence, percent
GUESS_TABLE_BITS = 16  # 1.5 MiB: the search is small and its entries are not kept

log = get_logger("endgame")


def even_score(v: float) -> int:
    """``v`` rounded to the nearest even score: every final score is even, so a window of
    width 2 around an even guess either proves it or returns a new bound."""
    return int(round(v / 2.0)) * 2


def window_around(g: int, lower: int, upper: int) -> tuple[int, int]:
    """The window of width 2 around the even guess ``g``, within the proven bounds
    [``lower``, ``upper``] of the score (a bound itself stays inside)."""
    return max(lower - 1, g - 1), min(upper + 1, g + 1)


class Estimator:
    """The selective search behind :meth:`estimate`, one per rule variant, built on first
    use from the shipped weights and their Multi-ProbCut statistics."""

    def __init__(self) -> None:
        self._engines: dict[int, tuple[AlphaBeta, np.ndarray, int] | None] = {}
        self._lock = threading.Lock()

    def _engine(self, rules: int) -> tuple[AlphaBeta, np.ndarray, int] | None:
        if rules not in self._engines:
            # Here, not at the top: the midgame search's kernels use the solver's small nodes,
            # which loads this package first when the midgame search is imported first.
            from ..alphabeta import SCALE, SELECTIVITY_PCT, SELECTIVITY_T, AlphaBeta

            try:
                from engine_server.eval import mpc as M
                from engine_server.eval.weights import default_weights
                w = default_weights(rules)
                k = SELECTIVITY_PCT.index(GUESS_LEVEL)
                margins = M.shipped(rules, w).margins(SELECTIVITY_T[k], SCALE)
                self._engines[rules] = (AlphaBeta(w, GUESS_TABLE_BITS), margins, k)
            except Exception as e:  # no weights or statistics: the solver goes without a guess
                log.warning("solver_without_guess", error=str(e))
                self._engines[rules] = None
        return self._engines[rules]

    def estimate(self, position: Position, deadline: float | None = None,
                 stop: threading.Event | None = None) -> tuple[int, int] | None:
        """(guess, nodes): the estimated margin rounded to an even score in [-64, 64], side
        to move's view, and the nodes searched for it; None without an evaluation.  The
        same position always gets the same guess (the table starts empty each time) unless
        ``deadline`` or ``stop`` cut the search short."""
        rules = int(position.rules)
        with self._lock:
            got = self._engine(rules)
            if got is None:
                return None
            ab, margins, level = got
            ab.clear()
            r = ab.search(position, deadline, stop, max_depth=min(GUESS_DEPTH, position.empties),
                          selectivity=level, mpc=margins)
        return max(-64, min(64, even_score(r.score))), int(r.nodes)


__all__ = ["Estimator", "GUESS_DEPTH", "GUESS_LEVEL", "even_score", "window_around"]
