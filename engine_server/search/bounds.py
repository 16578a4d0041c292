"""What a transposition-table entry's proven bounds do to a search window (shared by the
endgame solver and the alpha-beta search, whose tables differ only in their encodings)."""

from __future__ import annotations

from numba import njit


@njit(cache=True, inline="always")
def table_cut(lo, up, alpha, beta):
    """``(cut, value, alpha, beta)``: a cutoff with ``value`` when the bounds ``[lo, up]``
    decide the window (alpha, beta), else the window narrowed to them."""
    if lo >= beta:
        return True, lo, alpha, beta
    if up <= alpha:
        return True, up, alpha, beta
    if lo == up:
        return True, lo, alpha, beta
    if lo > alpha:
        alpha = lo
    if up < beta:
        beta = up
    return False, lo, alpha, beta
