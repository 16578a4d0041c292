"""Rules core: bitboard kernels (numba), notation, and the Position/Game API."""

from protocol.notation import NotationError, parse_move, square_name

from .bitboard import PASS, REVERSED, STANDARD
from .position import Color, Game, GameResult, IllegalMoveError, Position, Rules, parse_color

__all__ = [
    "PASS", "STANDARD", "REVERSED", "NotationError", "parse_move", "square_name",
    "Color", "Game", "GameResult", "IllegalMoveError", "Position", "Rules", "parse_color",
]
