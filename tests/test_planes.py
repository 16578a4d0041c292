"""The network's input layout: the squares, the side plane and the legal-move plane."""

from __future__ import annotations

import numpy as np

from engine_server.eval.planes import PASS_INDEX, encode, masked_softmax, n_planes
from engine_server.game import Game, Position, parse_move


def test_planes_put_each_square_at_its_row_and_column():
    pos = Game.from_moves(["f5"]).position  # white to move
    P, O = pos.bitboards()
    x = encode(np.array([P]), np.array([O]), np.array([False]), legal=True)
    assert x.shape == (1, n_planes(True), 8, 8) and x.dtype == np.float32
    own = {(r, c) for r, c in np.argwhere(x[0, 0])}
    opp = {(r, c) for r, c in np.argwhere(x[0, 1])}
    assert own == {(3, 3)}  # white's d4
    assert opp == {(3, 4), (4, 3), (4, 4), (4, 5)}  # e4, d5, e5, f5
    assert x[0, 2].sum() == 0.0  # white to move
    legal = {int(c + 8 * r) for r, c in np.argwhere(x[0, 3])}
    assert legal == set(pos.legal_moves())
    assert encode(np.array([P]), np.array([O]), np.array([True]), legal=False).shape[1] == 3


def test_masked_softmax_spreads_over_legal_moves_only_and_passes_when_there_is_none():
    start = Position.start()
    P, O = start.bitboards()
    logits = np.zeros((2, 65), np.float32)
    logits[0, parse_move("d3")] = 2.0
    logits[0, 0] = 50.0  # a1 is not legal: ignored
    none = Position.from_string("X" * 63 + "O", "O")  # white has no move
    P2, O2 = none.bitboards()
    pr = masked_softmax(logits, np.array([P, P2]), np.array([O, O2]))
    assert np.isclose(pr[0].sum(), 1.0) and pr[0, 0] == 0.0
    assert set(np.nonzero(pr[0])[0]) == set(start.legal_moves())
    assert pr[0, parse_move("d3")] > pr[0, parse_move("c4")]
    assert pr[1, PASS_INDEX] == 1.0 and pr[1].sum() == 1.0
