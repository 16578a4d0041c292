"""``othello-bench zmq-store-cost``: what the session store costs a ZeroMQ request, for each back
end side by side.

Servers are started the same way (``othello-engine --zmq ... --no-stdio --agent AGENT``, an
empty configuration): one with an SQLite store file (``--store``, in a temporary directory), one
with a PostgreSQL store (a server the benchmark starts on loopback, ``benchmarks/pgserver.py``,
with its default durability: ``fsync`` and ``synchronous_commit`` on; or ``--postgres DSN``),
and one without (``--no-store``); ``--stores`` picks the back ends.  One client, with a routing
id of its own on each (so that a store server writes its session on every change, as for any
client that can resume), plays whole games on all at once: random moves for one colour
(``play``), the engine's for the other (``genmove``), the colours swapped every game.  The
requests go to the servers in turn, one by one, the order reversed at every step, so that a
machine that slows down for a while slows all alike.  The agent is a fast fixed-depth one
(``ab:depth=1,root_solve=0`` by default: one ply, and no exact solve of the endgame, which would
make the slowest ``genmove`` answers the solver's), so that the store's cost is visible beside
the search's.

Printed: the round trip of ``play`` and ``genmove``, median and p99, on each server, and each
store's ratios to no store; and each store's own operations (``SessionStore.save`` and the
others, timed in this process into a store of its own) on a realistic document: the SQLite
server's session as it stood 40 plies into a game, read back from its store.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from .common import REPO_ROOT, emit, free_port
from .zmq_load import log_tail, stop_server, wait_ready

COMMANDS = ("play", "genmove")
STORES = ("sqlite", "postgresql")
MODES = (*STORES, "no_store")
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
           store: str | None) -> subprocess.Popen[bytes]:
    from clients.channels import engine_command, engine_env

    kept = ["--store", store] if store is not None else ["--no-store"]
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


def _read_session(store: str, key: str) -> dict[str, Any] | None:
    """The stored document of ``key`` (read only: nothing is written)."""
    from engine_server.serve.store import SessionStore

    reader = SessionStore(store, holder="store-cost-reader/0/0")
    try:
        return reader.load("zmq", key)
    finally:
        reader.close()


def time_saves(doc: dict[str, Any], n: int, location: str) -> dict[str, Any]:
    """``SessionStore.save`` of ``doc`` ``n`` times (the whole document replaced, as a server
    does on every change) under this process's lease, in a store of its own."""
    from engine_server.serve.store import SessionStore

    store = SessionStore(location)
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
                         seed: int = 1, start_timeout: float = 120.0,
                         stores: tuple[str, ...] = STORES, postgres: str | None = None
                         ) -> dict[str, Any]:
    """``requests``: round trips timed per command and per server; ``stores``: the back ends
    compared with no store; ``postgres``: a database to use (default: a server started here)."""
    from benchmarks.pgserver import LocalPostgres

    if requests < 1:
        raise ValueError("requests must be >= 1")
    modes = (*stores, "no_store")
    tmp = tempfile.TemporaryDirectory(prefix="othello-zmq-store-cost-")
    procs: dict[str, subprocess.Popen[bytes]] = {}
    sides: dict[str, Side] = {}
    pg: LocalPostgres | None = None
    try:
        tmpdir = Path(tmp.name)
        config = tmpdir / "empty.toml"
        config.write_text("", encoding="utf-8")
        where: dict[str, str | None] = {"no_store": None}
        saves_at: dict[str, str] = {}
        if "sqlite" in stores:
            where["sqlite"] = str(tmpdir / "sessions.sqlite3")
            saves_at["sqlite"] = str(tmpdir / "saves.sqlite3")
        if "postgresql" in stores:
            if postgres is None:
                pg = LocalPostgres(durable=True).start()
                where["postgresql"] = pg.create_db("sessions")
                saves_at["postgresql"] = pg.create_db("saves")
            else:
                where["postgresql"] = saves_at["postgresql"] = postgres
        endpoints = {m: f"tcp://127.0.0.1:{free_port()}" for m in modes}
        logs = {m: tmpdir / f"server-{m}.log" for m in modes}
        for m in modes:   # all start at once, then each is waited for
            procs[m] = _start(endpoints[m], config, agent, logs[m], where[m])
        for m in modes:
            wait_ready(procs[m], endpoints[m], logs[m], start_timeout)
            sides[m] = Side(m, endpoints[m], seed, timeout=60.0)
        for _ in range(WARMUP_REQUESTS):
            for m in modes:
                sides[m].step(record=False)
        doc: dict[str, Any] | None = None
        sampled = stores[0]
        t0 = time.monotonic()
        step = 0
        while any(len(s.times[c]) < requests for s in sides.values() for c in COMMANDS):
            order = modes if step % 2 == 0 else modes[::-1]
            for m in order:
                ply = sides[m].step(record=True)
                if m == sampled and doc is None and ply == SAMPLE_PLY:
                    doc = _read_session(str(where[m]), sides[m].eng.identity.hex())
            step += 1
        elapsed = time.monotonic() - t0
        for m in modes:
            if procs[m].poll() is not None:
                raise RuntimeError(f"the {m} server died (code {procs[m].returncode}):\n"
                                   f"{log_tail(logs[m])}")
        if doc is None:   # a run too short to reach the ply: the document as it is now
            doc = _read_session(str(where[sampled]), sides[sampled].eng.identity.hex())
        if doc is None:
            raise RuntimeError(f"the {sampled} server wrote no session to its store")
        save = {m: time_saves(doc, saves, saves_at[m]) for m in stores} if saves > 0 else None
    finally:
        for s in sides.values():
            s.eng.close()
        for p in procs.values():
            stop_server(p)
        if pg is not None:
            pg.stop()
        tmp.cleanup()

    out: dict[str, Any] = {"bench": "zmq-store-cost", "agent": agent, "requests": requests,
                           "seconds": round(elapsed, 1), "stores": list(stores),
                           "postgresql": None if "postgresql" not in stores else (
                               "loopback, fsync and synchronous_commit on" if postgres is None
                               else "given"),
                           "games": {m: sides[m].games for m in modes}}
    for c in COMMANDS:
        per = {m: _summary_ms(sides[m].times[c][:requests]) for m in modes}
        fig: dict[str, Any] = dict(per)
        for m in stores:
            fig[f"{m}_ratio_median"] = round(per[m]["median_ms"]
                                             / per["no_store"]["median_ms"], 3)
            fig[f"{m}_ratio_p99"] = round(per[m]["p99_ms"] / per["no_store"]["p99_ms"], 3)
            fig[f"{m}_added_median_ms"] = round(per[m]["median_ms"]
                                                - per["no_store"]["median_ms"], 3)
        out[c] = fig
    out["save"] = save
    return out


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("zmq-store-cost",
                       help="round trips of play and genmove to ZeroMQ servers with each "
                            "session store (SQLite, PostgreSQL) and without, interleaved; "
                            "each store's own operations")
    p.add_argument("--requests", type=int, default=2000,
                   help="round trips timed per command (play, genmove) and per server")
    p.add_argument("--agent", default=AGENT,
                   help="the servers' agent: a fast one shows the store's cost (default: "
                        f"{AGENT})")
    p.add_argument("--saves", type=int, default=2000,
                   help="SessionStore.save calls timed in this process per store (0: none)")
    p.add_argument("--stores", default=",".join(STORES),
                   help="the back ends compared with no store (default: sqlite,postgresql)")
    p.add_argument("--postgres", metavar="DSN", default=None,
                   help="a PostgreSQL database to use (default: a server started on "
                        "loopback in a temporary folder)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_run)


def _run(a: argparse.Namespace) -> int:
    stores = tuple(x.strip() for x in a.stores.split(",") if x.strip())
    bad = [x for x in stores if x not in STORES]
    if bad or not stores:
        raise SystemExit(f"othello-bench zmq-store-cost: --stores takes {', '.join(STORES)}")
    emit(bench_zmq_store_cost(a.requests, a.agent, a.saves, a.seed, stores=stores,
                              postgres=a.postgres), a.json)
    return 0
