"""``othello-bench zmq-store-cost`` with tiny counts: real server processes, with an SQLite
store, a PostgreSQL store and none, answer interleaved games, and every figure is there.  The
figures themselves are in docs/figures.md."""

from __future__ import annotations

import pytest

from benchmarks.zmq_store_cost import AGENT, COMMANDS, MODES, STORES, bench_zmq_store_cost


@pytest.mark.timeout(180)
def test_zmq_store_cost_reports_both_commands_for_each_store_and_none(postgres) -> None:
    out = bench_zmq_store_cost(requests=12, saves=20, postgres=postgres.create_db())
    assert out["bench"] == "zmq-store-cost" and out["agent"] == AGENT
    assert out["requests"] == 12 and out["stores"] == list(STORES)
    for command in COMMANDS:
        fig = out[command]
        for mode in MODES:
            assert 0 < fig[mode]["median_ms"] <= fig[mode]["p99_ms"]
        for store in STORES:
            assert fig[f"{store}_ratio_median"] > 0 and fig[f"{store}_ratio_p99"] > 0
            assert fig[f"{store}_ratio_median"] == pytest.approx(
                fig[store]["median_ms"] / fig["no_store"]["median_ms"], rel=0.01)
    # The document timed is the SQLite server's own session, read back from its store.
    for store in STORES:
        save = out["save"][store]
        assert save["saves"] == 20 and save["doc_bytes"] > 100
        assert 0 < save["median_ms"] <= save["p99_ms"]
        for name in ("load", "acquire", "renew_50_leases", "load_and_restore"):
            assert 0 < save["other_operations"][name]["median_ms"]
