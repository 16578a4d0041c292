"""``othello-bench endgame``: exact solves of the FFO endgame test positions.

The sets are the files ``ffo1-19.txt``, ``ffo20-39.txt`` and ``ffo40-59.txt`` in
``$OTHELLO_DATA``, else ``../shared/data`` beside the repository.  One line per position:
``<64-char board> <side X|O> <best moves, comma-separated> <exact score>``.

``--agent SPEC --move-time S`` plays each position as a game would instead: the agent's move
under a time limit (``best`` at 1 s plays a move of maximal exact margin on FFO #1-#19: the
perfect-endgame goal, which the tests check with time enough for a busy machine).

``--latency SECONDS`` times instead how promptly an unfinished solve gives way: a stop event set
after SECONDS (stop latency) and a deadline SECONDS away (overrun), on the set's first positions
(seconds of work each).  The tests only check that stops and deadlines end solves.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine_server.game import Position, parse_move, square_name

from .common import REPO_ROOT, emit


@dataclass(frozen=True)
class FfoPosition:
    number: int           # the FFO problem number
    position: Position
    best: frozenset[int]  # every move that reaches the exact score
    score: int            # exact score for the side to move


def data_dir() -> Path:
    """$OTHELLO_DATA, else ../shared/data beside the repository."""
    env = os.environ.get("OTHELLO_DATA")
    return Path(env) if env else REPO_ROOT.parent / "shared" / "data"


def load_set(name: str) -> list[FfoPosition]:
    """Positions of ``<name>.txt``; the first number in the name is the first problem's."""
    path = data_dir() / f"{name}.txt"
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found (set OTHELLO_DATA to the data folder)")
    m = re.search(r"\d+", name)
    first = int(m.group()) if m else 1
    out = []
    lines = [ln for ln in path.read_text().splitlines() if ln.strip()]
    for k, line in enumerate(lines):
        board, side, moves, score = line.split()
        out.append(FfoPosition(first + k, Position.from_string(board, side),
                               frozenset(parse_move(mv) for mv in moves.split(",")), int(score)))
    return out


def bench_endgame(name: str, first: int | None, table_bits: int,
                  threads: int = 1, aspiration: bool = True) -> list[dict[str, Any]]:
    from engine_server.search.endgame import Solver

    positions = load_set(name)[:first]
    solver = Solver(table_bits, threads, aspiration)
    if positions:  # compile or load the kernels outside the timings
        solver.solve(positions[0].position, max_nodes=1000)
    rows = []
    for p in positions:
        solver.clear()  # every position starts from an empty table: reproducible node counts
        t0 = time.perf_counter()
        r = solver.solve(p.position)
        dt = time.perf_counter() - t0
        move = square_name(r.best_move) if r.best_move is not None else None
        rows.append({"bench": "endgame", "set": name, "id": p.number, "threads": threads,
                     "empties": p.position.empties, "move": move, "score": r.score,
                     "expected_score": p.score, "guess": r.guess,
                     "guess_nodes": r.guess_nodes,
                     "correct": r.score == p.score and r.best_move in p.best,
                     "nodes": r.nodes, "seconds": dt, "nodes_per_s": r.nodes / dt if dt else 0.0})
    return rows


def bench_endgame_agent(name: str, first: int | None, spec: str,
                        move_time: float) -> list[dict[str, Any]]:
    from engine_server.agents import make_agent
    from engine_server.search.limits import Limits

    positions = load_set(name)[:first]
    agent = make_agent(spec)
    if positions:  # kernels and tables loaded outside the timings
        agent.search(positions[0].position, Limits(iterations=20))
    rows = []
    for p in positions:
        agent.reset()
        t0 = time.perf_counter()
        r = agent.search(p.position, Limits(time=move_time))
        dt = time.perf_counter() - t0
        rows.append({"bench": "endgame-agent", "set": name, "id": p.number, "agent": spec,
                     "empties": p.position.empties, "move_time": move_time,
                     "move": square_name(r.best_move) if r.best_move is not None else None,
                     "correct": r.best_move in p.best, "exact": r.exact,
                     "stopped_by": r.stopped_by, "seconds": dt})
    return rows


