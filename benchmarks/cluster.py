"""``othello-bench cluster``: what the Dask path of ``othello-match --cluster`` costs per game,
and games per minute with 1 and 2 workers.

Overhead: the same cheap games (two random players: the game itself takes about a millisecond)
played one after the other in this process (the local ``--concurrency 1`` path) and through a
local scheduler with one single-threaded worker (submit, schedule, run, send the record back,
hand it to ``finish``); the difference per game is the cluster's overhead.  Throughput: games of
real agents (deterministic budgets) on 1 and 2 workers.  Every worker plays one game first, so
that loading the numba kernels and starting engines are not counted.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

from .common import emit


def _tasks(players: list[str], games: int, seed: int) -> list[Any]:
    from clients.match.config import MatchConfig
    from clients.match.schedule import schedule

    config = MatchConfig(players=players, out=Path(tempfile.gettempdir()), games=games,
                         seed=seed)
    return schedule(config)


def _warm(address: str, task: Any) -> None:
    from clients.match.cluster import connect
    from clients.match.pool import run_task

    client = connect(address)
    try:
        futures = [client.submit(run_task, task, workers=[w], pure=False)
                   for w in client.nthreads()]
        for f in futures:
            f.result()
    finally:
        client.close()


def _timed_cluster(address: str, tasks: list[Any]) -> float:
    from clients.match.cluster import run_cluster

    count = [0]

    def finish(_: Any, out: Any) -> None:
        count[0] += 1

    t0 = time.perf_counter()
    run_cluster([(None, t) for t in tasks], address, finish, lambda _: False)
    elapsed = time.perf_counter() - t0
    assert count[0] == len(tasks)
    return elapsed


def _timed_local(tasks: list[Any]) -> float:
    from clients.match.pool import run_serial

    t0 = time.perf_counter()
    run_serial([(None, t) for t in tasks], lambda _, out: None, lambda _: False)
    return time.perf_counter() - t0


def bench_overhead(games: int, seed: int) -> dict[str, Any]:
    from clients.match.cluster import start_local
    from clients.match.referee import close_process_players

    tasks = _tasks(["agent:random", "agent:random"], games, seed)
    _timed_local(tasks[:2])  # warm this process as the worker is warmed
    local = _timed_local(tasks)
    close_process_players()
    cluster = start_local(1, port=0)
    try:
        _warm(cluster.scheduler_address, tasks[0])
        remote = _timed_cluster(cluster.scheduler_address, tasks)
    finally:
        cluster.close()
    n = len(tasks)
    return {"bench": "cluster-overhead", "games": n, "players": "agent:random x2",
            "local_ms_per_game": 1000 * local / n, "cluster_ms_per_game": 1000 * remote / n,
            "overhead_ms_per_game": 1000 * (remote - local) / n}


def bench_throughput(players: list[str], games: int, workers: int, seed: int) -> dict[str, Any]:
    from clients.match.cluster import start_local

    tasks = _tasks(players, games, seed)
    cluster = start_local(workers, port=0)
    try:
        _warm(cluster.scheduler_address, tasks[0])
        elapsed = _timed_cluster(cluster.scheduler_address, tasks)
    finally:
        cluster.close()
    return {"bench": "cluster-throughput", "workers": workers, "games": len(tasks),
            "players": " vs ".join(players), "seconds": elapsed,
            "games_per_min": 60 * len(tasks) / elapsed}


def bench_local_throughput(players: list[str], games: int, seed: int) -> dict[str, Any]:
    from clients.match.referee import close_process_players

    tasks = _tasks(players, games, seed)
    _timed_local(tasks[:1])
    elapsed = _timed_local(tasks)
    close_process_players()
    return {"bench": "local-throughput", "workers": "this process", "games": len(tasks),
            "players": " vs ".join(players), "seconds": elapsed,
            "games_per_min": 60 * len(tasks) / elapsed}


def run(args: argparse.Namespace) -> int:
    emit(bench_overhead(args.overhead_games, args.seed), args.json)
    players = args.players.split()
    emit(bench_local_throughput(players, args.games, args.seed), args.json)
    for w in args.workers:
        emit(bench_throughput(players, args.games, w, args.seed), args.json)
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("cluster", help="othello-match --cluster: per-game overhead against the "
                       "local path, games per minute with 1 and 2 workers (needs Dask)")
    p.add_argument("--overhead-games", type=int, default=200,
                   help="random-player games timed for the overhead")
    p.add_argument("--players", default="agent:ab:depth=2 agent:uct:iterations=200",
                   help="the two players of the throughput games (space-separated specs)")
    p.add_argument("--games", type=int, default=24, help="throughput games per run")
    p.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)
