"""The order a node tries its moves in when each child is only evaluated (the depth-1 nodes of
the alpha-beta search and of the endgame solver's ordering searches): it decides how many
children are evaluated before one cuts."""

from __future__ import annotations

import numpy as np
from numba import njit

from engine_server.game.bitboard import REVERSED, STANDARD, U0, U1, U

# Corners, the other edge squares, the inner squares, then the squares next to a corner (C,
# then X); reversed rules: inner, edge, C, X squares, corners.  To depth 16 at 74% on the 50
# midgame positions, fewer nodes than in square order under either rules
# (docs/notes/2026-11-search-tuning.md, "The order of a depth-1 node's moves, and killers").
_CORNERS = U(0x8100000000000081)
_XC = U(0x42C300000000C342)
_LEAF_EDGE = U(0xFF818181818181FF) & ~_CORNERS & ~_XC
_LEAF_INNER = ~U(0xFF818181818181FF) & ~_XC
_LEAF_C = U(0x4281000000008142)
# per rules, the classes tried in turn (the last takes what is left); where fewer discs win,
# corner moves rarely refute (measured): inner squares first, corners last
_LEAF_ORDER = np.array([[_CORNERS, _LEAF_EDGE, _LEAF_INNER, _LEAF_C, ~U0],
                        [_LEAF_INNER, _LEAF_EDGE, _LEAF_C, ~_CORNERS, ~U0]], np.uint64)
assert STANDARD == 0 and REVERSED == 1


@njit(cache=True, inline="always")
def next_leaf_move(moves, rules):
    """The move (a bit) a node that evaluates its children tries next among ``moves``."""
    for k in range(_LEAF_ORDER.shape[1]):
        c = moves & _LEAF_ORDER[rules, k]
        if c != U0:
            return c & (~c + U1)
    return U0
