"""othello-train deviations: positions after moves the experts did not play, valued by a search."""

from __future__ import annotations

import json

import numpy as np

from engine_server.eval.weights import default_weights
from engine_server.game.wthor import read_file
from training import heldout as H
from training.cli import main as train_main
from training.mpc import search_values
from training.selfplay_data import load_dir

from .conftest import data_file


def test_the_positions_follow_a_move_of_no_training_game_and_carry_their_search_value(
        tmp_path, capsys):
    sample = data_file("wthor-sample.wtb")
    out = tmp_path / "dev"
    args = ["deviations", "--wthor", str(sample), "--positions", "12", "--depth", "3",
            "--min-empties", "28", "--max-empties", "40", "--seed", "4", "--threads", "1",
            "--out", str(out)]
    assert train_main(args) == 0
    assert "12 positions in" in capsys.readouterr().out
    data = load_dir(out)
    assert len(data.P) == 12
    games = read_file(sample)
    assert all(int(g) % H.HOLDOUT for g in data.game)      # training games only
    drawn = H.draw_positions(games, np.array([g for g in range(len(games)) if g % H.HOLDOUT]),
                             12, 4, 28, 40, deviate=True)
    assert [g for g, _ in drawn] == list(data.game)
    positions = [p for _, p in drawn]
    assert [p.bitboards() for p in positions] == list(zip(data.P, data.O))
    assert all(28 <= p.empties <= 40 for p in positions)
    values = search_values(positions, default_weights(0), 3, 1, lambda _: None)
    expect = np.clip(np.floor(values[:, 3] + 0.5), -64, 64)
    assert np.array_equal(data.value, expect) and np.array_equal(data.target, expect)
    # the directory is complete: the same command searches nothing again; other parameters
    # are refused
    assert train_main(args) == 0
    assert json.loads((out / "manifest.json").read_text())["parameters"]["depth"] == 3
    assert train_main([*args[:-4], "--depth", "4", "--threads", "1", "--out", str(out)]) == 2
    assert "other parameters" in capsys.readouterr().err
