"""Move and board notations, all converted to the one square mapping of :mod:`.bitboard`.

Square ``i = col + 8 * row``: ``a1 = 0`` top left, ``h1 = 7``, ``a8 = 56``, ``h8 = 63``; a pass
is :data:`PASS` (64), written ``pass`` (``PA``/``pa`` and ``-1,-1`` forms are accepted).

Board forms handled here:

* 64-character board strings (``X`` black, ``O`` white, ``-`` empty, a1..h1, a2..h8), as in
  ``shared/data/ffo*.txt``;
* GGF ``BO[...]`` values: ``8 <64 squares> <mover>`` with ``*``/``O`` (and ``x X``, ``o 0``,
  ``. _`` as readers accept), whitespace ignored;
* the SUSTech CS303 numpy board: ``board[row][col]``, ``-1`` black, ``1`` white, ``0`` empty;
* Botzone coordinates: ``x`` is the column and ``y`` the row, both 0-based; black is ``1``.
"""

from __future__ import annotations

import math

import numpy as np

PASS = 64  # the move index of a pass (the bitboard kernels use the same constant)

BLACK = 0
WHITE = 1

COLUMNS = "abcdefgh"

_BLACK_CHARS = frozenset("*xX")
_WHITE_CHARS = frozenset("oO0")
_EMPTY_CHARS = frozenset("-._")


class NotationError(ValueError):
    """Text that does not denote a square, a move or a board."""