def bench_endgame_latency(name: str, first: int | None, table_bits: int,
                          after: float) -> list[dict[str, Any]]:
    from engine_server.search.endgame import Solver

    positions = load_set(name)[:first or 3]
    solver = Solver(table_bits)
    if positions:
        solver.solve(positions[0].position, max_nodes=1000)
    rows = []
    for p in positions:
        solver.clear()
        latency = _stop_latency(solver, p.position, after)
        solver.clear()
        t0 = time.monotonic()
        w = solver.solve(p.position, mode="wld", deadline=t0 + after)
        overrun = time.monotonic() - (t0 + after)
        rows.append({"bench": "endgame-latency", "set": name, "id": p.number,
                     "empties": p.position.empties, "after_s": after,
                     # None: the solve finished before the stop or the deadline came
                     "stop_latency_s": latency,
                     "deadline_overrun_s": overrun if not w.exact else None})
    return rows


def _stop_latency(solver: Any, position: Position, after: float) -> float | None:
    """Seconds from a stop event set ``after`` seconds into an exact solve to its return."""
    stop = threading.Event()
    set_at: list[float] = []

    def fire() -> None:
        set_at.append(time.monotonic())
        stop.set()

    timer = threading.Timer(after, fire)
    timer.start()
    r = solver.solve(position, stop=stop)
    done = time.monotonic()
    timer.cancel()
    timer.join()
    return done - set_at[0] if set_at and not r.exact else None


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("endgame", help="exact solves of FFO endgame positions")
    p.add_argument("--set", default="ffo40-59", help="ffo1-19, ffo20-39 or ffo40-59")
    p.add_argument("--first", type=int, default=None, help="only the first N positions")
    p.add_argument("--table-bits", type=int, default=20,
                   help="transposition table of 2**BITS entries (32 bytes each)")
    p.add_argument("--threads", type=int, default=1,
                   help="threads sharing each solve (node counts then vary from run to run)")
    p.add_argument("--no-aspiration", action="store_true",
                   help="search the full window, without the estimate that centres the "
                        "exact windows")
    p.add_argument("--agent", default=None, metavar="SPEC",
                   help="play each position with this agent under --move-time instead")
    p.add_argument("--move-time", type=float, default=1.0, metavar="S")
    p.add_argument("--latency", type=float, default=None, metavar="SECONDS",
                   help="time how soon a stop set after SECONDS, and a deadline SECONDS away, "
                        "end unfinished solves (first 3 positions unless --first)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    try:
        if args.agent is not None:
            rows = bench_endgame_agent(args.set, args.first, args.agent, args.move_time)
            for row in rows:
                emit(row, args.json)
            emit({"bench": "endgame-agent", "set": args.set, "summary": True,
                  "agent": args.agent, "move_time": args.move_time, "positions": len(rows),
                  "correct": sum(r["correct"] for r in rows),
                  "max_seconds": max((r["seconds"] for r in rows), default=0.0)}, args.json)
            return 0 if all(r["correct"] for r in rows) else 1
        if args.latency is not None:
            for row in bench_endgame_latency(args.set, args.first, args.table_bits,
                                             args.latency):
                emit(row, args.json)
            return 0
        if args.threads < 1:
            print("--threads must be at least 1", file=sys.stderr)
            return 2
        rows = bench_endgame(args.set, args.first, args.table_bits, args.threads,
                             not args.no_aspiration)
    except FileNotFoundError as e:
        print(str(e), file=sys.stderr)
        return 2
    for row in rows:
        emit(row, args.json)
    nodes = sum(r["nodes"] for r in rows)
    seconds = sum(r["seconds"] for r in rows)
    emit({"bench": "endgame", "set": args.set, "summary": True, "threads": args.threads,
          "positions": len(rows),
          "correct": sum(r["correct"] for r in rows), "nodes": nodes, "seconds": seconds,
          "nodes_per_s": nodes / seconds if seconds else 0.0}, args.json)
    return 0 if all(r["correct"] for r in rows) else 1
