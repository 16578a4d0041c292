"""``othello-bench timing``: per-move wall time as a client sees it, engine in a subprocess."""

from __future__ import annotations

import argparse
import statistics
import time

from clients.engine_process import EngineProcess
from engine_server.game import Game, parse_move

from .common import emit


def bench_timing(move_time: float, moves: int, agent: str | None, protocol: str) -> dict:
    args = ["--move-time", str(move_time)]
    if agent:
        args += ["--agent", agent]
    eng = EngineProcess.ours(*args)
    game = Game()
    times: list[float] = []
    try:
        if protocol == "gtp":
            eng.gtp("protocol_version")
            time.sleep(1.0)  # let the warm-up finish, as a GUI's handshake would
            while len(times) < moves and not game.is_over():
                color = "black" if game.position.side == 0 else "white"
                t0 = eng.send(f"genmove {color}")
                head = eng.read_line(move_time + 30)
                times.append(time.monotonic() - t0)
                eng.read_line(5)
                mv = head[2:].strip()
                game.play(parse_move(mv))
        else:
            eng.send("nboard 2")
            eng.send("set depth 60")
            time.sleep(1.0)
            n = 0
            while len(times) < moves and not game.is_over():
                n += 1
                eng.send(f"ping {n}")
                eng.read_until(lambda l, n=n: l == f"pong {n}")
                t0 = eng.send("go")
                line = eng.read_until(lambda l: l.startswith("=== "), move_time + 30)[-1]
                times.append(time.monotonic() - t0)
                mv = line[4:].split("/")[0]
                game.play(parse_move(mv))
                eng.send(f"move {mv}")
        eng.send("quit")
    finally:
        eng.close()
    return {"bench": "timing", "protocol": protocol, "move_time": move_time,
            "moves": len(times), "max_s": max(times), "median_s": statistics.median(times),
            "min_s": min(times)}


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("timing", help="client-side time per move of the engine process")
    p.add_argument("--move-time", type=float, default=4.8)
    p.add_argument("--moves", type=int, default=20)
    p.add_argument("--agent", default=None, help="agent spec (default: the engine's default)")
    p.add_argument("--protocol", default="gtp", choices=["gtp", "nboard"])
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=lambda a: emit(bench_timing(a.move_time, a.moves, a.agent, a.protocol),
                                       a.json) or 0)
