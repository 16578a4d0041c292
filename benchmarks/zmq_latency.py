"""``othello-bench zmq``: round trip of a cheap command over ZeroMQ, idle and while another
session searches."""

from __future__ import annotations

import argparse
import statistics
import threading
import time

from .common import emit


def _percentile(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


def bench_zmq(n: int, endpoint: str) -> dict:
    from clients.remote import RemoteEngine
    from engine_server.serve.zmq_server import ServerConfig, ZmqServer
    from engine_server.session import EngineOptions

    server = ZmqServer(EngineOptions(agent="uct:iterations=100000000", move_time=60.0,
                                     warmup=False), ServerConfig(endpoint=endpoint))
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    out = {"bench": "zmq", "endpoint": server.endpoint, "requests": n}
    try:
        probe = RemoteEngine(server.endpoint, timeout=10)
        probe.gtp("protocol_version")

        def measure() -> list[float]:
            xs = []
            for _ in range(n):
                t0 = time.perf_counter()
                probe.gtp("protocol_version")
                xs.append(time.perf_counter() - t0)
            return xs

        idle = measure()
        busy_client = RemoteEngine(server.endpoint, timeout=120)
        busy_client.gtp("othello-agent uct:iterations=100000000")
        busy_client.send("genmove black")
        time.sleep(0.3)
        busy = measure()
        busy_client.close()
        probe.close()
        out.update({
            "idle_median_s": statistics.median(idle), "idle_p99_s": _percentile(idle, 0.99),
            "busy_median_s": statistics.median(busy), "busy_p99_s": _percentile(busy, 0.99)})
    finally:
        server.stop()
        t.join(5)
    return out


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("zmq", help="ZeroMQ round-trip latency, idle and beside a search")
    p.add_argument("--requests", type=int, default=500)
    p.add_argument("--endpoint", default="tcp://127.0.0.1:*")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=lambda a: emit(bench_zmq(a.requests, a.endpoint), a.json) or 0)
