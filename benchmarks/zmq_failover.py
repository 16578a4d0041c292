"""``othello-bench zmq-failover``: several ZeroMQ servers sharing one PostgreSQL store, as if on
separate machines, losing a server every ~20 s while clients with the list of endpoints play
whole games.

* ``servers`` processes ``othello-engine --zmq tcp://127.0.0.1:PORT --no-stdio --store DSN
  --server-name sN``: each named as a machine of its own, so that no server takes a lease
  over from a dead one by looking at its process id: a dead server's sessions are free when
  its lease runs out, as across machines.  The store is a PostgreSQL server the benchmark
  starts (``benchmarks/pgserver.py``, durability off: what is measured is the engines'
  failover, not the disk) unless ``--store DSN`` names one.
* ``players`` long-lived sessions (``zmq_soak.Player``, the engine client with every
  endpoint: ``RemoteEngine("tcp://a,tcp://b,...")``) play whole games against the engines,
  checking the server's board against their own record after each fault they notice, after
  reconnects, and at each game's end.
* A fault every ``fault_every`` seconds on average (jittered by half either way, seeded), on a
  random server, of each kind in turn: ``kill`` (SIGKILL; the server is started again on its
  port), ``stop`` (SIGSTOP for ``lease + 2`` seconds, longer than the lease, then SIGCONT: the
  server wakes to find its sessions taken over, and must write nothing), ``term`` (SIGTERM: it
  drains, gives its leases back, and is started again).

The figures: games finished and matching their records, commands lost (board mismatches and
players that stopped on an error), games forked (a player whose last game in the store is not
its own record, or a board mismatch), stale writes refused (the servers' ``session_taken_over``
and ``session_dropped``: a fenced write of a server that woke after its lease was taken),
failover times (a command during which the client moved to another server: from its send
until its answer; median and max; the bound to compare with is the lease plus one client
timeout), faults by kind, sessions restored, and the store's transactions and session writes
a second.
"""

from __future__ import annotations

import argparse
import random
import signal
import subprocess
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from .common import REPO_ROOT, emit, free_port
from .soak_logs import log_counts, log_records, summary
from .zmq_load import log_tail, stop_server, wait_ready
from .zmq_soak import Player

PLAYER_TIMEOUT = 5.0
LEASE = 5.0
FAULTS = ("kill", "stop", "term")
FREEZE_BEYOND_LEASE_S = 2.0


