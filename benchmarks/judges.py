"""``othello-bench cs303`` and ``othello-bench botzone``: the judges' time limits, measured.

``cs303``: ``go`` run as the course's judge runs it (``clients.cs303.judge.judge_go``: a SIGALRM
timer of ``--time-out`` seconds) on the checker's sample positions, for the engine adapter
(``clients/cs303/ai.py``), for an uploadable player file with ``--player FILE`` (two loads and
constructions timed as the judge's process does them, CPU seconds per ``go`` beside wall
seconds) and for the adapter with a ZeroMQ engine with ``--remote`` (a server in this
process).  The ``interrupt_at_s`` row times how long after the judge's timer fires ``go``
gives way, when the adapter's own cutoff is a minute away.  The promise: every ``go`` under
``time_out`` (the adapter stops itself at ``time_out - 0.2`` s).  The timer is only a backstop,
and a slow one: its handler runs when the search's current kernel call returns (for ``best``,
the alpha-beta iteration under way), hundreds of ms after the signal even on a quiet machine.

``botzone``: one-shot turns of ``othello-botzone`` as subprocesses, as Botzone starts them; the
turn is billed from the process start (imports included) and must end within ``time_limit``.

The tests check only that cutoffs, timers and deadlines end searches (tests/loadsafe.py); these
figures are for a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from .common import REPO_ROOT, emit


def _positions(seed: int, goes: int) -> list[Any]:
    from clients.cs303 import checker as ck

    cases = ck.sample_cases(seed=seed, per_colour=max(1, (goes + 1) // 2))
    return [c.position for c in cases if ck.expected_moves(c.position)][:goes]


def _summary(name: str, time_out: float, elapsed: list[float], timeouts: int,
             **extra: Any) -> dict[str, Any]:
    return {"bench": "cs303", "player": name, "time_out": time_out, "goes": len(elapsed),
            "median_s": statistics.median(elapsed), "max_s": max(elapsed),
            "timeouts": timeouts, "within_time_out": max(elapsed) < time_out, **extra}


def bench_cs303(time_out: float, goes: int, interrupt_at: float, seed: int,
                player: Path | None = None, remote: bool = False) -> list[dict[str, Any]]:
    from clients.cs303.ai import AI
    from clients.cs303.judge import judge_go, load_ai_class
    from engine_server.game import Color

    positions = _positions(seed, goes)
    colour = {Color.BLACK: -1, Color.WHITE: 1}
    rows = []

    def run(name: str, players: dict[Any, Any], **extra: Any) -> None:
        elapsed, cpu, timeouts = [], [], 0
        for pos in positions:
            c0 = time.process_time()
            out = judge_go(players[pos.side], pos.to_cs303(), time_out)
            cpu.append(time.process_time() - c0)
            elapsed.append(out.elapsed)
            timeouts += out.timed_out
        rows.append(_summary(name, time_out, elapsed, timeouts, max_cpu_s=max(cpu), **extra))

    # the adapter; a first go outside the timings loads the kernels, as a warm judge has them
    adapter = {side: AI(8, c, time_out) for side, c in colour.items()}
    judge_go(adapter[positions[0].side], positions[0].to_cs303(), time_out)
    run("adapter", adapter)
    late = []
    for pos in positions:
        ai = AI(8, colour[pos.side], 60.0)  # its own cutoff a minute away: only the timer
        out = judge_go(ai, pos.to_cs303(), interrupt_at)
        if out.timed_out:
            late.append(out.elapsed - interrupt_at)
    rows.append({"bench": "cs303", "player": "adapter", "interrupt_at_s": interrupt_at,
                 "interrupts": len(late),
                 "median_interrupt_latency_s": statistics.median(late) if late else None,
                 "max_interrupt_latency_s": max(late) if late else None})

    if player is not None:
        t0 = time.monotonic()
        classes = [load_ai_class(player), load_ai_class(player)]
        loaded = {Color.BLACK: classes[0](8, -1, time_out), Color.WHITE: classes[1](8, 1, time_out)}
        run(str(player), loaded, load_s=time.monotonic() - t0)

    if remote:
        from engine_server.serve.zmq_server import ServerConfig, ZmqServer
        from engine_server.session import EngineOptions

        server = ZmqServer(EngineOptions(), ServerConfig(endpoint="tcp://127.0.0.1:*"))
        t = threading.Thread(target=server.serve_forever, daemon=True)
        t.start()
        try:
            far = {side: AI(8, c, time_out, remote=server.endpoint) for side, c in colour.items()}
            judge_go(far[positions[0].side], positions[0].to_cs303(), time_out)
            run("remote", far)
        finally:
            server.stop()
            t.join(5)
    return rows


def _envelope(plies: int, seed: int) -> tuple[dict[str, Any], int]:
    """Botzone's input after ``plies`` seeded random moves (no pass in them), and the number
    of legal moves of the side to move."""
    from engine_server.game import PASS, Color, Game
    from protocol.notation import botzone_xy

    rng = random.Random(seed)
    while True:
        game = Game()
        for _ in range(plies):
            game.play(rng.choice(game.position.legal_moves()))
        legal = game.position.legal_moves()
        if PASS not in game.moves and legal != [PASS] and not game.is_over():
            break

    def xy(m: int) -> dict[str, int]:
        x, y = botzone_xy(m)
        return {"x": x, "y": y}

    moves = game.moves
    if game.position.side == Color.BLACK:
        requests = [{"x": -1, "y": -1}] + [xy(m) for m in moves[1::2]]
        responses = [xy(m) for m in moves[0::2]]
    else:
        requests = [xy(m) for m in moves[0::2]]
        responses = [xy(m) for m in moves[1::2]]
    return {"requests": requests, "responses": responses}, len(legal)


def bench_botzone(time_limit: float, runs: int, plies: int, seed: int,
                  agent: str | None) -> dict[str, Any]:
    from clients.botzone.main import move_budget

    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    args = [sys.executable, "-m", "clients.botzone.main", "--log-level", "info"]
    if agent:
        args += ["--agent", agent]
    envelope, _ = _envelope(plies, seed)
    text = json.dumps({**envelope, "time_limit": time_limit}) + "\n"
    turns, walls = [], []
    for _ in range(runs):
        t0 = time.monotonic()
        r = subprocess.run(args, input=text, capture_output=True, text=True, env=env,
                           cwd=REPO_ROOT, timeout=60 + time_limit)
        walls.append(time.monotonic() - t0)
        if r.returncode != 0:
            raise RuntimeError(f"othello-botzone failed: {r.stderr[-2000:]}")
        logs = [json.loads(line) for line in r.stderr.splitlines() if line.startswith("{")]
        turns.append(next(e["turn_s"] for e in logs if e.get("event") == "answered"))
    return {"bench": "botzone", "time_limit": time_limit, "budget_s": move_budget(time_limit),
            "runs": runs, "turn_median_s": statistics.median(turns), "turn_max_s": max(turns),
            "within_time_limit": max(turns) < time_limit, "process_max_s": max(walls)}


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("cs303", help="CS303 judge: go times against time_out, and how soon go "
                                     "gives way to the judge's timer")
    p.add_argument("--time-out", type=float, default=1.0, help="the judge's time_out")
    p.add_argument("--goes", type=int, default=8, help="timed goes per player")
    p.add_argument("--interrupt-at", type=float, default=0.4,
                   help="the judge's timer for the interrupt rows")
    p.add_argument("--player", type=Path, default=None,
                   help="also time this player file (e.g. from othello-cs303 export)")
    p.add_argument("--remote", action="store_true",
                   help="also time the adapter against a ZeroMQ engine in this process")
    p.add_argument("--seed", type=int, default=0, help="seed of the checker's sampler")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_run_cs303)

    q = sub.add_parser("botzone", help="Botzone one-shot turns from the process start")
    q.add_argument("--time-limit", type=float, default=1.5)
    q.add_argument("--runs", type=int, default=5)
    q.add_argument("--plies", type=int, default=20, help="random plies before the turn")
    q.add_argument("--seed", type=int, default=41)
    q.add_argument("--agent", default=None, help="agent spec (default: the bot's)")
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=lambda a: emit(bench_botzone(a.time_limit, a.runs, a.plies, a.seed,
                                                     a.agent), a.json) or 0)


def _run_cs303(args: argparse.Namespace) -> int:
    for row in bench_cs303(args.time_out, args.goes, args.interrupt_at, args.seed, args.player,
                           args.remote):
        emit(row, args.json)
    return 0
