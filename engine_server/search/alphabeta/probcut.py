"""Multi-ProbCut's parameters (the midgame search's selectivity levels, the margins table's
shape) and its probe depth.  The probes themselves stay inside :func:`pvs._pvs`: they
are recursive calls of it, and a kernel of their own would make the recursion span two
functions."""

from __future__ import annotations

import numpy as np
from numba import njit

# Multi-ProbCut (Buro 1997, in Edax's form): at depth >= MPC_MIN_DEPTH a null-window search of
# the shallow depth predicts the deep value; when it lies beyond the window by the margin
# t * sigma(empties, depth) the node is cut.  Levels 2..6 are Egaroucid's confidences; 50% and
# 60% below them cut more than any published engine does: deeper in a second, but no
# stronger in play than 74% (docs/search.md); SEL_EXACT searches full width.  The table keeps
# the level in 3 bits, so SEL_EXACT must stay <= 7.  ``mpc`` tables hold the margin in score
# units per [depth, empties].
SELECTIVITY_T = (0.67, 0.84, 1.13, 1.55, 1.81, 2.32, 2.57)
SELECTIVITY_PCT = (50, 60, 74, 88, 93, 98, 99)
SEL_EXACT = len(SELECTIVITY_T)
assert SEL_EXACT <= 7, "the table's selectivity field has 3 bits"
MPC_MIN_DEPTH = 3
PC_MAX_NEST = 2           # probes inside probes, at most (Edax: 2)
MPC_SHAPE = (61, 65)      # [depth, empties]
NO_MPC = np.zeros(MPC_SHAPE, np.int64)


@njit(cache=True, inline="always")
def probe_depth(depth):
    """The probe depth of Multi-ProbCut: about half, same parity (Edax: 4->2, 8->4, 9->5)."""
    return 2 * (depth // 4) + (depth & 1)
