"""Search labels: WTHOR positions relabelled by full-width searches of the evaluation."""

from __future__ import annotations

import numpy as np
import pytest

from engine_server.eval import weights as wts
from engine_server.game import STANDARD, Color, Position, wthor
from engine_server.search.alphabeta import AlphaBeta
from training import cli, labels, patterns

from .conftest import DATA


def _sample(n: int = 60):
    games = wthor.read_file(DATA / "wthor-sample.wtb")
    pos, valid, final = wthor.replay(games)
    pick = np.nonzero((pos.empties >= 20) & (pos.empties <= 44))[0][::7][:n]
    return pos, pick


def test_search_labels_are_the_full_width_search_values_whatever_the_threads():
    pos, pick = _sample(24)
    w = wts.default_weights(STANDARD)
    one = labels.search_many(pos.P[pick], pos.O[pick], STANDARD, w, 3, threads=1, chunk=5)
    two = labels.search_many(pos.P[pick], pos.O[pick], STANDARD, w, 3, threads=2, chunk=5)
    assert np.array_equal(one, two)
    ab = AlphaBeta(w, table_bits=16)
    for k, i in enumerate(pick[:8]):
        p = Position(int(pos.P[i]), int(pos.O[i]), Color.BLACK)   # P to move
        ab.clear()
        r = ab.search(p, max_depth=3)
        assert one[k] == r.score, (k, one[k], r.score)


def test_search_labels_refuse_depth_zero():
    pos, pick = _sample(2)
    with pytest.raises(ValueError, match="depth"):
        labels.search_many(pos.P[pick], pos.O[pick], STANDARD, wts.default_weights(STANDARD), 0)


def test_relabelling_keeps_exact_targets_and_resumes_from_its_blocks(tmp_path):
    pos, pick = _sample(60)
    keep = np.arange(len(pos.P))[::3]
    data = patterns.Dataset(pos.P[keep], pos.O[keep], pos.empties[keep].astype(np.int8),
                            np.arange(len(keep)).astype(np.int8) % 50, pos.game[keep])
    w = wts.default_weights(STANDARD)
    cache = tmp_path / "work" / "labels"
    first = patterns.relabel(data, STANDARD, w, 2, 15, 2, cache, log=lambda m: None, block=200)
    low = data.empties < 15
    assert np.array_equal(first.value[low], data.target[low].astype(np.float32))
    high = np.nonzero(~low)[0]
    expect = labels.search_many(data.P[high], data.O[high], STANDARD, w, 2, threads=1)
    assert np.array_equal(first.value[high], expect.astype(np.float32))
    blocks = sorted(tmp_path.glob("work/labels-*.npy"))
    assert len(blocks) == -(-len(high) // 200)
    blocks[-1].unlink()
    again = patterns.relabel(data, STANDARD, w, 2, 15, 1, cache, log=lambda m: None, block=200)
    assert np.array_equal(first.value, again.value)


@pytest.mark.slow  # a training run
def test_the_train_command_fits_search_labels(tmp_path):
    out = tmp_path / "w.npz"
    rc = cli.main(["patterns", "--wthor", str(DATA), "--games", "60", "--solve-empties", "6",
                   "--wthor-search", "2", "--wthor-search-from", "20", "--wthor-label",
                   "mix:0.5", "--iterations", "5",
                   "--work", str(tmp_path / "work"), "--out", str(out)])
    assert rc == 0
    _, meta = wts.load(out, STANDARD)
    assert "from 20 empties up relabelled by depth-2 searches" in meta["data"][0]
    assert list((tmp_path / "work").glob("wthor-60-s6-search-d2-from20-*-0.npy"))
