"""``othello-bench zmq-soak``, short: a default ZeroMQ server under a few dozen churned,
abandoned, oversized, garbage and reconnecting clients while four sessions play whole games;
and the same with the server restarted (SIGTERM, then kill -9) under them.
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
    assert out["restarts"] == {} and out["churn_cut_by_restart"] == 0
    assert ok(out)


@pytest.mark.timeout(400)
def test_zmq_soak_with_restarts() -> None:
    # Seed 1 restarts 7.6 s in, then 3.2 s after the next server answers (SIGTERM, then
    # SIGKILL), and the third would come too late for a 20 s run.
    out = bench_zmq_soak(seconds=20, players=4, churn=2, move_time=0.2, pause=0.05, seed=1,
                         restart_every=6)
    assert out["errors"] == [], out["errors"]
    assert out["restarts"] == {"term": 1, "kill": 1}, out["restart_log"]
    assert out["server_processes"] == 3 and out["downtime_s"] is not None
    # The players' sessions came back from the store (each player's at least on the last
    # server), and no command was lost or run twice: every board check and game matched.
    assert out["sessions_restored"] >= 4
    assert out["commands_lost"] == 0 and out["mismatches"] == []
    assert out["games_finished"] >= 4 and out["games_identical"] == out["games_finished"]
    assert out["player_restart_checks"] >= 1 and out["player_commands_after_restart"] >= 1
    assert out["player_resumed"] == out["player_reconnects"]
    # Churned clients a restart cut are counted apart; every other one was answered as
    # expected, and none was refused for a full server.
    assert out["refused_wrongly"] == 0, out["refused_kinds"]
    assert out["unanswered"] == {} and out["unexpected"] == [], out["unexpected"]
    cut = out["churn_cut_by_kind"]
    assert out["churn_cut_by_restart"] <= out["churn_overlapping_restart"]
    assert (out["churn_resumed"] + out["churn_told_expired"] + cut.get("resume", 0)
            == out["churned_by_kind"]["resume"])
    assert (out["churn_fresh_after_plain_reconnect"] + cut.get("no-resume", 0)
            == out["churned_by_kind"]["no-resume"])
    assert ok(out)
