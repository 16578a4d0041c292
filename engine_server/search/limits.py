"""Typed search limits and results, shared by every agent (in the style of python-chess)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Callable

from engine_server.game import square_name


@dataclass
class Limits:
    """What bounds one search.  Any combination; the first one reached stops the search.

    ``time`` is a budget in seconds from the call, ``deadline`` an absolute ``time.monotonic()``
    value; ``iterations`` and ``playouts`` count tree iterations and rollouts; ``stop`` is an
    event another thread may set.  With none of the four budgets set, the agent uses its paper's
    default budget.
    """

    time: float | None = None
    deadline: float | None = None
    iterations: int | None = None
    playouts: int | None = None
    stop: threading.Event | None = None

    def __post_init__(self) -> None:
        for name in ("time", "iterations", "playouts"):
            v = getattr(self, name)
            if v is not None and v < 0:
                raise ValueError(f"limit {name} must be >= 0, got {v}")

    def has_budget(self) -> bool:
        return any(v is not None for v in (self.time, self.deadline, self.iterations,
                                           self.playouts))

    def absolute_deadline(self, start: float) -> float | None:
        d = self.deadline
        if self.time is not None:
            d = start + self.time if d is None else min(d, start + self.time)
        return d

    def stopped(self) -> bool:
        return self.stop is not None and self.stop.is_set()


@dataclass
class MoveStat:
    move: int
    visits: int
    value: float          # mean reward in [-1, 1] for the side to move at the root
    prior: float | None = None
    margin: float | None = None  # mean final disc margin (side to move's view, rules applied)
    extra: dict = field(default_factory=dict)
    proven: int | None = None    # exact outcome when solved: +1 win, 0 draw, -1 loss

    @property
    def win_rate(self) -> float:
        return 0.5 * (self.value + 1.0)

    @property
    def name(self) -> str:
        return square_name(self.move)


@dataclass
class SearchResult:
    best_move: int | None          # None only when the game is over
    moves: list[MoveStat]          # every legal move, best first
    pv: list[int]
    root_value: float              # [-1, 1], side to move's view
    iterations: int = 0
    playouts: int = 0
    elapsed: float = 0.0
    reused_fraction: float = 0.0   # share of the previous tree kept for this search
    tree_nodes: int = 0
    tree_full: bool = False        # the memory cap stopped expansion during this search
    # "iterations", "playouts", "time", "stop", "done", "forced", "solved", "unassailable"
    stopped_by: str = ""
    agent: str = ""
    final: bool = True             # False for progress reports

    @property
    def best_name(self) -> str:
        return "" if self.best_move is None else square_name(self.best_move)

    def pv_names(self) -> list[str]:
        return [square_name(m) for m in self.pv]

    def summary(self) -> dict:
        return {"agent": self.agent, "best": self.best_name, "value": round(self.root_value, 4),
                "iterations": self.iterations, "playouts": self.playouts,
                "elapsed": round(self.elapsed, 4), "reused": round(self.reused_fraction, 4),
                "nodes": self.tree_nodes, "stopped_by": self.stopped_by}


ProgressCallback = Callable[[SearchResult], None]


def now() -> float:
    return time.monotonic()


__all__ = ["Limits", "MoveStat", "SearchResult", "ProgressCallback", "now"]
