"""A ready-made CS303 player file on this engine, in the course template's shape.

Load it the way the platform does (by path, class ``AI``), e.g.
``othello-cs303 check clients/cs303/player.py``.  It needs this project importable (the engine
is Python 3.11 + numba); the file itself passes the platform's source scan and parses as
Python 3.7.  Change ``AGENT`` or ``SEED`` to try another engine configuration.
"""

from clients.cs303.ai import AI as EngineAI
from clients.cs303.ai import COLOR_BLACK, COLOR_NONE, COLOR_WHITE  # noqa: F401  (template names)

AGENT = "uct"
SEED = 0


class AI(EngineAI):
    def __init__(self, chessboard_size, color, time_out):
        super(AI, self).__init__(chessboard_size, color, time_out, agent=AGENT, seed=SEED)
