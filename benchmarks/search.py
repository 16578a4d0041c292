"""``othello-bench search``: iterations/s, playouts/s, deadline overrun and stop latency of an
agent.

``max_overrun_s`` is how long after its ``--seconds`` deadline a search returned (the goal is
20 ms); ``max_stop_latency_s`` how long after another thread set its stop event (set halfway
through a budget ten times longer, so that only the stop ends it).  The tests check only that
deadlines and stops end searches; these figures are for a quiet machine.
"""

from __future__ import annotations

import argparse
import threading
import time
from typing import Any

from engine_server.game import Position
from engine_server.game import bitboard as bb
from engine_server.game.playout import random_games_from_start
from engine_server.search.limits import Limits

from .common import emit, median, without_book


def midgame_position() -> Position:
    """A fixed midgame position: 24 plies of seeded random play from the start."""
    import numpy as np

    rng = np.random.default_rng(2024)
    pos = Position.start()
    for _ in range(24):
        moves = pos.legal_moves()
        pos = pos.play(int(rng.choice(moves)))
    return pos


def parse_position(text: str) -> Position:
    if text == "start":
        return Position.start()
    if text == "midgame":
        return midgame_position()
    board, _, side = text.partition(":")
    return Position.from_string(board, side or "X")


def raw_playout_rate(seconds: float = 0.5) -> float:
    random_games_from_start(10, bb.make_rng(0))
    games, t0 = 0, time.perf_counter()
    rng = bb.make_rng(1)
    while time.perf_counter() - t0 < seconds:
        random_games_from_start(2000, rng)
        games += 2000
    return games / (time.perf_counter() - t0)


def stop_latency(agent: Any, pos: Position, after: float) -> float | None:
    """Seconds from setting the stop event, ``after`` seconds into a search with ten times
    that budget, to the search's return; None when something else ended it first (a book
    move, a solved position)."""
    stop = threading.Event()
    set_at: list[float] = []

    def fire() -> None:
        set_at.append(time.monotonic())
        stop.set()

    timer = threading.Timer(after, fire)
    timer.start()
    r = agent.search(pos, Limits(time=10 * after + 1.0, stop=stop))
    done = time.monotonic()
    timer.cancel()
    timer.join()
    return done - set_at[0] if set_at and r.stopped_by == "stop" else None


def bench_search(spec: str, seconds: float, position: str, repeat: int) -> dict[str, Any]:
    from engine_server.agents import make_agent

    pos = parse_position(position)
    spec = without_book(spec)  # the start position is in the book: time the search itself
    agent = make_agent(spec)
    agent.search(pos, Limits(iterations=20))  # compile / load kernels outside the timing
    ips, pps, nps, depths, overruns, stops = [], [], [], [], [], []
    for _ in range(repeat):
        agent.reset()
        t0 = time.monotonic()
        r = agent.search(pos, Limits(time=seconds))
        wall = time.monotonic() - t0
        overruns.append(wall - seconds)
        ips.append(r.iterations / r.elapsed)
        pps.append(r.playouts / r.elapsed)
        nps.append(r.search_nodes / r.elapsed)
        depths.append(r.iterations)
        agent.reset()
        stops.append(stop_latency(agent, pos, seconds / 2))
    raw = raw_playout_rate()
    latencies = [x for x in stops if x is not None]
    return {"bench": "search", "agent": spec, "position": position, "seconds": seconds,
            "runs": repeat, "iterations_per_s": median(ips), "playouts_per_s": median(pps),
            "max_overrun_s": max(overruns),
            "max_stop_latency_s": max(latencies) if latencies else None,
            "raw_playouts_per_s": raw,
            "ratio_to_raw": median(pps) / raw, "tree_nodes": r.tree_nodes,
            # depth-first agents (ab, best): nodes per second and the depth reached
            "search_nodes_per_s": median(nps), "depth": median(depths)}


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("search", help="search speed and deadline overrun of an agent")
    p.add_argument("--agent", default="uct", help="agent spec, e.g. uct:rollout=valuemap")
    p.add_argument("--seconds", type=float, default=2.0)
    p.add_argument("--position", action="append",
                   help="start, midgame or BOARD64:SIDE (repeatable; default start and midgame)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    for position in args.position or ["start", "midgame"]:
        emit(bench_search(args.agent, args.seconds, position, args.repeat), args.json)
    return 0