class Fleet:
    """The servers: each on its own port and name, started again after a kill or a drain;
    what the players need to know of faults (``begun``, ``begun_kinds``; ``up`` is always
    set: the service as a whole never stops)."""

    def __init__(self, n: int, store: str, config: Path, tmpdir: Path, start_timeout: float):
        self.store = store
        self.config = config
        self.tmpdir = tmpdir
        self.start_timeout = start_timeout
        self.endpoints = [f"tcp://127.0.0.1:{free_port()}" for _ in range(n)]
        self.procs: list[subprocess.Popen[bytes]] = []
        self.logs: list[Path] = []
        self.up = threading.Event()
        self.up.set()
        self.begun = 0
        self.begun_kinds: list[str] = []
        self.kinds: Counter[str] = Counter()
        self.log: list[tuple[float, str, int, float]] = []   # (at, kind, server, seconds)
        self.began: list[float] = []    # time.monotonic() of each fault's start
        self.lock = threading.Lock()

    def start(self, i: int) -> subprocess.Popen[bytes]:
        from clients.channels import engine_command, engine_env

        log_path = self.tmpdir / f"server-{i}-{len(self.logs)}.log"
        self.logs.append(log_path)
        proc = subprocess.Popen(
            engine_command("--config", str(self.config), "--zmq", self.endpoints[i],
                           "--no-stdio", "--store", self.store, "--server-name", f"s{i}",
                           "--log-level", "info", "--log-file", str(log_path)),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env=engine_env(), cwd=str(REPO_ROOT))
        wait_ready(proc, self.endpoints[i], log_path, self.start_timeout)
        return proc

    def start_all(self) -> None:
        self.procs = [self.start(i) for i in range(len(self.endpoints))]

    def fault(self, kind: str, i: int, lease: float, t0: float) -> None:
        with self.lock:
            self.begun += 1
            self.begun_kinds.append(kind)
        proc = self.procs[i]
        start = time.monotonic()
        self.began.append(start)
        if kind == "kill":
            proc.kill()
            proc.wait()
            self.procs[i] = self.start(i)
        elif kind == "stop":
            proc.send_signal(signal.SIGSTOP)
            time.sleep(lease + FREEZE_BEYOND_LEASE_S)
            proc.send_signal(signal.SIGCONT)
        else:
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(120)
            if code != 0:
                raise RuntimeError(f"server s{i} exited with code {code} after SIGTERM:\n"
                                   f"{log_tail(self.logs[-1])}")
            self.procs[i] = self.start(i)
        self.kinds[kind] += 1
        self.log.append((round(start - t0, 1), kind, i, round(time.monotonic() - start, 2)))

    def stop_all(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                try:
                    p.send_signal(signal.SIGCONT)
                except ProcessLookupError:
                    pass
                stop_server(p)


class Faults(threading.Thread):
    def __init__(self, fleet: Fleet, every: float, lease: float, seed: int,
                 stop: threading.Event, t0: float, limit: int | None = None):
        super().__init__(name="failover-faults", daemon=True)
        self.fleet, self.every, self.lease, self.stop, self.t0 = fleet, every, lease, stop, t0
        self.limit = limit
        self.rng = random.Random(seed * 7919 + 3)
        self.error: str | None = None

    def run(self) -> None:
        try:
            for n in range(self.limit or 1 << 30):
                if self.stop.wait(self.rng.uniform(0.5, 1.5) * self.every):
                    return
                self.fleet.fault(FAULTS[n % len(FAULTS)],
                                 self.rng.randrange(len(self.fleet.endpoints)), self.lease,
                                 self.t0)
        except Exception as e:   # reported, and the run fails
            self.error = f"{type(e).__name__}: {e}"


class FailoverPlayer(Player):
    """A soak player that also times the commands during which its client moved to another
    server, and keeps its games' records to compare with the store at the end."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        # (sent, answered, command, endpoint sent to) of each command during which the client
        # moved on
        self.moved: list[tuple[float, float, str, str]] = []
        self.identity: bytes | None = None

    def _timed(self, eng: Any, command: str) -> str:
        self.identity = eng.identity
        before = eng.channel.failovers
        endpoint = eng.channel.endpoint
        t0 = time.monotonic()
        try:
            return super()._timed(eng, command)
        finally:
            if eng.channel.failovers != before:
                self.moved.append((t0, time.monotonic(), command.split()[0], endpoint))


def _store_counts(dsn: str) -> tuple[int, int]:
    """The database's committed transactions, and rows written to its sessions table."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        commits = conn.execute("SELECT xact_commit FROM pg_stat_database WHERE datname = "
                               "current_database()").fetchone()
        rows = conn.execute("SELECT n_tup_ins + n_tup_upd FROM pg_stat_user_tables WHERE "
                            "relname = 'sessions'").fetchone()
    return int(commits[0] if commits else 0), int(rows[0] if rows else 0)


def _forked(store: str, ps: list[FailoverPlayer]) -> list[str]:
    """Players whose game in the store is not the one they finished with."""
    from engine_server.serve.store import SessionStore

    reader = SessionStore(store, holder="failover-bench/0/0")
    out = []
    try:
        for p in ps:
            if p.identity is None or p.last_record is None:
                continue
            state = reader.load("zmq", p.identity.hex())
            moves = None if state is None else state["controller"]["session"]["moves"]
            if moves != p.last_record:
                out.append(f"{p.name}: the store has {moves}, the player {p.last_record}")
    finally:
        reader.close()
    return out


