"""``othello-bench analysis``: what "Analyse the game" costs and finds on the web page.

Each game is a seeded game of ``best`` at depth 6 whose first ``--random`` plies are drawn at
random (so that the games differ and leave the book); the page's handler (the same
``WebHandler`` the server runs, driven in-process, without a socket) analyses it at ``--time``
seconds a position, as the page's button asks.  One line per game: seconds, the analysis's
depth, how many positions the book valued, how many were exact, how many moves were marked;
then the medians.
"""

from __future__ import annotations

import argparse
import json
import queue
import statistics
import threading
import time
from typing import Any

from .common import emit


def _analyse_game(text: str, budget: float, analyst: str) -> dict[str, Any]:
    from engine_server.agents.policy import BUILTIN_PRESETS, Catalog
    from engine_server.commands.web import WebHandler
    from engine_server.session import EngineOptions, Output, Session

    messages: list[dict[str, Any]] = []
    lock = threading.Lock()
    finished = threading.Event()

    def sink(line: str) -> None:
        msg = json.loads(line)
        with lock:
            messages.append(msg)
        if msg.get("type") == "analysis" and msg.get("done"):
            finished.set()

    catalog = Catalog(presets=dict(BUILTIN_PRESETS, analyst=analyst))
    session = Session(EngineOptions(agent="random", warmup=False, catalog=catalog),
                      Output(sink))
    inbox: queue.Queue[Any] = queue.Queue()
    handler = WebHandler(session, post=inbox.put)

    def control() -> None:   # the controller thread a server runs: requests and posted work
        while True:
            item = inbox.get()
            if item is None:
                break
            if callable(item):
                item()
            else:
                for m in handler.handle_text(item, time.monotonic()):
                    sink(json.dumps(m))
        handler.close()

    thread = threading.Thread(target=control, daemon=True)
    thread.start()
    try:
        inbox.put(json.dumps({"type": "new", "white": "random", "time": 0.2}))
        inbox.put(json.dumps({"type": "import", "text": text}))
        t0 = time.monotonic()
        inbox.put(json.dumps({"type": "analyze", "time": budget}))
        if not finished.wait(600):
            raise RuntimeError("the analysis did not finish in 600 s")
        seconds = time.monotonic() - t0
    finally:
        inbox.put(None)
        thread.join()
    moves = [a for m in messages if m.get("type") == "analysis" for a in m["moves"]]
    depths = sorted({a["depth"] for a in moves if a.get("depth")})
    return {"plies": len(moves), "seconds": round(seconds, 2), "depths": depths,
            "book": sum(bool(a.get("book")) for a in moves),
            "exact": sum(bool(a.get("exact")) for a in moves),
            "marked": sum(bool(a.get("mark")) for a in moves)}


def _game(seed: int, random_plies: int) -> str:
    from engine_server.agents import make_agent
    from engine_server.game import PASS, Game, square_name
    from engine_server.search.limits import Limits

    player = make_agent(f"best:threads=1,random={random_plies},seed={seed}", book="off")
    game = Game()
    while not game.is_over():
        game.play(player.search(game.position, Limits(depth=6)).best_move)
    return "".join(square_name(m) for m in game.moves if m != PASS)


def run(args: argparse.Namespace) -> int:
    rows = []
    for k in range(args.games):
        row = {"game": k + 1, "seed": args.seed + k,
               **_analyse_game(_game(args.seed + k, args.random), args.time, args.analyst)}
        emit(row, args.json)
        rows.append(row)
    emit({"games": len(rows), "time": args.time, "analyst": args.analyst,
          "median_seconds": statistics.median(r["seconds"] for r in rows),
          "median_plies": statistics.median(r["plies"] for r in rows),
          "median_marked": statistics.median(r["marked"] for r in rows),
          "median_exact": statistics.median(r["exact"] for r in rows)}, args.json)
    return 0


def add_parser(sub: Any) -> None:
    p = sub.add_parser("analysis", help="the web page's whole-game analysis: seconds a game, "
                                        "its depth, the positions valued by the book or "
                                        "exactly, the moves marked")
    p.add_argument("--games", type=int, default=3, help="games analysed (default 3)")
    p.add_argument("--time", type=float, default=0.25,
                   help="seconds a position, as the page's analysis asks (default 0.25)")
    p.add_argument("--analyst", default="best:threads=1",
                   help="the analyst's spec (default best:threads=1, the server's analyst "
                        "under the default remote limits)")
    p.add_argument("--random", type=int, default=8,
                   help="random plies opening each game (default 8)")
    p.add_argument("--seed", type=int, default=1, help="the first game's seed (default 1)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)
