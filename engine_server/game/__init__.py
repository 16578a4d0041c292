"""Rules core: bitboard kernels (numba), notation, and the Position/Game API."""

from protocol.notation import NotationError, parse_move, square_name

# Before the first kernel is compiled: recursive kernels that declare their signature are typed
# without numba re-typing their bodies at each recursive call (kernel_recursion.py).
from .. import kernel_recursion as _kernel_recursion

_kernel_recursion.install()

from .bitboard import PASS, REVERSED, STANDARD  # noqa: E402
from .position import (  # noqa: E402
    Color,
    Game,
    GameResult,
    IllegalMoveError,
    Position,
    Rules,
    parse_color,
    positions_digest,
)

__all__ = [
    "PASS", "STANDARD", "REVERSED", "NotationError", "parse_move", "square_name",
    "Color", "Game", "GameResult", "IllegalMoveError", "Position", "Rules", "parse_color",
    "positions_digest",
]
