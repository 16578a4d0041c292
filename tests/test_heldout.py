"""othello-train heldout (training/heldout.py): the evaluation's error against deep-search
values, on positions of the games the pattern fit holds out."""

from __future__ import annotations

import json

import numpy as np
import pytest

from clients.match import outside_judge as J
from engine_server.game.wthor import read_file
from training import heldout as H
from training.cli import main as train_main

from .conftest import data_file


def test_errors_are_mean_absolute_differences_to_the_deepest_value_per_bucket():
    nan = np.nan
    # columns: depth 0..4; the label is depth 4, or the depth of the end (2 empties: depth 2)
    values = np.array([[1.0, nan, 3.0, nan, 5.0],
                       [0.0, nan, -2.0, nan, -1.0],
                       [4.0, nan, 2.0, nan, nan]])
    empties = np.array([20, 23, 2])
    rows = H.errors(values, empties, depth=4)
    assert [r["empties"] for r in rows] == [[0, 4], [20, 23], [2, 23]]
    assert {k: v for k, v in rows[0].items() if k.startswith(("empties", "positions", "mae"))} \
        == {"empties": [0, 4], "positions": 1, "mae_depth0": 2.0, "mae_depth2": 0.0,
            "mae_depth4": 0.0}
    assert rows[1]["mae_depth0"] == 2.5 and rows[1]["mae_depth2"] == 1.5
    assert rows[2]["positions"] == 3 and rows[2]["mae_depth0"] == pytest.approx(7 / 3, abs=1e-3)
    # bands of six start at multiples of six: 18-23 holds both positions of 20 and 23
    rows = H.errors(values, empties, depth=4, band=6)
    assert [r["empties"] for r in rows] == [[0, 5], [18, 23], [2, 23]]
    assert rows[1]["positions"] == 2 and rows[1]["mae_depth0"] == 2.5


def test_the_report_tells_values_too_spread_from_values_in_the_wrong_order():
    rng = np.random.default_rng(3)
    label = rng.normal(0, 4, 200)
    empties = np.full(200, 44)
    # twice the label's spread, in its order: all of the error is spread
    values = np.stack([2 * label] * 5, axis=1)      # depths 0..4
    total = H.errors(values, empties, depth=4, labels=label)[-1]
    assert total["mae_depth2"] == pytest.approx(float(np.mean(np.abs(label))), abs=1e-3)
    assert total["scale_depth2"] == 0.5 and total["scaled_mae_depth2"] == 0.0
    assert total["corr_depth2"] == 1.0
    # the label's spread with noise added: the factor shrinks, the error after it stays
    noisy = label + rng.normal(0, 4, 200)
    values = np.stack([noisy] * 5, axis=1)
    total = H.errors(values, empties, depth=4, labels=label)[-1]
    assert 0.3 < total["scale_depth0"] < 0.7 and 0.5 < total["corr_depth0"] < 0.9
    assert 0 < total["scaled_mae_depth0"] < total["mae_depth0"]
    # one position: no correlation
    one = H.errors(values[:1], empties[:1], depth=4, labels=label[:1])[-1]
    assert one["corr_depth0"] is None


def test_positions_come_from_held_out_games_only():
    sample = data_file("wthor-sample.wtb")
    games = read_file(sample)
    held = set()
    for g in range(0, len(games), H.HOLDOUT):
        from engine_server.game import PASS, Game

        game = Game()
        for m in (int(x) for x in games.moves[g] if x >= 0):
            if game.position.must_pass():
                game.play(PASS)
            held.add(game.position.bitboards())
            game.play(m)
    positions = H.heldout_positions(sample, 8, seed=3, min_empties=15, max_empties=40)
    assert len(positions) == 8
    assert all(p.bitboards() in held and 15 <= p.empties <= 40 for p in positions)
    assert [p.bitboards() for p in positions] == [
        p.bitboards() for p in H.heldout_positions(sample, 8, 3, 15, 40)]


