"""``othello-bench web``: the web page's two promises, measured over real WebSockets.

1. The engine's reply arrives within its time per move + 100 ms: one tab per agent plays
   ``--moves`` moves against it on an idle server; each reply is timed from sending the
   person's move to receiving the engine's ``move`` message (the first move of each agent is
   reported apart: it may load kernels).
2. ``--tabs`` tabs searching at once do not delay another tab's cheap messages by more than
   100 ms: every load tab plays against its agent (the agents rotate) at ``--time`` per move,
   so each is searching nearly all the time, while a probe tab sends ``ping`` (and now and
   then ``state``) every ``--probe-interval`` seconds and times the answers.  The load tabs'
   own replies are timed too.

The server is a subprocess (``othello-engine --web 127.0.0.1:0``), as a deployment runs it;
the clients share this process's event loop.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import random
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from .common import REPO_ROOT, emit

DEFAULT_AGENTS = ("best", "mcts", "uct", "dk", "beginner")
REPLY_BUDGET_MS = 100.0
PROBE_BUDGET_MS = 100.0


class Tab:
    """One browser tab's worth of protocol: a reader task files replies by ``id`` and
    everything else (states, moves, progress) in a queue."""

    def __init__(self, url: str):
        self.url = url
        self.ws: Any = None
        self.events: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.state: dict[str, Any] = {}
        self._ids = itertools.count(1)
        self._reader: asyncio.Task[None] | None = None

    async def open(self) -> None:
        import websockets

        self.ws = await websockets.connect(self.url, max_size=None)
        self._reader = asyncio.create_task(self._read())
        while not self.state:
            await self.next_event()

    async def _read(self) -> None:
        async for raw in self.ws:
            msg = json.loads(raw)
            fut = self.pending.pop(msg.get("id"), None) if "id" in msg else None
            if fut is not None and not fut.done():
                fut.set_result(msg)
            if msg["type"] == "state":
                self.state = msg
            if fut is None:
                self.events.put_nowait(msg)

    async def next_event(self, timeout: float = 60.0) -> dict[str, Any]:
        msg = await asyncio.wait_for(self.events.get(), timeout)
        if msg["type"] == "state":
            self.state = msg
        return msg

    async def call(self, msg: dict[str, Any], timeout: float = 60.0) -> dict[str, Any]:
        rid = next(self._ids)
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.pending[rid] = fut
        await self.ws.send(json.dumps({**msg, "id": rid}))
        reply = await asyncio.wait_for(fut, timeout)
        if reply["type"] == "error":
            raise RuntimeError(f"{msg['type']}: {reply['message']}")
        return reply

    async def settle(self) -> dict[str, Any]:
        """The state once the person (or nobody) is to move."""
        while not (self.state.get("human_to_move") or self.state.get("over")):
            await self.next_event()
        return self.state

    async def play_one(self, rng: random.Random) -> float | None:
        """One move of the person, then the engine's reply: seconds from sending the move to
        the engine's ``move`` message (None when no engine move followed)."""
        s = await self.settle()
        if s["over"]:
            await self.call({"type": "new"})
            s = await self.settle()
        while not self.events.empty():
            self.events.get_nowait()   # older progress and states
        t0 = time.perf_counter()
        if s["must_pass"]:
            await self.ws.send(json.dumps({"type": "pass"}))
        else:
            await self.ws.send(json.dumps({"type": "move", "square": rng.choice(s["legal"])}))
        ply = s["ply"]
        replied: float | None = None
        while True:
            m = await self.next_event()
            if m["type"] == "move" and replied is None:
                replied = time.perf_counter() - t0
            if m["type"] == "state" and m["ply"] > ply and (m["human_to_move"] or m["over"]):
                return replied
            if m["type"] == "error":
                raise RuntimeError(m["message"])

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()
        if self._reader is not None:
            self._reader.cancel()


def _ms(xs: list[float]) -> dict[str, float | None]:
    if not xs:
        return {"n": 0, "median_ms": None, "p95_ms": None, "max_ms": None}
    s = sorted(xs)
    return {"n": len(s), "median_ms": round(statistics.median(s) * 1000, 1),
            "p95_ms": round(s[min(len(s) - 1, int(0.95 * len(s)))] * 1000, 1),
            "max_ms": round(s[-1] * 1000, 1)}


async def _reply_times(url: str, agents: list[str], move_time: float, moves: int,
                       seed: int) -> list[dict[str, Any]]:
    out = []
    for agent in agents:
        tab = Tab(url)
        await tab.open()
        rng = random.Random(seed)
        try:
            state = await tab.call({"type": "new", "black": "human", "white": agent,
                                    "time": move_time})
            first = await tab.play_one(rng)
            replies = []
            for _ in range(moves):
                r = await tab.play_one(rng)
                if r is not None:
                    replies.append(r)
            over = [r - move_time for r in replies]
            stats = _ms(over)
            out.append({"part": "reply", "agent": agent,
                        "spec": state["players"]["white"]["spec"], "time_s": move_time,
                        "first_reply_s": None if first is None else round(first, 3),
                        "replies": len(replies),
                        "overshoot_median_ms": stats["median_ms"],
                        "overshoot_max_ms": stats["max_ms"],
                        "within_100ms": bool(over) and max(over) * 1000 <= REPLY_BUDGET_MS})
        finally:
            await tab.close()
    return out


