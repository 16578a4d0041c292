"""``othello-bench timing``: per-move wall time as a client sees it, engine in a subprocess.

The game starts from seeded random moves that leave the opening book (``out_of_book_game``), so
every timed move is searched under the per-move cap; a position the book knows would be answered
in about a millisecond and say nothing about the cap.  ``book_positions`` counts any timed
position the book still knows (0 expected).

``--cold`` starts timing with the process: ``ready_s`` is the wait for the first answer and the
first move is asked for at once, while the kernels still load in the background (the default
waits a second, as a GUI's handshake would).

``othello-bench ping``: NBoard ``ping`` round trips over the pipes, idle and while a ``hint``
searches without a clock (the ping must end that search and be answered within 100 ms).
"""

from __future__ import annotations

import argparse
import statistics
import time

from clients.engine_process import EngineProcess
from engine_server.game import Color, ggf, parse_move, square_name
from protocol import nboard as nb
from protocol.notation import move_text

from .common import emit, in_book, out_of_book_game


def bench_timing(move_time: float, moves: int, agent: str | None, protocol: str,
                 seed: int = 1, plies: int = 12, cold: bool = False) -> dict:
    args = ["--move-time", str(move_time)]
    if agent:
        args += ["--agent", agent]
    game = out_of_book_game(seed, plies)
    opening = " ".join(square_name(m) for m in game.moves)
    t_start = time.monotonic()
    eng = EngineProcess.ours(*args)
    times: list[float] = []
    book_positions = 0
    settle = 0.0 if cold else 1.0  # let the warm-up finish, as a GUI's handshake would
    try:
        if protocol == "gtp":
            eng.gtp("protocol_version")
            ready = time.monotonic() - t_start
            replay = game.start
            for mv in game.moves:
                color = "black" if replay.side == Color.BLACK else "white"
                eng.gtp(f"play {color} {square_name(mv)}")
                replay = replay.play(mv)
            time.sleep(settle)
            while len(times) < moves and not game.is_over():
                book_positions += in_book(game.position)
                color = "black" if game.position.side == Color.BLACK else "white"
                t0 = eng.send(f"genmove {color}")
                head = eng.read_line(move_time + 30)
                times.append(time.monotonic() - t0)
                eng.read_line(5)
                game.play(parse_move(head[2:].strip()))
        else:
            eng.send("nboard 2")
            eng.send("set depth 60")
            record = ggf.GgfRecord(start=game.start, moves=[ggf.MoveItem(m) for m in game.moves])
            eng.send(nb.set_game_line(record.to_text()))
            eng.send("ping 0")
            eng.read_until(lambda l: l == "pong 0", 60)
            ready = time.monotonic() - t_start
            time.sleep(settle)
            n = 0
            while len(times) < moves and not game.is_over():
                book_positions += in_book(game.position)
                n += 1
                eng.send(f"ping {n}")
                eng.read_until(lambda l, n=n: l == f"pong {n}")
                t0 = eng.send("go")
                line = eng.read_until(nb.is_move_line, move_time + 30)[-1]
                times.append(time.monotonic() - t0)
                move = nb.parse_move_line(line).move
                game.play(move)
                eng.send(f"move {move_text(move)}")
        eng.send("quit")
    finally:
        eng.close()
    return {"bench": "timing", "protocol": protocol, "move_time": move_time, "cold": cold,
            "agent": agent or "default", "opening": opening, "ready_s": ready,
            "moves": len(times), "book_positions": book_positions, "first_s": times[0],
            "max_s": max(times), "median_s": statistics.median(times), "min_s": min(times)}


def bench_ping(pings: int, agent: str) -> dict:
    eng = EngineProcess.ours("--agent", agent)
    idle: list[float] = []
    busy: list[float] = []
    try:
        eng.send("nboard 2")
        eng.send("set depth 60")
        eng.send("ping 0")
        eng.read_until(lambda l: l == "pong 0", 60)
        time.sleep(1.0)  # the warm-up
        for n in range(1, 2 * pings + 1):
            searching = n % 2 == 0
            if searching:
                eng.send("hint 4")
                eng.read_until(lambda l: l.startswith("search "), 60)
            t0 = eng.send(f"ping {n}")
            eng.read_until(lambda l, n=n: l == f"pong {n}", 60)
            (busy if searching else idle).append(time.monotonic() - t0)
        eng.send("quit")
    finally:
        eng.close()
    return {"bench": "ping", "agent": agent, "pings": pings,
            "idle_median_s": statistics.median(idle), "idle_max_s": max(idle),
            "searching_median_s": statistics.median(busy), "searching_max_s": max(busy)}


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("timing", help="client-side time per move of the engine process, from "
                                      "positions out of the opening book")
    p.add_argument("--move-time", type=float, default=4.8)
    p.add_argument("--moves", type=int, default=20)
    p.add_argument("--agent", default=None, help="agent spec (default: the engine's default)")
    p.add_argument("--protocol", default="gtp", choices=["gtp", "nboard"])
    p.add_argument("--seed", type=int, default=1, help="seed of the random opening")
    p.add_argument("--plies", type=int, default=12,
                   help="random plies before timing starts (more while still in the book)")
    p.add_argument("--cold", action="store_true",
                   help="ask for the first move at once, while the kernels load")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=lambda a: emit(bench_timing(a.move_time, a.moves, a.agent, a.protocol,
                                                    a.seed, a.plies, a.cold), a.json) or 0)

    q = sub.add_parser("ping", help="NBoard ping round trips, idle and ending a search")
    q.add_argument("--pings", type=int, default=20, help="pings of each kind")
    q.add_argument("--agent", default="uct:iterations=100000000",
                   help="the agent whose hint the ping interrupts")
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=lambda a: emit(bench_ping(a.pings, a.agent), a.json) or 0)
