"""``othello-bench turning``: how often an agent keeps the outcome in positions where `best` gave
it away against NTest at depth 20 (benchmarks/data/turning.txt).

Against NTest at depth 20 the games that turn late turn at 23-26 empties, by a move of `best`
(a win given up for a draw, a draw for a loss): NTest solves win/draw/loss there and `best` at
1 s a move does not.  Each position of the set is one such move of our matches (found by
`othello-match turns DIR --from 26`), with the moves that keep its outcome, solved for every
move by the exact solver beforehand; so the benchmark needs no solving and takes about
``--seconds`` a try.  Every try starts from an empty table (``reset``), as an engine process
started on the position would; in a game the table of the moves before helps a little.

The figure is ``kept`` of ``tries``.  The set is what `best` got wrong once, so its own score
on it is low by selection: compare variants (``--agent best:...``) with one another, in one run.
The default ``--seconds 0.85`` is what an engine process spends of 1 s a move.

``--prove [--threads N]`` times instead what keeping every outcome for certain costs: the exact
solver's win/draw/loss proof of each position (``Solver.solve(mode="wld")``, an empty table
each), its nodes and seconds, and how many finish within ``--seconds``.  A proof that disagrees
with the set's value fails the run.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from engine_server.game import Position
from protocol.notation import parse_move, square_name

from .common import emit, median, timed

TURNING = Path(__file__).resolve().parent / "data" / "turning.txt"


@dataclass(frozen=True)
class Turning:
    """A position, its win/draw/loss value for the side to move (+1 / 0 / -1) and the moves
    that keep it."""

    position: Position
    value: int
    keeps: frozenset[int]
    name: str


def load(path: Path = TURNING) -> list[Turning]:
    """The set's positions; ValueError naming the line where one does not parse or where a
    keeping move is not legal."""
    out = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        try:
            board, side, value, keeps, name = line.split()
            pos = Position.from_string(board, side)
            moves = frozenset(parse_move(m) for m in keeps.split(","))
            v = int(value)
        except ValueError as e:
            raise ValueError(f"{path}:{n}: {e}") from None
        bad = [square_name(m) for m in sorted(moves) if not pos.is_legal(m)]
        if bad or v not in (-1, 0, 1):
            raise ValueError(f"{path}:{n}: value {v}, moves not legal there: {bad}")
        out.append(Turning(pos, v, moves, name))
    return out


def bench_turning(agent: str, seconds: float, tries: int, limit: int | None = None,
                  path: Path = TURNING) -> dict[str, Any]:
    from engine_server.agents import make_agent
    from engine_server.search.limits import Limits

    cases = load(path)[:limit] if limit else load(path)
    a = make_agent(agent)
    a.search(cases[0].position, Limits(depth=3))  # compile / load the kernels outside the tries
    kept, by_position = 0, {}
    for c in cases:
        got = []
        for _ in range(tries):
            a.reset()
            r = a.search(c.position, Limits(time=seconds))
            got.append(square_name(r.best_move) if r.best_move is not None else "-")
            kept += r.best_move in c.keeps
        by_position[c.name] = ",".join(got)
    return {"bench": "turning", "agent": agent, "seconds": seconds, "positions": len(cases),
            "tries": tries * len(cases), "kept": kept, "kept_share": kept / (tries * len(cases)),
            "moves": by_position}


def prove_turning(threads: int, seconds: float, limit: int | None = None,
                  path: Path = TURNING) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Each position's win/draw/loss proof by the exact solver: a row each, and a summary."""
    from engine_server.search.endgame import Solver

    cases = load(path)[:limit] if limit else load(path)
    solver = Solver(threads=threads)
    solver.solve(cases[0].position, mode="wld", max_nodes=1000)  # kernels outside the timings
    rows: list[dict[str, Any]] = []
    times: list[float] = []
    for c in cases:
        solver.clear()  # an empty table each, as the tries of the agent's benchmark
        dt, r = timed(partial(solver.solve, c.position, mode="wld"))
        times.append(dt)
        rows.append({"bench": "turning-prove", "name": c.name, "threads": threads,
                     "empties": c.position.empties, "value": r.score, "expected": c.value,
                     "correct": r.score == c.value, "nodes": r.nodes, "seconds": dt})
    summary = {"bench": "turning-prove", "summary": True, "threads": threads,
               "positions": len(rows), "correct": sum(bool(r["correct"]) for r in rows),
               "nodes": sum(int(r["nodes"]) for r in rows), "seconds": sum(times),
               "median_seconds": median(times), "max_seconds": max(times),
               "within": sum(t <= seconds for t in times), "within_seconds": seconds}
    return rows, summary


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("turning", help="how often an agent keeps the outcome where best gave "
                                       "it away against NTest depth 20 (23-26 empties)")
    p.add_argument("--agent", default="best", help="agent spec, e.g. best:root_solve=25")
    p.add_argument("--seconds", type=float, default=0.85,
                   help="time a try; with --prove, the time a proof is counted within "
                        "(default 0.85)")
    p.add_argument("--tries", type=int, default=2, help="tries a position (default 2)")
    p.add_argument("--positions", type=int, default=None, help="the first N positions only")
    p.add_argument("--prove", action="store_true",
                   help="time the exact solver's win/draw/loss proof of each position instead")
    p.add_argument("--threads", type=int, default=1, help="solver threads, with --prove")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    if args.prove:
        if args.threads < 1:
            print("--threads must be at least 1", file=sys.stderr)
            return 2
        rows, summary = prove_turning(args.threads, args.seconds, args.positions)
        for row in rows:
            emit(row, args.json)
        emit(summary, args.json)
        return 0 if summary["correct"] == summary["positions"] else 1
    emit(bench_turning(args.agent, args.seconds, args.tries, args.positions), args.json)
    return 0
