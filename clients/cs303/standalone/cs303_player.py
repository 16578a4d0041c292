"""The CS303 ``AI`` class of an exported player (``othello-cs303 export``).

The generator copies the lines between the ``standalone`` markers after the core
(:mod:`.core`) and a settings block it writes itself (``SETTINGS``, ``WEIGHTS``); the names
imported or defined above the first marker exist only so that this template can be imported and
linted inside the package.

The contract (``docs/reference/judges.md`` section 1): ``AI(chessboard_size, color, time_out)``;
``go(chessboard)`` leaves every legal move in ``candidate_list`` as ``(row, col)`` tuples, then
the decision, then each better decision the search finds, so the judge's timer can interrupt it
at any point; the list stays empty when the side must pass.  State is per instance (the judge
runs both players in one process), there are no threads, and nothing catches the judge's timeout
(an ``AssertionError`` raised inside ``go``).
"""

from typing import Any

from .core import Engine, board_bits, legal, popcount, squares

SETTINGS: dict[str, Any] = {"rules": 1, "unit": 8, "depth": 60, "solve": -1, "table": 40000,
                            "share": 0.9, "margin": 0.3, "game_time": 170.0}
WEIGHTS: list[bytes] = []

# >>> standalone
import time  # noqa: E402,I001

COLOR_BLACK = -1
COLOR_WHITE = 1
COLOR_NONE = 0
MAX_CANDIDATES = 999          # the course's checker fails a list of 1000 entries


class AI(object):
    def __init__(self, chessboard_size, color, time_out):
        self.chessboard_size = chessboard_size
        self.color = color
        self.time_out = time_out
        self.candidate_list = []
        # Below the judge's timer: a share of time_out, and at least a fixed margin under it.
        self.cutoff = max(0.05, min(time_out * SETTINGS["share"], time_out - SETTINGS["margin"]))
        self.engine = Engine(WEIGHTS, SETTINGS["unit"], SETTINGS["rules"], SETTINGS["depth"],
                             SETTINGS["solve"], SETTINGS["table"])
        self.used = 0.0               # seconds spent in go this game (the judge allows 180)

    def go(self, chessboard):
        start = time.perf_counter()
        self.candidate_list.clear()
        if self.chessboard_size != 8:
            return None
        mine, theirs = board_bits(chessboard, self.color)
        moves = legal(mine, theirs)
        if not moves:
            return None
        # One C-level call: the judge's timer never sees the list half filled.
        self.candidate_list.extend([divmod(sq, 8) for sq in squares(moves)])
        # The game clock: what is left, spread over our share of the empty squares.
        empties = 64 - popcount(mine | theirs)
        if empties >= 59:
            self.used = 0.0           # a new game (our first or second move)
        left = SETTINGS["game_time"] - self.used
        budget = max(0.05, min(self.cutoff, left / max(1.0, empties / 2.0)))
        try:
            self.engine.search(mine, theirs, start + budget, self._decide)
        finally:
            # kept even when the judge's timer cuts the search short (its exception goes on)
            self.used += time.perf_counter() - start
        return self.candidate_list[-1]

    def _decide(self, sq):
        """Make ``sq`` the decision (the last element) unless it already is."""
        rc = divmod(sq, 8)
        if len(self.candidate_list) >= MAX_CANDIDATES:
            self.candidate_list[-1] = rc
        else:
            self.candidate_list.append(rc)
# <<< standalone
