"""``othello-bench zmq-store-cost``: what the session store costs a ZeroMQ request.

Two servers are started the same way (``othello-engine --zmq ... --no-stdio --agent AGENT``,
an empty configuration), one with a store file (``--store``, in a temporary directory) and one
without (``--no-store``).  One client, with a routing id of its own on each (so that the store
server writes its session on every change, as for any client that can resume), plays whole
games on both at once: random moves for one colour (``play``), the engine's for the other
(``genmove``), the colours swapped every game.  The requests alternate between the two servers
one by one, the order swapped at every step, so that a machine that slows down for a while
slows both alike.  The agent is a fast fixed-depth one (``ab:depth=1,root_solve=0`` by
default: one ply, and no exact solve of the endgame, which would make the slowest ``genmove``
answers the solver's), so that the store's cost is visible beside the search's.

Printed: the round trip of ``play`` and ``genmove``, median and p99, with the store and
without, and their ratios; and the store's own write (``SessionStore.save``, timed in this
process into a store file of its own) of a realistic document: the store server's session as it
stood 40 plies into a game, read back from its file.
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from .common import REPO_ROOT, emit
from .zmq_load import _free_port, _log_tail, _stop_server, _wait_ready

COMMANDS = ("play", "genmove")
MODES = ("store", "no_store")
SAMPLE_PLY = 40          # the session document is taken when a game reaches this ply
WARMUP_REQUESTS = 40     # per server, not timed: the first searches, the first writes
AGENT = "ab:depth=1,root_solve=0"   # one ply and no endgame solve: the search costs little


def _percentile(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


def _summary_ms(xs: list[float]) -> dict[str, float]:
    return {"median_ms": round(statistics.median(xs) * 1e3, 3),
            "p99_ms": round(_percentile(xs, 0.99) * 1e3, 3),
            "mean_ms": round(statistics.fmean(xs) * 1e3, 3)}


def _start(endpoint: str, config: Path, agent: str, log_path: Path,
           store: Path | None) -> subprocess.Popen[bytes]:
    from clients.engine_client import engine_command, engine_env

    kept = ["--store", str(store)] if store is not None else ["--no-store"]
    return subprocess.Popen(
        engine_command("--config", str(config), "--zmq", endpoint, "--no-stdio",
                       "--agent", agent, *kept, "--log-level", "warning",
                       "--log-file", str(log_path)),
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env=engine_env(), cwd=str(REPO_ROOT))


class Side:
    """One server and the client's game on it: the next request, and its round trips."""

    def __init__(self, mode: str, endpoint: str, seed: int, timeout: float):
        from clients.remote import RemoteEngine
        from engine_server.game import Game

        self.mode = mode
        self.eng = RemoteEngine(endpoint, timeout=timeout, retries=0,
                                identity=f"store-cost-{mode}".encode())
        self.rng = random.Random(seed)   # the same on both sides: the same random moves
        self.game = Game()
        self.games = 0
        self.times: dict[str, list[float]] = {c: [] for c in COMMANDS}
        self.eng.gtp("clear_board")

    def step(self, record: bool) -> int:
        """One request (a new game first when the last one is over); the game's ply."""
        from engine_server.game import PASS, Color, Game, parse_move, square_name

        if self.game.is_over():
            self.eng.gtp("clear_board")
            self.game = Game()
            self.games += 1
        pos = self.game.position
        engine = Color.BLACK if self.games % 2 == 0 else Color.WHITE
        color = "black" if pos.side == Color.BLACK else "white"
        if pos.side == engine:
            command = "genmove"
            t0 = time.perf_counter()
            answer = self.eng.gtp(f"genmove {color}")
            dt = time.perf_counter() - t0
            move = parse_move(answer)
            if move not in pos.legal_moves():
                raise RuntimeError(f"{self.mode}: illegal engine move {answer!r}")
        else:
            command = "play"
            move = PASS if pos.must_pass() else self.rng.choice(
                [m for m in pos.legal_moves() if m != PASS])
            t0 = time.perf_counter()
            self.eng.gtp(f"play {color} {square_name(move)}")
            dt = time.perf_counter() - t0
        self.game.play(move)
        if record:
            self.times[command].append(dt)
        return len(self.game.moves)


def _read_session(store: Path, key: str) -> dict[str, Any] | None:
    """The stored document of ``key``, read without writing to the file."""
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=5.0)
    try:
        row = db.execute("SELECT state FROM sessions WHERE kind = 'zmq' AND key = ?",
                         (key,)).fetchone()
    finally:
        db.close()
    return None if row is None else dict(json.loads(row[0]))


