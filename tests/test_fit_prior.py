"""A fit carried forward: a later fit anchored on an earlier one's state (training/prior.py)."""

from __future__ import annotations

import numpy as np
import pytest

from engine_server.eval import weights as wts
from engine_server.eval.features import N_FEATURES, N_WEIGHTS
from engine_server.game import STANDARD, wthor
from training import cli, fit, patterns
from training.prior import FitState, StateError

from .conftest import DATA

HOLDOUT = 4          # every 4th game is held out by train_with_state (holdout=)


@pytest.fixture(scope="module")
def sample():
    games = wthor.read_file(DATA / "wthor-sample.wtb")
    pos, valid, final = wthor.replay(games)
    t = patterns.label_games(pos, final, 2 * games.theoretical - 64, 24, 8, STANDARD,
                             threads=2)
    return patterns.Dataset(pos.P, pos.O, pos.empties.astype(np.int8), t, pos.game)


def _subset(d: patterns.Dataset, keep: np.ndarray) -> patterns.Dataset:
    # game numbers are kept, so every subset holds out the same games
    return patterns.Dataset(d.P[keep], d.O[keep], d.empties[keep], d.target[keep], d.game[keep])


def _fit(data, prior=None):
    return patterns.train_with_state(data, iterations=15, l2=5.0, window=1, holdout=HOLDOUT,
                                     log=lambda m: None, prior=prior)


def _late_mae(report):
    return float(np.mean([r["test_mae"] for r in report if r["stage"] >= 8]))


@pytest.mark.slow  # pattern fits
def test_a_fit_anchored_on_the_first_half_comes_close_to_fitting_both_halves(sample):
    test = sample.game % HOLDOUT == 0
    half = (sample.game // HOLDOUT) % 2 == 0
    a = _subset(sample, test | half)
    b = _subset(sample, test | ~half)
    _, _, state_a = _fit(a)
    w_b, rep_b, _ = _fit(b)
    w_ba, rep_ba, state_ba = _fit(b, prior=state_a)
    w_j, rep_j, _ = _fit(sample)
    # the data behind the prior counts: held-out error falls below the second half's alone
    assert _late_mae(rep_ba) < _late_mae(rep_b)
    # and the anchored weights value the held-out positions much as the joint fit's do
    te = np.nonzero(test & (sample.empties <= 40))[0]
    X = fit.features_of(sample.P[te], sample.O[te])
    stage = (60 - sample.empties[te].astype(np.int64)) // 4

    def values(w):
        out = np.zeros(len(te))
        for s in np.unique(stage):
            at = np.nonzero(stage == s)[0]
            v = np.zeros(len(at))
            fit.predict(X[at], w[s].astype(np.float64), v)
            out[at] = v
        return out

    joint = values(w_j)
    gap_alone = np.mean(np.abs(values(w_b) - joint))
    gap_anchored = np.mean(np.abs(values(w_ba) - joint))
    assert gap_anchored < 0.7 * gap_alone


@pytest.mark.slow  # pattern fits
def test_the_state_adds_each_fits_precision_and_survives_its_file(sample, tmp_path):
    first = _subset(sample, sample.game < 150)
    second = _subset(sample, sample.game >= 150)
    _, _, s1 = _fit(first)
    _, _, s2 = _fit(second, prior=s1)
    _, _, alone = _fit(second)
    assert np.allclose(s2.precision, s1.precision + alone.precision)
    assert [f["positions"] for f in s2.meta["fits"]] == [s1.meta["positions"],
                                                         alone.meta["positions"]]
    assert s2.meta["positions"] == s1.meta["positions"] + alone.meta["positions"]
    path = tmp_path / "s2.npz"
    s2.save(path)
    back = FitState.load(path, STANDARD)
    assert back.stages == 15 and back.meta == s2.meta
    assert np.array_equal(back.mean, s2.mean.astype(np.float32))
    assert np.array_equal(back.precision, s2.precision.astype(np.float32))


def test_weights_no_position_speaks_for_stay_at_the_prior():
    rng = np.random.default_rng(5)
    mean = rng.normal(size=N_WEIGHTS)
    precision = rng.uniform(0, 10, size=N_WEIGHTS)
    X = np.zeros((0, N_FEATURES), np.int32)
    w = fit.fit_stage(X, np.zeros(0), 10, 5.0, prior=(mean, precision))
    assert np.array_equal(w, mean)


def test_a_corrupt_or_mismatched_state_is_refused_by_name(tmp_path, capsys):
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"PK\x03\x04 not a zip")
    with pytest.raises(StateError, match="bad.npz"):
        FitState.load(bad)
    with pytest.raises(StateError, match="not found"):
        FitState.load(tmp_path / "none.npz")
    z = np.zeros((15, N_WEIGHTS))
    FitState(z, z, STANDARD).save(tmp_path / "std.npz")
    with pytest.raises(StateError, match="rules"):
        FitState.load(tmp_path / "std.npz", rules=STANDARD + 1)
    FitState(z, -np.ones_like(z), STANDARD).save(tmp_path / "neg.npz")
    with pytest.raises(StateError, match="negative"):
        FitState.load(tmp_path / "neg.npz")
    # the command refuses it before reading any data
    rc = cli.main(["patterns", "--wthor", str(tmp_path / "no-such-dir"), "--prior", str(bad),
                   "--out", str(tmp_path / "w.npz")])
    assert rc == 2
    assert "bad.npz" in capsys.readouterr().err
    assert not (tmp_path / "w.npz").exists()


@pytest.mark.slow  # several training runs
def test_the_train_command_carries_a_fit_forward(tmp_path, capsys):
    work = tmp_path / "work"
    common = ["patterns", "--wthor", str(DATA), "--solve-empties", "6", "--iterations", "5",
              "--work", str(work)]
    assert cli.main(common + ["--games", "60", "--out", str(tmp_path / "w1.npz"),
                              "--save-state", str(tmp_path / "s1.npz")]) == 0
    assert cli.main(common + ["--games", "120", "--prior", str(tmp_path / "s1.npz"),
                              "--out", str(tmp_path / "w2.npz"),
                              "--save-state", str(tmp_path / "s2.npz")]) == 0
    s1 = FitState.load(tmp_path / "s1.npz", STANDARD)
    s2 = FitState.load(tmp_path / "s2.npz", STANDARD)
    assert len(s2.meta["fits"]) == 2 and s2.meta["fits"][1]["data"][0].startswith("WTHOR")
    assert np.all(s2.precision >= s1.precision) and s2.meta["positions"] > s1.meta["positions"]
    w2, meta = wts.load(tmp_path / "w2.npz", STANDARD)
    assert meta["prior"] == {"file": str(tmp_path / "s1.npz"),
                             "positions": s1.meta["positions"], "weight": 2.0}
    assert np.all(np.abs(w2 - s2.mean * 64) <= 0.501)      # the state is the weights, unrounded
    # a state of other stages is refused by the command, naming the file
    assert cli.main(common + ["--games", "60", "--stages", "30", "--prior",
                              str(tmp_path / "s1.npz"), "--out", str(tmp_path / "w3.npz")]) == 2
    assert "s1.npz" in capsys.readouterr().err
    assert cli.main(common + ["--games", "60", "--prior", str(tmp_path / "s1.npz"),
                              "--prior-weight", "0", "--out", str(tmp_path / "w3.npz")]) == 2
    assert "--prior-weight" in capsys.readouterr().err
    assert not (tmp_path / "w3.npz").exists()
