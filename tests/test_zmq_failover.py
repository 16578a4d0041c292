"""``othello-bench zmq-failover``, short: three servers on one PostgreSQL store, a fault of each
kind (kill -9, SIGSTOP past the lease, SIGTERM) while four clients with every endpoint play
whole games.  The path, not the endurance: the long run's figures are in docs/figures.md."""

from __future__ import annotations

import pytest

from benchmarks.zmq_failover import bench_zmq_failover, ok

pytestmark = pytest.mark.slow  # server processes losing machines for many seconds


@pytest.mark.timeout(400)
def test_zmq_failover_short(postgres) -> None:
    out = bench_zmq_failover(seconds=4, servers=3, players=4, move_time=0.1, fault_every=2,
                             lease=2.0, player_timeout=3.0, seed=2, store=postgres.create_db(),
                             faults=3)
    assert out["errors"] == [], out["errors"]
    assert out["faults"] == {"kill": 1, "stop": 1, "term": 1}, out["fault_log"]
    # No game lost, forked or left differing from its record; no command lost.
    assert out["commands_lost"] == 0 and out["mismatches"] == [] and out["forked"] == []
    assert out["games_finished"] >= 4 and out["games_identical"] == out["games_finished"]
    assert out["player_fault_checks"] >= 1
    assert ok(out)
