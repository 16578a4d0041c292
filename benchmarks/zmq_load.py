"""``othello-bench zmq-load``: many ZeroMQ sessions, each on the most expensive agent the remote
limits allow, searching at once; the server's memory and threads measured against the limits.

The server runs as a subprocess so that /proc/<pid>/status counts it alone (no client sockets,
no test runner).  Each session asks for its candidates in turn (the list rotated by the
session's index, so the sessions run different families) until one is accepted; a refusal
must be a GTP ``?`` naming the limit.  Then every session plays the same seeded random opening
that leaves the opening book (so ``best`` must search, not look up) and all of them are sent
``genmove`` for the side to move together.
"""

from __future__ import annotations

import argparse
import functools
import os
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from engine_server.agents.policy import AgentCost
from protocol import gtp

from .common import REPO_ROOT, emit, free_port, out_of_book_game


@functools.lru_cache(maxsize=1)
def _opening() -> tuple[list[tuple[str, str]], str]:
    from engine_server.game import Color, square_name

    game = out_of_book_game(seed=1)
    pos, played = game.start, []
    for m in game.moves:
        played.append(("black" if pos.side == Color.BLACK else "white", square_name(m)))
        pos = pos.play(m)
    return played, "black" if pos.side == Color.BLACK else "white"


DEFAULT_REQUESTS = ("mcts", "best", "uct", "uct:memory=100000", "best:threads=2")
SAMPLE_S = 0.02
MIB_KB = 1024
REPLY_GRACE_S = 1.0


