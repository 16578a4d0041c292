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

Every request a churned client waits for must be answered, and none with ``server full``: at
most ``players + churn`` clients are ever active, far fewer than the 16 slots, so a refusal
means an abandoned session was not reclaimed.  The figures: games finished and whether each
matched its record, clients by kind, wrong refusals, resumptions, the server's peak RSS and
threads, and the slowest reply the long-lived sessions saw.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import zmq

from protocol import gtp

from .common import REPO_ROOT, emit
from .zmq_load import (
    MIB_KB,
    Sampler,
    _free_port,
    _log_tail,
    _stop_server,
    _wait_ready,
    read_status,
)

CHURN_KINDS = ("vanish", "vanish-unread", "abandon-game", "oversized", "over-cap", "garbage",
               "resume", "no-resume", "idle-connected")
REPLY_WAIT_S = 30.0          # a churned client's wait for an answer (only a hang fails it)
RECONNECT_EVERY = 12         # plies between a player's reconnects (on average)


def _start_server(config: Path, endpoint: str, log_path: Path) -> subprocess.Popen[bytes]:
    from clients.engine_client import engine_command, engine_env

    return subprocess.Popen(
        engine_command("--config", str(config), "--zmq", endpoint, "--no-stdio",
                       "--log-level", "info", "--log-file", str(log_path)),
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env=engine_env(), cwd=str(REPO_ROOT))


# --- long-lived sessions ----------------------------------------------------------------------
class Player(threading.Thread):
    """One long-lived session playing whole games until ``stop`` (the game in progress is
    finished)."""

    def __init__(self, endpoint: str, index: int, move_time: float, seed: int,
                 stop: threading.Event):
        super().__init__(name=f"soak-player-{index}", daemon=True)
        self.endpoint = endpoint
        self.index = index
        self.move_time = move_time
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

    def _timed(self, eng: Any, command: str) -> str:
        t0 = time.monotonic()
        try:
            return str(eng.gtp(command))
        finally:
            dt = time.monotonic() - t0
            if command.startswith("genmove"):
                self.slowest_genmove = max(self.slowest_genmove, dt)
            else:
                self.slowest_command = max(self.slowest_command, dt)

    def run(self) -> None:
        from clients.remote import RemoteEngine
        from engine_server.game import PASS, Color, Game, parse_move, square_name

        eng = RemoteEngine(self.endpoint, timeout=60, retries=3)
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
            eng.channel.reset()
            return eng
        ident = eng.identity
        eng.close()
        return RemoteEngine(self.endpoint, timeout=60, retries=3, identity=ident)


# --- churned clients --------------------------------------------------------------------------
def _reply(sock: zmq.Socket[bytes]) -> list[str] | None:
    """One GTP response from a bare-frame client (up to the empty frame); None when nothing
    comes within REPLY_WAIT_S."""
    lines = []
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
                 pause: float, cap: int, limit: int):
        super().__init__(name=f"soak-churn-{index}", daemon=True)
        self.endpoint = endpoint
        self.index = index
        self.rng = random.Random(seed * 7919 + index)
        self.stop = stop
        self.pause = pause
        self.cap = cap
        self.limit = limit
        self.ctx = zmq.Context.instance()
        self.kinds: Counter[str] = Counter()
        self.refused = 0          # "server full": wrong, as few clients are ever active
        self.refusals: list[str] = []
        self.unanswered: Counter[str] = Counter()
        self.unexpected: list[str] = []
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
        if not ok and len(self.unexpected) < 20:
            self.unexpected.append(f"{kind}: {what}")

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                # Every kind in turn (each thread from its own first), so that even a short
                # run meets each of them.
                kind = CHURN_KINDS[(self.index + self.n) % len(CHURN_KINDS)]
                self.kinds[kind] += 1
                self.n += 1
                getattr(self, "_" + kind.replace("-", "_"))(kind)
                self.stop.wait(self.pause)
        except Exception as e:
            self.error = f"{type(e).__name__}: {e}"

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
    return bool(lines) and gtp.is_response_head(lines[0]) and gtp.parse_response(lines).ok == ok


def _log_counts(path: Path) -> dict[str, Any]:
    opened, closes = 0, Counter[str]()
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return {}
    for line in lines:
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if not isinstance(rec, dict):
            continue
        if rec.get("event") == "session_open":
            opened += 1
        elif rec.get("event") == "session_close":
            closes[str(rec.get("reason"))] += 1
        elif rec.get("event") == "session_ended":
            closes["quit"] += 1
    return {"sessions_opened": opened, "sessions_closed": dict(closes)}


