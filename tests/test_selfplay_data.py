"""othello-train selfplay: shards that depend on the seed alone, resumable, labelled by the play
and the solver, refused into a directory of other parameters, and a fit on them that predicts
held-out games better than a constant."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from engine_server.eval import weights as wts
from engine_server.eval.features import N_STAGES, WEIGHT_SCALE
from engine_server.game import REVERSED, STANDARD
from training import cli, fit, patterns
from training import selfplay_data as SD
from training.labels import solve_many

QUIET = dict(log=lambda _: None)


def _run(out: Path, games: int = 12, threads: int = 1, rules: int = STANDARD,
         openings: str = "random:4-10", depth: int = 2, solve_empties: int = 10,
         seed: int = 3, chunk: int = 4) -> SD.Summary:
    return SD.run(out, rules, games, depth, solve_empties, SD.Openings.parse(openings),
                  wts.weights_path(rules), seed, chunk, threads, **QUIET)


def _bytes(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.glob("shard-*.npz"))}


def test_shards_depend_on_the_seed_alone_and_a_rerun_resumes(tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    s1 = _run(one, threads=1)
    s2 = _run(two, threads=2)
    assert s1.games == 12 and s1.positions == s2.positions > 12 * 30
    assert len(_bytes(one)) == 3 and _bytes(one) == _bytes(two)
    manifest = json.loads((one / SD.MANIFEST).read_text())
    assert manifest["shards"]["00001"]["games"] == [4, 8]
    assert manifest["params"]["weights_sha256"] and manifest["runs"][0]["played_games"] == 12
    # a lost shard is played again, the same bytes; the others are kept
    before = _bytes(two)
    (two / "shard-00001.npz").unlink()
    again = _run(two, threads=2)
    assert again.played_games == 4 and _bytes(two) == before
    # a shard written before an interruption could record it in the manifest is kept
    m = json.loads((two / SD.MANIFEST).read_text())
    del m["shards"]["00002"]
    (two / SD.MANIFEST).write_text(json.dumps(m))
    assert _run(two).played_games == 0
    # more games: only the new shards are played, the first games stay as they were
    more = _run(two, games=14)
    assert more.played_games == 2 and _bytes(two)["shard-00000.npz"] == before["shard-00000.npz"]
    d = SD.load_dir(two)
    assert len(d) == more.positions and sorted(set(d.game.tolist())) == list(range(14))


class _Clock:
    """A clock that moves only when a shard is played, so a time budget stops the run at a
    known shard whatever the machine's speed."""

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now


def test_a_time_budget_stops_between_shards_and_the_same_command_plays_the_rest(
        tmp_path, monkeypatch):
    whole = tmp_path / "whole"
    _run(whole, threads=1)
    clock = _Clock()
    play = SD.play_shard

    def timed(*args, **kwargs):
        out = play(*args, **kwargs)
        clock.now += 100.0
        return out

    monkeypatch.setattr(SD, "time", clock)
    monkeypatch.setattr(SD, "play_shard", timed)
    budget = tmp_path / "budget"
    # shards start at 0 and 100 s, under the 150 s budget; the third would start at 200 s
    first = SD.run(budget, STANDARD, 12, 2, 10, SD.Openings.parse("random:4-10"),
                   wts.weights_path(STANDARD), 3, 4, 1, seconds=150.0, **QUIET)
    assert (first.played_games, first.games, first.missing) == (8, 8, 4)
    assert "4 games left for the same command" in first.line()
    run = json.loads((budget / SD.MANIFEST).read_text())["runs"][0]
    assert run["budget"] == 150.0 and run["played_games"] == 8
    rest = SD.run(budget, STANDARD, 12, 2, 10, SD.Openings.parse("random:4-10"),
                  wts.weights_path(STANDARD), 3, 4, 1, **QUIET)
    assert (rest.played_games, rest.games, rest.missing) == (4, 12, 0)
    assert _bytes(budget) == _bytes(whole)


def test_random_opening_moves_are_not_recorded(tmp_path):
    _run(tmp_path, games=8, openings="random:6-6", chunk=8)
    d = SD.load_dir(tmp_path)
    # six random plies from the start (no pass is possible so early): 54 empties at most, and
    # every game's first recorded position is the one after them
    for g in range(8):
        e = d.empties[d.game == g]
        assert e.max() == 54 and np.all(np.diff(e.astype(int)) < 0)
    # a book position (8 to 10 plies deep) and then 2 random plies
    book = tmp_path / "book"
    _run(book, games=8, openings="book:8-10+random:2-2", chunk=8)
    b = SD.load_dir(book)
    firsts = [int(b.empties[b.game == g].max()) for g in range(8)]
    assert all(60 - 10 - 2 <= e <= 60 - 8 - 2 for e in firsts)
    assert json.loads((book / SD.MANIFEST).read_text())["params"]["book_sha256"]


