"""``othello-bench zmq-soak``, short: a default ZeroMQ server under a few dozen churned,
abandoned, oversized, garbage and reconnecting clients while four sessions play whole games.
The long run's figures are in docs/remote.md."""

from __future__ import annotations

import pytest

from benchmarks.zmq_soak import CHURN_KINDS, bench_zmq_soak, ok

pytestmark = pytest.mark.slow  # a soak: a server under churned clients for many seconds


@pytest.mark.timeout(300)
def test_zmq_soak_short() -> None:
    out = bench_zmq_soak(seconds=8, players=4, churn=2, move_time=0.2, pause=0.05)
    assert out["errors"] == [], out["errors"]
    # Every game finished, and the server's board was the player's own at every check.
    assert out["games_finished"] >= 4 and out["mismatches"] == []
    assert out["games_identical"] == out["games_finished"]
    assert out["player_reconnects"] >= 1 and out["player_resumed"] == out["player_reconnects"]
    # A few dozen clients came and went, of every kind; none was refused or left unanswered.
    assert out["churned"] >= 24 and set(out["churned_by_kind"]) == set(CHURN_KINDS)
    assert out["refused_wrongly"] == 0, out["refused_kinds"]
    assert out["unanswered"] == {} and out["unexpected"] == [], out["unexpected"]
    assert out["churn_resumed"] + out["churn_told_expired"] == out["churned_by_kind"]["resume"]
    assert out["churn_fresh_after_plain_reconnect"] == out["churned_by_kind"]["no-resume"]
    assert ok(out)
