"""``othello-bench startup``: how long a new install waits for its first move.

Each run starts the engine over GTP with a kernel cache of its own, empty (what a fresh
``pip install`` meets: every kernel the first move needs compiles first), asks for the handshake
and then at once for a move of a position out of the opening book, so the wait is the compile
and not a book lookup; then starts it again on the cache that run filled (every later start).
``--cache-base`` starts on a given cache instead (the tests use the suite's, already filled).

``--typing both`` alternates the engine's typing of recursive kernels
(``engine_server/kernel_recursion.py``) with numba's own (``OTHELLO_RECURSION_TYPING=numba``)
run by run, so their ratio comes from one session on the same machine.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from typing import Any

from clients.channels import engine_command, engine_env
from clients.engine_process import EngineProcess
from engine_server.game import Color, square_name

from .common import emit, out_of_book_game

TYPINGS = {"ours": "", "numba": "numba"}


def _first_move(cache: str, typing: str, agent: str | None, game: Any) -> tuple[float, float]:
    """(seconds to the handshake's answer, seconds to the first move) of one engine start."""
    env = engine_env()
    env.pop("NUMBA_CACHE_DIR", None)
    env["OTHELLO_NUMBA_CACHE"] = cache
    env["OTHELLO_RECURSION_TYPING"] = TYPINGS[typing]
    args = ["--agent", agent] if agent else []
    t0 = time.monotonic()
    eng = EngineProcess(engine_command(*args), env=env)
    try:
        eng.gtp("protocol_version", timeout=120)
        ready = time.monotonic() - t0
        pos = game.start
        for mv in game.moves:
            color = "black" if pos.side == Color.BLACK else "white"
            eng.gtp(f"play {color} {square_name(mv)}")
            pos = pos.play(mv)
        color = "black" if pos.side == Color.BLACK else "white"
        eng.gtp(f"genmove {color}", timeout=900)
        first = time.monotonic() - t0
        eng.send("quit")
    finally:
        eng.close()
    return ready, first


def bench_startup(runs: int, typing: str, agent: str | None, seed: int = 1,
                  cache_base: str | None = None) -> dict:
    """``cache_base``: start every run on this kernel cache instead of a new empty one (kept)."""
    kinds = list(TYPINGS) if typing == "both" else [typing]
    game = out_of_book_game(seed)
    first: dict[str, list[float]] = {k: [] for k in kinds}
    later: dict[str, list[float]] = {k: [] for k in kinds}
    ready: dict[str, list[float]] = {k: [] for k in kinds}
    for _ in range(runs):
        for kind in kinds:
            cache = cache_base or tempfile.mkdtemp(prefix="othello-startup-")
            try:
                r, move = _first_move(cache, kind, agent, game)
                first[kind].append(move)
                ready[kind].append(r)
                later[kind].append(_first_move(cache, kind, agent, game)[1])
            finally:
                if cache_base is None:
                    shutil.rmtree(cache, ignore_errors=True)
    out: dict[str, Any] = {"bench": "startup", "agent": agent or "default", "runs": runs,
                           "empty_cache": cache_base is None, "cpus": os.cpu_count(),
                           "opening": " ".join(square_name(m) for m in game.moves),
                           "ready_median_s": statistics.median([x for k in kinds
                                                                for x in ready[k]])}
    for kind in kinds:
        # each start's move comes after its own handshake: per kind, the first start's move
        # median is never below its handshake median
        out[f"{kind}_first_start_ready_median_s"] = statistics.median(ready[kind])
        out[f"{kind}_first_start_move_median_s"] = statistics.median(first[kind])
        out[f"{kind}_first_start_move_s"] = [round(x, 2) for x in first[kind]]
        out[f"{kind}_later_start_move_median_s"] = statistics.median(later[kind])
    if typing == "both":
        out["first_start_ratio_ours_to_numba"] = (statistics.median(first["ours"])
                                                  / statistics.median(first["numba"]))
    return out


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("startup", help="a new install's wait for its first move (empty kernel "
                                       "cache), and the wait of every later start")
    p.add_argument("--runs", type=int, default=3, help="starts of each kind; medians reported")
    p.add_argument("--typing", default="ours", choices=["ours", "numba", "both"],
                   help="how recursive kernels are typed: the engine's, numba's own, or both "
                        "alternated")
    p.add_argument("--agent", default=None, help="agent spec (default: the engine's default)")
    p.add_argument("--seed", type=int, default=1, help="seed of the random opening")
    p.add_argument("--cache-base", default=None,
                   help="start on this kernel cache (kept) instead of a new empty one per run")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=lambda a: emit(bench_startup(a.runs, a.typing, a.agent, a.seed,
                                                     a.cache_base), a.json) or 0)