async def _under_load(url: str, agents: list[str], tabs: int, move_time: float,
                      seconds: float, interval: float, seed: int) -> dict[str, Any]:
    load = [Tab(url) for _ in range(tabs)]
    for t in load:
        await t.open()
    for i, t in enumerate(load):
        await t.call({"type": "new", "black": "human", "white": agents[i % len(agents)],
                      "time": move_time})
    stop = asyncio.Event()
    replies: list[float] = []
    by_agent: dict[str, list[float]] = {}
    searching = [0]

    async def player(i: int, tab: Tab) -> None:
        rng = random.Random(seed + i)
        await tab.play_one(rng)    # the first reply (kernels) is not counted
        searching[0] += 1
        while not stop.is_set():
            r = await tab.play_one(rng)
            if r is not None and not stop.is_set():
                replies.append(r)
                by_agent.setdefault(agents[i % len(agents)], []).append(r - move_time)

    players = [asyncio.create_task(player(i, t)) for i, t in enumerate(load)]
    probe = Tab(url)
    await probe.open()
    t_wait = time.perf_counter()
    while searching[0] < tabs and time.perf_counter() - t_wait < 120:
        await asyncio.sleep(0.05)
    pings: list[float] = []
    states: list[float] = []
    t_end = time.perf_counter() + seconds
    k = 0
    while time.perf_counter() < t_end:
        t0 = time.perf_counter()
        if k % 10 == 9:
            await probe.call({"type": "state"})
            states.append(time.perf_counter() - t0)
        else:
            await probe.call({"type": "ping", "t": k})
            pings.append(time.perf_counter() - t0)
        k += 1
        await asyncio.sleep(max(0.0, interval - (time.perf_counter() - t0)))
    stop.set()
    await asyncio.wait(players, timeout=move_time + 30)
    for task in players:
        task.cancel()
    for t in (*load, probe):
        await t.close()
    over = [r - move_time for r in replies]
    cheap = pings + states
    p, s, o = _ms(pings), _ms(states), _ms(over)
    return {"part": "load", "tabs": tabs, "agents": ",".join(agents), "time_s": move_time,
            "seconds": seconds, "probe_pings": p["n"], "ping_median_ms": p["median_ms"],
            "ping_p95_ms": p["p95_ms"], "ping_max_ms": p["max_ms"],
            "probe_states": s["n"], "state_median_ms": s["median_ms"], "state_max_ms": s["max_ms"],
            "cheap_within_100ms": bool(cheap) and max(cheap) * 1000 <= PROBE_BUDGET_MS,
            "load_replies": o["n"], "load_overshoot_median_ms": o["median_ms"],
            "load_overshoot_p95_ms": o["p95_ms"], "load_overshoot_max_ms": o["max_ms"],
            "load_overshoot_max_ms_by_agent": ",".join(
                f"{a}:{_ms(xs)['max_ms']}" for a, xs in sorted(by_agent.items()))}


def _start_server(tmp: Path, tabs: int) -> tuple[subprocess.Popen[str], str]:
    from clients.channels import engine_command, engine_env

    cfg = tmp / "web.toml"
    cfg.write_text(f"[web]\nmax_sessions = {tabs + 4}\n", encoding="utf-8")
    log = open(tmp / "server.log", "wb")
    proc = subprocess.Popen(engine_command("--config", str(cfg), "--web", "127.0.0.1:0",
                                           "--log-level", "warning"),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log,
                            env=engine_env(), cwd=str(REPO_ROOT), text=True)
    first: list[str] = []
    reader = threading.Thread(target=lambda: first.append(proc.stdout.readline()
                                                          if proc.stdout else ""),
                              daemon=True)
    reader.start()
    reader.join(120)
    if not first or "serving http://" not in first[0]:
        proc.kill()
        raise RuntimeError("the web server did not start:\n"
                           + (tmp / "server.log").read_text(errors="replace")[-2000:])
    url = first[0].split("serving ", 1)[1].split()[0]
    return proc, url.replace("http://", "ws://") + "ws"


def bench_web(tabs: int = 20, move_time: float = 1.0, moves: int = 6,
              agents: tuple[str, ...] = DEFAULT_AGENTS, seconds: float = 15.0,
              interval: float = 0.05, seed: int = 1) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="othello-web-bench-") as d:
        proc, url = _start_server(Path(d), tabs)
        try:
            time.sleep(1.0)   # the server's warm-up loads every family's kernels
            results = asyncio.run(_reply_times(url, list(agents), move_time, moves, seed))
            results.append(asyncio.run(_under_load(url, list(agents), tabs, move_time,
                                                   seconds, interval, seed)))
        finally:
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
    return results


def _run(a: argparse.Namespace) -> int:
    agents = tuple(x.strip() for x in a.agents.split(",") if x.strip())
    results = bench_web(a.tabs, a.time, a.moves, agents, a.seconds, a.probe_interval, a.seed)
    for r in results:
        emit(r, a.json)
    ok = all(r.get("within_100ms", True) for r in results if r["part"] == "reply") and \
        all(r.get("cheap_within_100ms", True) for r in results if r["part"] == "load")
    return 0 if ok else 1


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("web", help="the web page: engine reply times against the time per "
                                   "move, and cheap-message latency while many tabs search")
    p.add_argument("--tabs", type=int, default=20, help="tabs searching at once (default 20)")
    p.add_argument("--time", type=float, default=1.0, help="time per move in seconds")
    p.add_argument("--moves", type=int, default=6, help="timed replies per agent (idle part)")
    p.add_argument("--agents", default=",".join(DEFAULT_AGENTS),
                   help="agents to play, comma-separated (presets or specs)")
    p.add_argument("--seconds", type=float, default=15.0,
                   help="how long the probe measures while the tabs search")
    p.add_argument("--probe-interval", type=float, default=0.05,
                   help="seconds between the probe tab's messages")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_run)
