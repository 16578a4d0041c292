"""``othello-bench decisions``: two agents' moves in the same late positions, judged exactly
where they differ.

Each agent searches every position of the set (``benchmarks/data/decisions.txt``: 300 positions
of 24-28 empties from held-out WTHOR games, where games against NTest turn) from an empty table
for ``--seconds``, or to ``--depth``.  Where the two moves differ, the position after each is
solved exactly, and the figure is the exact margin one move keeps over the other.  Positions
where both agents play the same move cost nothing to judge and change nothing, so the benchmark
spends its solver time on the decisions a change actually moves: a change to the late search
shows up in minutes here, where a match needs hundreds of games to see it.

A timed search can change its move with the machine's speed: ``best:threads=1`` against
itself, one after the other on a quiet machine, differed in none of the 300 positions; with
two threads, or beside other work, expect a few differences that are noise, not the change.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from engine_server.game import Position

from .common import emit

DECISIONS = Path(__file__).resolve().parent / "data" / "decisions.txt"


def load(path: Path = DECISIONS) -> list[Position]:
    """The set's positions; ValueError naming the line that does not parse or has no choice."""
    out = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        try:
            board, side = line.split()
            pos = Position.from_string(board, side)
        except ValueError as e:
            raise ValueError(f"{path}:{n}: {e}") from None
        if len(pos.legal_moves()) < 2:
            raise ValueError(f"{path}:{n}: fewer than two legal moves, nothing to decide")
        out.append(pos)
    return out


def choose(agent: str, positions: list[Position], seconds: float | None,
           depth: int | None) -> list[int]:
    """The move ``agent`` plays in each position, each searched from an empty table."""
    from engine_server.agents import make_agent
    from engine_server.search.limits import Limits

    a = make_agent(agent)
    a.search(positions[0], Limits(depth=3))  # compile / load the kernels outside the searches
    limits = Limits(depth=depth) if depth is not None else Limits(time=seconds)
    moves = []
    for p in positions:
        a.reset()
        moves.append(int(a.search(p, limits).best_move))
    return moves


def bench_decisions(agents: tuple[str, str], seconds: float | None = 0.85,
                    depth: int | None = None, limit: int | None = None,
                    solver_threads: int = 2, path: Path = DECISIONS) -> dict[str, Any]:
    from clients.match.elo import mean_half_width
    from engine_server.search.endgame.solver import Solver

    positions = load(path)[:limit] if limit else load(path)
    t0 = time.monotonic()
    moves = [choose(a, positions, seconds, depth) for a in agents]
    search_s = time.monotonic() - t0
    solver = Solver(threads=solver_threads)
    diffs, outcome = [], [0, 0]
    better = [0, 0]
    t1 = time.monotonic()

    def margin(p: Position, m: int) -> int:
        r = solver.solve(p.play(m))
        assert r.score is not None, "an unbounded solve always finishes"
        return -r.score  # the child's score is its side to move's

    for i, p in enumerate(positions):
        ma, mb = moves[0][i], moves[1][i]
        if ma == mb:
            continue
        va, vb = margin(p, ma), margin(p, mb)
        diffs.append(va - vb)
        better[0] += va > vb
        better[1] += vb > va
        sa, sb = (va > 0) - (va < 0), (vb > 0) - (vb < 0)
        outcome[0] += sa > sb
        outcome[1] += sb > sa
    n = len(diffs)
    mean, half = mean_half_width(diffs, z=1.96) if n > 1 else (float(diffs[0]) if n else 0.0, 0.0)
    return {"bench": "decisions", "agent_a": agents[0], "agent_b": agents[1],
            "seconds": None if depth is not None else seconds, "depth": depth,
            "positions": len(positions), "differ": n, "a_better": better[0],
            "b_better": better[1], "equal": n - better[0] - better[1],
            "outcome_a_better": outcome[0], "outcome_b_better": outcome[1],
            "margin_a_minus_b": round(mean, 3), "margin_ci95": round(half, 3),
            "margin_a_minus_b_per_position": round(sum(diffs) / len(positions), 4),
            "search_seconds": round(search_s, 1),
            "solve_seconds": round(time.monotonic() - t1, 1)}


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("decisions", help="two agents' moves in 300 positions of 24-28 empties, "
                                         "judged by the exact solver where they differ")
    p.add_argument("--agent", action="append", required=True,
                   help="agent spec; give it twice (A, then B)")
    p.add_argument("--seconds", type=float, default=0.85, help="time a search (default 0.85)")
    p.add_argument("--depth", type=int, default=None,
                   help="search to this depth instead of for a time (reproducible)")
    p.add_argument("--positions", type=int, default=None, help="the first N positions only")
    p.add_argument("--solver-threads", type=int, default=2,
                   help="threads of the judging solves (default 2)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    if len(args.agent) != 2:
        raise SystemExit("othello-bench decisions: give --agent exactly twice (A, then B)")
    emit(bench_decisions((args.agent[0], args.agent[1]), args.seconds, args.depth,
                         args.positions, args.solver_threads), args.json)
    return 0
