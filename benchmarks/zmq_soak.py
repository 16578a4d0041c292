"""``othello-bench zmq-soak``: a ZeroMQ server with default limits under minutes of abuse, while
long-lived sessions play whole games against its engine.

The server is ``othello-engine --zmq tcp://127.0.0.1:PORT --no-stdio`` with an empty
configuration (16 sessions, every timeout at its default), in a subprocess so that
/proc/<pid>/status counts it alone.  Beside it:

* ``players`` long-lived sessions (the engine client, ``RemoteEngine``) play whole games, the
  client choosing random moves for one colour and the engine the other's at ``move_time``
  seconds a move (``time_settings 0 T 1``).  Now and then a player reconnects (a fresh socket,
  or a new client object as a restarted process would make, with the same routing id) and
  checks that the server's board is the one of its own record; at the end of each game the
  board is checked again.  Each player finishes the game it is playing when time is up.
* ``churn`` threads run clients that come and go: a plain DEALER that sends one command and
  vanishes (after its answer, or before it), a client with its own routing id that makes a
  move and goes away without ``quit`` (its session waits for it, holding a slot until evicted),
  oversized frames (over the protocol's limit: answered; over the transport's cap: the
  connection dropped), garbage frames, and reconnects with and without resumption.

* with ``restart_every`` > 0 a restarter thread stops the server at seeded random moments
  (every ``restart_every`` seconds on average after the last restart was ready, uniformly
  jittered by half either way), by SIGTERM (waiting for it to drain and exit) and by SIGKILL in
  turn, then starts it again on the same endpoint and store file and waits until it answers.
  The players play on through every restart (the engine client resends what a stopping server
  refused, and what a killed one never answered once its ``player_timeout`` has passed), and
  check the server's board against their record after each restart they notice.

The server keeps its sessions in a store file in the benchmark's temporary directory
(``--store``; with restarts or without), each process logging to a file of its own.

Every request a churned client waits for must be answered, and none with ``server full``: at
most ``players + churn`` clients are ever active, far fewer than the 16 slots, so a refusal
means an abandoned session was not reclaimed.  A churned client is a plain DEALER with no
resend logic, so it cannot outlive a restart: churn threads start no client while a restart is
under way, and a churned client whose life overlapped a restart (one began between its first
send and its end) and went unanswered or got an unexpected answer is counted in
``churn_cut_by_restart``, not as a failure (a wrong ``server full`` is a failure even then).

``commands_lost`` is the number of player commands whose effect went missing or was doubled,
or that failed: every board mismatch (a check after a reconnect, after a restart or at a game's
end finds the server's board differing from the player's own record; an illegal engine move)
plus every player that stopped on an error (an exception: no answer after its retries, a
session expired, a ``?`` to a legal command).  A move lost or played twice by a restart shows
up as a mismatch at the next check; it must be 0.

The figures: games finished and whether each matched its record, clients by kind, wrong
refusals, resumptions, restarts by kind, sessions restored (``session_restored`` in the logs of
all the server processes), commands lost, the downtime of each restart (from the signal until
the new server answers), the slowest answer to a player command in flight at a restart or sent
while the server was down, the servers' peak RSS (each process sampled in turn) and threads,
and the slowest reply the long-lived sessions saw.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import zmq

from protocol import gtp

from .common import REPO_ROOT, emit, free_port
from .soak_logs import log_counts, summary
from .zmq_load import (
    MIB_KB,
    Sampler,
    log_tail,
    read_status,
    stop_server,
    wait_ready,
)

CHURN_KINDS = ("vanish", "vanish-unread", "abandon-game", "oversized", "over-cap", "garbage",
               "resume", "no-resume", "idle-connected")
REPLY_WAIT_S = 30.0          # a churned client's wait for an answer (only a hang fails it)
RECONNECT_EVERY = 12         # plies between a player's reconnects (on average)
PLAYER_TIMEOUT = 10.0        # a player's wait for an answer before it resends (the client's
                             # default): after a kill -9 the request in flight waits this long
TERM_EXIT_S = 60.0           # beyond the drain's timeout, a SIGTERMed server's time to exit


def _start_server(config: Path, endpoint: str, log_path: Path,
                  store: Path | None = None) -> subprocess.Popen[bytes]:
    from clients.channels import engine_command, engine_env

    kept = ["--store", str(store)] if store is not None else []
    return subprocess.Popen(
        engine_command("--config", str(config), "--zmq", endpoint, "--no-stdio", *kept,
                       "--log-level", "info", "--log-file", str(log_path)),
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env=engine_env(), cwd=str(REPO_ROOT))


# --- the server processes and their restarts --------------------------------------------------
class Servers:
    """The server processes, one after another on the same endpoint and store file, each
    logging to a file of its own; what the clients need to know of restarts (``begun``: how
    many have begun, ``up``: set while none is under way)."""

    def __init__(self, config: Path, endpoint: str, store: Path, tmpdir: Path,
                 start_timeout: float, drain_timeout: float):
        self.config = config
        self.endpoint = endpoint
        self.store = store
        self.tmpdir = tmpdir
        self.start_timeout = start_timeout
        self.drain_timeout = drain_timeout
        self.procs: list[subprocess.Popen[bytes]] = []
        self.logs: list[Path] = []
        self.up = threading.Event()
        self.begun = 0
        self.begun_kinds: list[str] = []   # the kind of each restart begun
        self.kinds: Counter[str] = Counter()
        self.downtimes: list[tuple[str, float]] = []
        self.began_at: list[float] = []     # time.monotonic() of each restart's signal
        self.hwm_kb: list[int] = []         # VmHWM of each process that has stopped
        self.sampler: Sampler | None = None

    @property
    def proc(self) -> subprocess.Popen[bytes]:
        return self.procs[-1]

    def start(self) -> None:
        log_path = self.tmpdir / f"server-{len(self.procs)}.log"
        self.logs.append(log_path)
        self.procs.append(_start_server(self.config, self.endpoint, log_path, self.store))
        wait_ready(self.proc, self.endpoint, log_path, self.start_timeout)
        if self.sampler is not None:
            self.sampler.pid = self.proc.pid   # each process sampled in turn
        self.up.set()

    def restart(self, kind: str) -> None:
        """Stop the server (``term``: SIGTERM, then wait for it to drain and exit; ``kill``:
        SIGKILL), start the next one and wait until it answers.  RuntimeError when the old
        one does not exit in time or exits with an error, or the new one does not answer."""
        self.up.clear()
        self.begun_kinds.append(kind)
        self.begun += 1
        old = self.proc
        self.hwm_kb.append(read_status(old.pid).get("VmHWM", 0))
        t0 = time.monotonic()
        self.began_at.append(t0)
        if kind == "term":
            old.send_signal(signal.SIGTERM)
            try:
                code = old.wait(self.drain_timeout + TERM_EXIT_S)
            except subprocess.TimeoutExpired:
                old.kill()
                old.wait()
                raise RuntimeError(f"restart {self.begun}: the server did not exit within "
                                   f"{self.drain_timeout + TERM_EXIT_S:g} s of SIGTERM:\n"
                                   f"{log_tail(self.logs[-1])}") from None
            if code != 0:
                raise RuntimeError(f"restart {self.begun}: the server exited with code {code} "
                                   f"after SIGTERM:\n{log_tail(self.logs[-1])}")
        else:
            old.kill()
            old.wait()
        self.kinds[kind] += 1
        self.start()
        self.downtimes.append((kind, time.monotonic() - t0))

    def wait_up(self, stop: threading.Event) -> None:
        """Until no restart is under way (or ``stop``)."""
        while not self.up.wait(0.1) and not stop.is_set():
            pass

    def stop_all(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                stop_server(p)


class Restarter(threading.Thread):
    """Restarts the server about every ``every`` seconds after the last one was ready
    (uniformly jittered by half either way, seeded), SIGTERM and SIGKILL in turn, until
    ``stop``."""

    def __init__(self, servers: Servers, every: float, seed: int, stop: threading.Event):
        super().__init__(name="soak-restarter", daemon=True)
        self.servers = servers
        self.every = every
        self.rng = random.Random(seed * 104729 + 17)
        self.stop = stop
        self.error: str | None = None

    def run(self) -> None:
        try:
            for n in range(1 << 30):
                if self.stop.wait(self.rng.uniform(0.5, 1.5) * self.every):
                    return
                self.servers.restart(("term", "kill")[n % 2])
        except Exception as e:   # reported, and the run fails
            self.error = f"{type(e).__name__}: {e}"


# --- long-lived sessions ----------------------------------------------------------------------
class Player(threading.Thread):
    """One long-lived session playing whole games until ``stop`` (the game in progress is
    finished)."""

    def __init__(self, endpoint: str, index: int, move_time: float, seed: int,
                 stop: threading.Event, servers: Servers | None = None,
                 timeout: float = PLAYER_TIMEOUT):
        super().__init__(name=f"soak-player-{index}", daemon=True)
        self.endpoint = endpoint
        self.index = index
        self.move_time = move_time
        self.servers = servers
        self.timeout = timeout
        self.seen_restarts = 0       # the restarts this player has checked its board after
        self.noticed = False         # a command of its overlapped a restart: check the board
        self.restart_checks = 0
        # (seconds, kind of the restart, command) of each command in flight at a restart or
        # sent while the server was down
        self.after_restart: list[tuple[float, str, str]] = []
        self.rng = random.Random(seed * 1000 + index)
        self.stop = stop
        self.games = 0
        self.identical = 0
        self.mismatches: list[str] = []
        self.reconnects = 0
        self.resumed = 0
        self.slowest_genmove = 0.0
        self.slowest_command = 0.0
        self.error: str | None = None
        self.last_record: list[int] | None = None   # the moves of the last game finished

    def _timed(self, eng: Any, command: str) -> str:
        sv = self.servers
        begun, down = (sv.begun, not sv.up.is_set()) if sv is not None else (0, False)
        t0 = time.monotonic()
        try:
            return str(eng.gtp(command))
        finally:
            dt = time.monotonic() - t0
            if command.startswith("genmove"):
                self.slowest_genmove = max(self.slowest_genmove, dt)
            else:
                self.slowest_command = max(self.slowest_command, dt)
            if sv is not None and (down or sv.begun != begun):
                self.after_restart.append((dt, sv.begun_kinds[-1], command.split()[0]))
            if sv is not None and sv.begun != self.seen_restarts:
                self.seen_restarts = sv.begun
                self.noticed = True

    def run(self) -> None:
        from clients.remote import RemoteEngine
        from engine_server.game import PASS, Color, Game, parse_move, square_name

        eng = RemoteEngine(self.endpoint, timeout=self.timeout, retries=3)
        try:
            while not self.stop.is_set():
                game = Game()
                engine = Color.BLACK if (self.index + self.games) % 2 == 0 else Color.WHITE
                self._timed(eng, "clear_board")
                self._timed(eng, f"time_settings 0 {self.move_time:g} 1")
                ok = True
                while not game.is_over():
                    pos = game.position
                    color = "black" if pos.side == Color.BLACK else "white"
                    if pos.side == engine:
                        move = parse_move(self._timed(eng, f"genmove {color}"))
                        if move not in pos.legal_moves():
                            ok = False
                            self.mismatches.append(f"game {self.games}: illegal engine move "
                                                   f"{square_name(move)}")
                            break
                    else:
                        legal = pos.legal_moves()
                        move = PASS if pos.must_pass() else self.rng.choice(
                            [m for m in legal if m != PASS])
                        self._timed(eng, f"play {color} {square_name(move)}")
                    game.play(move)
                    if self.noticed:
                        # The first command to meet a restart: the server's board must be
                        # the record's (no move lost or played twice).
                        self.noticed = False
                        self.restart_checks += 1
                        if self._timed(eng, "showboard") != str(game.position).strip():
                            ok = False
                            self.mismatches.append(f"game {self.games}: board differs after "
                                                   f"a restart at ply {len(game.moves)}")
                            break
                    if self.rng.random() < 1 / RECONNECT_EVERY:
                        eng = self._reconnect(eng)
                        if self._timed(eng, "showboard") == str(game.position).strip():
                            self.resumed += 1
                        else:
                            ok = False
                            self.mismatches.append(f"game {self.games}: board differs after "
                                                   f"a reconnect at ply {len(game.moves)}")
                            break
                if ok and self._timed(eng, "showboard") != str(game.position).strip():
                    ok = False
                    self.mismatches.append(f"game {self.games}: final board differs")
                self.games += 1
                self.identical += ok
                self.last_record = list(game.moves)
        except Exception as e:   # reported, and the run fails
            self.error = f"{type(e).__name__}: {e}"
        finally:
            eng.close()

    def _reconnect(self, eng: Any) -> Any:
        """A fresh socket (as after a timeout or a network blip), or every third time a new
        client object with the same routing id (as a restarted client process)."""
        from clients.remote import RemoteEngine

        self.reconnects += 1
        if self.reconnects % 3:
            eng.channel.connect()
            return eng
        ident = eng.identity
        eng.close()
        return RemoteEngine(self.endpoint, timeout=self.timeout, retries=3, identity=ident)


# --- churned clients --------------------------------------------------------------------------
def _reply(sock: zmq.Socket[bytes]) -> list[str] | None:
    """One GTP response from a bare-frame client (up to the empty frame); None when nothing
    comes within REPLY_WAIT_S."""
    lines: list[str] = []
    end = time.monotonic() + REPLY_WAIT_S
    while True:
        left = end - time.monotonic()
        if left <= 0 or not sock.poll(int(left * 1000)):
            return None
        line = sock.recv_multipart()[-1].decode("utf-8", "replace")
        if line == "":
            return lines
        lines.append(line)


class Churn(threading.Thread):
    def __init__(self, endpoint: str, index: int, seed: int, stop: threading.Event,
                 pause: float, cap: int, limit: int, servers: Servers | None = None):
        super().__init__(name=f"soak-churn-{index}", daemon=True)
        self.endpoint = endpoint
        self.servers = servers
        self.overlapped = 0          # clients whose life overlapped a restart
        self.cut: Counter[str] = Counter()   # of those, unanswered or answered unexpectedly
        self.index = index
        self.rng = random.Random(seed * 7919 + index)
        self.stop = stop
        self.pause = pause
        self.cap = cap
        self.limit = limit
        self.ctx: zmq.Context[Any] = zmq.Context.instance()
        self.kinds: Counter[str] = Counter()
        self.refused = 0          # "server full": wrong, as few clients are ever active
        self.refusals: list[str] = []
        self.unanswered: Counter[str] = Counter()
        self.unexpected: list[str] = []
        self.unexpected_n = 0
        self.resumed = 0
        self.expired_told = 0
        self.fresh_after_plain_reconnect = 0
        self.n = 0
        self.error: str | None = None

    def _sock(self, identity: bytes | None = None) -> zmq.Socket[bytes]:
        s = self.ctx.socket(zmq.DEALER)
        s.setsockopt(zmq.LINGER, 0)
        if identity is not None:
            s.setsockopt(zmq.ROUTING_ID, identity)
        s.connect(self.endpoint)
        return s

    def _ask(self, sock: zmq.Socket[bytes], kind: str, line: str | bytes) -> list[str] | None:
        sock.send(line.encode() if isinstance(line, str) else line)
        r = _reply(sock)
        if r is None:
            self.unanswered[kind] += 1
        elif r and "server full" in r[0]:
            self.refused += 1
            self.refusals.append(kind)
        return r

    def _expect(self, kind: str, ok: bool, what: str) -> None:
        if not ok:
            self.unexpected_n += 1
            if len(self.unexpected) < 20:
                self.unexpected.append(f"{kind}: {what}")

    def run(self) -> None:
        sv = self.servers
        try:
            while not self.stop.is_set():
                if sv is not None:
                    sv.wait_up(self.stop)   # no new client while a restart is under way
                    if self.stop.is_set():
                        break
                # Every kind in turn (each thread from its own first), so that even a short
                # run meets each of them.
                kind = CHURN_KINDS[(self.index + self.n) % len(CHURN_KINDS)]
                self.kinds[kind] += 1
                self.n += 1
                begun = sv.begun if sv is not None else 0
                before = (Counter(self.unanswered), list(self.unexpected), self.unexpected_n)
                outcomes = self._outcomes()
                getattr(self, "_" + kind.replace("-", "_"))(kind)
                if sv is not None and (sv.begun != begun or not sv.up.is_set()):
                    # Its life overlapped a restart: a plain client cannot outlive one.
                    self.overlapped += 1
                    if self.unanswered != before[0] or self.unexpected_n != before[2]:
                        # Counted as cut only: its second half may have ended well (a
                        # first command lost with the old server, a fresh board from the
                        # new one), and it must not count as that outcome too.
                        self.cut[kind] += 1
                        self.unanswered, self.unexpected, self.unexpected_n = before
                        self.resumed, self.expired_told, self.fresh_after_plain_reconnect = \
                            outcomes
                self.stop.wait(self.pause)
        except Exception as e:
            self.error = f"{type(e).__name__}: {e}"

    def _outcomes(self) -> tuple[int, int, int]:
        return self.resumed, self.expired_told, self.fresh_after_plain_reconnect

    def _own_id(self) -> bytes:
        return f"churn-{self.index}-{self.n}-{os.getpid()}".encode()

    def _vanish(self, kind: str) -> None:
        s = self._sock()
        r = self._ask(s, kind, self.rng.choice(("protocol_version", "name", "play black d3")))
        self._expect(kind, _answered(r, ok=True), repr(r))
        s.close(0)

    def _vanish_unread(self, kind: str) -> None:
        s = self._sock(self._own_id() if self.rng.random() < 0.5 else None)
        s.send(b"genmove black")   # a search, abandoned before its answer
        time.sleep(0.01)
        s.close(0)

    def _abandon_game(self, kind: str) -> None:
        s = self._sock(self._own_id())
        r = self._ask(s, kind, "play black f5")
        self._expect(kind, r == ["= "], repr(r))
        s.close(0)   # no quit: the session waits for a client that never comes back

    def _oversized(self, kind: str) -> None:
        s = self._sock()
        r = self._ask(s, kind, b"x" * (self.limit + self.rng.randrange(1, 1 << 20)))
        self._expect(kind, r is not None and bool(r) and "over this server's limit" in r[0],
                     repr(r)[:120])
        s.close(0)

    def _over_cap(self, kind: str) -> None:
        # Over the transport cap libzmq drops the connection: no answer is expected.
        s = self._sock()
        s.send(b"y" * (self.cap + 1))
        time.sleep(0.05)
        s.close(0)

    def _garbage(self, kind: str) -> None:
        s = self._sock()
        frames = self.rng.choice(([b"1", b"2", b"3"], [b"x", b"name"], [b"\xff\xfe\x00"],
                                  [b"7", bytes(self.rng.randrange(256) for _ in range(40))]))
        s.send_multipart(frames)
        r = _reply(s)
        if r is None:
            self.unanswered[kind] += 1
        self._expect(kind, _answered(r, ok=False), repr(r)[:120])
        s.close(0)

    def _resume(self, kind: str) -> None:
        ident = self._own_id()
        s = self._sock(ident)
        r = self._ask(s, kind, "play black d3")
        s.close(0)
        s = self._sock(ident)
        board = self._ask(s, kind, "showboard")
        if board and board[-1].startswith("X=4 O=1"):
            self.resumed += 1
        elif board and board[0].startswith("? session expired"):
            self.expired_told += 1   # evicted while away: told, not given a silent new game
        else:
            self._expect(kind, False, f"after {r!r}: {board!r}"[:160])
        s.close(0)

    def _no_resume(self, kind: str) -> None:
        s = self._sock()
        self._ask(s, kind, "play black d3")
        s.close(0)
        s = self._sock()   # libzmq's routing id again: another session
        board = self._ask(s, kind, "showboard")
        if board and board[-1].startswith("X=2 O=2"):
            self.fresh_after_plain_reconnect += 1
        else:
            self._expect(kind, False, repr(board)[:120])
        s.close(0)

    def _idle_connected(self, kind: str) -> None:
        s = self._sock(self._own_id() if self.rng.random() < 0.5 else None)
        r = self._ask(s, kind, "name")
        self._expect(kind, _answered(r, ok=True), repr(r))
        self.stop.wait(self.rng.uniform(0.5, 3.0))   # connected, silent
        s.close(0)


def _answered(lines: list[str] | None, ok: bool) -> bool:
    """A GTP response, a success (``ok``) or a refusal, as protocol.gtp reads it."""
    return (lines is not None and bool(lines) and gtp.is_response_head(lines[0])
            and gtp.parse_response(lines).ok == ok)


def bench_zmq_soak(seconds: float = 180.0, players: int = 4, churn: int = 3,
                   move_time: float = 0.2, pause: float = 0.05, seed: int = 1,
                   start_timeout: float = 120.0, restart_every: float = 0.0,
                   player_timeout: float = PLAYER_TIMEOUT) -> dict[str, Any]:
    """``restart_every`` > 0: the server is restarted about that often (seconds), SIGTERM and
    SIGKILL in turn; 0: never."""
    from engine_server.config import Config
    from engine_server.serve.zmq_server import transport_cap

    defaults = Config().zmq
    drain_timeout = float(Config().store["drain_timeout"])
    tmp = tempfile.TemporaryDirectory(prefix="othello-zmq-soak-")
    servers: Servers | None = None
    restarter: Restarter | None = None
    try:
        tmpdir = Path(tmp.name)
        cfg_path = tmpdir / "empty.toml"   # every limit at its default
        cfg_path.write_text("", encoding="utf-8")
        endpoint = f"tcp://127.0.0.1:{free_port()}"
        servers = Servers(cfg_path, endpoint, tmpdir / "sessions.sqlite3", tmpdir,
                          start_timeout, drain_timeout)
        servers.start()
        idle = read_status(servers.proc.pid)
        # The clients follow restarts only when there are any: without, the run is the same
        # as before restarts existed.
        watch = servers if restart_every > 0 else None
        stop = threading.Event()
        t0 = time.monotonic()
        with Sampler(servers.proc.pid, interval=0.1) as sampler:
            servers.sampler = sampler
            ps = [Player(endpoint, i, move_time, seed, stop, watch, player_timeout)
                  for i in range(players)]
            cs = [Churn(endpoint, i, seed, stop, pause,
                        transport_cap(defaults["max_message_bytes"]),
                        defaults["max_message_bytes"], watch) for i in range(churn)]
            if restart_every > 0:
                restarter = Restarter(servers, restart_every, seed, stop)
            for t in (*ps, *cs, *([restarter] if restarter else [])):
                t.start()
            stop.wait(seconds)
            stop.set()
            if restarter is not None:
                restarter.join(start_timeout + drain_timeout + TERM_EXIT_S + 30)
            for c in cs:
                c.join(REPLY_WAIT_S * 3)
            for p in ps:
                p.join(600)   # the game in progress is finished
        elapsed = time.monotonic() - t0
        proc = servers.proc
        end = read_status(proc.pid)
        alive = proc.poll() is None
        if not alive:
            raise RuntimeError(f"the server died (code {proc.returncode}):\n"
                               f"{log_tail(servers.logs[-1])}")
        counts = log_counts(servers.logs)
    finally:
        if servers is not None:
            servers.stop_all()
        tmp.cleanup()

    kinds: Counter[str] = Counter()
    unanswered: Counter[str] = Counter()
    cut: Counter[str] = Counter()
    for c in cs:
        kinds.update(c.kinds)
        unanswered.update(c.unanswered)
        cut.update(c.cut)
    threads: list[Player | Churn | Restarter] = [*ps, *cs]
    if restarter is not None:
        threads.append(restarter)
    errors = [f"{t.name}: {t.error}" for t in threads if t.error]
    errors += [f"{t.name}: still running at the end" for t in (*ps, *cs) if t.is_alive()]
    games = sum(p.games for p in ps)
    mismatches = [m for p in ps for m in p.mismatches]
    player_errors = sum(1 for p in ps if p.error or p.is_alive())
    downtimes = servers.downtimes
    after = [x for p in ps for x in p.after_restart]
    out = {
        "bench": "zmq-soak", "seconds": round(elapsed, 1), "players": players,
        "churn_threads": churn, "move_time": move_time, "restart_every": restart_every,
        "player_timeout": player_timeout,
        "limits": {k: defaults[k] for k in ("max_sessions", "idle_timeout",
                                            "new_session_timeout", "disconnected_timeout",
                                            "heartbeat", "max_message_bytes")},
        "games_finished": games,
        "games_identical": sum(p.identical for p in ps),
        "mismatches": mismatches,
        "commands_lost": len(mismatches) + player_errors,
        "player_reconnects": sum(p.reconnects for p in ps),
        "player_resumed": sum(p.resumed for p in ps),
        "restarts": dict(servers.kinds),
        "server_processes": len(servers.procs),
        "player_restart_checks": sum(p.restart_checks for p in ps),
        "player_commands_after_restart": len(after),
        "slowest_answer_after_restart_s": round(max((dt for dt, _, _ in after), default=0.0), 3),
        "slowest_answer_after_restart_by_kind_s": {
            k: round(max(dt for dt, kk, _ in after if kk == k), 3)
            for k in sorted({kk for _, kk, _ in after})},
        # Commands that waited out the player's timeout: lost with a stopping or killed
        # server, neither answered nor refused, and resent once the timeout had passed.
        "answers_after_restart_over_timeout": dict(sorted(Counter(
            k for dt, k, _ in after if dt >= player_timeout).items())),
        "slowest_after_restart": [[round(dt, 3), k, c] for dt, k, c in
                                  sorted(after, reverse=True)[:6]],
        "downtime_s": summary([d for _, d in downtimes]),
        "downtime_by_kind_s": {k: summary([d for kk, d in downtimes if kk == k])
                               for k in sorted(servers.kinds)},
        # [seconds into the run, kind, downtime] of each restart
        "restart_log": [[round(at - t0, 1), k, round(d, 3)]
                        for at, (k, d) in zip(servers.began_at, downtimes)],
        "churned": sum(kinds.values()),
        "churned_by_kind": dict(sorted(kinds.items())),
        "churn_overlapping_restart": sum(c.overlapped for c in cs),
        "churn_cut_by_restart": sum(cut.values()),
        "churn_cut_by_kind": dict(sorted(cut.items())),
        "refused_wrongly": sum(c.refused for c in cs),
        "refused_kinds": [k for c in cs for k in c.refusals],
        "unanswered": dict(unanswered),
        "unexpected": [u for c in cs for u in c.unexpected],
        "churn_resumed": sum(c.resumed for c in cs),
        "churn_told_expired": sum(c.expired_told for c in cs),
        "churn_fresh_after_plain_reconnect": sum(c.fresh_after_plain_reconnect for c in cs),
        "baseline_rss_mib": round(idle.get("VmRSS", 0) / MIB_KB, 1),
        "peak_rss_mib": round(max(end.get("VmHWM", 0), *servers.hwm_kb,
                                  sampler.peak_rss_kb) / MIB_KB, 1),
        "peak_rss_mib_by_process": [round(kb / MIB_KB, 1)
                                    for kb in (*servers.hwm_kb, end.get("VmHWM", 0))],
        "end_rss_mib": round(end.get("VmRSS", 0) / MIB_KB, 1),
        "baseline_threads": idle.get("Threads", 0),
        "peak_threads": sampler.peak_threads,
        "end_threads": end.get("Threads", 0),
        "slowest_genmove_s": round(max((p.slowest_genmove for p in ps), default=0.0), 3),
        "slowest_other_reply_s": round(max((p.slowest_command for p in ps), default=0.0), 3),
        **counts,
        "errors": errors,
    }
    return out


def ok(out: dict[str, Any]) -> bool:
    return (out["games_finished"] >= out["players"]
            and out["games_identical"] == out["games_finished"]
            and out["commands_lost"] == 0
            and out["refused_wrongly"] == 0 and not out["unanswered"]
            and not out["unexpected"] and not out["errors"])


def _run(a: argparse.Namespace) -> int:
    out = bench_zmq_soak(a.seconds, a.players, a.churn, a.move_time, a.pause, a.seed,
                         restart_every=a.restart_every, player_timeout=a.player_timeout)
    emit(out, a.json)
    return 0 if ok(out) else 1


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("zmq-soak", help="a default ZeroMQ server under churned, abandoned, "
                                        "oversized and reconnecting clients and restarts "
                                        "while long-lived sessions play whole games")
    p.add_argument("--seconds", type=float, default=180.0, help="how long clients churn")
    p.add_argument("--players", type=int, default=4, help="long-lived sessions playing games")
    p.add_argument("--churn", type=int, default=3, help="threads of churned clients")
    p.add_argument("--move-time", type=float, default=0.2, help="the engine's time per move")
    p.add_argument("--pause", type=float, default=0.05,
                   help="seconds between one churned client and the next, per thread")
    p.add_argument("--restart-every", type=float, default=20.0, metavar="SECONDS",
                   help="restart the server about this often (jittered by half either way; "
                        "SIGTERM and SIGKILL in turn) on the same endpoint and store; 0: never")
    p.add_argument("--player-timeout", type=float, default=PLAYER_TIMEOUT, metavar="SECONDS",
                   help="a long-lived session's wait for an answer before it resends the "
                        "request (after a SIGKILL the request in flight waits this long)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_run)
