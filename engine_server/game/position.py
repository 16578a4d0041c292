"""Python-facing API over the kernels: an immutable :class:`Position` and a :class:`Game`.

These objects are for protocol code, adapters and tests.  Search code never holds them: it gets
the two bitboards and works inside numba.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Iterable

import numpy as np

from protocol import notation as nt

from . import bitboard as bb
from .bitboard import PASS


class Rules(enum.IntEnum):
    """Rule variant: ``standard`` (more discs win) or ``reversed`` (fewer discs win)."""

    STANDARD = bb.STANDARD
    REVERSED = bb.REVERSED

    @classmethod
    def parse(cls, value: "str | int | Rules") -> "Rules":
        if isinstance(value, Rules):
            return value
        if isinstance(value, str):
            v = value.strip().lower()
            aliases = {"standard": cls.STANDARD, "normal": cls.STANDARD,
                       "reversed": cls.REVERSED, "anti": cls.REVERSED, "reverse": cls.REVERSED}
            if v in aliases:
                return aliases[v]
            raise ValueError(f"unknown rules {value!r}; accepted: standard, reversed")
        return cls(int(value))

    def __str__(self) -> str:
        return self.name.lower()


class Color(enum.IntEnum):
    BLACK = nt.BLACK
    WHITE = nt.WHITE

    @property
    def other(self) -> "Color":
        return Color(1 - self)

    def __str__(self) -> str:
        return self.name.lower()


class IllegalMoveError(ValueError):
    """A move that the rules do not allow in the given position."""


def _u(x: int) -> np.uint64:
    return np.uint64(x)


@dataclass(frozen=True, slots=True)
class Position:
    """Board, side to move and rule variant.  ``black``/``white`` are bitboards as ints."""

    black: int
    white: int
    side: Color = Color.BLACK
    rules: Rules = Rules.STANDARD

    def __post_init__(self) -> None:
        if self.black & self.white:
            raise ValueError("a square is both black and white")
        if not (0 <= self.black < 1 << 64 and 0 <= self.white < 1 << 64):
            raise ValueError("bitboards must fit in 64 bits")
        object.__setattr__(self, "side", Color(self.side))
        object.__setattr__(self, "rules", Rules.parse(self.rules))

    # --- construction ----------------------------------------------------------------------
    @classmethod
    def start(cls, rules: Rules | str = Rules.STANDARD) -> "Position":
        return cls(int(bb.START_BLACK), int(bb.START_WHITE), Color.BLACK, Rules.parse(rules))

    @classmethod
    def from_string(cls, board: str, side: Color | str = Color.BLACK,
                    rules: Rules | str = Rules.STANDARD) -> "Position":
        """From a 64-square board text (``X``/``O``/``-``) and the side to move (``X``/``O``)."""
        black, white = nt.board_from_string(board)
        return cls(black, white, _parse_color(side), Rules.parse(rules))

    @classmethod
    def from_ggf(cls, bo_value: str, rules: Rules | str = Rules.STANDARD) -> "Position":
        black, white, side = nt.parse_ggf_board(bo_value)
        return cls(black, white, Color(side), Rules.parse(rules))

    @classmethod
    def from_cs303(cls, board: np.ndarray, side: Color | int,
                   rules: Rules | str = Rules.REVERSED) -> "Position":
        """From the CS303 numpy board; ``side`` may be a :class:`Color` or the course's -1/1."""
        black, white = nt.board_from_cs303(board)
        if not isinstance(side, Color):
            side = {-1: Color.BLACK, 1: Color.WHITE}[int(side)]
        return cls(black, white, side, Rules.parse(rules))

    def with_rules(self, rules: Rules | str) -> "Position":
        return Position(self.black, self.white, self.side, Rules.parse(rules))

    # --- views -----------------------------------------------------------------------------
    @property
    def player(self) -> int:
        return self.black if self.side == Color.BLACK else self.white

    @property
    def opponent(self) -> int:
        return self.white if self.side == Color.BLACK else self.black

    def bitboards(self) -> tuple[np.uint64, np.uint64]:
        """``(P, O)`` as uint64 for the kernels."""
        return _u(self.player), _u(self.opponent)

    def to_string(self) -> str:
        return nt.board_to_string(self.black, self.white)

    def to_ggf(self) -> str:
        return nt.format_ggf_board(self.black, self.white, self.side)

    def to_cs303(self) -> np.ndarray:
        return nt.board_to_cs303(self.black, self.white)

    @property
    def empties(self) -> int:
        return 64 - (self.black | self.white).bit_count()

    def discs(self) -> tuple[int, int]:
        """``(black, white)`` disc counts."""
        return self.black.bit_count(), self.white.bit_count()

    # --- rules (all through the kernels) ---------------------------------------------------
    @property
    def legal_mask(self) -> int:
        P, O = self.bitboards()
        return int(bb.legal_moves(P, O))

    def legal_moves(self) -> list[int]:
        """Legal squares in index order; ``[PASS]`` when the side must pass; ``[]`` at the end."""
        mask = self.legal_mask
        if mask:
            return [i for i in range(64) if mask >> i & 1]
        return [] if self.is_game_over() else [PASS]

    def is_legal(self, move: int | str) -> bool:
        sq = nt.parse_move(move) if isinstance(move, str) else int(move)
        if sq != PASS and not 0 <= sq < 64:
            return False
        P, O = self.bitboards()
        return bool(bb.is_legal(P, O, sq))

    def must_pass(self) -> bool:
        P, O = self.bitboards()
        return bool(bb.must_pass(P, O))

    def is_game_over(self) -> bool:
        P, O = self.bitboards()
        return bool(bb.is_game_over(P, O))

    def play(self, move: int | str) -> "Position":
        sq = nt.parse_move(move) if isinstance(move, str) else int(move)
        if not self.is_legal(sq):
            name = nt.square_name(sq) if (sq == PASS or 0 <= sq < 64) else str(sq)
            if sq == PASS:
                why = "the game is over" if self.is_game_over() else "the side to move has a move"
            else:
                why = "no discs to flip or square occupied"
            raise IllegalMoveError(f"illegal move {name} for {self.side}: {why}")
        P, O = self.bitboards()
        nP, nO = bb.make_move(P, O, sq)
        mover, other = int(nP), int(nO)  # after the move the opponent is to move
        if self.side == Color.BLACK:
            return Position(other, mover, Color.WHITE, self.rules)
        return Position(mover, other, Color.BLACK, self.rules)

    def flips(self, move: int) -> int:
        P, O = self.bitboards()
        return int(bb.flips(P, O, np.uint64(1 << move)))

    def score(self) -> int:
        """Final score for the side to move under this position's rules, empties to the winner."""
        P, O = self.bitboards()
        return int(bb.final_score(P, O, int(self.rules)))

    def black_score(self) -> int:
        """Final score from black's point of view (positive = black wins under the rules)."""
        s = self.score()
        return s if self.side == Color.BLACK else -s

    def winner(self) -> Color | None:
        s = self.black_score()
        return Color.BLACK if s > 0 else Color.WHITE if s < 0 else None

    def disc_difference(self) -> int:
        """Black's lead in discs as the board stands, under the rules (reversed: fewer discs
        lead); unlike :meth:`black_score` no empty square is given to anyone."""
        b, w = self.discs()
        return b - w if self.rules == Rules.STANDARD else w - b

    def __str__(self) -> str:
        rows = ["  a b c d e f g h"]
        legal = self.legal_mask
        for r in range(8):
            cells = []
            for c in range(8):
                i = c + 8 * r
                cells.append("X" if self.black >> i & 1 else "O" if self.white >> i & 1
                             else "." if legal >> i & 1 else "-")
            rows.append(f"{r + 1} " + " ".join(cells))
        b, w = self.discs()
        if self.is_game_over():
            s = self.black_score()
            who = "draw" if s == 0 else f"{'black' if s > 0 else 'white'} wins by {abs(s)}"
            rows.append(f"X={b} O={w}, game over: {who}, {self.rules} rules")
        else:
            rows.append(f"X={b} O={w}, {self.side} ({'X' if self.side == Color.BLACK else 'O'}) "
                        f"to move, {self.rules} rules")
        return "\n".join(rows)


