"""``othello-bench midgame``: the alpha-beta's nodes, speed and time to depth on a fixed position
set (``--set midgame``, the default: benchmarks/data/midgame.txt, 50 positions of WTHOR 2019
games, 44 to 28 empties; ``--set late``: benchmarks/data/late.txt, 20 positions of 26 and 24
empties).

``--depth D``: every position searched to depth D with a fresh table; total nodes, total time,
nodes per second (the search's speed figure).  ``--to-end``: every position searched to the end
of the game at the agent's selectivity (no rising to higher ones), the same figures and the
median time a position.  ``--seconds S``: every position searched for S seconds; the depth
reached (median, min, max).  One search thread; the book is not used (positions are given, not
played to).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path
from typing import Any

from engine_server.game import Position

from .common import emit

SETS = {name: Path(__file__).resolve().parent / "data" / f"{name}.txt"
        for name in ("midgame", "late")}


def positions(limit: int | None = None, which: str = "midgame") -> list[Position]:
    out = []
    for line in SETS[which].read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            board, side = line.split()
            out.append(Position.from_string(board, side))
    return out[:limit] if limit else out


def _engine(agent: str) -> Any:
    """The alpha-beta engine of an ``ab``/``best`` spec (its options applied)."""
    from engine_server.agents import make_agent

    a = make_agent(agent)
    return a


def bench_midgame(agent: str, depth: int | None, seconds: float | None, limit: int | None,
                  repeat: int, which: str = "midgame", to_end: bool = False) -> dict[str, Any]:
    from engine_server.search.limits import Limits

    pos = positions(limit, which)
    a = _engine(agent)
    a.search(pos[0], Limits(depth=3))  # compile / load the kernels outside the timing
    runs = []
    for _ in range(repeat):
        nodes, each, depths = 0, [], []
        for p in pos:
            a.reset()
            limits = (Limits(depth=p.empties) if to_end else
                      Limits(depth=depth) if depth is not None else Limits(time=seconds))
            t0 = time.perf_counter()
            r = a.search(p, limits)
            each.append(time.perf_counter() - t0)
            nodes += r.search_nodes
            depths.append(r.iterations)
        runs.append((nodes, sum(each), depths, each))
    runs.sort(key=lambda x: x[1])
    nodes, t_total, depths, each = runs[len(runs) // 2]
    ends = sum(d >= p.empties for d, p in zip(depths, pos))
    out: dict[str, Any] = {"bench": "midgame", "set": which, "agent": agent,
                           "positions": len(pos), "runs": repeat}
    if to_end:
        out.update({"depth": "end", "ends_reached": ends, "nodes": nodes,
                    "seconds": round(t_total, 3), "nodes_per_s": nodes / t_total,
                    "seconds_median": round(statistics.median(each), 3),
                    "seconds_max": round(max(each), 3)})
    elif depth is not None:
        out.update({"depth": depth, "nodes": nodes, "seconds": round(t_total, 3),
                    "nodes_per_s": nodes / t_total,
                    "seconds_per_position": t_total / len(pos)})
    else:
        out.update({"seconds_each": seconds, "depth_median": statistics.median(depths),
                    "depth_min": min(depths), "depth_max": max(depths),
                    "nodes_per_s": nodes / t_total})
    return out


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("midgame", help="alpha-beta nodes, nodes/s and time to depth on a fixed "
                                       "set of 50 WTHOR midgame positions")
    p.add_argument("--agent", default="ab:threads=1,book=off,root_solve=0",
                   help="an ab/best spec (default one thread, no book, no root solver)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--depth", type=int, default=None, help="search every position to depth D")
    g.add_argument("--seconds", type=float, default=None, help="search every position S s")
    g.add_argument("--to-end", action="store_true",
                   help="search every position to the end of the game at the agent's "
                        "selectivity")
    p.add_argument("--set", choices=sorted(SETS), default="midgame",
                   help="the positions: midgame (50, 44-28 empties) or late (20, 26 and 24)")
    p.add_argument("--positions", type=int, default=None, help="only the first N positions")
    p.add_argument("--repeat", type=int, default=3, help="runs; the median run is reported")
    p.add_argument("--json", action="store_true")

    def run(a: argparse.Namespace) -> int:
        depth = a.depth if a.depth is not None or a.seconds is not None else 10
        emit(bench_midgame(a.agent, depth, a.seconds, a.positions, a.repeat, a.set, a.to_end),
             a.json)
        return 0

    p.set_defaults(func=run)
