"""Tree agents with the learned evaluation: leaf values and PUCT priors from it."""

from __future__ import annotations

import numpy as np
import pytest

from engine_server.agents import make_agent
from engine_server.eval.features import evaluate_raw
from engine_server.eval.weights import default_weights
from engine_server.game import Game
from engine_server.search.limits import Limits

POS = Game.from_moves(["f5", "d6", "c3", "d3", "c4", "f4", "f6", "f3", "e6", "e7"]).position


def child_values(pos):
    W = default_weights(int(pos.rules))
    out = {}
    for m in pos.legal_moves():
        P, O = pos.play(m).bitboards()
        out[m] = -evaluate_raw(P, O, W) / 64.0
    return out


def test_puct_priors_come_from_the_evaluation():
    r = make_agent("puct:net=none,eval=1,eval_scale=4").search(POS, Limits(iterations=200))
    priors = {m.move: m.prior for m in r.moves}
    assert sum(priors.values()) == pytest.approx(1.0)
    values = child_values(POS)
    best = max(values, key=values.get)
    worst = min(values, key=values.get)
    assert priors[best] == max(priors.values()) and priors[worst] == min(priors.values())
    # softmax at 4 discs a unit
    assert priors[best] / priors[worst] == pytest.approx(
        np.exp((values[best] - values[worst]) / 4), rel=1e-6)


def test_eval_leaves_make_the_search_deterministic_and_follow_the_evaluation():
    # eval=1: no rollouts, so two seeds give the same tree
    a = make_agent("uct:eval=1,seed=1").search(POS, Limits(iterations=300))
    b = make_agent("uct:eval=1,seed=2").search(POS, Limits(iterations=300))
    assert [(m.move, m.visits) for m in a.moves] == [(m.move, m.visits) for m in b.moves]
    # one iteration expands the root and values each child by the evaluation alone
    r = make_agent("uct:eval=1,eval_scale=8").search(POS, Limits(iterations=1))
    values = child_values(POS)
    for m in r.moves:
        assert m.margin == pytest.approx(values[m.move])
        assert m.value == pytest.approx(np.tanh(values[m.move] / 8))


def test_eval_needs_its_weights_only_when_on():
    r = make_agent("uct").search(POS, Limits(iterations=50))
    assert r.best_move in POS.legal_moves()
    r = make_agent("mcts:eval=0.5,threads=1").search(POS, Limits(iterations=50))
    assert r.best_move in POS.legal_moves()
