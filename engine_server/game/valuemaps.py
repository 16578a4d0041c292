"""Square value maps from the seeds, as data in one place.

Both tables are from the CS303 report ("MCTS for Reversed Reversi"), written row by row with row 1
at the top, i.e. in the project's square order (index = col + 8 * row).  The CS303 report notes that
for reversed rules the maps are negated (corners become worthless, X and C squares valuable); use
:func:`for_rules` for that.
"""

from __future__ import annotations

import numpy as np

from .bitboard import REVERSED

# The CS303 report, Table 1: "Roxanne value map".  Lower numbers are better squares (1 = corner is
# the first priority, 5 = X/C squares the last), as in the Roxanne strategy.
ROXANNE_PRIORITY = np.array(
    [
        [1, 5, 3, 3, 3, 3, 5, 1],
        [5, 5, 4, 4, 4, 4, 5, 5],
        [3, 4, 2, 2, 2, 2, 4, 3],
        [3, 4, 2, 0, 0, 2, 4, 3],
        [3, 4, 2, 0, 0, 2, 4, 3],
        [3, 4, 2, 2, 2, 2, 4, 3],
        [5, 5, 4, 4, 4, 4, 5, 5],
        [1, 5, 3, 3, 3, 3, 5, 1],
    ],
    dtype=np.int64,
).reshape(64)

# The CS303 report, Table 2: "final value map" (higher is better under standard rules).
FINAL_VALUE_MAP = np.array(
    [
        [500, -25, 10, 5, 5, 10, -25, 500],
        [-25, -45, 1, 1, 1, 1, -45, -25],
        [10, 1, 3, 2, 2, 3, 1, 10],
        [5, 1, 2, 1, 1, 2, 1, 5],
        [5, 1, 2, 1, 1, 2, 1, 5],
        [10, 1, 3, 2, 2, 3, 1, 10],
        [-25, -45, 1, 1, 1, 1, -45, -25],
        [500, -25, 10, 5, 5, 10, -25, 500],
    ],
    dtype=np.int64,
).reshape(64)

# Square classes used by seeds 002 and 004 (corners, X-squares diagonal to a corner, C-squares
# next to a corner on an edge), as bitboards.
CORNERS = np.uint64((1 << 0) | (1 << 7) | (1 << 56) | (1 << 63))
X_SQUARES = np.uint64((1 << 9) | (1 << 14) | (1 << 49) | (1 << 54))
C_SQUARES = np.uint64(
    (1 << 1) | (1 << 8) | (1 << 6) | (1 << 15) | (1 << 48) | (1 << 57) | (1 << 55) | (1 << 62)
)


def for_rules(value_map: np.ndarray, rules: int) -> np.ndarray:
    """The map to use under ``rules``: negated for reversed rules (the CS303 report,
    section 4.1.2)."""
    return -value_map if rules == REVERSED else value_map.copy()