def test_the_games_outcomes_are_the_side_to_moves_and_a_forced_end_matches_them():
    from engine_server.game import PASS
    from engine_server.game.position import Color

    sample = data_file("wthor-sample.wtb")
    positions, outcomes = H.heldout_outcomes(sample, 20, 3, 1, 1)
    # the same draw as heldout_positions'
    assert positions == H.heldout_positions(sample, 20, 3, 1, 1)
    assert len(positions) >= 10 and set(outcomes) == {"theoretical", "final"}

    def exact(q):
        if q.is_game_over():
            return q.score()
        if q.must_pass():
            return -exact(q.play(PASS))
        return max(-exact(q.play(m)) for m in q.legal_moves())

    # one empty: the rest of the game is forced, so what the players reached is its value,
    # from the side to move's view, whichever colour that is
    assert {p.side for p in positions} == {Color.BLACK, Color.WHITE}
    assert outcomes["final"].tolist() == [exact(p) for p in positions]
    assert np.all(np.abs(outcomes["theoretical"]) <= 64)


def test_outcome_rows_score_our_values_and_the_label_by_one_outcome():
    rng = np.random.default_rng(5)
    outcome = rng.integers(-30, 31, 120)
    empties = np.repeat([30, 44], 60)
    # our depths 0..4 in the outcome's order at twice its spread; the label in reverse order
    values = np.stack([2.0 * outcome] * 5, axis=1)
    label = -outcome + rng.normal(0, 1, 120)
    rows = H.outcome_rows(values, empties, outcome, label, band=6)
    assert [r["empties"] for r in rows] == [[30, 35], [42, 44], [30, 44]]
    total = rows[-1]
    assert total["positions"] == 120
    assert total["corr_depth2"] == 1.0 and total["scale_depth2"] == 0.5
    assert total["scaled_mae_depth2"] == 0.0
    assert total["corr_label"] < -0.95 and total["scale_label"] < 0
    assert "corr_label" not in H.outcome_rows(values, empties, outcome)[-1]


def test_deviated_positions_follow_a_move_the_game_did_not_play(capsys):
    from engine_server.game import PASS, Game

    sample = data_file("wthor-sample.wtb")
    games = read_file(sample)
    # every held-out position with the moves its games played there
    played: dict = {}
    for g in range(0, len(games), H.HOLDOUT):
        game = Game()
        for m in (int(x) for x in games.moves[g] if x >= 0):
            if game.position.must_pass():
                game.play(PASS)
            played.setdefault(game.position, set()).add(m)
            game.play(m)
    positions = H.heldout_positions(sample, 8, 3, 20, 40, deviate=True)
    assert len(positions) == 8
    for p in positions:
        assert 20 <= p.empties <= 40 and not p.must_pass()
        # one move from a held-out position, and never a move a game played there
        moves = [(q, m) for q in played if q.empties == p.empties + 1
                 for m in q.legal_moves() if q.play(m) == p]
        assert moves and not any(m in played[q] for q, m in moves)
    assert positions == H.heldout_positions(sample, 8, 3, 20, 40, deviate=True)
    assert train_main(["heldout", "--rules", "reversed", "--deviate", "--positions", "2"]) == 2
    assert "--deviate needs games" in capsys.readouterr().err


