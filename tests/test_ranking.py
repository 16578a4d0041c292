"""The fit to the experts' choices: sibling pairs from WTHOR games, their rows, the squared-hinge
fit, and the command that writes weights."""

from __future__ import annotations

import numpy as np
import pytest

from engine_server.eval import weights as wts
from engine_server.eval.features import N_WEIGHTS, WEIGHT_SCALE
from engine_server.game import STANDARD, wthor
from engine_server.game.bitboard import legal_moves, make_move
from training import cli, fit, ranking
from training.patterns import stage_rows
from training.prior import FitState

from .conftest import DATA


@pytest.fixture(scope="module")
def games():
    return wthor.read_file(DATA / "wthor-sample.wtb")


@pytest.fixture(scope="module")
def pairs(games):
    return ranking.expert_pairs(games, 20, 56, 3, seed=5)


def test_each_pair_is_the_played_move_and_a_legal_sibling(games, pairs):
    pos, _, _ = wthor.replay(games)
    assert len(pairs) > 1000
    for k in np.random.default_rng(0).choice(len(pairs), 300, replace=False):
        i = int(pairs.parent[k])
        P, O = pos.P[i], pos.O[i]
        played = make_move(P, O, int(pos.move[i]))
        assert (pairs.eP[k], pairs.eO[k]) == played
        siblings = [make_move(P, O, sq) for sq in range(64) if legal_moves(P, O) >> sq & 1]
        assert (pairs.aP[k], pairs.aO[k]) in siblings
        assert (pairs.aP[k], pairs.aO[k]) != played
        assert pairs.empties[k] == 64 - int(pairs.aP[k] | pairs.aO[k]).bit_count()
        assert 19 <= pairs.empties[k] <= 55
        assert pos.game[i] % 20 != 0   # the held-out games give none
    # every sibling of a drawn position is there once, but those leaving the opponent no move
    i = int(pairs.parent[0])
    P, O = pos.P[i], pos.O[i]
    alts = {make_move(P, O, sq) for sq in range(64)
            if legal_moves(P, O) >> sq & 1 and sq != pos.move[i]}
    alts = {c for c in alts if legal_moves(*c)}
    got = {(pairs.aP[k], pairs.aO[k]) for k in np.nonzero(pairs.parent == i)[0]}
    assert got == alts


def test_a_pair_row_values_the_alternative_less_the_played_child(pairs):
    sel = np.arange(0, len(pairs), 7)
    idx, coef = ranking.pair_rows(pairs.aP[sel], pairs.aO[sel], pairs.eP[sel], pairs.eO[sel])
    # most patterns of two siblings are the same: the rows are far narrower than two positions
    assert idx.shape[1] < 150
    w = np.random.default_rng(1).normal(size=N_WEIGHTS)
    got = np.zeros(len(sel))
    ranking._row_values(idx, coef, w, got)
    a = np.zeros(len(sel))
    e = np.zeros(len(sel))
    fit.predict(fit.features_of(pairs.aP[sel], pairs.aO[sel]), w, a)
    fit.predict(fit.features_of(pairs.eP[sel], pairs.eO[sel]), w, e)
    assert np.allclose(got, a - e)


def test_the_fit_closes_the_shortfall_and_a_strong_prior_holds_it(pairs):
    sel = np.nonzero(stage_rows(pairs.empties, 6, 0))[0]
    idx, coef = ranking.pair_rows(pairs.aP[sel], pairs.aO[sel], pairs.eP[sel], pairs.eO[sel])
    mean = np.zeros(N_WEIGHTS)

    def shortfall(w):
        v = np.zeros(len(sel))
        ranking._row_values(idx, coef, w, v)
        return float(np.mean(np.maximum(0.0, 2.0 - v)))

    loose = ranking.fit_pairs(idx, coef, mean, np.full(N_WEIGHTS, 1.0), 2.0, 1.0,
                              log=lambda m: None)
    tight = ranking.fit_pairs(idx, coef, mean, np.full(N_WEIGHTS, 1e9), 2.0, 1.0,
                              log=lambda m: None)
    assert shortfall(mean) == pytest.approx(2.0)
    assert shortfall(loose) < 0.5 * shortfall(mean)
    assert np.abs(tight).max() < 1e-3


@pytest.mark.slow  # a fit of every stage the pairs reach
def test_the_command_refits_the_stages_with_pairs_and_keeps_the_rest(tmp_path, capsys):
    rng = np.random.default_rng(2)
    mean = rng.normal(0, 0.3, size=(15, N_WEIGHTS))
    state = tmp_path / "state.npz"
    FitState(mean, np.full((15, N_WEIGHTS), 50.0), STANDARD, {}).save(state)
    out = tmp_path / "w.npz"
    assert cli.main(["ranking", "--wthor", str(DATA), "--prior", str(state), "--every", "2",
                     "--min-empties", "40", "--max-empties", "47", "--out", str(out)]) == 0
    w, meta = wts.load(out, STANDARD)
    base = np.rint(FitState.load(state).mean * WEIGHT_SCALE)
    changed = [s for s in range(15) if np.any(w[s] != base[s])]
    # children of 39-46 empties: plies 14-21, stages 3-5, and their neighbours through the window
    assert changed and set(changed) <= {2, 3, 4, 5, 6}
    assert {3, 4, 5} <= set(changed)
    assert meta["pairs"] > 0 and "ranking" in meta["command"]
    # scored on the held-out games' pairs, each refitted stage ranks more of them the experts' way
    scored = [r for r in meta["report"] if "test_ordered" in r]
    assert scored and all(r["test_ordered"] > r["test_ordered_before"] for r in scored)
    # the played moves now value better against their siblings than under the prior
    pairs = ranking.expert_pairs(wthor.read_file(DATA / "wthor-sample.wtb"), 40, 47, 2, 1)
    s = 4
    sel = np.nonzero(stage_rows(pairs.empties, s, 0))[0]
    idx, coef = ranking.pair_rows(pairs.aP[sel], pairs.aO[sel], pairs.eP[sel], pairs.eO[sel])
    before, after = np.zeros(len(sel)), np.zeros(len(sel))
    ranking._row_values(idx, coef, base[s] / WEIGHT_SCALE, before)
    ranking._row_values(idx, coef, w[s].astype(np.float64) / WEIGHT_SCALE, after)
    assert np.mean(after > 0) > np.mean(before > 0) + 0.1


def test_the_command_refuses_a_missing_prior_by_name(tmp_path, capsys):
    rc = cli.main(["ranking", "--wthor", str(DATA), "--prior", str(tmp_path / "none.npz"),
                   "--out", str(tmp_path / "w.npz")])
    assert rc == 2
    assert "none.npz" in capsys.readouterr().err