def time_saves(doc: dict[str, Any], n: int, directory: Path) -> dict[str, Any]:
    """``SessionStore.save`` of ``doc`` ``n`` times (the whole document replaced, as a server
    does on every change) under this process's lease, in a store file of its own."""
    from engine_server.serve.store import SessionStore

    store = SessionStore(directory / "saves.sqlite3")
    try:
        key = "73746f72652d636f7374"
        store.acquire("zmq", key)
        store.save("zmq", key, doc)
        xs = []
        for _ in range(n):
            t0 = time.perf_counter()
            store.save("zmq", key, doc)
            xs.append(time.perf_counter() - t0)
        others = _time_other_operations(store, doc, key, max(1, n // 4))
    finally:
        store.close()
    return {"saves": n, "doc_bytes": len(json.dumps(doc, separators=(",", ":"))),
            **_summary_ms(xs), "other_operations": others}


def _time_other_operations(store: Any, doc: dict[str, Any], key: str, n: int
                           ) -> dict[str, Any]:
    """What a server does beside writing: ``load`` and ``acquire`` (once per restored
    session), ``renew`` (every few seconds, 50 leases held), and a session restored from the
    document (loaded, its agent built and its game replayed: what a client waits for when its
    session comes back)."""
    from engine_server.commands.controller import Controller
    from engine_server.session import EngineOptions, Output, Session

    for i in range(50):
        store.acquire("zmq", f"lease-{i}")

    def restore() -> None:
        state = store.load("zmq", key)
        session = Session(EngineOptions(agent=AGENT, warmup=False), Output(lambda line: None))
        Controller(session).restore(state["controller"])

    ops = {"load": lambda: store.load("zmq", key), "acquire": lambda: store.acquire("zmq", key),
           "renew_50_leases": store.renew, "load_and_restore": restore}
    out = {}
    for name, fn in ops.items():
        fn()
        xs = []
        for _ in range(n):
            t0 = time.perf_counter()
            fn()
            xs.append(time.perf_counter() - t0)
        out[name] = {"calls": n, **_summary_ms(xs)}
    return out


def bench_zmq_store_cost(requests: int = 2000, agent: str = AGENT, saves: int = 2000,
                         seed: int = 1, start_timeout: float = 120.0) -> dict[str, Any]:
    """``requests``: round trips timed per command and per server."""
    if requests < 1:
        raise ValueError("requests must be >= 1")
    tmp = tempfile.TemporaryDirectory(prefix="othello-zmq-store-cost-")
    procs: dict[str, subprocess.Popen[bytes]] = {}
    sides: dict[str, Side] = {}
    try:
        tmpdir = Path(tmp.name)
        config = tmpdir / "empty.toml"
        config.write_text("", encoding="utf-8")
        store_path = tmpdir / "sessions.sqlite3"
        endpoints = {m: f"tcp://127.0.0.1:{_free_port()}" for m in MODES}
        logs = {m: tmpdir / f"server-{m}.log" for m in MODES}
        for m in MODES:   # both start at once, then each is waited for
            procs[m] = _start(endpoints[m], config, agent, logs[m],
                              store_path if m == "store" else None)
        for m in MODES:
            _wait_ready(procs[m], endpoints[m], logs[m], start_timeout)
            sides[m] = Side(m, endpoints[m], seed, timeout=60.0)
        for _ in range(WARMUP_REQUESTS):
            for m in MODES:
                sides[m].step(record=False)
        doc: dict[str, Any] | None = None
        t0 = time.monotonic()
        step = 0
        while any(len(s.times[c]) < requests for s in sides.values() for c in COMMANDS):
            order = MODES if step % 2 == 0 else MODES[::-1]
            for m in order:
                ply = sides[m].step(record=True)
                if m == "store" and doc is None and ply == SAMPLE_PLY:
                    doc = _read_session(store_path, sides[m].eng.identity.hex())
            step += 1
        elapsed = time.monotonic() - t0
        for m in MODES:
            if procs[m].poll() is not None:
                raise RuntimeError(f"the {m} server died (code {procs[m].returncode}):\n"
                                   f"{_log_tail(logs[m])}")
        if doc is None:   # a run too short to reach the ply: the document as it is now
            doc = _read_session(store_path, sides["store"].eng.identity.hex())
        if doc is None:
            raise RuntimeError("the store server wrote no session to its store file")
        save = time_saves(doc, saves, tmpdir) if saves > 0 else None
    finally:
        for s in sides.values():
            s.eng.close()
        for p in procs.values():
            _stop_server(p)
        tmp.cleanup()

    out: dict[str, Any] = {"bench": "zmq-store-cost", "agent": agent, "requests": requests,
                           "seconds": round(elapsed, 1),
                           "games": {m: sides[m].games for m in MODES}}
    for c in COMMANDS:
        per = {m: _summary_ms(sides[m].times[c][:requests]) for m in MODES}
        out[c] = {**per, "ratio_median": round(per["store"]["median_ms"]
                                               / per["no_store"]["median_ms"], 3),
                  "ratio_p99": round(per["store"]["p99_ms"] / per["no_store"]["p99_ms"], 3),
                  "added_median_ms": round(per["store"]["median_ms"]
                                           - per["no_store"]["median_ms"], 3)}
    out["save"] = save
    return out


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("zmq-store-cost",
                       help="round trips of play and genmove to a ZeroMQ server with the "
                            "session store and without, interleaved; the store's own write")
    p.add_argument("--requests", type=int, default=2000,
                   help="round trips timed per command (play, genmove) and per server")
    p.add_argument("--agent", default=AGENT,
                   help="the servers' agent: a fast one shows the store's cost (default: "
                        f"{AGENT})")
    p.add_argument("--saves", type=int, default=2000,
                   help="SessionStore.save calls timed in this process (0: none)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_run)


def _run(a: argparse.Namespace) -> int:
    emit(bench_zmq_store_cost(a.requests, a.agent, a.saves, a.seed), a.json)
    return 0