def test_positions_outside_the_book_are_the_others_of_the_same_draw(tmp_path, capsys):
    from engine_server.eval import book as B

    book = B.shipped(0)
    sample = data_file("wthor-sample.wtb")
    # as many positions as the sample has held-out games: both draws go through all of them
    every = H.heldout_positions(sample, 15, 3, 44, 56)
    outside = H.heldout_positions(sample, 15, 3, 44, 56, skip=lambda p: book.index(p) >= 0)
    inside = [p for p in every if book.index(p) >= 0]
    assert inside and outside      # the sample's early positions are partly book positions
    assert outside == [p for p in every if book.index(p) < 0]

    assert train_main(["heldout", "--wthor", str(sample), "--positions", "3", "--depth", "4",
                       "--min-empties", "36", "--max-empties", "56", "--outside-book",
                       "--threads", "1", "--work", str(tmp_path)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["positions"] == 3 and report["data"].endswith("outside the book "
                                                                 "book-standard.npz")


@pytest.mark.slow  # two runs of the command and a plot
def test_the_command_writes_a_reproducible_report_with_a_plot(tmp_path):
    sample = data_file("wthor-sample.wtb")
    reports = []
    for k in range(2):
        out = tmp_path / f"heldout{k}.json"
        assert train_main(["heldout", "--wthor", str(sample), "--positions", "6", "--depth",
                           "4", "--threads", "1", "--work", str(tmp_path / f"work{k}"),
                           "--out", str(out)]) == 0
        reports.append(json.loads(out.read_text()))
        assert out.with_suffix(".png").stat().st_size > 0
    a, b = reports
    assert a["rows"] == b["rows"] and a["positions"] == 6 and a["label_depth"] == 4
    total = a["rows"][-1]
    assert total["positions"] == 6 and total["mae_depth4"] == 0.0
    assert total["mae_depth0"] >= 0 and total["mae_depth2"] >= 0
    # the games' own outcomes score our values and the label (here our depth 4) alike
    assert a["outcomes"] == b["outcomes"] and set(a["outcomes"]) == {"theoretical", "final"}
    for rows in a["outcomes"].values():
        assert rows[-1]["positions"] == 6
        assert rows[-1]["corr_label"] == rows[-1]["corr_depth4"]


def test_bad_empties_and_a_label_shallower_than_the_scored_depths_are_refused(capsys):
    assert train_main(["heldout", "--min-empties", "30", "--max-empties", "20"]) == 2
    assert train_main(["heldout", "--depth", "2"]) == 2
    assert train_main(["heldout", "--band", "0"]) == 2
    assert "--depth 2" in capsys.readouterr().err


def test_two_evaluations_are_judged_by_the_same_labels(tmp_path):
    from engine_server.eval import weights as wts
    from training.mpc import search_values

    positions = H.heldout_positions(data_file("wthor-sample.wtb"), 5, 3, 15, 40)
    shipped = wts.default_weights(0)
    quiet = lambda msg: None  # noqa: E731
    labels = search_values(positions, shipped, 4, 1, quiet)[:, 4]
    flat = H.report(0, np.zeros_like(shipped), positions, 4, 1, tmp_path, quiet,
                    label_weights=shipped)
    # an evaluation that says 0 everywhere is as far off as the labels are from 0
    assert flat["rows"][-1]["mae_depth0"] == round(float(np.mean(np.abs(labels))), 3)
    assert H.report(0, shipped, positions, 4, 1, tmp_path, quiet)["rows"][-1]["mae_depth4"] == 0


@pytest.mark.slow  # a judge engine process
def test_an_outside_judge_over_nboard_gives_the_labels(tmp_path, monkeypatch):
    """Our own engine as the judge, over NBoard at depth 2: its values are the full-width
    depth-2 values the internal search finds, so an evaluation searched to depth 2 is 0 from
    them and the static one as far as the internal labels say."""
    import sys

    from engine_server.eval import weights as wts
    from training.mpc import search_values

    positions = H.heldout_positions(data_file("wthor-sample.wtb"), 5, 3, 30, 40)
    judge = f"me=nboard:{sys.executable} -m engine_server --agent ab --no-warmup"
    quiet = lambda msg: None  # noqa: E731
    judged = J.judge_values(positions, judge, 2, 30.0, quiet, tmp_path)
    ours = search_values(positions, wts.default_weights(0), 2, 1, quiet)
    assert judged.tolist() == ours[:, 2].tolist() and np.abs(judged).sum() > 0
    # the answers are cached: the same call again starts no engine

    with monkeypatch.context() as m:
        m.setattr(J, "make_player", lambda *a: pytest.fail("the judge was asked again"))
        assert J.judge_values(positions, judge, 2, 30.0, quiet, tmp_path).tolist() == \
            judged.tolist()

    out = tmp_path / "judged.json"
    assert train_main(["heldout", "--wthor", str(data_file("wthor-sample.wtb")),
                       "--positions", "5", "--min-empties", "30", "--max-empties", "40",
                       "--depth", "2", "--seed", "3", "--threads", "1", "--judge", judge,
                       "--work", str(tmp_path), "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    total = result["rows"][-1]
    assert result["judge"] == judge and result["judge_name"] == "me"
    assert total["mae_depth2"] == 0.0
    assert total["mae_depth0"] == round(float(np.mean(np.abs(ours[:, 0] - ours[:, 2]))), 3)


def test_a_judge_that_cannot_value_a_position_is_reported_by_name(tmp_path, capsys):
    sample = data_file("wthor-sample.wtb")
    base = ["heldout", "--wthor", str(sample), "--positions", "2", "--depth", "2",
            "--threads", "1", "--work", str(tmp_path)]
    assert train_main([*base, "--judge", "telnet:nowhere"]) == 2
    assert "--judge" in capsys.readouterr().err
    # an engine that is not there: the command fails and names the judge
    assert train_main([*base, "--judge", "ghost=nboard:/nonexistent/engine"]) == 1
    assert "ghost" in capsys.readouterr().err
    assert train_main([*base, "--judge", "nboard:x", "--label-weights", "w.npz"]) == 2


def test_the_regret_is_what_the_judge_loses_by_our_first_choice():
    nan = np.nan
    ours = np.array([1.0, 3.0, 2.0, 5.0, 5.0])
    judged = np.array([0.0, -1.0, 4.0, 2.0, 3.0])
    parent = np.array([0, 0, 0, 1, 1])
    # position 0: we pick the second move (3), the judge's best is the third: 4 - (-1);
    # position 1: a tie goes to the first move in order
    assert H.regrets(ours, judged, parent, 2).tolist() == [5.0, 1.0]
    # a move whose game is over keeps its exact value; the others turn to the mover's view
    kid = np.array([0, -1, 1])
    sign = np.array([-1.0, -1.0, 1.0])
    exact = np.array([nan, 12.0, nan])
    assert H.move_values(np.array([2.0, 3.0]), kid, sign, exact).tolist() == [-2.0, 12.0, 3.0]


def test_every_move_becomes_a_position_with_a_move_to_make():
    positions = H.heldout_positions(data_file("wthor-sample.wtb"), 6, 3, 15, 40)
    kids, parent, kid, sign, exact = H.children(positions)
    assert len(parent) == sum(len(p.legal_moves()) for p in positions)
    assert np.bincount(parent).tolist() == [len(p.legal_moves()) for p in positions]
    for j in range(len(parent)):
        mover = positions[parent[j]].side
        if kid[j] < 0:
            assert not np.isnan(exact[j])
            continue
        k = kids[kid[j]]
        assert k.legal_moves() and np.isnan(exact[j])
        # -1: the opponent is to move; +1: it had to pass, the mover moves again
        assert (k.side == mover) == (sign[j] == 1.0)


@pytest.mark.slow  # searches every held-out move
def test_our_own_depth_2_as_the_judge_leaves_no_regret_at_depth_2(tmp_path):
    import sys

    sample = data_file("wthor-sample.wtb")
    judge = f"me=nboard:{sys.executable} -m engine_server --agent ab --no-warmup"
    out = tmp_path / "regret.json"
    assert train_main(["heldout", "--wthor", str(sample), "--positions", "4",
                       "--min-empties", "30", "--max-empties", "40", "--depth", "2",
                       "--threads", "1", "--judge", judge, "--regret",
                       "--work", str(tmp_path), "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    total = result["rows"][-1]
    assert result["label_depth"] == 3 and result["moves"] > result["positions"] == 4
    # the judge's values of the moves are our depth-2 values: our depth-2 choice is its best
    assert total["regret_depth2"] == 0.0
    assert total["regret_depth0"] >= 0 and total["mae_depth0"] > 0
    assert out.with_suffix(".png").stat().st_size > 0
    assert train_main(["heldout", "--regret"]) == 2


def test_a_forced_move_answered_without_a_value_is_valued_after_the_move(tmp_path, monkeypatch):
    """Engines answer a forced move at once, NTest without a value: the judge is asked the
    position after the move, from the other side's view."""
    from clients.match.players import Reply
    from engine_server.game import PASS, Color, Game, Position

    forced = None
    for moves in read_file(data_file("wthor-sample.wtb")).moves:
        game = Game()
        for m in (int(x) for x in moves if x >= 0):
            p = game.position
            if p.must_pass():
                game.play(PASS)
                p = game.position
            if len(p.legal_moves()) == 1 and len(p.play(m).legal_moves()) > 1:
                forced = p
                break
            game.play(m)
        if forced is not None:
            break
    assert forced is not None

    def value(p: Position) -> float:   # any value that differs by side and position
        b, w = p.discs()
        return float(b - w if p.side == Color.BLACK else w - b) + 0.25

    class Scripted:
        def __init__(self, *a):
            pass

        def new_game(self, *a):
            pass

        def genmove(self, turn):
            p = turn.game.position
            one = len(p.legal_moves()) == 1
            return Reply(p.legal_moves()[0], None if one else value(p))

        def close(self):
            pass

    monkeypatch.setattr(J, "make_player", Scripted)
    got = J.judge_values([forced], "agent:random", 20, 1.0, lambda m: None, None)
    assert got.tolist() == [-value(forced.play(forced.legal_moves()[0]))]


FAKE_NBOARD = '''\
import sys
ANSWER = sys.argv[1]
for line in sys.stdin:
    word = line.split()[0] if line.split() else ""
    if word == "ping":
        print("pong " + line.split()[1], flush=True)
    elif word == "go":
        print("=== " + ANSWER, flush=True)
    elif word == "quit":
        break
'''


def test_an_empty_eval_field_is_ntests_zero_and_no_field_is_no_value(tmp_path):
    import sys

    script = tmp_path / "fake_nboard.py"
    script.write_text(FAKE_NBOARD)
    positions = [p for p in H.heldout_positions(data_file("wthor-sample.wtb"), 6, 3, 30, 40)
                 if len(p.legal_moves()) > 1][:3]
    quiet = lambda msg: None  # noqa: E731
    zero = J.judge_values(positions, f"nboard:{sys.executable} {script} F5//0.10", 20, 5.0,
                          quiet, None)
    assert zero.tolist() == [0.0] * len(positions)
    some = J.judge_values(positions, f"nboard:{sys.executable} {script} F5/-2.50/0.10", 20,
                          5.0, quiet, None)
    assert some.tolist() == [-2.5] * len(positions)
    with pytest.raises(J.JudgeError, match="no evaluation"):
        J.judge_values(positions, f"mute=nboard:{sys.executable} {script} F5", 20, 5.0, quiet,
                       None)


def test_a_cache_of_other_positions_is_not_resumed(tmp_path):
    """The cache's name holds the count, not the positions: 4 positions of another seed or range
    of empties must be searched afresh, not read back."""
    from engine_server.eval import weights as wts
    from training.mpc import search_values

    sample = data_file("wthor-sample.wtb")
    a = H.heldout_positions(sample, 4, 3, 15, 25)
    b = H.heldout_positions(sample, 4, 5, 30, 40)
    w = wts.default_weights(0)
    quiet = lambda msg: None  # noqa: E731
    cache = tmp_path / "values.npz"
    search_values(a, w, 2, 1, quiet, cache)
    fresh = search_values(b, w, 2, 1, quiet)
    assert np.array_equal(search_values(b, w, 2, 1, quiet, cache), fresh, equal_nan=True)
    # and the same positions still resume, searching none again
    logs: list[str] = []
    search_values(b, w, 2, 1, logs.append, cache)
    assert any("resuming: 4 of 4" in m for m in logs)
    assert not any("searched to depth" in m for m in logs)
    # a cache of half of them: the other half is searched, and the count says so
    with np.load(cache) as z:
        values, done, digest = z["values"].copy(), z["done"].copy(), z["positions"]
    done[2:] = False
    values[2:] = np.nan
    np.savez(cache, values=values, done=done, positions=digest)
    logs.clear()
    assert np.array_equal(search_values(b, w, 2, 1, logs.append, cache), fresh, equal_nan=True)
    assert any("resuming: 2 of 4" in m for m in logs)
    assert [m.split()[0] for m in logs if "searched to depth" in m] == ["4/4"]
