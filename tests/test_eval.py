"""The pattern evaluation: symmetry, features against the kernel, the shipped weights files."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from engine_server.agents import AgentSpecError, make_agent
from engine_server.eval import features as F
from engine_server.eval import weights as wts
from engine_server.game import REVERSED, STANDARD, Game
from engine_server.game.bitboard import flips, legal_moves

from .second_process import run_probe


def random_positions(n: int, seed: int) -> list[tuple[np.uint64, np.uint64]]:
    """Positions from random games, every stage."""
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < n:
        g = Game()
        while not g.position.is_game_over():
            out.append(g.position.bitboards())
            legal = g.position.legal_moves()
            g.play(legal[rng.integers(len(legal))])
    return out[:n]


@pytest.mark.parametrize("rules", [STANDARD, REVERSED])
def test_eight_symmetries_give_equal_evaluations(rules):
    W = wts.default_weights(rules)
    for P, O in random_positions(300, seed=rules + 1):
        e = F.evaluate_raw(P, O, W)
        for k in range(1, 8):
            sP, sO = np.uint64(F.symmetry(P, k)), np.uint64(F.symmetry(O, k))
            assert F.evaluate_raw(sP, sO, W) == e


@pytest.mark.parametrize("rules", [STANDARD, REVERSED])
def test_merged_tables_give_exactly_the_evaluation(rules):
    """The search reads each self-symmetric pattern once per distinct image from merged tables:
    the value must be evaluate_raw's, to the unit, also on random weights."""
    pos = random_positions(3000, seed=11 + rules)
    Ps = np.array([p for p, _ in pos], np.uint64)
    Os = np.array([o for _, o in pos], np.uint64)
    rng = np.random.default_rng(rules)
    for W in (wts.default_weights(rules),
              rng.integers(-2000, 2000, size=(F.N_STAGES, F.N_WEIGHTS)).astype(np.int32)):
        E = F.eval_tables(W)
        assert E.dtype == np.int16
        want = np.zeros(len(Ps), np.int64)
        got = np.zeros(len(Ps), np.int64)
        F.evaluate_batch(Ps, Os, W, want)
        F.evaluate_fast_batch(Ps, Os, E, got)
        assert np.array_equal(want, got)
    assert sum(len(r) for r in F.READ_IMAGES) == 46  # reads instead of 8 * 11



def _children(P, O):
    moves = int(legal_moves(P, O))
    for sq in range(64):
        if moves >> sq & 1:
            m = np.uint64(1 << sq)
            f = np.uint64(flips(P, O, m))
            yield sq, f, np.uint64(O ^ f), np.uint64(P ^ f ^ m)


@pytest.mark.parametrize("rules", [STANDARD, REVERSED])
def test_children_evaluated_from_their_parents_indices_equal_full_reads(rules):
    """The search evaluates a node's children from one child read in full: turned into the
    node's reply view, each further child is a few additions.  Every child's indices and value
    must be what a full read gives, on random weights too (each slot its own entry)."""
    pos = random_positions(1500, seed=31 + rules)
    rng = np.random.default_rng(7 + rules)
    for W in (wts.default_weights(rules),
              rng.integers(-300, 300, size=(F.N_STAGES, F.N_WEIGHTS)).astype(np.int32)):
        E = F.eval_tables(W)
        buf = np.zeros(2 * F.N_READS, np.int64)
        ref = np.zeros(F.N_READS, np.int64)
        checked = 0
        for P, O in pos:
            kids = list(_children(P, O))
            for k, (sq, f, nP, nO) in enumerate(kids):
                if k == 0:
                    F.read_indices(nP, nO, buf, 0)
                    got = buf[:F.N_READS].copy()
                    F.to_reply_view(buf, 0, sq, f)
                else:
                    F.child_indices(buf, 0, F.N_READS, sq, f)
                    got = buf[F.N_READS:].copy()
                F.read_indices(nP, nO, ref, 0)
                assert np.array_equal(got, ref), (hex(P), hex(O), sq)
                own = np.uint64(legal_moves(nP, nO))
                w = E[F.stage_of(64 - bin(int(nP | nO)).count("1"), E.shape[0])]
                v = F.evaluate_indices(got, 0, w, own, np.uint64(legal_moves(nO, nP)))
                assert v == F.evaluate_moves(nP, nO, E, own)
                checked += 1
        assert checked > 10000
    # the reply view of a node is its own read with the sides swapped
    P, O = pos[40]
    (sq, f, nP, nO), = list(_children(P, O))[:1]
    F.read_indices(nP, nO, buf, 0)
    F.to_reply_view(buf, 0, sq, f)
    F.read_indices(O, P, ref, 0)
    assert np.array_equal(buf[:F.N_READS], ref)