def square_name(sq: int) -> str:
    """``0 -> 'a1'``, ``63 -> 'h8'``, ``PASS -> 'pass'``."""
    if sq == PASS:
        return "pass"
    if not 0 <= sq < 64:
        raise NotationError(f"square index out of range 0..64: {sq}")
    return COLUMNS[sq % 8] + str(sq // 8 + 1)


def move_text(move: int, upper: bool = True) -> str:
    """``F5``/``PA`` (NBoard, GGF), or ``f5``/``pass`` (GTP) with ``upper=False``."""
    if move == PASS:
        return "PA" if upper else "pass"
    s = square_name(move)
    return s.upper() if upper else s


def vertex(move: int) -> str:
    """A move as every GTP reply writes it: ``F5`` in upper case (GoGui's and GTP's vertex
    form; input is read in either case), ``pass`` for a pass."""
    return "pass" if move == PASS else square_name(move).upper()


def parse_move(text: str) -> int:
    """Move text to a square index or PASS.  Accepts ``d3``, ``D3``, ``pass``, ``PA``, ``pa``."""
    t = text.strip().lower()
    if t in ("pass", "pa", "ps", "@@"):
        return PASS
    if len(t) == 2 and t[0] in COLUMNS and t[1] in "12345678":
        return COLUMNS.index(t[0]) + 8 * (int(t[1]) - 1)
    raise NotationError(f"not a move: {text!r} (expected a1..h8 or pass)")


def square_from_row_col(row: int, col: int) -> int:
    if not (0 <= row < 8 and 0 <= col < 8):
        raise NotationError(f"row/col out of range 0..7: ({row}, {col})")
    return col + 8 * row


def row_col(sq: int) -> tuple[int, int]:
    """Square to ``(row, col)`` (the CS303 candidate tuple)."""
    if not 0 <= sq < 64:
        raise NotationError(f"square index out of range 0..63: {sq}")
    return sq // 8, sq % 8


def square_from_botzone(x: int, y: int) -> int:
    """Botzone ``{"x": X, "y": Y}`` to a square; ``(-1, -1)`` is a pass."""
    if x == -1 and y == -1:
        return PASS
    if not (0 <= x < 8 and 0 <= y < 8):
        raise NotationError(f"Botzone x/y out of range 0..7: ({x}, {y})")
    return x + 8 * y


def botzone_xy(sq: int) -> tuple[int, int]:
    """Square to Botzone ``(x, y)``: x is the column, y the row; a pass is ``(-1, -1)``."""
    if sq == PASS:
        return -1, -1
    row, col = row_col(sq)
    return col, row


# --- boards ----------------------------------------------------------------------------------


def board_from_string(text: str) -> tuple[int, int]:
    """A 64-square board text to ``(black, white)`` bitboards (as Python ints).

    Whitespace is ignored; ``X x *`` are black, ``O o 0`` white, ``- . _`` empty.
    """
    squares = [c for c in text if not c.isspace()]
    if len(squares) != 64:
        raise NotationError(f"a board needs 64 squares, got {len(squares)}")
    black = white = 0
    for i, c in enumerate(squares):
        if c in _BLACK_CHARS:
            black |= 1 << i
        elif c in _WHITE_CHARS:
            white |= 1 << i
        elif c not in _EMPTY_CHARS:
            raise NotationError(f"bad square character {c!r} at {square_name(i)}")
    return black, white


def board_to_string(black: int, white: int, black_char: str = "X", white_char: str = "O") -> str:
    out = []
    for i in range(64):
        bit = 1 << i
        out.append(black_char if black & bit else white_char if white & bit else "-")
    return "".join(out)


def parse_ggf_board(value: str) -> tuple[int, int, int]:
    """GGF ``BO`` value (``8 <squares> <mover>``) to ``(black, white, side_to_move)``."""
    parts = value.split()
    if not parts:
        raise NotationError("empty BO value")
    if parts[0] != "8":
        raise NotationError(f"only 8x8 boards are supported, BO size is {parts[0]!r}")
    rest = "".join(parts[1:])
    if len(rest) != 65:
        raise NotationError(f"BO needs 64 squares and a side to move, got {len(rest)} characters")
    black, white = board_from_string(rest[:64])
    mover = rest[64]
    if mover in _BLACK_CHARS:
        side = BLACK
    elif mover in _WHITE_CHARS:
        side = WHITE
    else:
        raise NotationError(f"bad side to move {mover!r} in BO")
    return black, white, side


def format_ggf_board(black: int, white: int, side: int) -> str:
    return "8 " + board_to_string(black, white, "*", "O") + (" *" if side == BLACK else " O")


def board_from_cs303(board: np.ndarray) -> tuple[int, int]:
    """CS303 board (``board[row][col]``, -1 black, 1 white, 0 empty) to ``(black, white)``."""
    arr = np.asarray(board)
    if arr.shape != (8, 8):
        raise NotationError(f"CS303 board must be 8x8, got shape {arr.shape}")
    black = white = 0
    for row in range(8):
        for col in range(8):
            v = int(arr[row, col])
            bit = 1 << (col + 8 * row)
            if v == -1:
                black |= bit
            elif v == 1:
                white |= bit
            elif v != 0:
                raise NotationError(f"CS303 board value {v} at row {row}, col {col}")
    return black, white


def board_to_cs303(black: int, white: int) -> np.ndarray:
    arr = np.zeros((8, 8), dtype=np.int64)
    for i in range(64):
        if black >> i & 1:
            arr[i // 8, i % 8] = -1
        elif white >> i & 1:
            arr[i // 8, i % 8] = 1
    return arr


def board_to_botzone(black: int, white: int) -> list[list[int]]:
    """Botzone's judge array ``grid[x][y]`` (x column, y row): 1 black, -1 white, 0 empty."""
    grid = [[0] * 8 for _ in range(8)]
    for i in range(64):
        x, y = i % 8, i // 8
        if black >> i & 1:
            grid[x][y] = 1
        elif white >> i & 1:
            grid[x][y] = -1
    return grid


def finite_float(text: str) -> float:
    """A float that is neither inf nor nan (clocks and intervals must stay numbers a deadline
    can be computed from); ValueError otherwise."""
    v = float(text)
    if not math.isfinite(v):
        raise ValueError(f"not a finite number: {text!r}")
    return v
