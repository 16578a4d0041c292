"""The CS303 course's limits as othello-match applies them: moves past the per-move limit that
the game survives (counted, as "slow moves", for any engine) and the 100 MB memory limit of a
submission (a forfeit in the course's words)."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from clients.match.cli import main as cli_main
from clients.match.config import MatchConfig
from clients.match.players import (
    CS303_MEMORY_MB,
    Cs303Player,
    PlayerError,
    PlayerSpec,
    TimeControl,
    Turn,
)
from clients.match.referee import GameTask, PlayerCache, play_game
from clients.match.results import format_table
from engine_server.game import Color, Game

from .cs303_sources import LEGAL_MOVES
from .test_match import FAKE_GTP

PY = sys.executable

# Submissions as students write them; MODE picks the fault.
SUBMISSION = textwrap.dedent('''\
    import random
    import signal
    import sys
    import time
    import numpy as np
    MODE = {mode!r}
    ''') + LEGAL_MOVES + textwrap.dedent('''\
    class AI(object):
        def __init__(self, chessboard_size, color, time_out):
            self.color = color
            self.candidate_list = []
            self.rng = random.Random(0)
            if MODE == "roomy":
                # well inside the limit, and written, so that it is really held
                self.table = np.ones((40, 1024, 1024), dtype=np.uint8)

        def go(self, chessboard):
            self.candidate_list.clear()
            moves = legal_moves(chessboard, self.color)
            self.candidate_list.extend(moves)
            if moves:
                self.candidate_list.append(self.rng.choice(moves))
            if MODE == "slow":
                time.sleep(30)  # every move: the judge's timer cuts it, the last entry is played
            elif MODE == "hog":
                # a table grown past the limit, 1 MB at a time
                self.table = [bytearray(1 << 20) for _ in range(150)]
            elif MODE == "sigkill":
                signal.raise_signal(signal.SIGKILL)
            elif MODE == "abort":
                sys.stderr.write("LLVM ERROR: out of memory\\n")
                sys.stderr.flush()
                signal.raise_signal(signal.SIGABRT)
    ''')


def _submission(folder: Path, name: str, mode: str) -> Path:
    path = folder / f"{name}.py"
    path.write_text(SUBMISSION.format(mode=mode))
    return path


def _journal(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "journal.jsonl").read_text().splitlines()]


def _color_of(rec: dict, name: str) -> str:
    return "black" if rec["black"] == name else "white"


@pytest.mark.slow  # whole games as the course judge runs them, one with every go cut
def test_course_round_robin_counts_slow_moves_and_memory_forfeits(tmp_path, capsys):
    subs = tmp_path / "submissions"
    subs.mkdir()
    _submission(subs, "11111111", "roomy")
    _submission(subs, "22222222", "slow")
    _submission(subs, "33333333", "hog")
    out = tmp_path / "standings"
    # As course staff run it, with the course's memory limit by default; a short time_out and a
    # wide grace, so that a busy machine can make no move of the slow submission a time loss.
    argv = [f"cs303:{subs}/*.py", "--format", "round-robin", "--rules", "reversed",
            "--games", "1", "--no-swap", "--openings", "start", "--move-time", "0.2",
            "--grace", "3", "--concurrency", "2", "--out", str(out), "--no-plots",
            "--no-progress"]
    assert cli_main(argv) == 0
    table = capsys.readouterr().out
    recs = {frozenset((r["black"], r["white"])): r for r in _journal(out)}
    assert len(recs) == 3

    # every go of 22222222 ran past time_out; the game went on, each one counted
    slow_game = recs[frozenset(("11111111", "22222222"))]
    assert slow_game["reason"] == "normal", slow_game["detail"]
    slow = slow_game["stats"][_color_of(slow_game, "22222222")]
    assert slow["moves"] >= 10 and slow["slow_moves"] == slow["moves"]
    assert slow_game["stats"][_color_of(slow_game, "11111111")]["slow_moves"] == 0

    # 33333333 grew past 100 MB in go: a forfeit in the course's words, each game
    for other in ("11111111", "22222222"):
        rec = recs[frozenset((other, "33333333"))]
        assert rec["reason"] == "memory" and rec[rec["loser"]] == "33333333", rec["detail"]
        assert rec["detail"].startswith("memory limit exceeded (100 MB) in go: MemoryError")
        assert ":r]" in rec["ggf"] and "loses by memory" in rec["ggf"]

    players = {p["name"]: p for p in json.loads((out / "results.json").read_text())["players"]}
    assert players["22222222"]["time_losses"] == 0 and players["22222222"]["forfeits"] == {}
    # its moves in the game against the hog count too: every go it made was cut
    slow_moves = sum(r["stats"][_color_of(r, "22222222")]["slow_moves"]
                     for r in recs.values() if "22222222" in (r["black"], r["white"]))
    assert players["22222222"]["slow_moves"] == slow_moves >= slow["moves"]
    assert players["11111111"]["slow_moves"] == 0 and players["11111111"]["forfeits"] == {}
    assert players["33333333"]["forfeits"] == {"memory": 2}

    # the standings say both, beside the time losses
    head = next(line for line in table.splitlines() if line.startswith("player"))
    assert "time-losses  slow-moves  other forfeits" in head
    rows = {line.split()[0]: line for line in table.splitlines() if line[:8].isdigit()}
    assert rows["22222222"].split()[-2:] == [str(slow_moves), "-"]
    assert rows["33333333"].endswith("memory 2")


def _one_move(tmp_path: Path, mode: str, memory_mb: float | None) -> tuple[Cs303Player, object]:
    """The player and what its first move came to: a Reply, or the PlayerError it raised."""
    player = Cs303Player(PlayerSpec.parse(f"cs303:{_submission(tmp_path, mode, mode)}"),
                         TimeControl(move_time=1.0, grace=3.0, cs303_memory_mb=memory_mb))
    game = Game()
    try:
        player.new_game(game, Color.BLACK, 1)
        return player, player.genmove(Turn(game, Color.BLACK, None, [], 4.0))
    except PlayerError as e:
        return player, e
    finally:
        player.kill()


def test_the_memory_limit_is_the_course_s_over_the_worker_s_start_up_and_can_be_changed(
        tmp_path):
    player, hog = _one_move(tmp_path, "hog", CS303_MEMORY_MB)
    assert isinstance(hog, PlayerError) and hog.reason == "memory", hog
    assert str(hog).startswith("memory limit exceeded (100 MB) in go: MemoryError")
    # the limit is the data segment once the worker has started, plus the course's 100 MB
    memory = player.memory
    assert memory["applied"] and memory["limit"] - memory["baseline"] == 100 * 2**20
    # a submission that holds 40 MB plays
    _, roomy = _one_move(tmp_path, "roomy", CS303_MEMORY_MB)
    assert not isinstance(roomy, PlayerError), roomy
    # 150 MB fits a higher limit, and no limit at all
    for mb in (300.0, None):
        player, hog = _one_move(tmp_path, "hog", mb)
        assert not isinstance(hog, PlayerError), hog
        assert player.memory.get("applied", False) == (mb is not None)


@pytest.mark.parametrize("mode, words", [
    ("sigkill", "killed by SIGKILL, the out-of-memory killer's signal"),
    ("abort", "died (killed by SIGABRT) saying 'LLVM ERROR: out of memory'"),
])
def test_a_worker_killed_under_the_memory_limit_is_a_memory_forfeit(tmp_path, mode, words):
    _, died = _one_move(tmp_path, mode, CS303_MEMORY_MB)
    assert isinstance(died, PlayerError) and died.reason == "memory", died
    assert str(died).startswith("memory limit exceeded (100 MB) in go: ") and words in str(died)
    # without a limit nothing says it was memory: the process exited
    _, died = _one_move(tmp_path, mode, None)
    assert isinstance(died, PlayerError) and died.reason == "crash", died
    assert "the AI's process exited in go" in str(died)


def test_the_memory_limit_option_and_the_match_identity(tmp_path, capsys):
    def identity(mb: float | None) -> dict:
        return MatchConfig(players=["agent:random", "agent:pseudo-random"], out=tmp_path,
                           tc=TimeControl(move_time=1.0, cs303_memory_mb=mb)).identity()

    # matches journaled before the limit existed resume under the course's figure
    assert "cs303_memory_mb" not in identity(CS303_MEMORY_MB)["tc"]
    assert identity(None)["tc"]["cs303_memory_mb"] is None
    assert identity(200.0)["tc"]["cs303_memory_mb"] == 200.0
    for bad in ("0", "-5", "lots"):
        with pytest.raises(SystemExit):
            cli_main(["agent:random", "agent:random", "--cs303-memory-limit", bad])
    capsys.readouterr()


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
