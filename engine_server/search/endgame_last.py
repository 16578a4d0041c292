"""The last three empties of the exact solver: straight-line solvers, the last move scored by
counting its flips; and the bit-board helpers the deeper layers share (the squares next to a
disc, the quadrants of parity)."""

from __future__ import annotations

from numba import njit

from engine_server.game.bitboard import U0, U1, U, disc_score, flips, popcount

from .endgame_table import NODES

NO_MOVE = -1000      # "the side to move has no legal move" from the side solvers

# Quadrants, for parity: the last empty of a region is best played by whoever gets to it.
_Q0 = U(0x000000000F0F0F0F)
_Q1 = U(0x00000000F0F0F0F0)
_Q2 = U(0x0F0F0F0F00000000)
_Q3 = U(0xF0F0F0F000000000)

_NOT_A = U(0xFEFEFEFEFEFEFEFE)     # no disc on file a (the target of a step to file b..h)
_NOT_H = U(0x7F7F7F7F7F7F7F7F)
_S1 = U(1)
_S7 = U(7)
_S8 = U(8)
_S9 = U(9)


@njit(cache=True, inline="always")
def _around(X):
    """Squares next to a disc of X (a potential move of the other side needs one)."""
    l = X & _NOT_A
    r = X & _NOT_H
    return ((r << _S1) | (l >> _S1) | (X << _S8) | (X >> _S8) | (r << _S9) | (l >> _S9)
            | (l << _S7) | (r >> _S7))


@njit(cache=True)
def _last1(P, O, m, rules):
    """Score of the last empty ``m`` (a single bit): only flips need counting."""
    near = _around(m)
    f = flips(P, O, m) if near & O else U0
    if f != U0:
        mine = popcount(P) + popcount(f) + 1
        return disc_score(mine, 64 - mine, rules)
    f = flips(O, P, m) if near & P else U0
    if f != U0:
        theirs = popcount(O) + popcount(f) + 1
        return disc_score(64 - theirs, theirs, rules)
    return disc_score(popcount(P), popcount(O), rules)


@njit(cache=True)
def _side2(P, O, alpha, beta, a, b, rules):
    # Side to move plays one of the two empties a, b; NO_MOVE when it has neither.
    best = NO_MOVE
    f = flips(P, O, a) if _around(a) & O else U0
    if f != U0:
        best = -_last1(O ^ f, P ^ f ^ a, b, rules)
        if best >= beta:
            return best
    f = flips(P, O, b) if _around(b) & O else U0
    if f != U0:
        v = -_last1(O ^ f, P ^ f ^ b, a, rules)
        if v > best:
            best = v
    return best


@njit(cache=True)
def _solve2(P, O, alpha, beta, rules, ctl):
    ctl[NODES] += 1
    E = ~(P | O)
    a = E & (~E + U1)
    b = E ^ a
    v = _side2(P, O, alpha, beta, a, b, rules)
    if v != NO_MOVE:
        return v
    v = _side2(O, P, -beta, -alpha, a, b, rules)
    if v != NO_MOVE:
        return -v
    return disc_score(popcount(P), popcount(O), rules)


@njit(cache=True)
def _child2(P, O, alpha, beta, a, b, rules, ctl):
    # A position with exactly the empties a and b (single bits), solved for the side to move.
    ctl[NODES] += 1
    v = _side2(P, O, alpha, beta, a, b, rules)
    if v != NO_MOVE:
        return v
    v = _side2(O, P, -beta, -alpha, a, b, rules)
    if v != NO_MOVE:
        return -v
    return disc_score(popcount(P), popcount(O), rules)


@njit(cache=True)
def _side3(P, O, alpha, beta, a, b, c, rules, ctl):
    best = NO_MOVE
    f = flips(P, O, a)
    if f != U0:
        best = -_child2(O ^ f, P ^ f ^ a, -beta, -alpha, b, c, rules, ctl)
        if best >= beta:
            return best
        if best > alpha:
            alpha = best
    f = flips(P, O, b)
    if f != U0:
        v = -_child2(O ^ f, P ^ f ^ b, -beta, -alpha, a, c, rules, ctl)
        if v > best:
            best = v
            if best >= beta:
                return best
            if best > alpha:
                alpha = best
    f = flips(P, O, c)
    if f != U0:
        v = -_child2(O ^ f, P ^ f ^ c, -beta, -alpha, a, b, rules, ctl)
        if v > best:
            best = v
    return best


@njit(cache=True, inline="always")
def _same_quadrant(x, others):
    return ((x & _Q0 and others & _Q0) or (x & _Q1 and others & _Q1)
            or (x & _Q2 and others & _Q2) or (x & _Q3 and others & _Q3))


@njit(cache=True, inline="always")
def _odd_quadrants(E):
    odd = U0
    if popcount(E & _Q0) & 1:
        odd |= _Q0
    if popcount(E & _Q1) & 1:
        odd |= _Q1
    if popcount(E & _Q2) & 1:
        odd |= _Q2
    if popcount(E & _Q3) & 1:
        odd |= _Q3
    return odd


@njit(cache=True)
def _solve3(P, O, alpha, beta, rules, ctl):
    ctl[NODES] += 1
    E = ~(P | O)
    a = E & (~E + U1)
    E ^= a
    b = E & (~E + U1)
    c = E ^ b
    # Parity: a square alone in its quadrant goes first (it is the region's last move).
    if _same_quadrant(a, b | c):
        if not _same_quadrant(b, a | c):
            a, b = b, a
        elif not _same_quadrant(c, a | b):
            a, c = c, a
    v = _side3(P, O, alpha, beta, a, b, c, rules, ctl)
    if v != NO_MOVE:
        return v
    v = _side3(O, P, -beta, -alpha, a, b, c, rules, ctl)
    if v != NO_MOVE:
        return -v
    return disc_score(popcount(P), popcount(O), rules)