def read_status(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM (KiB) and Threads of a process; empty once it has gone."""
    out: dict[str, int] = {}
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key in ("VmRSS", "VmHWM", "Threads"):
                    out[key] = int(value.split()[0])
    except (OSError, ValueError, IndexError):
        return {}
    return out


class Sampler:
    """Polls /proc/<pid>/status on a thread; keeps the highest RSS and thread count seen."""

    def __init__(self, pid: int, interval: float = SAMPLE_S):
        self.pid = pid
        self.interval = interval
        self.peak_rss_kb = 0
        self.peak_threads = 0
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="proc-sampler", daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            st = read_status(self.pid)
            if st:
                self.samples += 1
                self.peak_rss_kb = max(self.peak_rss_kb, st.get("VmRSS", 0))
                self.peak_threads = max(self.peak_threads, st.get("Threads", 0))
            self._stop.wait(self.interval)

    def __enter__(self) -> "Sampler":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def write_config(directory: Path, sessions: int, threads: int, memory_mib: float,
                 move_time: float) -> Path:
    path = directory / "zmq_load.toml"
    path.write_text(f"[zmq]\nmax_sessions = {sessions}\n\n"
                    f"[remote]\nthreads = {threads}\nmemory_mib = {memory_mib}\n"
                    f"move_time = {move_time}\n", encoding="utf-8")
    return path


def _start_server(config: Path, endpoint: str, log_path: Path) -> subprocess.Popen[bytes]:
    from clients.channels import engine_command, engine_env

    with open(log_path, "wb") as log:
        return subprocess.Popen(
            engine_command("--config", str(config), "--zmq", endpoint, "--no-stdio",
                           "--log-level", "warning"),
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            env=engine_env(), cwd=str(REPO_ROOT))


def stop_server(proc: subprocess.Popen[bytes], wait_s: float = 10.0) -> int | None:
    if proc.poll() is None:
        try:
            proc.send_signal(signal.SIGTERM)
            return proc.wait(wait_s)
        except subprocess.TimeoutExpired:
            proc.kill()
    return proc.wait()


def log_tail(path: Path, n: int = 2000) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")[-n:]
    except OSError:
        return ""


def wait_ready(proc: subprocess.Popen[bytes], endpoint: str, log_path: Path,
                timeout: float) -> None:
    """Until the server answers a command, then end that session: it must not hold one of
    the ``max_sessions`` slots or count in the idle baseline."""
    from clients.engine_client import EngineTimeout
    from clients.remote import RemoteEngine

    deadline = time.monotonic() + timeout
    probe = RemoteEngine(endpoint, timeout=0.5, retries=0)
    try:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the server exited with code {proc.returncode}:\n"
                                   f"{log_tail(log_path)}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"the server did not answer within {timeout:g} s:\n"
                                   f"{log_tail(log_path)}")
            try:
                probe.gtp("protocol_version")
                break
            except EngineTimeout:
                continue
        probe.gtp("quit", timeout=5)
    finally:
        probe.close()


def _open_session(endpoint: str, index: int, candidates: list[str],
                  timeout: float) -> tuple[Any, dict[str, Any]]:
    """A session on the first candidate the server accepts; what it accepted and refused."""
    from clients.engine_client import EngineCommandError
    from clients.remote import RemoteEngine

    eng = RemoteEngine(endpoint, timeout=timeout)
    info: dict[str, Any] = {"session": index, "requested": None, "spec": None,
                            "refused": []}
    try:
        full_until = time.monotonic() + 5.0
        for cand in candidates:
            while True:
                try:
                    eng.gtp(f"othello-agent {cand}")
                    info["requested"] = cand
                    break
                except EngineCommandError as e:
                    # The probe's slot is freed by the server's reaper (once a second).
                    if "server full" in e.message and time.monotonic() < full_until:
                        time.sleep(0.2)
                        continue
                    if "server full" in e.message:
                        raise
                    info["refused"].append({"request": cand, "message": e.message[:100]})
                    break
            if info["requested"] is not None:
                break
        if info["requested"] is None:
            raise RuntimeError(f"session {index}: every candidate was refused: "
                               f"{info['refused']}")
        info["spec"] = eng.gtp("othello-agent")
        for color, move in _opening()[0]:
            eng.gtp(f"play {color} {move}")
    except BaseException:
        eng.close()
        raise
    return eng, info


def _genmove_all(engines: list[Any], timeout: float) -> list[dict[str, Any]]:
    """``genmove`` sent to every session before any reply is read; each reply's time
    from its own send."""
    import zmq

    sent: dict[int, tuple[int, float]] = {}
    for i, eng in enumerate(engines):
        seq = eng.send(f"genmove {_opening()[1]}")
        sent[i] = (seq, time.monotonic())
    results: list[dict[str, Any]] = [{"reply": None, "genmove_s": None} for _ in engines]
    poller = zmq.Poller()
    by_sock = {}
    for i, eng in enumerate(engines):
        poller.register(eng.sock, zmq.POLLIN)
        by_sock[eng.sock] = i
    pending = set(range(len(engines)))
    deadline = time.monotonic() + timeout
    while pending and time.monotonic() < deadline:
        for sock, _ in poller.poll(50):
            i = by_sock[sock]
            while sock.poll(0):
                seq, line = engines[i].read_line(0)
                if seq != sent[i][0] or not line or i not in pending:
                    continue
                results[i] = {"reply": line, "genmove_s": time.monotonic() - sent[i][1]}
                pending.discard(i)
    return results


def bench_zmq_load(sessions: int = 10, threads: int = 1, memory_mib: float = 256,
                   move_time: float = 2.0, requests: tuple[str, ...] = DEFAULT_REQUESTS,
                   config: str | Path | None = None, start_timeout: float = 120.0) -> dict:
    from engine_server.config import load

    if sessions < 1:
        raise ValueError("sessions must be >= 1")
    tmp = tempfile.TemporaryDirectory(prefix="othello-zmq-load-")
    engines: list[Any] = []
    proc: subprocess.Popen[bytes] | None = None
    try:
        tmpdir = Path(tmp.name)
        cfg_path = Path(config) if config is not None else write_config(
            tmpdir, sessions, threads, memory_mib, move_time)
        cfg = load(cfg_path)
        limits = cfg.remote
        lim_threads = limits.threads if limits.threads is not None else os.cpu_count() or 1
        lim_move = limits.move_time if limits.move_time is not None else move_time
        endpoint = f"tcp://127.0.0.1:{free_port()}"
        log_path = tmpdir / "server.log"
        proc = _start_server(cfg_path, endpoint, log_path)
        wait_ready(proc, endpoint, log_path, start_timeout)
        time.sleep(1.5)  # the reaper frees the probe's session within a second
        idle = read_status(proc.pid)

        with Sampler(proc.pid) as sampler:
            infos = []
            n = len(requests)
            for i in range(sessions):
                candidates = list(requests[i % n:]) + list(requests[:i % n])
                eng, info = _open_session(endpoint, i, candidates, timeout=30.0)
                engines.append(eng)
                infos.append(info)
            replies = _genmove_all(engines, timeout=lim_move + 60.0)
            time.sleep(2 * SAMPLE_S)  # one more sample after the last reply
        end = read_status(proc.pid)
        if proc.poll() is not None:
            raise RuntimeError(f"the server died (code {proc.returncode}):\n"
                               f"{log_tail(log_path)}")
    finally:
        for eng in engines:
            eng.close()
        if proc is not None:
            stop_server(proc)
        tmp.cleanup()

    for info, rep in zip(infos, replies):
        info.update(rep)
    baseline_kb = idle.get("VmRSS", 0)
    peak_kb = max(end.get("VmHWM", 0), sampler.peak_rss_kb)
    baseline_threads = idle.get("Threads", 0)
    mem_total = sessions * limits.memory_mib if limits.memory_mib is not None else None
    # The bound the cost model states for a session (engine_server/agents/policy.py):
    # search threads, their sleeping helpers, the controller and the move-time watchdog.
    thr_total = sessions * AgentCost(lim_threads, 0.0).os_threads + baseline_threads
    times = [r["genmove_s"] for r in replies if r["genmove_s"] is not None]
    refused = [dict(r, session=info["session"]) for info in infos for r in info["refused"]]
    return {
        "bench": "zmq-load", "sessions": sessions,
        "limits": {"threads": limits.threads, "memory_mib": limits.memory_mib,
                   "move_time": limits.move_time, "max_sessions": cfg.zmq["max_sessions"]},
        "accepted": [{"session": i["session"], "request": i["requested"], "spec": i["spec"],
                      "reply": i["reply"],
                      "genmove_s": None if i["genmove_s"] is None else round(i["genmove_s"], 3)}
                     for i in infos],
        "refused": refused,
        "refusals_name_limit": all("limit" in r["message"] for r in refused),
        "answered": sum(1 for r in replies if r["reply"] is not None),
        "answers_ok": sum(1 for r in replies if r["reply"] and gtp.is_response_head(r["reply"])
                          and gtp.parse_response([r["reply"]]).ok),
        "baseline_rss_mib": round(baseline_kb / MIB_KB, 1),
        "peak_rss_mib": round(peak_kb / MIB_KB, 1),
        "rss_growth_mib": round((peak_kb - baseline_kb) / MIB_KB, 1),
        "end_rss_mib": round(end.get("VmRSS", 0) / MIB_KB, 1),
        "baseline_threads": baseline_threads,
        "peak_threads": sampler.peak_threads,
        "limit_memory_mib_total": mem_total,
        "limit_threads_total": thr_total,
        "within_memory": (mem_total is None
                          or (peak_kb - baseline_kb) / MIB_KB <= mem_total),
        "within_threads": sampler.peak_threads <= thr_total,
        "max_genmove_s": round(max(times), 3) if times else None,
        "all_within_move_time": (len(times) == sessions
                                 and all(t <= lim_move + REPLY_GRACE_S for t in times)),
        "samples": sampler.samples,
    }


def _run(a: argparse.Namespace) -> int:
    out = bench_zmq_load(a.sessions, a.threads, a.memory_mib, a.move_time,
                         tuple(a.request) if a.request else DEFAULT_REQUESTS, a.config)
    if a.json:
        emit(out, True)
    else:
        # One line per session and per refusal, then the totals: lists on one line are
        # unreadable.
        for acc in out["accepted"]:
            emit(acc, False)
        for r in out["refused"]:
            emit(r, False)
        emit({k: v for k, v in out.items() if k not in ("accepted", "refused")}, False)
    ok = out["within_memory"] and out["within_threads"] and out["all_within_move_time"]
    return 0 if ok else 1


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("zmq-load", help="many ZeroMQ sessions searching at once: server RSS "
                                        "and threads against the remote limits")
    p.add_argument("--sessions", type=int, default=10)
    p.add_argument("--threads", type=int, default=1, help="[remote] threads per session")
    p.add_argument("--memory-mib", type=float, default=256,
                   help="[remote] memory_mib per session")
    p.add_argument("--move-time", type=float, default=2.0, help="[remote] move_time")
    p.add_argument("--request", action="append", metavar="SPEC",
                   help="an agent to ask for, most expensive first (repeat; default: "
                        + ", ".join(DEFAULT_REQUESTS) + ")")
    p.add_argument("--config", metavar="PATH",
                   help="serve with this configuration file instead of one written from "
                        "--sessions/--threads/--memory-mib/--move-time")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_run)
