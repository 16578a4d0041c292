"""The AlphaZero network, training side (papers/alphazero): data, symmetries, training, export,
resume, self-play and the gate rule, on tiny networks (about 30 s in all)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

from engine_server.eval import planes
from engine_server.game.bitboard import make_move
from papers.alphazero import data, export, selfplay
from papers.alphazero.model import NetConfig, build
from papers.alphazero.train import TrainConfig, Trainer, evaluate

from .conftest import DATA
from .netutil import metadata as engine_metadata

TINY = NetConfig(blocks=1, filters=8, legal=True, value_hidden=16)


@pytest.fixture(scope="module")
def sample():
    s, stats = data.wthor_samples(DATA / "wthor-sample.wtb")
    return s, stats


def _cfg(**kw):
    base: dict[str, Any] = dict(steps=12, batch=32, lr=0.05, lr_end=0.05, warmup=1, bf16=False,
                eval_every=1000, checkpoint_every=5, eval_positions=500, seed=3)
    base.update(kw)
    return TrainConfig(**base)


def test_wthor_samples_have_passes_results_and_a_game_wise_split(sample):
    s, stats = sample
    assert stats["complete_legal_games"] == 299 and len(s) == stats["positions"]
    passes = np.nonzero(s.move == planes.PASS_INDEX)[0]
    assert len(passes) == stats["pass_positions"] > 0
    # the target move is legal in every position (a pass only where there is no move)
    mask = data.legal_mask(s.P, s.O)
    assert mask[np.arange(len(s)), s.move.astype(np.int64)].all()
    # one result per game, seen from each mover: opposite signs for the two colours
    g = s.game == s.game[0]
    v_black = np.where(s.black[g], s.value[g], -s.value[g])
    assert len(set(v_black.tolist())) == 1
    tr, te = data.split(s)
    assert set(s.game[te] % data.HOLDOUT) == {0} and not set(s.game[tr] % data.HOLDOUT) & {0}


def test_symmetries_move_planes_and_policy_targets_together(sample):
    s, _ = sample
    rows = np.arange(0, len(s), 37)
    base = data.make_batch(s, rows, True, k=np.zeros(len(rows), np.int64))
    maps = set()
    for k in range(data.N_SYM):
        kk = np.full(len(rows), k)
        b = data.make_batch(s, rows, True, k=kk)
        sq = data.SQUARE_MAP[k, :64]
        maps.add(tuple(sq))
        # every plane is the same picture with its squares moved by the map
        flat0 = base.x.reshape(len(rows), -1, 64)
        flatk = b.x.reshape(len(rows), -1, 64)
        assert np.array_equal(flatk[:, :, sq], flat0)
        # the target moves with its square: legal on the image, and on the legal plane
        assert np.array_equal(b.move, data.SQUARE_MAP[k, s.move[rows].astype(np.int64)])
        assert b.legal[np.arange(len(rows)), b.move].all()
        on = b.move < 64
        assert (flatk[np.nonzero(on)[0], 3, b.move[on]] == 1.0).all()
        # playing the mapped move on the image gives the image of the position after the move
        for i in np.nonzero(on)[0][:30]:
            r = rows[i]
            P1, O1 = make_move(s.P[r], s.O[r], int(s.move[r]))
            Pk, Ok = data.transform(np.array([s.P[r]]), np.array([s.O[r]]), np.array([k]))
            P2, O2 = make_move(Pk[0], Ok[0], int(b.move[i]))
            T1, T2 = data.transform(np.array([P1]), np.array([O1]), np.array([k]))
            assert (int(T1[0]), int(T2[0])) == (int(np.uint64(P2)), int(np.uint64(O2)))
        # soft targets (MCTS visits) follow the same map; a pass stays a pass
        pi = np.random.default_rng(k).random((3, planes.N_MOVES)).astype(np.float32)
        out = data.transform_policy(pi, np.full(3, k))
        assert np.array_equal(out[:, sq], pi[:, :64])
        assert np.array_equal(out[:, 64], pi[:, 64])
    # the eight maps are the eight symmetries of the square, each a permutation
    rc = [(r, c) for r in range(8) for c in range(8)]
    dihedral = set()
    for t in range(8):
        def f(r, c, t=t):
            if t & 4:
                r, c = c, r
            if t & 2:
                c = 7 - c
            if t & 1:
                r = 7 - r
            return r, c
        dihedral.add(tuple(8 * f(r, c)[0] + f(r, c)[1] for r, c in rc))
    assert maps == dihedral and all(len(set(m)) == 64 for m in maps)


@pytest.mark.slow  # trains a network
def test_a_tiny_network_learns_expert_moves_and_results(sample, tmp_path):
    s, _ = sample
    tr_idx, te_idx = data.split(s)
    t = Trainer(TINY, _cfg(steps=60, batch=64, lr=0.05, lr_end=0.01, warmup=5,
                           checkpoint_every=1000), tmp_path)
    before = evaluate(t.net, s, te_idx, True)
    t.fit(s, tr_idx, None)
    after = evaluate(t.net, s, te_idx, True)
    assert t.step == 60
    assert after["policy_loss"] < before["policy_loss"] - 0.3
    assert after["top1"] > before["top1"]
    assert after["value_mse"] < before["value_mse"]


def test_export_matches_torch_and_carries_the_engine_metadata(tmp_path):
    net = build(NetConfig(blocks=2, filters=8, legal=True), seed=5)
    with torch.no_grad():
        for m in net.modules():  # non-trivial batch-norm statistics, as after training
            if isinstance(m, torch.nn.BatchNorm2d):
                assert m.running_mean is not None and m.running_var is not None
                m.running_mean.uniform_(-0.3, 0.3)
                m.running_var.uniform_(0.5, 1.5)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)
    path = export.export(net, tmp_path / "n.onnx", "reversed", {"figures": {"top1": 0.5}})
    assert export.max_difference(net, path) <= 1e-4
    meta = export.read_metadata(path)
    assert engine_metadata(True, "reversed", 2, 8).items() <= meta.items()
    assert '"top1": 0.5' in meta["othello.meta"]
    # dynamic batch axis, the engine's loader accepts it
    sess = export.session(path)
    for n in (1, 7):
        p, v = sess.run(None, {"planes": export.sample_planes(n, True)})
        assert p.shape == (n, 65) and v.shape == (n, 1) and np.all(np.abs(v) <= 1)
    from engine_server.eval.net import load_net

    model = load_net(path)
    assert model.legal and model.n_planes == 4


def test_gate_needs_55_percent_with_draws_as_half():
    assert selfplay.gate_decision(11, 0, 9) == (0.55, True)
    assert selfplay.gate_decision(10, 2, 8) == (0.55, True)       # 11 of 20
    assert selfplay.gate_decision(10, 1, 9)[1] is False            # 10.5 of 20
    assert selfplay.gate_decision(0, 20, 0) == (0.5, False)
    assert selfplay.gate_decision(220, 0, 180) == (0.55, True)     # the seed's 400 games
    assert selfplay.gate_decision(219, 1, 180)[1] is False
    assert selfplay.gate_decision(0, 0, 0) == (0.0, False)


class _Killed(Exception):
    pass


@pytest.mark.slow  # training runs, one killed and resumed
def test_a_killed_run_resumes_from_its_checkpoint_to_the_same_state(sample, tmp_path):
    s, _ = sample
    tr_idx, _ = data.split(s)
    straight = Trainer(TINY, _cfg(), tmp_path / "straight")
    straight.fit(s, tr_idx, None)

    first = Trainer(TINY, _cfg(eval_every=1), tmp_path / "killed")

    def kill(row):
        if row["step"] == 7:  # two steps after the checkpoint at 5
            raise _Killed

    with pytest.raises(_Killed):
        first.fit(s, tr_idx, None, on_eval=kill)
    again = Trainer(TINY, _cfg(eval_every=1), tmp_path / "killed")
    assert again.load() and again.step == 5
    again.fit(s, tr_idx, None)
    assert again.step == straight.step == 12
    a, b = again.net.state_dict(), straight.net.state_dict()
    assert a.keys() == b.keys()
    for k in a:
        assert torch.equal(a[k], b[k]), k
    oa, ob = again.opt.state_dict()["state"], straight.opt.state_dict()["state"]
    assert all(torch.equal(oa[i]["momentum_buffer"], ob[i]["momentum_buffer"]) for i in oa)


def test_selfplay_and_gate_games_with_the_engine_agent(tmp_path):
    net = build(TINY, seed=2)
    path = export.export(net, tmp_path / "n.onnx")
    cfg = selfplay.SelfPlayConfig(iterations=6, temp_moves=4)
    g = selfplay.play_selfplay_game(path, cfg, seed=11)
    again = selfplay.play_selfplay_game(path, cfg, seed=11)
    assert np.array_equal(g["move"], again["move"])  # a game depends on its seed only
    assert np.allclose(g["pi"].sum(1), 1.0)
    legal = data.legal_mask(g["P"], g["O"])
    assert np.all(g["pi"][~legal] == 0)
    assert np.all(g["pi"][np.arange(len(g["move"])), g["move"].astype(np.int64)] > 0)
    z = np.sign(g["black_score"])
    assert np.array_equal(g["value"], np.where(g["black"], z, -z))
    s = selfplay.game_samples([g], [0])
    b = data.make_batch(s, np.arange(len(s)), True, np.random.default_rng(0))
    assert b.pi is not None and np.allclose(b.pi.sum(1), 1.0)
    r = selfplay.play_gate_game(path, path, (37, 43), True, 4, "standard", 1)
    assert r["score"] in (0.0, 0.5, 1.0) and r["opening"] == [37, 43]


@pytest.mark.slow  # a training generation
def test_the_loop_runs_a_generation_and_resumes_under_reversed_rules(tmp_path):
    from engine_server.agents import make_agent
    from engine_server.agents.papers.puct import PuctAgent
    from papers.alphazero.loop import Loop

    net_cfg = TINY
    sp = selfplay.SelfPlayConfig(iterations=4, temp_moves=4, rules="reversed")

    def make():
        return Loop(tmp_path, net_cfg, _cfg(steps=60, eval_every=3, checkpoint_every=3), sp,
                    games_per_gen=2, gate_games=2, gate_iterations=4, threshold=0.55,
                    buffer_gens=2, workers=1, steps_per_gen=6)

    loop = make()
    loop.run(1)
    row = loop.state["generations"][0]
    assert row["selfplay_games"] == 2 and row["step"] == 6
    gate = row["gate"]
    assert gate["wins"] + gate["draws"] + gate["losses"] == 2
    assert (loop.state["best_gen"] == 1) == gate["accepted"]
    assert (tmp_path / "best.onnx").is_file()
    again = make()  # a new run in the same directory finds the generation done
    assert again.trainer.step == 6 and len(again.state["generations"]) == 1
    # the networks are marked for reversed rules, and the engine's agent plays them there
    net = tmp_path / "nets" / "gen1.onnx"
    assert export.read_metadata(net)["othello.rules"] == "reversed"
    agent = make_agent(selfplay.agent_spec(net, 1))
    assert isinstance(agent, PuctAgent)
    models = agent.nets.models
    assert models[1] is not None and models[0] is None
