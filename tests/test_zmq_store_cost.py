"""``othello-bench zmq-store-cost`` with tiny counts: two real server processes, with the
session store and without, answer interleaved games, and every figure is there.  The figures
themselves are in docs/remote.md."""

from __future__ import annotations

import pytest

from benchmarks.zmq_store_cost import AGENT, COMMANDS, MODES, bench_zmq_store_cost


@pytest.mark.timeout(120)
def test_zmq_store_cost_reports_both_commands_with_and_without_the_store() -> None:
    out = bench_zmq_store_cost(requests=12, saves=20)
    assert out["bench"] == "zmq-store-cost" and out["agent"] == AGENT
    assert out["requests"] == 12
    for command in COMMANDS:
        fig = out[command]
        for mode in MODES:
            assert 0 < fig[mode]["median_ms"] <= fig[mode]["p99_ms"]
        assert fig["ratio_median"] > 0 and fig["ratio_p99"] > 0
        assert fig["ratio_median"] == pytest.approx(
            fig["store"]["median_ms"] / fig["no_store"]["median_ms"], rel=0.01)
    # The document timed is the store server's own session, read back from its file.
    save = out["save"]
    assert save["saves"] == 20 and save["doc_bytes"] > 100
    assert 0 < save["median_ms"] <= save["p99_ms"]
    for name in ("load", "acquire", "renew_50_leases", "load_and_restore"):
        assert 0 < save["other_operations"][name]["median_ms"]
