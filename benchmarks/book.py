"""``othello-bench book``: how fast ``go`` answers from the opening book.

Each position is set in an NBoard session running the agent (``best`` by default: the shipped
book is on), then ``go`` is timed from the command line's arrival to the ``===`` line, over
several repeats; the first ``go`` of the process, which loads the book, is reported apart.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from typing import Any

from engine_server.commands.nboard import NBoardHandler
from engine_server.game import Game, parse_move
from engine_server.session import EngineOptions, Output, Session
from protocol import nboard as nb

from .common import emit

# The start and named openings (the first moves most games share), then some deeper lines.
OPENINGS = {
    "start": "",
    "perpendicular": "f5d6",
    "parallel": "f5f6",
    "diagonal": "f5f4",
    "tiger": "f5d6c3d3c4",
    "buffalo": "f5d6c3d3c4f4c5b3c2",
    "heath": "f5d6c3d3c4f4f6",
    "cow": "f5d6c5",
    "rabbit": "f5f6e6f4",
}


def bench_book(agent: str, repeat: int) -> list[dict[str, Any]]:
    got = threading.Event()
    lines: list[str] = []

    def sink(line: str) -> None:
        lines.append(line)
        if nb.is_move_line(line):
            got.set()

    session = Session(EngineOptions(agent=agent, warmup=False, ponder=False), Output(sink))
    handler = NBoardHandler(session)
    handler.handle_line("nboard 2")
    handler.handle_line("set depth 20")
    rows = []
    try:
        for name, text in OPENINGS.items():
            moves = [parse_move(text[i:i + 2]) for i in range(0, len(text), 2)]
            times = []
            how = ""
            for _ in range(repeat):
                session.set_game(Game.from_moves(moves))
                got.clear()
                t0 = time.monotonic()
                handler.handle_line("go", received=t0)
                if not got.wait(60):
                    raise RuntimeError(f"no move for {name}")
                times.append(time.monotonic() - t0)
                session.stop()
                r = session.last_result
                how = r.stopped_by if r is not None else ""
            rows.append({"bench": "book", "opening": name, "moves": text or "-",
                         "answer": how, "first_ms": times[0] * 1000,
                         "median_ms": statistics.median(times[1:] or times) * 1000,
                         "max_ms": max(times[1:] or times) * 1000})
    finally:
        session.close()
    return rows


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("book", help="NBoard go answered from the opening book, in ms")
    p.add_argument("--agent", default="best")
    p.add_argument("--repeat", type=int, default=21)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    for row in bench_book(args.agent, args.repeat):
        emit(row, args.json)
    return 0