def bench_zmq_failover(seconds: float = 180.0, servers: int = 3, players: int = 4,
                       move_time: float = 0.2, fault_every: float = 20.0, lease: float = LEASE,
                       player_timeout: float = PLAYER_TIMEOUT, seed: int = 1,
                       store: str | None = None, start_timeout: float = 120.0,
                       faults: int | None = None) -> dict[str, Any]:
    """``faults``: exactly this many (the run lasts until they are over, at least
    ``seconds``); None: one about every ``fault_every`` seconds for ``seconds``."""
    from benchmarks.pgserver import LocalPostgres

    tmp = tempfile.TemporaryDirectory(prefix="othello-zmq-failover-")
    pg: LocalPostgres | None = None
    fleet: Fleet | None = None
    injector: Faults | None = None
    try:
        tmpdir = Path(tmp.name)
        if store is None:
            pg = LocalPostgres().start()
            store = pg.create_db("othello")
        config = tmpdir / "config.toml"
        config.write_text(f"[store]\nlease = {lease:g}\n", encoding="utf-8")
        fleet = Fleet(servers, store, config, tmpdir, start_timeout)
        fleet.start_all()
        endpoints = ",".join(fleet.endpoints)
        commits0, rows0 = _store_counts(store)
        stop = threading.Event()
        t0 = time.monotonic()
        ps = [FailoverPlayer(endpoints, i, move_time, seed, stop, fleet, player_timeout)
              for i in range(players)]
        injector = Faults(fleet, fault_every, lease, seed, stop, t0, faults)
        for t in (*ps, injector):
            t.start()
        stop.wait(seconds)
        if faults is not None:
            injector.join(faults * (2 * fault_every + start_timeout + lease + 60))
        stop.set()
        injector.join(start_timeout + lease + 180)
        for p in ps:
            p.join(600)   # the game in progress is finished
        elapsed = time.monotonic() - t0
        commits1, rows1 = _store_counts(store)
        forked = _forked(store, ps)
        counts = log_counts(fleet.logs)
        taken = _events(fleet.logs, ("session_taken_over", "session_dropped"))
    finally:
        if fleet is not None:
            fleet.stop_all()
        if pg is not None:
            pg.stop()
        tmp.cleanup()

    errors = [f"{t.name}: {t.error}" for t in (*ps, injector) if t.error]
    errors += [f"{p.name}: still running at the end" for p in ps if p.is_alive()]
    mismatches = [m for p in ps for m in p.mismatches]
    # A move of a command sent to a faulted server while the fault lasted (or within a lease
    # after, while its sessions' old leases run out) is that fault's failover, timed from the
    # later of the fault and the command's send; other moves are referrals (a client started
    # again comes back to its routing id's home server, which refers it to the server that
    # took its session over meanwhile).
    failover: list[float] = []
    by_command: Counter[str] = Counter()
    other: list[float] = []
    for p in ps:
        for sent, done, cmd, endpoint in p.moved:
            hit = [b for b, (_, _, i, took) in zip(fleet.began, fleet.log)
                   if fleet.endpoints[i] == endpoint and b <= done
                   and sent <= b + took + lease]
            if hit:
                failover.append(done - max(sent, hit[-1]))
                by_command[cmd] += 1
            else:
                other.append(done - sent)
    return {
        "bench": "zmq-failover", "seconds": round(elapsed, 1), "servers": servers,
        "players": players, "move_time": move_time, "fault_every": fault_every,
        "lease": lease, "player_timeout": player_timeout, "seed": seed,
        "store": "postgresql (started by the benchmark, fsync off)" if pg is not None
        else "postgresql (given)",
        "games_finished": sum(p.games for p in ps),
        "games_identical": sum(p.identical for p in ps),
        "mismatches": mismatches,
        "commands_lost": len(mismatches) + sum(1 for p in ps if p.error or p.is_alive()),
        "games_forked": len(forked) + len(mismatches),
        "forked": forked,
        "stale_writes_refused": taken,
        "faults": dict(fleet.kinds),
        "fault_log": [list(x) for x in fleet.log],
        "player_fault_checks": sum(p.restart_checks for p in ps),
        "failovers": len(failover),
        "failover_s": summary(failover),
        "failover_bound_s": lease + player_timeout,
        "failover_by_command": dict(by_command),
        "referrals": len(other),
        "referral_s": summary(other),
        "store_transactions_per_s": round((commits1 - commits0) / elapsed, 1),
        "store_session_writes_per_s": round((rows1 - rows0) / elapsed, 1),
        **counts,
        "errors": errors,
    }


def _events(paths: list[Path], names: tuple[str, ...]) -> int:
    return sum(rec.get("event") in names for _, _, rec in log_records(paths))


def ok(out: dict[str, Any]) -> bool:
    return (out["games_finished"] >= out["players"]
            and out["games_identical"] == out["games_finished"]
            and out["commands_lost"] == 0 and out["games_forked"] == 0
            and not out["errors"])


def _run(a: argparse.Namespace) -> int:
    out = bench_zmq_failover(a.seconds, a.servers, a.players, a.move_time, a.fault_every,
                             a.lease, a.player_timeout, a.seed, a.store)
    emit(out, a.json)
    return 0 if ok(out) else 1


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("zmq-failover", help="several servers on one PostgreSQL store losing a "
                                            "server every ~20 s (kill -9, SIGSTOP past the "
                                            "lease, SIGTERM) while clients with every "
                                            "endpoint play whole games")
    p.add_argument("--seconds", type=float, default=180.0, help="how long faults come")
    p.add_argument("--servers", type=int, default=3)
    p.add_argument("--players", type=int, default=4, help="long-lived sessions playing games")
    p.add_argument("--move-time", type=float, default=0.2, help="the engine's time per move")
    p.add_argument("--fault-every", type=float, default=20.0, metavar="SECONDS",
                   help="a fault about this often (jittered by half either way): kill -9, "
                        "SIGSTOP past the lease and SIGTERM in turn, on a random server")
    p.add_argument("--lease", type=float, default=LEASE, metavar="SECONDS",
                   help="the servers' [store] lease: how long a dead server's sessions wait")
    p.add_argument("--player-timeout", type=float, default=PLAYER_TIMEOUT, metavar="SECONDS",
                   help="a client's wait for an answer before it moves to the next server")
    p.add_argument("--store", metavar="DSN", default=None,
                   help="a PostgreSQL database to use (default: a server the benchmark "
                        "starts in a temporary folder)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_run)
