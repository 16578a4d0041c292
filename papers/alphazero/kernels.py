"""numba kernels of data.py (kept apart: the typed modules stay free of numba's
untyped signatures)."""

from __future__ import annotations

import numpy as np
from numba import njit

from engine_server.eval.features import symmetry
from engine_server.game.bitboard import U1, U, flips, legal_moves, popcount


@njit(cache=True)
def transform(P, O, k, Pt, Ot):
    for i in range(P.shape[0]):
        Pt[i] = symmetry(P[i], k[i])
        Ot[i] = symmetry(O[i], k[i])


@njit(cache=True)
def legal_mask(P, O, out):
    for i in range(P.shape[0]):
        M = legal_moves(P[i], O[i])
        if M == U(0):
            out[i, 64] = True
        for s in range(64):
            if (M >> U(s)) & U1:
                out[i, s] = True


@njit(cache=True)
def random_positions(n, seed, b0, w0, P_out, O_out, black_out):
    """Positions of uniformly random games (all plies), for checks and benchmarks."""
    state = np.uint64(seed * 2 + 1)
    k = 0
    while k < n:
        b = b0
        w = w0
        black = True
        passes = 0
        while k < n and passes < 2:
            P = b if black else w
            O = w if black else b
            M = legal_moves(P, O)
            P_out[k] = P
            O_out[k] = O
            black_out[k] = black
            k += 1
            if M == U(0):
                passes += 1
                black = not black
                continue
            passes = 0
            cnt = popcount(M)
            state ^= state >> U(12)
            state ^= state << U(25)
            state ^= state >> U(27)
            r = (state * U(0x2545F4914F6CDD1D)) >> U(33)
            j = int(r % U(cnt))
            mm = M
            for _ in range(j):
                mm &= mm - U1
            m = mm & (~mm + U1)
            f = flips(P, O, m)
            P ^= f | m
            O ^= f
            if black:
                b, w = P, O
            else:
                w, b = P, O
            black = not black
