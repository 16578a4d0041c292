"""Typed search limits and results, shared by every agent (in the style of python-chess)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
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
    # Search depth in plies for depth-first agents (NBoard's ``set depth``); tree agents
    # ignore it and use the other budgets.
    depth: int | None = None
    # An analysis (hints, lz-analyze) wants every move's value, not only the best move's.
    analysis: bool = False

    def __post_init__(self) -> None:
        for name in ("time", "iterations", "playouts", "depth"):
            v = getattr(self, name)
            if v is not None and v < 0:
                raise ValueError(f"limit {name} must be >= 0, got {v}")

    def has_budget(self) -> bool:
        return any(v is not None for v in (self.time, self.deadline, self.iterations,
                                           self.playouts, self.depth))

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
    # What some sources know of a move beyond the common figures; None where it does not apply.
    book_games: int | None = None   # an opening-book move: games of the book's source with it
    # alpha-beta: ``margin`` is the move's score at its depth (0), or an upper (-1) or lower (+1)
    # bound of it (the window cut the search short)
    margin_bound: int | None = None
    mobility: float | None = None   # dk (MCTS blog post): mean mobility backed up to the node
    line_value: float | None = None  # minmax (UCB1 paper, Alg. 3.3): the mean ending its line
    proven: int | None = None    # outcome when proven: +1 win, 0 draw, -1 loss
    # Proven bounds of the final disc margin with perfect play after this move (side to move's
    # view, rules applied); equal when the move is solved exactly.
    lower: int = -64
    upper: int = 64

    @property
    def exact(self) -> bool:
        return self.lower == self.upper

    @property
    def eval(self) -> float:
        """Disc margin for the side to move: exact when solved, else the search's estimate
        (the mean margin, or the value scaled to discs) kept inside the proven bounds."""
        if self.exact:
            return float(self.lower)
        est = self.margin if self.margin is not None else self.value * 64.0
        return float(min(max(est, self.lower), self.upper))

    @property
    def solved_win_rate(self) -> float:
        """The win rate, or 1 / 0.5 / 0 once the outcome is proven."""
        if self.proven is not None:
            return 0.5 * (self.proven + 1.0)
        return self.win_rate

    def bound(self, lower: int, upper: int) -> None:
        """Intersect the bounds with another proof, and derive ``proven`` and ``margin``."""
        self.lower = max(self.lower, int(lower))
        self.upper = min(self.upper, int(upper))
        if self.lower > self.upper:  # two proofs cannot disagree; trust the newer one
            self.lower, self.upper = int(lower), int(upper)
        if self.lower > 0:
            self.proven = 1
        elif self.upper < 0:
            self.proven = -1
        elif self.lower == self.upper == 0:
            self.proven = 0
        if self.margin is not None or self.lower > -64 or self.upper < 64:
            m = self.margin if self.margin is not None else 0.0
            self.margin = float(min(max(m, self.lower), self.upper))

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
    solver_nodes: int = 0          # nodes of the root endgame solver (beside the playouts)
    search_nodes: int = 0          # nodes of a depth-first (alpha-beta) search
    # Multi-ProbCut confidence of a depth-first search in percent (100: full width); with
    # ``iterations`` (its depth) the NBoard depth token is e.g. ``22@93%``.
    selectivity: int = 100
    # Proven bounds of the root's final disc margin (side to move's view); equal when solved.
    lower: int = -64
    upper: int = 64
    # A progress report of a depth-first search: the depth of the iteration under way (its
    # moves and PV are the last finished iteration's, ``iterations`` deep); 0 otherwise.
    searching: int = 0

    @property
    def exact(self) -> bool:
        """The root is solved exactly and ``best_move`` reaches its value."""
        return self.lower == self.upper and bool(self.moves) and self.moves[0].exact \
            and self.moves[0].lower == self.lower

    @property
    def wld(self) -> bool:
        """Win, draw or loss is proven for the root and ``best_move`` keeps it."""
        if not self.moves:
            return False
        b = self.moves[0]
        return (self.lower > 0 and b.lower > 0) or (self.upper < 0) or \
            (self.lower == self.upper == 0 and b.lower == 0)

    @property
    def eval(self) -> float:
        """Disc-margin evaluation of the best move (side to move's view; exact when solved)."""
        if not self.moves:
            return float(self.lower) if self.lower == self.upper else 0.0
        return self.moves[0].eval

    @property
    def nodes(self) -> int:
        """Work done: playouts plus endgame-solver nodes (NBoard's ``nodestats``)."""
        return self.playouts + self.solver_nodes + self.search_nodes

    @property
    def best_name(self) -> str:
        return "" if self.best_move is None else square_name(self.best_move)

    def pv_for(self, move: int) -> list[int]:
        """The principal variation starting with ``move``: the search's for its best move,
        the move alone for the others."""
        return self.pv if move == self.best_move and self.pv[:1] == [move] else [move]

    def pv_names(self) -> list[str]:
        return [square_name(m) for m in self.pv]

    def summary(self) -> dict:
        return {"agent": self.agent, "best": self.best_name, "value": round(self.root_value, 4),
                "iterations": self.iterations, "playouts": self.playouts,
                "elapsed": round(self.elapsed, 4), "reused": round(self.reused_fraction, 4),
                "nodes": self.tree_nodes, "stopped_by": self.stopped_by,
                "solver_nodes": self.solver_nodes, "search_nodes": self.search_nodes,
                "bounds": [self.lower, self.upper]}


ProgressCallback = Callable[[SearchResult], None]

# (key, lower, upper, visits, value) of one candidate move, side to move's view
Candidate = tuple[int, float, float, float, float]


def choose_under_bounds(candidates: list[Candidate], chosen: int | None) -> int:
    """The final choice once moves carry proven margin bounds (score-bounded MCTS-Solver).

    A move whose proven margin no other move can beat is played.  Otherwise, when some moves
    are proven wins, the search's own pick ``chosen`` is played if it is one of them, else the
    most visited of them (a win is never given up for an unproven move; among wins that may
    still beat the best proven margin the search judges better than loose bounds).
    ``chosen`` None (the search has no pick) is never among the candidates.
    Otherwise ``chosen`` stands unless it is dominated (another move is proven at least as
    good) or a proven loss while some move may still draw or win; then the most visited move
    left takes its place.
    """
    best_lo = max(c[1] for c in candidates)
    top = [c for c in candidates if c[1] == best_lo]
    rest_hi = max((c[2] for c in candidates if c[1] < best_lo), default=-65.0)
    if best_lo > -64 and rest_hi <= best_lo:
        return max(top, key=lambda c: (c[2], c[3], c[4]))[0]
    # moves that cannot beat the best proven margin are out
    wins = [c for c in candidates if c[1] > 0 and (c[2] > best_lo or c[1] == best_lo)]
    if wins:
        if chosen is not None and any(c[0] == chosen for c in wins):
            return chosen
        return max(wins, key=lambda c: (c[3], c[4], c[1]))[0]
    open_ = [c for c in candidates if c[2] > best_lo or c[1] == best_lo]
    if any(c[2] >= 0 for c in open_):
        open_ = [c for c in open_ if c[2] >= 0]
    if chosen is not None and any(c[0] == chosen for c in open_):
        return chosen
    return max(open_, key=lambda c: (c[3], c[4], c[2]))[0]


def chain_stop(outer: threading.Event | None, inner: threading.Event) -> Callable[[], None]:
    """Set ``inner`` as soon as ``outer`` is set (a watcher thread polling every 5 ms).

    Returns the function that ends the watch; call it once the search is over."""
    if outer is None:
        return lambda: None
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            if outer.wait(0.005):
                inner.set()
                return

    t = threading.Thread(target=watch, name="stop-watch", daemon=True)
    t.start()

    def end() -> None:
        done.set()
        t.join()

    return end


def now() -> float:
    return time.monotonic()


__all__ = ["Limits", "MoveStat", "SearchResult", "ProgressCallback", "choose_under_bounds",
           "chain_stop", "now"]