@pytest.mark.parametrize("stages", [30, 60])
@pytest.mark.slow  # a fit of finer stages
def test_finer_stages_read_the_weights_of_their_own_plies(stages, tmp_path):
    pos = random_positions(3000, seed=21)
    Ps = np.array([p for p, _ in pos], np.uint64)
    Os = np.array([o for _, o in pos], np.uint64)
    coarse = wts.default_weights(STANDARD)
    fine = np.repeat(coarse, stages // F.N_STAGES, axis=0)  # each 4-ply stage, split
    want = np.zeros(len(Ps), np.int64)
    got = np.zeros(len(Ps), np.int64)
    F.evaluate_batch(Ps, Os, coarse, want)
    F.evaluate_fast_batch(Ps, Os, F.eval_tables(fine), got)
    assert np.array_equal(want, got)
    # distinct random stages: each position reads the stage of its own ply, also in the
    # search's merged tables, and the file keeps them
    W = np.random.default_rng(stages).integers(-900, 900, size=(stages, F.N_WEIGHTS))
    path = tmp_path / "fine.npz"
    wts.save(path, W.astype(np.int16), STANDARD, {"stages": stages})
    W = wts.load(path, STANDARD)[0]
    F.evaluate_fast_batch(Ps, Os, F.eval_tables(W), got)
    out = np.zeros(F.N_FEATURES, np.int64)
    for i, (P, O) in enumerate(pos[:400]):
        F.feature_indices(P, O, out)
        ply = bin(int(P | O)).count("1") - 4
        stage = min(ply // (60 // stages), stages - 1)
        assert int(W[stage][out].sum()) == F.evaluate_raw(P, O, W) == got[i]


def test_weights_of_other_stage_counts_are_refused(tmp_path):
    with pytest.raises(wts.WeightsError, match="stages one of"):
        wts.save(tmp_path / "w.npz", np.zeros((16, F.N_WEIGHTS), np.int16), STANDARD, {})
    bad = tmp_path / "bad.npz"
    np.savez(bad, weights=np.zeros((20, F.N_WEIGHTS), np.int16), layout=F.SIZES,
             rules=np.int64(0), meta=np.array("{}"))
    with pytest.raises(wts.WeightsError, match=r"bad.npz have shape \(20, "):
        wts.load(bad)


def test_symmetries_are_the_eight_of_the_square():
    x = np.uint64(1 << 1)  # b1
    images = {int(F.symmetry(x, k)) for k in range(8)}
    names = sorted(bb_square(i) for i in images)
    assert names == sorted(["b1", "g1", "b8", "g8", "a2", "h2", "a7", "h7"])


def bb_square(bit: int) -> str:
    sq = bit.bit_length() - 1
    return "abcdefgh"[sq % 8] + str(sq // 8 + 1)


def test_feature_indices_sum_to_the_evaluation():
    rng = np.random.default_rng(3)
    W = rng.integers(-500, 500, size=(F.N_STAGES, F.N_WEIGHTS)).astype(np.int32)
    out = np.zeros(F.N_FEATURES, np.int64)
    for P, O in random_positions(200, seed=5):
        F.feature_indices(P, O, out)
        assert out.min() >= 0 and out.max() < F.N_WEIGHTS
        stage = F.stage_of(64 - bin(int(P | O)).count("1"))
        assert int(W[stage][out].sum()) == F.evaluate_raw(P, O, W)


def test_edge_pattern_index_reads_the_squares_in_order():
    # own disc on a1 only: digit 1 at the first square of the edge pattern's top-edge image
    P = np.uint64(1)
    O = np.uint64(1 << 63)
    out = np.zeros(F.N_FEATURES, np.int64)
    F.feature_indices(P, O, out)
    assert out[0] == 1                       # identity image: a1 own -> digit 1, the rest empty
    assert F.OFFSETS[F.CORNER33] + 1 in out  # the 3x3 corner sees it too


def test_shipped_weights_are_small_and_described():
    for rules in (STANDARD, REVERSED):
        p = wts.weights_path(rules)
        assert p.stat().st_size <= 8 * 2 ** 20
        w, meta = wts.load(p, rules)
        assert w.shape == (F.N_STAGES, F.N_WEIGHTS)
        assert meta["command"].startswith("othello-train patterns")
        assert any(row.get("test_mae") for row in meta["report"])
        assert np.count_nonzero(w) > 10_000


def test_standard_weights_know_corners_are_good():
    W = wts.default_weights(STANDARD)
    # the side to move owns a1 in an otherwise equal position: the evaluation likes it
    g = Game.from_moves(["f5", "d6", "c3", "d3", "c4", "f4", "f6", "f3", "e6", "e7"])
    P, O = g.position.bitboards()
    corner = np.uint64(1)
    assert F.evaluate_raw(P | corner, O, W) > F.evaluate_raw(P, O | corner, W)


def test_missing_or_corrupt_weights_give_a_clear_error(tmp_path):
    with pytest.raises(wts.WeightsError, match="not found"):
        wts.load(tmp_path / "none.npz")
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip file")
    with pytest.raises(wts.WeightsError, match="unreadable"):
        wts.load(bad)
    other = tmp_path / "other.npz"
    np.savez(other, weights=np.zeros((2, 3), np.int16), layout=np.array([1, 2]),
             rules=np.int64(0), meta=np.array("{}"))
    with pytest.raises(wts.WeightsError, match="other patterns"):
        wts.load(other)
    with pytest.raises(AgentSpecError, match="weights"):
        make_agent(f"ab:weights={bad}")


def test_weights_load_in_a_second_process_from_the_package():
    probe = textwrap.dedent(
        """
        import json, time
        t = time.perf_counter()
        from engine_server.eval.weights import default_weights, weights_path
        w = default_weights(0)
        r = default_weights(1)
        print(json.dumps({"shape": list(w.shape), "rev": list(r.shape),
                          "path": str(weights_path(0)), "seconds": time.perf_counter() - t}))
        """)
    out = run_probe(probe)
    assert out["shape"] == [F.N_STAGES, F.N_WEIGHTS] == out["rev"]
    assert out["path"].endswith("engine_server/eval/data/standard.npz")