def bench_zmq_soak(seconds: float = 180.0, players: int = 4, churn: int = 3,
                   move_time: float = 0.2, pause: float = 0.05, seed: int = 1,
                   start_timeout: float = 120.0) -> dict[str, Any]:
    from engine_server.config import Config
    from engine_server.serve.zmq_server import transport_cap

    defaults = Config().zmq
    tmp = tempfile.TemporaryDirectory(prefix="othello-zmq-soak-")
    proc: subprocess.Popen[bytes] | None = None
    try:
        tmpdir = Path(tmp.name)
        cfg_path = tmpdir / "empty.toml"   # every limit at its default
        cfg_path.write_text("", encoding="utf-8")
        endpoint = f"tcp://127.0.0.1:{_free_port()}"
        log_path = tmpdir / "server.log"
        proc = _start_server(cfg_path, endpoint, log_path)
        _wait_ready(proc, endpoint, log_path, start_timeout)
        idle = read_status(proc.pid)
        stop = threading.Event()
        t0 = time.monotonic()
        with Sampler(proc.pid, interval=0.1) as sampler:
            ps = [Player(endpoint, i, move_time, seed, stop) for i in range(players)]
            cs = [Churn(endpoint, i, seed, stop, pause,
                        transport_cap(defaults["max_message_bytes"]),
                        defaults["max_message_bytes"]) for i in range(churn)]
            for t in (*ps, *cs):
                t.start()
            stop.wait(seconds)
            stop.set()
            for c in cs:
                c.join(REPLY_WAIT_S * 3)
            for p in ps:
                p.join(600)   # the game in progress is finished
        elapsed = time.monotonic() - t0
        end = read_status(proc.pid)
        alive = proc.poll() is None
        if not alive:
            raise RuntimeError(f"the server died (code {proc.returncode}):\n"
                               f"{_log_tail(log_path)}")
        counts = _log_counts(log_path)
    finally:
        if proc is not None:
            _stop_server(proc)
        tmp.cleanup()

    kinds: Counter[str] = Counter()
    unanswered: Counter[str] = Counter()
    for c in cs:
        kinds.update(c.kinds)
        unanswered.update(c.unanswered)
    errors = [f"{t.name}: {t.error}" for t in (*ps, *cs) if t.error]
    games = sum(p.games for p in ps)
    return {
        "bench": "zmq-soak", "seconds": round(elapsed, 1), "players": players,
        "churn_threads": churn, "move_time": move_time,
        "limits": {k: defaults[k] for k in ("max_sessions", "idle_timeout",
                                            "new_session_timeout", "disconnected_timeout",
                                            "heartbeat", "max_message_bytes")},
        "games_finished": games,
        "games_identical": sum(p.identical for p in ps),
        "mismatches": [m for p in ps for m in p.mismatches],
        "player_reconnects": sum(p.reconnects for p in ps),
        "player_resumed": sum(p.resumed for p in ps),
        "churned": sum(kinds.values()),
        "churned_by_kind": dict(sorted(kinds.items())),
        "refused_wrongly": sum(c.refused for c in cs),
        "refused_kinds": [k for c in cs for k in c.refusals],
        "unanswered": dict(unanswered),
        "unexpected": [u for c in cs for u in c.unexpected],
        "churn_resumed": sum(c.resumed for c in cs),
        "churn_told_expired": sum(c.expired_told for c in cs),
        "churn_fresh_after_plain_reconnect": sum(c.fresh_after_plain_reconnect for c in cs),
        "baseline_rss_mib": round(idle.get("VmRSS", 0) / MIB_KB, 1),
        "peak_rss_mib": round(max(end.get("VmHWM", 0), sampler.peak_rss_kb) / MIB_KB, 1),
        "end_rss_mib": round(end.get("VmRSS", 0) / MIB_KB, 1),
        "baseline_threads": idle.get("Threads", 0),
        "peak_threads": sampler.peak_threads,
        "end_threads": end.get("Threads", 0),
        "slowest_genmove_s": round(max((p.slowest_genmove for p in ps), default=0.0), 3),
        "slowest_other_reply_s": round(max((p.slowest_command for p in ps), default=0.0), 3),
        **counts,
        "errors": errors,
    }


def ok(out: dict[str, Any]) -> bool:
    return (out["games_finished"] >= out["players"]
            and out["games_identical"] == out["games_finished"]
            and out["refused_wrongly"] == 0 and not out["unanswered"]
            and not out["unexpected"] and not out["errors"])


def _run(a: argparse.Namespace) -> int:
    out = bench_zmq_soak(a.seconds, a.players, a.churn, a.move_time, a.pause, a.seed)
    emit(out, a.json)
    return 0 if ok(out) else 1


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("zmq-soak", help="a default ZeroMQ server under churned, abandoned, "
                                        "oversized and reconnecting clients while long-lived "
                                        "sessions play whole games")
    p.add_argument("--seconds", type=float, default=180.0, help="how long clients churn")
    p.add_argument("--players", type=int, default=4, help="long-lived sessions playing games")
    p.add_argument("--churn", type=int, default=3, help="threads of churned clients")
    p.add_argument("--move-time", type=float, default=0.2, help="the engine's time per move")
    p.add_argument("--pause", type=float, default=0.05,
                   help="seconds between one churned client and the next, per thread")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_run)
