"""Bitboard rules kernels (numba, ``cache=True``).

This module is the only place where the rules of Othello live.

Square mapping, used everywhere in the project: square ``i = col + 8 * row`` with ``a1 = 0``
at the top left, columns ``a..h`` left to right and row ``1`` at the top (so ``h8 = 63``).
Bit ``i`` of a ``uint64`` is square ``i``.  A position is two bitboards: ``P`` for the side to
move and ``O`` for the opponent.  Making a move swaps them.

uint64 discipline: numba promotes ``uint64 op int64`` to float64, so every constant and shift
count used on bitboards is a ``np.uint64`` module global, counts are returned as int64 by the
intrinsics below, and no Python int literal ever meets a bitboard.

Rule variants (``rules`` argument): ``STANDARD = 0`` (more discs win), ``REVERSED = 1`` (fewer
discs win).  Scores are disc differences from the point of view of the side to move, positive
when it wins; empty squares at the end go to the winner in both variants, so the reversed score
is the standard score of the mirrored count (opponent's discs minus own discs).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numba import njit, types
from numba.extending import intrinsic

from protocol.notation import PASS  # the move index of a pass (64), shared with the notation

U = np.uint64

STANDARD = 0
REVERSED = 1

# Masks that stop the directional fills from wrapping around the board edges.
NOT_A_H = U(0x7E7E7E7E7E7E7E7E)
NOT_1_8 = U(0x00FFFFFFFFFFFF00)
INNER = U(0x007E7E7E7E7E7E00)
FULL = U(0xFFFFFFFFFFFFFFFF)

START_BLACK = U(0x0000000810000000)  # e4, d5
START_WHITE = U(0x0000001008000000)  # d4, e5

U0 = U(0)
U1 = U(1)
S1 = U(1)
S7 = U(7)
S8 = U(8)
S9 = U(9)
S2 = U(2)
S14 = U(14)
S16 = U(16)
S18 = U(18)
S12 = U(12)
S25 = U(25)
S27 = U(27)
S32 = U(32)
XS_MULT = U(0x2545F4914F6CDD1D)



if TYPE_CHECKING:
    # What the intrinsics are to their callers; mypy would otherwise see numba's intrinsic
    # object, whose call signature is the typing hook's (typingctx, x).
    def popcount(x: np.uint64) -> int: ...

    def lowest_square(x: np.uint64) -> int: ...

    def highest_square(x: np.uint64) -> int: ...

    def byteswap(x: np.uint64) -> np.uint64: ...
else:
    @intrinsic
    def popcount(typingctx, x):
        """Number of set bits of a uint64, as int64 (LLVM ctpop)."""
        if x != types.uint64:
            return None

        def codegen(context, builder, signature, args):
            return builder.ctpop(args[0])

        return types.int64(types.uint64), codegen

    @intrinsic
    def lowest_square(typingctx, x):
        """Index of the lowest set bit of a uint64, as int64 (LLVM cttz; 64 for zero)."""
        if x != types.uint64:
            return None

        def codegen(context, builder, signature, args):
            return builder.cttz(args[0], context.get_constant(types.boolean, False))

        return types.int64(types.uint64), codegen

    @intrinsic
    def highest_square(typingctx, x):
        """Index of the highest set bit of a non-zero uint64, as int64 (63 - LLVM ctlz)."""
        if x != types.uint64:
            return None

        def codegen(context, builder, signature, args):
            lz = builder.ctlz(args[0], context.get_constant(types.boolean, True))
            return builder.sub(context.get_constant(types.uint64, 63), lz)

        return types.int64(types.uint64), codegen

    @intrinsic
    def byteswap(typingctx, x):
        """The bytes of a uint64 in reverse order (LLVM bswap): rows 1..8 of a board
        reversed."""
        if x != types.uint64:
            return None

        def codegen(context, builder, signature, args):
            return builder.bswap(args[0])

        return types.uint64(types.uint64), codegen


NOT_A = U(0xFEFEFEFEFEFEFEFE)     # no disc on file a (the target of a step to file b..h)
NOT_H = U(0x7F7F7F7F7F7F7F7F)


@njit(cache=True, inline="always")
def neighbours(X):
    """Squares next to a disc of X (a potential move of the other side needs one)."""
    l = X & NOT_A
    r = X & NOT_H
    return ((r << S1) | (l >> S1) | (X << S8) | (X >> S8) | (r << S9) | (l >> S9)
            | (l << S7) | (r >> S7))


@njit(cache=True, inline="always")
def _moves_dir(P, w, s, s2):
    # w = opponent discs that may be crossed in this direction.  Two plain fill steps, then two
    # doubling steps over pairs of crossable discs (Kogge-Stone, as Edax's get_moves): reaches
    # the far edge with four steps instead of six.
    t = w & (P << s)
    t |= w & (t << s)
    pre = w & (w << s)
    t |= pre & (t << s2)
    t |= pre & (t << s2)
    r = t << s
    t = w & (P >> s)
    t |= w & (t >> s)
    pre = w & (w >> s)
    t |= pre & (t >> s2)
    t |= pre & (t >> s2)
    return r | (t >> s)


@njit(cache=True)
def legal_moves(P, O):
    """Bitboard of the legal moves of the side to move (P)."""
    m = (
        _moves_dir(P, O & NOT_A_H, S1, S2)
        | _moves_dir(P, O & NOT_1_8, S8, S16)
        | _moves_dir(P, O & INNER, S7, S14)
        | _moves_dir(P, O & INNER, S9, S18)
    )
    return m & ~(P | O)


def _ray_table() -> np.ndarray:
    # RAYS[x, k]: the squares seen from x in direction k, the first four towards higher
    # indices (east, south, south-east, south-west), the last four towards lower ones.  Row 64
    # (what lowest_square gives for an empty move bitboard) is empty: no flips.
    steps = ((0, 1), (1, 0), (1, 1), (1, -1), (0, -1), (-1, 0), (-1, -1), (-1, 1))
    R = np.zeros((65, 8), dtype=np.uint64)
    for x in range(64):
        for k, (dr, dc) in enumerate(steps):
            r, c = divmod(x, 8)
            r, c = r + dr, c + dc
            while 0 <= r < 8 and 0 <= c < 8:
                R[x, k] |= np.uint64(1 << (8 * r + c))
                r, c = r + dr, c + dc
    return R


RAYS = _ray_table()


@njit(cache=True, inline="always")
def _flips_up(P, O, r):
    # The nearest square of ray r that is not the opponent's is its lowest one; the discs
    # before it flip when it is ours.  Branch-free: the board decides, not the predictor.
    o = ~O & r
    first = o & (~o + U1)
    return r & (first - U1) & (U0 - U((first & P) != U0))


@njit(cache=True, inline="always")
def _flips_down(P, O, r):
    # The nearest is the highest one; bit 0 stands in when the ray is all opponent discs (it
    # is then not on the ray as one of ours, hence the "& r").
    o = (~O & r) | U1
    first = U1 << U(highest_square(o))
    return r & ~((first << U1) - U1) & (U0 - U((first & P & r) != U0))


@njit(cache=True)
def flips(P, O, m):
    """Opponent discs flipped when the side to move plays the single-bit move ``m``."""
    R = RAYS[lowest_square(m)]
    return (_flips_up(P, O, R[0]) | _flips_up(P, O, R[1]) | _flips_up(P, O, R[2])
            | _flips_up(P, O, R[3]) | _flips_down(P, O, R[4]) | _flips_down(P, O, R[5])
            | _flips_down(P, O, R[6]) | _flips_down(P, O, R[7]))


@njit(cache=True)
def make_move(P, O, sq):
    """Play square ``sq`` (assumed legal) or ``PASS``; returns the next (P, O), sides swapped."""
    if sq == PASS:
        return O, P
    m = U1 << U(sq)
    f = flips(P, O, m)
    return O ^ f, P ^ f ^ m


@njit(cache=True)
def is_legal(P, O, sq):
    """Whether ``sq`` (0..63 or PASS) is legal for the side to move; a pass only when forced."""
    moves = legal_moves(P, O)
    if sq == PASS:
        return moves == U0 and legal_moves(O, P) != U0
    if sq < 0 or sq > 63:
        return False
    return (moves >> U(sq)) & U1 == U1


@njit(cache=True)
def must_pass(P, O):
    """The side to move has no move but the opponent has one."""
    return legal_moves(P, O) == U0 and legal_moves(O, P) != U0


@njit(cache=True)
def is_game_over(P, O):
    """Neither side can move."""
    return legal_moves(P, O) == U0 and legal_moves(O, P) == U0


@njit(cache=True)
def disc_score(mine, theirs, rules):
    """Final score for the side owning ``mine`` discs, empties to the winner, per ``rules``."""
    empties = 64 - mine - theirs
    if rules == REVERSED:
        d = theirs - mine
    else:
        d = mine - theirs
    if d > 0:
        return d + empties
    if d < 0:
        return d - empties
    return 0


@njit(cache=True)
def final_score(P, O, rules):
    """Final disc-difference score of a finished game for the side to move."""
    return disc_score(popcount(P), popcount(O), rules)


@njit(cache=True)
def outcome(P, O, rules):
    """+1 win, 0 draw, -1 loss for the side to move of a finished game."""
    s = final_score(P, O, rules)
    if s > 0:
        return 1
    if s < 0:
        return -1
    return 0


# --- random numbers -------------------------------------------------------------------------
# xorshift64* as in the C reference; the state lives in a 1-element uint64 array so that a whole
# batch of playouts inside numba advances one stream, and a seed reproduces it exactly.


@njit(cache=True, inline="always")
def rng_next(state):
    x = state[0]
    x ^= x >> S12
    x ^= x << S25
    x ^= x >> S27
    state[0] = x
    return x * XS_MULT


@njit(cache=True, inline="always")
def rng_below(state, n):
    """Uniform integer in [0, n) for 0 < n < 2**32 (multiply-shift, as the C reference)."""
    return np.int64(((rng_next(state) >> S32) * U(n)) >> S32)


def make_rng(seed: int) -> np.ndarray:
    """RNG state array for ``seed`` (any int); splitmix64 keeps seeds 0, 1, 2... apart and
    non-zero."""
    z = (int(seed) + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    z ^= z >> 31
    return np.array([z or 0x9E3779B97F4A7C15], dtype=np.uint64)


@njit(cache=True, inline="always")
def nth_bit(moves, k):
    """The k-th lowest set bit of ``moves`` (0-based) as a single-bit board."""
    for _ in range(k):
        moves &= moves - U1
    return moves & (~moves + U1)
