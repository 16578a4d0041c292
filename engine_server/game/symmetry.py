"""The eight symmetries of the board, for searches that must value a position and its mirror
images alike.

A search's value of a position depends a little on the order it meets moves in (ties in move
ordering are broken by square, the table's slots by the bitboards' hash, and selective cuts by
the window those orders leave), so the same search of a position and of its mirror image can
differ by a disc or so.  Searching every position in one chosen orientation, its canonical one,
removes that: a position and all its images are then the same search.  And a position that is
its own image (the start, and many early positions) has moves that are images of each other;
``orbits`` groups them so that they can be given one value.

Symmetry ``k`` (0..7, 0 the identity) turns rows over when ``k & 1``, columns when ``k & 2``,
and then reflects in the a1-h8 diagonal when ``k & 4``: the kernel ``symmetry`` below, which the
pattern evaluation and the opening book use too.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .bitboard import PASS, U, byteswap
from .position import Position

SYMMETRIES = range(8)

_H1 = U(0x5555555555555555)
_H2 = U(0x3333333333333333)
_H4 = U(0x0F0F0F0F0F0F0F0F)
_D1 = U(0x5500550055005500)
_D2 = U(0x3333000033330000)
_D4 = U(0x0F0F0F0F00000000)


@njit(cache=True, inline="always")
def flip_vertical(x):
    """Rows 1..8 reversed (a1 <-> a8): a row is a byte."""
    return byteswap(x)


@njit(cache=True, inline="always")
def mirror_horizontal(x):
    """Columns a..h reversed (a1 <-> h1)."""
    x = ((x >> U(1)) & _H1) | ((x & _H1) << U(1))
    x = ((x >> U(2)) & _H2) | ((x & _H2) << U(2))
    return ((x >> U(4)) & _H4) | ((x & _H4) << U(4))


@njit(cache=True, inline="always")
def transpose(x):
    """Reflection in the a1-h8 diagonal (b1 <-> a2)."""
    t = _D4 & (x ^ (x << U(28)))
    x ^= t ^ (t >> U(28))
    t = _D2 & (x ^ (x << U(14)))
    x ^= t ^ (t >> U(14))
    t = _D1 & (x ^ (x << U(7)))
    x ^= t ^ (t >> U(7))
    return x


@njit(cache=True)
def symmetry(x, k):
    """Image of bitboard ``x`` under symmetry ``k`` (0..7; 0 is the identity)."""
    if k & 1:
        x = flip_vertical(x)
    if k & 2:
        x = mirror_horizontal(x)
    if k & 4:
        x = transpose(x)
    return x


# _IMAGE[k][sq]: where symmetry k takes square sq; _INVERSE[k][sq]: the square it takes there
_IMAGE = [[int(symmetry(U(1) << U(sq), k)).bit_length() - 1 for sq in range(64)]
          for k in SYMMETRIES]
_INVERSE = [[0] * 64 for _ in SYMMETRIES]
for _k in SYMMETRIES:
    for _sq in range(64):
        _INVERSE[_k][_IMAGE[_k][_sq]] = _sq


def square_image(sq: int, k: int) -> int:
    """The square symmetry ``k`` takes ``sq`` to (a pass stays a pass)."""
    return sq if sq == PASS else _IMAGE[k][sq]


def square_preimage(sq: int, k: int) -> int:
    """The square symmetry ``k`` takes to ``sq``: a move of the image back on the board."""
    return sq if sq == PASS else _INVERSE[k][sq]


def _board_image(bits: int, k: int) -> int:
    return int(symmetry(np.uint64(bits), k))


def image(position: Position, k: int) -> Position:
    """``position`` under symmetry ``k`` (same side to move and rules)."""
    if k == 0:
        return position
    return Position(_board_image(position.black, k), _board_image(position.white, k),
                    position.side, position.rules)


def canonical(position: Position) -> tuple[int, Position]:
    """The symmetry that takes ``position`` to its canonical image (the smallest
    (black, white) pair of the eight), and that image."""
    best_k, best = 0, position
    for k in range(1, 8):
        im = image(position, k)
        if (im.black, im.white) < (best.black, best.white):
            best_k, best = k, im
    return best_k, best


def stabilizer(position: Position) -> list[int]:
    """The symmetries that leave ``position`` as it is (the identity at least)."""
    return [k for k in SYMMETRIES if image(position, k) == position]


def orbits(position: Position, moves: list[int]) -> list[list[int]]:
    """``moves`` grouped by the symmetries of ``position``: moves in one group lead to images
    of one another and so have one value.  Each group in the order of ``moves``."""
    keep = stabilizer(position)
    seen: set[int] = set()
    out = []
    for m in moves:
        if m in seen:
            continue
        group = [x for x in moves if x == m or m != PASS
                 and any(square_image(m, k) == x for k in keep)]
        seen.update(group)
        out.append(group)
    return out


__all__ = ["SYMMETRIES", "canonical", "flip_vertical", "image", "mirror_horizontal", "orbits",
           "square_image", "square_preimage", "stabilizer", "symmetry", "transpose"]