@pytest.mark.parametrize("rules", [STANDARD, REVERSED])
def test_targets_are_the_solver_values_under_that_play(tmp_path, rules):
    _run(tmp_path, games=6, rules=rules, solve_empties=9, chunk=6)
    d = SD.load_dir(tmp_path)
    late = d.empties <= 9
    exact = solve_many(d.P[late], d.O[late], rules, threads=1)
    assert np.array_equal(exact, d.target[late]) and np.array_equal(d.value[late],
                                                                     d.target[late])
    for g in range(6):
        mine = d.game == g
        # one margin per game (perfect play from the solve point), from each mover's side
        assert len(set(np.abs(d.target[mine]).tolist())) == 1
    # above the solve point the value is the search's, not the outcome
    early = ~late
    assert np.abs(d.value[early]).max() <= 64 and not np.array_equal(d.value[early],
                                                                       d.target[early])


def test_a_rerun_with_other_parameters_is_refused(tmp_path, capsys):
    _run(tmp_path, games=4)
    with pytest.raises(SD.ParameterMismatch, match="depth 2 there, 3 here"):
        _run(tmp_path, games=4, depth=3)
    rc = cli.main(["selfplay", "--games", "4", "--out", str(tmp_path), "--depth", "2",
                   "--solve-empties", "10", "--openings", "random:4-10", "--seed", "4",
                   "--chunk", "4"])
    assert rc == 2 and "seed 3 there, 4 here" in capsys.readouterr().err
    # the same parameters through the command: nothing to play, one summary line
    rc = cli.main(["selfplay", "--games", "4", "--out", str(tmp_path), "--depth", "2",
                   "--solve-empties", "10", "--openings", "random:4-10", "--seed", "3",
                   "--chunk", "4", "--threads", "1"])
    out = capsys.readouterr().out
    assert rc == 0 and out.startswith("selfplay: 4 games") and "positions/s" in out
    rc = cli.main(["selfplay", "--games", "4", "--out", str(tmp_path), "--seconds", "0"])
    assert rc == 2 and "--seconds must be above 0" in capsys.readouterr().err


def _mae(weights: np.ndarray, d: patterns.Dataset) -> float:
    err = []
    for s in range(N_STAGES):
        rows = np.nonzero(patterns.stage_rows(d.empties, s, 0))[0]
        if len(rows):
            p = np.zeros(len(rows))
            fit.predict(fit.features_of(d.P[rows], d.O[rows]),
                        weights[s].astype(np.float64) / WEIGHT_SCALE, p)
            err.append(np.abs(p - d.target[rows]))
    return float(np.mean(np.concatenate(err)))


@pytest.mark.slow  # self-play and a training run
def test_a_tiny_pipeline_lowers_held_out_error(tmp_path):
    """Self-play, a fit through the command, and held-out games of another seed."""
    train, held = tmp_path / "train", tmp_path / "held"
    for out, seed, games in ((train, 1, 300), (held, 2, 40)):
        assert cli.main(["selfplay", "--games", str(games), "--out", str(out), "--depth", "1",
                         "--solve-empties", "8", "--seed", str(seed), "--chunk", "50",
                         "--threads", "2"]) == 0
    out = tmp_path / "w.npz"
    assert cli.main(["patterns", "--no-wthor", "--data", str(train), "--iterations", "10",
                     "--window", "2", "--out", str(out)]) == 0
    w, meta = wts.load(out, STANDARD)
    assert "self-play" in meta["data"][0]
    d = SD.load_dir(held)
    fitted = _mae(w, d)
    zero = float(np.mean(np.abs(d.target.astype(float))))
    constant = float(np.mean(np.abs(d.target - SD.load_dir(train).target.mean())))
    # measured: 17.9 discs against 24.3 for both baselines; 11.5 against 24.1 from 24 empties
    assert fitted < 0.85 * min(zero, constant), (fitted, zero, constant)
    near = d.empties <= 24
    late = patterns.Dataset(d.P[near], d.O[near], d.empties[near], d.target[near],
                            d.game[near])
    assert _mae(w, late) < 0.6 * float(np.mean(np.abs(late.target.astype(float))))
