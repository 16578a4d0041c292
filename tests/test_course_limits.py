"""The CS303 course's limits as othello-match applies them: moves past the per-move limit that
the game survives (counted, as "slow moves", for any engine)."""

from __future__ import annotations

import sys

from clients.match.config import MatchConfig
from clients.match.players import TimeControl
from clients.match.referee import GameTask, PlayerCache, play_game
from clients.match.results import format_table

from .test_match import FAKE_GTP

PY = sys.executable


def test_any_engine_s_moves_past_the_limit_within_the_grace_are_counted(tmp_path):
    script = tmp_path / "fake_gtp.py"
    script.write_text(FAKE_GTP)
    # the late engine takes 0.45 s over its first two moves, past the 0.3 s limit but within
    # the grace; the game goes on, and the table says so
    task = GameTask(key="k", pairing="late vs random", opening_index=0, opening=(), swap=0,
                    round=0, black=f"late=gtp:{PY} {script} late", white="agent:random",
                    black_label="late", white_label="random", rules="standard",
                    tc=TimeControl(move_time=0.3, grace=3.0), seed=1)
    cache = PlayerCache()
    try:
        rec = play_game(task, cache)
    finally:
        cache.close_all(kill=True)
    assert rec["reason"] == "normal", rec["detail"]
    # at least those two: a busy machine can make others late too, never these on time
    assert rec["stats"]["black"]["slow_moves"] >= 2
    from clients.match.record import GameRecord
    from clients.match.results import summarize

    config = MatchConfig(players=[f"late=gtp:{PY} {script} late", "random=agent:random"],
                         out=tmp_path / "m")
    results = summarize(config, [GameRecord.from_dict(rec)], 1)
    late = next(p for p in results["players"] if p["name"] == "late")
    assert late["slow_moves"] == rec["stats"]["black"]["slow_moves"]
    assert late["time_losses"] == 0
    assert "slow-moves" in format_table(results)
