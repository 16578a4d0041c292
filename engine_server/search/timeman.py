"""Time management: from a game clock and a hard per-move cap to a search budget in seconds.

After KataGo's ``TimeControls::getTime``: a lag buffer is subtracted from every allotment (or
the allotment halved when it is under twice the buffer), absolute time is split over our moves
left before the free endgame, each weighted by the phase of the game (:func:`move_weight`: most
in the late midgame, where the game is decided), Fischer adds the increment, byo-yomi and
Canadian periods are used up but never overrun.  Under a clock a forced move takes a few
hundredths of a second.  The hard per-move cap (``--move-time``) always wins.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

NONE = "none"
ABSOLUTE = "absolute"
BYOYOMI = "byoyomi"
CANADIAN = "canadian"
FISCHER = "fischer"
KINDS = (NONE, ABSOLUTE, BYOYOMI, CANADIAN, FISCHER)


@dataclass
class Clock:
    """One side's clock as the protocol last reported it.

    ``main`` is the main time; ``period`` is the byo-yomi period, the Canadian period or the
    Fischer increment; ``stones`` is the Canadian stones per period or the byo-yomi periods.
    ``left`` / ``stones_left`` are the latest ``time_left`` values (None until one arrives).
    """

    kind: str = NONE
    main: float = 0.0
    period: float = 0.0
    stones: int = 0
    left: float | None = None
    stones_left: int | None = None
    updated: float = field(default_factory=time.monotonic)

    def set_left(self, seconds: float, stones: int) -> None:
        self.left = max(0.0, float(seconds))
        self.stones_left = int(stones)
        self.updated = time.monotonic()

    def reset(self) -> None:
        self.left = None
        self.stones_left = None


def clock_state(clock: Clock) -> dict[str, Any]:
    """A clock as JSON-ready fields (the session store); ``updated`` is this process's
    monotonic time and is not kept."""
    return {"kind": clock.kind, "main": clock.main, "period": clock.period,
            "stones": clock.stones, "left": clock.left, "stones_left": clock.stones_left}


def clock_from_state(state: dict[str, Any]) -> Clock:
    """The clock :func:`clock_state` wrote, its time left as last reported."""
    left = state.get("left")
    stones_left = state.get("stones_left")
    return Clock(kind=str(state["kind"]), main=float(state["main"]),
                 period=float(state["period"]), stones=int(state["stones"]),
                 left=None if left is None else float(left),
                 stones_left=None if stones_left is None else int(stones_left))


def apply_lag(t: float, lag: float) -> float:
    return t / 2 if t < 2 * lag else t - lag


# The last 18 empties cost next to nothing: at a second a move the solver has proved the end by
# then and answers quickly, and agents without one play them from a tree that is mostly built.
# Planning over every move to the end left about half of the clock unused, planning to 12
# empties a quarter (docs/notes/matches/clock.md).  What is left at 18 empties is still spent,
# a share a move.
FREE_ENDGAME_EMPTIES = 18
RESERVE_MOVES = 2   # moves of weight 1 kept in every plan, so the end never starves

# How much of the clock a move deserves, by empties (linear between the points): little in the
# opening, where the book answers and a deep search changes few moves; most in the late
# midgame, before the solver reaches the end, where the game is decided; less again once a
# win/loss proof finishes in a fraction of a second (about 24 empties at a second a move).
MOVE_WEIGHTS = ((60, 0.6), (48, 0.8), (40, 1.2), (34, 1.4), (26, 1.4), (20, 0.8), (12, 0.6))


def move_weight(empties: int) -> float:
    """The share of the clock a move at ``empties`` deserves, relative to the others
    (``MOVE_WEIGHTS``, linear between its points, flat beyond its ends)."""
    pts = MOVE_WEIGHTS
    if empties >= pts[0][0]:
        return pts[0][1]
    for (e0, w0), (e1, w1) in zip(pts, pts[1:]):
        if empties >= e1:
            return w1 + (w0 - w1) * (empties - e1) / (e0 - e1)
    return pts[-1][1]


def move_share(empties: int) -> float:
    """This move's share of the time left: its weight over the weights of our moves still to
    come before the free endgame (every other empty from here) and of the reserve; at most a
    third."""
    ours = range(empties, FREE_ENDGAME_EMPTIES, -2)
    total = sum(move_weight(e) for e in ours) + RESERVE_MOVES
    if not ours:   # in the free endgame: as if one move were left before it
        total += 1.0
    return min(1.0 / 3.0, move_weight(empties) / total)


# Seconds lost per move between the GUI's clock and ours: the command's transit, the search
# noticing its deadline (a batch, a few ms; up to 0.08 s seen at 1 s a move on two busy cores)
# and the answer's transit.  The engine's --move-overhead sets it.
DEFAULT_LAG_BUFFER = 0.15


@dataclass
class TimeManager:
    lag_buffer: float = DEFAULT_LAG_BUFFER
    min_move_time: float = 0.02    # never plan less than this (a batch always runs anyway)

    forced_move_time: float = 0.05  # under a clock, a forced move (or pass) takes no more

    def budget(self, clock: Clock | None, empties: int, cap: float | None,
               forced: bool = False) -> float | None:
        """Seconds for this move, or None when neither a clock nor a cap limits it.
        ``forced``: the side to move has one legal move (or must pass); under a clock it gets
        ``forced_move_time`` at most, the rest is kept for moves with a choice."""
        planned = self._from_clock(clock, empties) if clock is not None else None
        if planned is not None and not math.isfinite(planned):
            planned = None  # a clock that is not a number cannot limit anything
        if planned is not None and forced:
            planned = min(planned, self.forced_move_time)
        if cap is not None and not math.isfinite(cap):
            cap = None
        if cap is not None:
            planned = cap if planned is None else min(planned, cap)
        if planned is None:
            return None
        return max(self.min_move_time, planned)

    def _from_clock(self, c: Clock, empties: int) -> float | None:
        if c.kind == NONE:
            return None
        share = move_share(empties)
        left = c.left
        if c.kind == ABSOLUTE:
            rem = c.main if left is None else left
            return apply_lag(rem * share, self.lag_buffer)
        if c.kind == FISCHER:
            rem = c.main if left is None else left
            inc = c.period
            t = inc + max(0.0, rem - inc) * share
            return apply_lag(min(t, rem), self.lag_buffer)
        if c.kind == BYOYOMI:
            # stones_left carries the periods left once main time is gone (kgs convention).
            in_main = left is None or (c.stones_left or 0) == 0
            if in_main:
                rem = c.main if left is None else left
                return apply_lag(max(rem * share, c.period), self.lag_buffer)
            assert left is not None  # in_main is True whenever left is None
            return apply_lag(min(left, c.period), self.lag_buffer)
        if c.kind == CANADIAN:
            in_main = left is None or (c.stones_left or 0) == 0
            if in_main:
                rem = c.main if left is None else left
                if rem <= 0:
                    return apply_lag(c.period / max(1, c.stones), self.lag_buffer)
                return apply_lag(rem * share, self.lag_buffer)
            assert left is not None  # in_main is True whenever left is None
            return apply_lag(left / max(1, c.stones_left or 1), self.lag_buffer)
        raise ValueError(f"unknown clock kind {c.kind!r}; accepted: {', '.join(KINDS)}")