def _parse_color(value: Color | str | int) -> Color:
    if isinstance(value, Color):
        return value
    if isinstance(value, str):
        v = value.strip().lower()
        if v in ("x", "*", "b", "black"):
            return Color.BLACK
        if v in ("o", "w", "white", "0"):
            return Color.WHITE
        raise ValueError(f"unknown colour {value!r}; accepted: X/black/B, O/white/W")
    return Color(int(value))


parse_color = _parse_color


@dataclass(frozen=True, slots=True)
class GameResult:
    black_discs: int
    white_discs: int
    black_score: int  # final score from black's view under the rules, empties to the winner
    winner: Color | None
    rules: Rules

    def __str__(self) -> str:
        who = "draw" if self.winner is None else f"{self.winner} wins"
        return (f"{who} {self.black_discs}-{self.white_discs} "
                f"({self.black_score:+d} for black, {self.rules} rules)")


@dataclass
class Game:
    """A start position and the moves played from it, passes explicit."""

    start: Position = field(default_factory=Position.start)
    moves: list[int] = field(default_factory=list)
    _positions: list[Position] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        moves, self.moves = list(self.moves), []
        self._positions = [self.start]
        for m in moves:
            self.play(m)

    @classmethod
    def from_moves(cls, moves: Iterable[int | str], start: Position | None = None,
                   rules: Rules | str | None = None) -> "Game":
        s = start or Position.start()
        if rules is not None:
            s = s.with_rules(rules)
        g = cls(s)
        for m in moves:
            g.play(m)
        return g

    @property
    def position(self) -> Position:
        return self._positions[-1]

    @property
    def rules(self) -> Rules:
        return self.start.rules

    def positions(self) -> list[Position]:
        return list(self._positions)

    def play(self, move: int | str) -> Position:
        sq = nt.parse_move(move) if isinstance(move, str) else int(move)
        nxt = self.position.play(sq)  # raises IllegalMoveError, leaving the game unchanged
        self.moves.append(sq)
        self._positions.append(nxt)
        return nxt

    def undo(self) -> int:
        if not self.moves:
            raise IndexError("no move to undo")
        self._positions.pop()
        return self.moves.pop()

    def is_over(self) -> bool:
        return self.position.is_game_over()

    def result(self) -> GameResult:
        pos = self.position
        if not pos.is_game_over():
            raise ValueError("the game is not over")
        b, w = pos.discs()
        return GameResult(b, w, pos.black_score(), pos.winner(), pos.rules)

    def move_texts(self) -> list[str]:
        return [nt.square_name(m) for m in self.moves]


def positions_digest(positions: list[Position]) -> str:
    """Which positions, in which order: a cache of their values is only theirs."""
    import hashlib

    h = hashlib.sha256()
    for p in positions:
        h.update(f"{p.black:x} {p.white:x} {int(p.side)} {int(p.rules)};".encode())
    return h.hexdigest()[:24]
