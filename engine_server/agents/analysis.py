"""Retrograde analysis of a whole game (NBoard's ``analyze``): a value for every position.

The endgame positions are solved from the end backwards, so the table fills with the last
positions first and makes the earlier ones cheaper; values are reported in game order.  A
position with few enough empties is solved exactly (the solver's value is what the GUI should
show there); the others get a short search.  A
position whose side to move has a single legal move (a forced move or a pass) is valued through
that move, since a search has nothing to choose there and would report no value.
"""

from __future__ import annotations

import threading
import time
from typing import Callable

from engine_server.game import Position
from engine_server.search.endgame.rootsolve import RootSolver
from engine_server.search.limits import Limits

from .base import Agent

SOLVE_EMPTIES = 24        # positions at or below this many empties are tried exactly
SOLVE_SECONDS = 1.0       # per position; a solve that does not finish falls back to a search
SEARCH_PLAYOUTS = 3000    # the search budget of a position the solver cannot finish


def position_value(position: Position, agent: Agent, solver: RootSolver,
                   stop: threading.Event | None = None) -> tuple[float, bool]:
    """(value in discs for the side to move, exact?) of one position."""
    sign = 1.0
    pos = position
    # follow forced moves and passes: the value is the child's, negated
    while not pos.is_game_over():
        moves = pos.legal_moves()  # [PASS] when the side to move must pass
        if len(moves) != 1:
            break
        pos = pos.play(moves[0])
        sign = -sign
    if pos.is_game_over():
        return sign * float(pos.score()), True
    if pos.empties <= SOLVE_EMPTIES:
        proof = solver.run(pos, time.monotonic() + SOLVE_SECONDS, stop)
        if proof.lower == proof.upper:
            return sign * float(proof.lower), True
    r = agent.search(pos, Limits(playouts=SEARCH_PLAYOUTS, stop=stop))
    return sign * r.eval, r.exact


def analyze_game(positions: list[Position], agent: Agent, solver: RootSolver,
                 stop: threading.Event | None,
                 report: Callable[[int, float], bool]) -> None:
    """Value every position; ``report(index, value)`` is called in index order (as GUIs
    expect) and returns False to stop.

    The endgame positions are solved first, from the last one backwards (each solve leaves the
    table ready for the one before), then everything is reported from the first position on,
    the earlier positions searched as they come."""
    tail: dict[int, float] = {}
    for k in range(len(positions) - 1, -1, -1):
        if positions[k].empties > SOLVE_EMPTIES:
            break
        if stop is not None and stop.is_set():
            return
        tail[k], _ = position_value(positions[k], agent, solver, stop)
    for k, pos in enumerate(positions):
        if stop is not None and stop.is_set():
            return
        value = tail[k] if k in tail else position_value(pos, agent, solver, stop)[0]
        if stop is not None and stop.is_set():
            return
        if not report(k, value):
            return


__all__ = ["analyze_game", "position_value"]
