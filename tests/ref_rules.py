"""A slow, obviously-correct rules reference (ray walking on a 2-D grid) for the property tests."""

from __future__ import annotations

DIRS = [(-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1)]


def ref_flips(P: int, O: int, sq: int) -> int:
    if (P | O) >> sq & 1:
        return 0
    r0, c0 = divmod(sq, 8)
    total = 0
    for dr, dc in DIRS:
        r, c, line = r0 + dr, c0 + dc, 0
        while 0 <= r < 8 and 0 <= c < 8 and O >> (8 * r + c) & 1:
            line |= 1 << (8 * r + c)
            r, c = r + dr, c + dc
        if line and 0 <= r < 8 and 0 <= c < 8 and P >> (8 * r + c) & 1:
            total |= line
    return total


def ref_moves(P: int, O: int) -> int:
    return sum(1 << sq for sq in range(64) if ref_flips(P, O, sq))
