"""Random playout kernels: whole games inside numba, driven by a seeded xorshift64* stream."""

from __future__ import annotations

import numpy as np
from numba import njit

from .bitboard import (
    S32,
    START_BLACK,
    START_WHITE,
    U0,
    U1,
    U,
    flips,
    legal_moves,
    popcount,
    rng_next,
)
from .memory import NO_REFCOUNT


@njit(cache=True, **NO_REFCOUNT)
def random_playout(P, O, rng):
    """Play uniformly random moves to the end of the game.

    Returns ``(mine, theirs, plies)``: the final disc counts of the side that was to move at the
    start and of its opponent, and the number of plies played (passes included).
    """
    plies = 0
    flipped = False  # whether P currently belongs to the opponent of the starting side
    while True:
        moves = legal_moves(P, O)
        if moves == U0:
            if legal_moves(O, P) == U0:
                break
            P, O = O, P
            flipped = not flipped
            plies += 1
            continue
        k = ((rng_next(rng) >> S32) * U(popcount(moves))) >> S32
        while k > U0:
            moves &= moves - U1
            k -= U1
        m = moves & (~moves + U1)
        f = flips(P, O, m)
        P, O = O ^ f, P ^ f ^ m
        flipped = not flipped
        plies += 1
    if flipped:
        return popcount(O), popcount(P), plies
    return popcount(P), popcount(O), plies


@njit(cache=True, **NO_REFCOUNT)
def random_games_from_start(games, rng):
    """``games`` random playouts from the start position (the benchmark of the C reference).

    Returns ``(black_wins, white_wins, draws, plies)``; with the C reference's RNG state the win
    counts equal the C program's, which checks that both play the very same games.
    """
    black_wins = 0
    white_wins = 0
    draws = 0
    plies = 0
    for _ in range(games):
        b, w, n = random_playout(START_BLACK, START_WHITE, rng)
        plies += n
        if b > w:
            black_wins += 1
        elif w > b:
            white_wins += 1
        else:
            draws += 1
    return black_wins, white_wins, draws, plies


C_REFERENCE_RNG_STATE = 0x9E3779B97F4A7C15


def c_reference_rng() -> np.ndarray:
    """The RNG state the C reference starts from, for identical games in both."""
    return np.array([C_REFERENCE_RNG_STATE], dtype=np.uint64)
