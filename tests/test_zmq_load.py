"""``othello-bench zmq-load`` against a real server subprocess: over-limit agents refused, every
session answered, and the server's threads within the remote limits."""

from __future__ import annotations

import pytest

from benchmarks.zmq_load import bench_zmq_load

pytestmark = pytest.mark.slow  # a load run against a server process

# Session i asks for these from index i on: session 0 falls back from best:threads=2 to best,
# session 2 from uct:memory=100000 to uct, so both refusals happen with three sessions.
REQUESTS = ("best:threads=2", "best", "uct:memory=100000", "uct", "mcts")


@pytest.mark.timeout(90)
def test_zmq_load_three_sessions() -> None:
    out = bench_zmq_load(sessions=3, threads=1, memory_mib=128, move_time=0.5,
                         requests=REQUESTS)
    assert out["answered"] == 3 and out["answers_ok"] == 3, out["accepted"]
    assert all(a["reply"].startswith("= ") for a in out["accepted"])
    assert [a["request"] for a in out["accepted"]] == ["best", "best", "uct"]

    refused = {r["request"]: r["message"] for r in out["refused"]}
    assert set(refused) == {"best:threads=2", "uct:memory=100000"}
    assert "limit of 1 per session" in refused["best:threads=2"]
    assert "limit of 128 MiB per session" in refused["uct:memory=100000"]
    assert out["refusals_name_limit"]

    assert out["within_threads"], (out["peak_threads"], out["limit_threads_total"])
    # RSS is noisy on shared machines: only a gross overrun of the memory limit fails.
    assert out["rss_growth_mib"] <= 2 * out["limit_memory_mib_total"]
    # The move-time watchdog answers at 0.5 s; the slack is for a loaded CI machine.
    assert out["max_genmove_s"] < 0.5 + 5.0
