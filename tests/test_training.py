"""Training: the WTHOR reader, solver labels, self-play data, and a tiny fit end to end."""

from __future__ import annotations

import json

import numpy as np
import pytest

from engine_server.agents import make_agent
from engine_server.eval import weights as wts
from engine_server.game import REVERSED, STANDARD, Game, Position, wthor
from engine_server.search.endgame import solve
from engine_server.search.limits import Limits
from training import cli, patterns, selfplay

from .conftest import DATA


def test_wthor_sample_replays_to_the_recorded_scores():
    games = wthor.read_file(DATA / "wthor-sample.wtb")
    assert len(games) == 300
    assert games.depth[0] == 24 and games.year[0] == 2000
    pos, valid, final = wthor.replay(games)
    assert valid.all()
    done = final != 127
    assert done.sum() > 250
    # the real score is black's discs with the empties to the winner
    assert np.array_equal(final[done], 2 * games.real[done] - 64)
    # every position is legal and the first one of each game is the start
    firsts = np.nonzero(np.diff(np.concatenate([[-1], pos.game])))[0]
    assert np.all(pos.empties[firsts] == 60)
    g = Game.from_moves([int(m) for m in games.moves[0] if m >= 0])
    assert g.position.is_game_over()


def test_wthor_rejects_files_of_the_wrong_size(tmp_path):
    bad = tmp_path / "x.wtb"
    bad.write_bytes(b"\0" * 20)
    try:
        wthor.read_file(bad)
    except wthor.WthorError as e:
        assert "16 + 68" in str(e)
    else:
        raise AssertionError("no error")


def test_labels_below_the_solve_point_are_exact():
    games = wthor.read_file(DATA / "wthor-sample.wtb").take(np.arange(20))
    pos, valid, final = wthor.replay(games)
    theo = 2 * games.theoretical - 64
    t = patterns.label_games(pos, final, theo, 24, 8, STANDARD, threads=1)
    at8 = np.nonzero(pos.empties == 8)[0][:5]
    for i in at8:
        p = Position.from_string(_board(pos.P[i], pos.O[i]), "X")
        assert t[i] == solve(p).score
    # above 24 empties: the theoretical score, from the mover's side
    i = np.nonzero(pos.empties == 40)[0][0]
    b = theo[pos.game[i]]
    assert t[i] == (b if pos.black[i] else -b)


def _board(P, O) -> str:
    return "".join("X" if int(P) >> s & 1 else "O" if int(O) >> s & 1 else "-"
                   for s in range(64))


def test_self_play_labels_are_solver_values(tmp_path):
    d = selfplay.dataset("ab:depth=1,random=6", REVERSED, 12, 8, 3, tmp_path / "sp.npz",
                         threads=1, log=lambda m: None)
    assert len(d) > 12 * 40
    late = np.nonzero(d.empties <= 8)[0][:10]
    for i in late:
        p = Position.from_string(_board(d.P[i], d.O[i]), "X").with_rules("reversed")
        assert d.target[i] == solve(p).score
    again = selfplay.dataset("ab:depth=1,random=6", REVERSED, 12, 8, 3, tmp_path / "sp2.npz",
                             threads=2, log=lambda m: None)
    assert np.array_equal(again.P, d.P) and np.array_equal(again.target, d.target)


@pytest.mark.slow  # a training run
def test_a_tiny_training_run_lowers_held_out_error(tmp_path):
    games = wthor.read_file(DATA / "wthor-sample.wtb")
    pos, valid, final = wthor.replay(games)
    theo = 2 * games.theoretical - 64
    t = patterns.label_games(pos, final, theo, 24, 8, STANDARD, threads=2)
    data = patterns.Dataset(pos.P, pos.O, pos.empties.astype(np.int8), t, pos.game)
    _, report = patterns.train(data, iterations=15, l2=5.0, window=2, holdout=4,
                               log=lambda m: None)
    late = [r for r in report if r["stage"] >= 8]
    assert np.mean([r["test_mae"] for r in late]) < 0.9 * np.mean(
        [r["baseline_mae"] for r in late])


@pytest.mark.parametrize("stages", [15, 30])
@pytest.mark.slow  # a training run
def test_train_command_writes_weights_the_engine_loads(tmp_path, stages):
    out = tmp_path / "w.npz"
    rc = cli.main(["patterns", "--wthor", str(DATA), "--games", "120", "--solve-empties", "6",
                   "--iterations", "5", "--work", str(tmp_path / "work"), "--out", str(out),
                   "--report", str(tmp_path / "r.json"), "--stages", str(stages)])
    assert rc == 0
    w, meta = wts.load(out, STANDARD)
    assert w.shape[0] == stages == meta["stages"]
    per = 60 // stages
    assert [r["plies"][0] for r in meta["report"]] == list(range(0, 60, per))
    assert meta["data"][0].startswith("WTHOR")
    assert json.loads((tmp_path / "r.json").read_text())["report"]
    assert (tmp_path / "r.png").is_file()
    agent = make_agent(f"ab:weights={out}")
    r = agent.search(Game().position, Limits(depth=3))
    assert r.best_move in Game().position.legal_moves()
