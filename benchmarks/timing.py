"""``othello-bench timing``: per-move wall time as a client sees it, engine in a subprocess.

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
from engine_server.game import Game, parse_move

from .common import emit


def bench_timing(move_time: float, moves: int, agent: str | None, protocol: str,
                 cold: bool = False) -> dict:
    args = ["--move-time", str(move_time)]
    if agent:
        args += ["--agent", agent]
    t_start = time.monotonic()
    eng = EngineProcess.ours(*args)
    game = Game()
    times: list[float] = []
    settle = 0.0 if cold else 1.0  # let the warm-up finish, as a GUI's handshake would
    try:
        if protocol == "gtp":
            eng.gtp("protocol_version")
            ready = time.monotonic() - t_start
            time.sleep(settle)
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
            eng.send("ping 0")
            eng.read_until(lambda l: l == "pong 0", 60)
            ready = time.monotonic() - t_start
            time.sleep(settle)
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
    return {"bench": "timing", "protocol": protocol, "move_time": move_time, "cold": cold,
            "ready_s": ready, "moves": len(times), "first_s": times[0], "max_s": max(times),
            "median_s": statistics.median(times), "min_s": min(times)}


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
    p = sub.add_parser("timing", help="client-side time per move of the engine process")
    p.add_argument("--move-time", type=float, default=4.8)
    p.add_argument("--moves", type=int, default=20)
    p.add_argument("--agent", default=None, help="agent spec (default: the engine's default)")
    p.add_argument("--protocol", default="gtp", choices=["gtp", "nboard"])
    p.add_argument("--cold", action="store_true",
                   help="ask for the first move at once, while the kernels load")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=lambda a: emit(bench_timing(a.move_time, a.moves, a.agent, a.protocol,
                                                    a.cold), a.json) or 0)

    q = sub.add_parser("ping", help="NBoard ping round trips, idle and ending a search")
    q.add_argument("--pings", type=int, default=20, help="pings of each kind")
    q.add_argument("--agent", default="uct:iterations=100000000",
                   help="the agent whose hint the ping interrupts")
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=lambda a: emit(bench_ping(a.pings, a.agent), a.json) or 0)
