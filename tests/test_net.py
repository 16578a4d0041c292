"""Policy/value networks through ONNX Runtime, the evaluators, and batched PUCT with them."""

from __future__ import annotations

import logging
import threading
import time

import numpy as np
import pytest
import structlog

torch = pytest.importorskip("torch")
pytest.importorskip("onnx")

from engine_server.agents import AgentSpecError, make_agent  # noqa: E402
from engine_server.agents.policy import cost_of, spec_cost  # noqa: E402
from engine_server.eval import planes  # noqa: E402
from engine_server.eval.evaluator import NetEvaluator, PatternEvaluator  # noqa: E402
from engine_server.eval.net import NetError, default_net_path, load_net  # noqa: E402
from engine_server.eval.weights import default_weights  # noqa: E402
from engine_server.game import PASS, Game, Position, parse_move  # noqa: E402
from engine_server.game.bitboard import REVERSED, STANDARD, legal_moves  # noqa: E402
from engine_server.search import mcts as T  # noqa: E402
from engine_server.search.limits import Limits  # noqa: E402
from engine_server.search.mcts import batched as B  # noqa: E402

from .loadsafe import SLACK  # noqa: E402
from .netutil import TinyNet, biased_net, export_onnx, metadata, random_net  # noqa: E402

MIDGAME = Game.from_moves(["f5", "d6", "c3", "d3", "c4", "f4", "c5", "b3", "c2"]).position
# White to move has no move, Black has: the root's only child is a pass.
MUST_PASS = Position.from_string("XO------" + "-" * 48 + "------OX", "O")


def random_positions(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Positions of seeded random games: (P, O, black to move)."""
    rng = np.random.default_rng(seed)
    Ps, Os, black = [], [], []
    while len(Ps) < n:
        g = Game()
        while not g.position.is_game_over() and len(Ps) < n:
            pos = g.position
            P, O = pos.bitboards()
            Ps.append(P)
            Os.append(O)
            black.append(pos.side.name == "BLACK")
            legal = pos.legal_moves() or [PASS]
            g.play(legal[rng.integers(len(legal))])
    return np.array(Ps, np.uint64), np.array(Os, np.uint64), np.array(black, np.bool_)


@pytest.fixture(scope="module")
def nets(tmp_path_factory):
    d = tmp_path_factory.mktemp("nets")
    out = {"dir": d}
    out["tiny_module"] = random_net(d / "tiny.onnx", blocks=1, filters=8, legal=True, seed=1)
    out["tiny"] = d / "tiny.onnx"
    random_net(d / "tiny3.onnx", blocks=1, filters=8, legal=False, seed=2)
    out["tiny3"] = d / "tiny3.onnx"
    random_net(d / "small.onnx", blocks=2, filters=16, legal=True, seed=3)
    out["small"] = d / "small.onnx"
    random_net(d / "rev.onnx", blocks=1, filters=8, legal=True, rules="reversed", seed=4)
    out["rev"] = d / "rev.onnx"
    return out


def prefer_net(path, move: str, logit: float = 3.0):
    return biased_net(path, {parse_move(move): logit}, value=0.0)


# --- loading ---------------------------------------------------------------------------------
def test_a_random_tiny_net_loads_and_runs_with_its_metadata(nets):
    m = load_net(nets["tiny"])
    assert (m.n_planes, m.legal, m.rules, m.blocks, m.filters) == (4, True, STANDARD, 1, 8)
    x = planes.encode(*random_positions(5, 0), legal=True)
    logits, values = m.run(x)
    assert logits.shape == (5, 65) and logits.dtype == np.float32
    assert values.shape == (5,) and values.dtype == np.float32
    assert np.all(np.abs(values) <= 1.0)
    assert load_net(nets["tiny"]) is m  # one session per file and thread count
    assert load_net(nets["tiny"], threads=2) is not m


def test_onnx_output_equals_the_pytorch_output(nets):
    Ps, Os, black = random_positions(64, 5)
    x = planes.encode(Ps, Os, black, legal=True)
    logits, values = load_net(nets["tiny"]).run(x)
    with torch.no_grad():
        p, v = nets["tiny_module"](torch.from_numpy(x))
    np.testing.assert_allclose(logits, p.numpy(), atol=1e-4)
    np.testing.assert_allclose(values, v.numpy()[:, 0], atol=1e-4)


def test_a_missing_file_raises_net_error_naming_it(tmp_path):
    missing = tmp_path / "nowhere.onnx"
    with pytest.raises(NetError, match="nowhere.onnx.*not found"):
        load_net(missing)


def test_a_corrupt_file_raises_net_error_naming_it(tmp_path):
    bad = tmp_path / "corrupt.onnx"
    bad.write_bytes(b"\x08\x07not a protobuf at all" * 10)
    with pytest.raises(NetError, match="corrupt.onnx.*not a readable ONNX model"):
        load_net(bad)


@pytest.mark.parametrize("case, message", [
    ("no_metadata", "lacks the metadata othello.format"),
    ("format", "othello.format '2'"),
    ("names", "inputs \\['x'\\]"),
    ("outputs", "outputs \\['pi', 'v'\\]"),
    ("planes", "does not fit othello.legal"),
    ("rules", "othello.rules must be standard or reversed"),
])
def test_a_foreign_file_raises_net_error_naming_the_file_and_problem(tmp_path, case, message):
    net = TinyNet(1, 4, legal=False)
    path = tmp_path / f"foreign-{case}.onnx"
    meta = metadata(False, blocks=1, filters=4)
    kwargs = {}
    if case == "no_metadata":
        meta = {}
    elif case == "format":
        meta["othello.format"] = "2"
    elif case == "names":
        kwargs["input_name"] = "x"
    elif case == "outputs":
        kwargs["output_names"] = ("pi", "v")
    elif case == "planes":
        meta["othello.planes"] = "4"
    elif case == "rules":
        meta["othello.rules"] = "go"
    export_onnx(net, path, legal=False, meta=meta, **kwargs)
    with pytest.raises(NetError, match=f"{path.name}.*{message}"):
        load_net(path)


def test_the_shipped_nets_have_one_path_per_rules():
    assert default_net_path("standard").name == "net-standard.onnx"
    assert default_net_path(REVERSED).name == "net-reversed.onnx"
    assert default_net_path(0).parent.name == "data"


# --- evaluators ------------------------------------------------------------------------------
@pytest.mark.parametrize("which", ["tiny", "tiny3"])
def test_net_priors_sum_to_one_over_the_legal_moves_and_pass_alone_without_one(nets, which):
    ev = NetEvaluator(load_net(nets[which]))
    Ps, Os, black = random_positions(40, 9)
    P2, O2 = MUST_PASS.bitboards()
    Ps, Os = np.append(Ps, P2), np.append(Os, O2)
    black = np.append(black, False)
    priors, values = ev.evaluate(Ps, Os, black)
    assert priors.shape == (41, 65) and priors.dtype == np.float32
    for i in range(41):
        mask = int(legal_moves(Ps[i], Os[i]))
        legal = {k for k in range(64) if mask >> k & 1}
        assert set(np.nonzero(priors[i])[0]) == (legal or {planes.PASS_INDEX})
        assert priors[i].sum() == pytest.approx(1.0, abs=1e-5)
    assert np.all(np.abs(values) <= 1.0)


def test_net_evaluator_refuses_a_plane_count_the_net_was_not_made_for(nets):
    with pytest.raises(NetError, match="legal-move plane"):
        NetEvaluator(load_net(nets["tiny3"]), legal=True)


def test_pattern_evaluator_values_have_the_side_to_moves_sign():
    W = default_weights(STANDARD)
    # Black owns the corners and the edges, White a few inner discs: good for Black. Both sides
    # have moves: a side that must pass is never a fitted position, and the weights shipped
    # on 2026-11-27 score the same board with White to pass near 0 (searches see the pass).
    board = ("XXXXXXXX" "X-----OX" "X-OOO--X" "X--OX--X" "X---O--X" "X------X" "X------X"
             "XXXXXXXX")
    black = Position.from_string(board, "X")
    white = Position.from_string(board, "O")
    ev = PatternEvaluator(W, 8.0)
    Ps = np.array([black.bitboards()[0], white.bitboards()[0]], np.uint64)
    Os = np.array([black.bitboards()[1], white.bitboards()[1]], np.uint64)
    priors, values = ev.evaluate(Ps, Os, np.array([True, False]))
    assert values[0] > 0.5 and values[1] < -0.5
    assert priors.sum(axis=1) == pytest.approx([1.0, 1.0])


def test_pattern_priors_are_the_trees_evaluation_priors():
    pos = Game.from_moves(["f5", "d6", "c3", "d3", "c4", "f4", "f6", "f3", "e6", "e7"]).position
    r = make_agent("puct:net=none,eval=1,eval_scale=4").search(pos, Limits(iterations=50))
    P, O = pos.bitboards()
    priors, _ = PatternEvaluator(default_weights(STANDARD), 4.0).evaluate(
        np.array([P]), np.array([O]), np.array([True]))
    for m in r.moves:
        assert priors[0, m.move] == pytest.approx(m.prior, rel=1e-5)


# --- the batched kernels ---------------------------------------------------------------------
def _evaluated_root(pos: Position, priors: np.ndarray | None = None):
    """A tree whose root is expanded with evaluator priors (uniform unless given)."""
    bbs, links, stats, meta = T.new_tree(4096)
    P, O = pos.bitboards()
    T.init_root(bbs, links, stats, meta, P, O)
    T.expand(bbs, links, stats, meta, 0)
    f, c = int(links[0, T.FIRST]), int(links[0, T.NCHILD])
    if priors is not None:
        stats[f:f + c, T.PRIOR] = priors
    links[0, T.FLAGS] |= B.NET_PRIORS
    stats[0, T.N] = 1.0
    return bbs, links, stats, meta


def _collect(arrays, k, vloss, root_black, cfg=None):
    bbs, links, stats, meta = arrays
    cfg = cfg or T.tree_config(select=T.SELECT_PUCT, explore=1.5, solver=True)
    leaves = np.zeros(k, np.int64)
    black = np.zeros(k, np.bool_)
    n, exact, status = B.collect_leaves(bbs, links, stats, meta, cfg, k, vloss, root_black,
                                        leaves, black, *_solver())
    return int(n), int(exact), int(status), leaves[:n], black[:n]


def _solver():
    from engine_server.search import endgame as EG

    return EG.new_table(4), EG.new_control()


def test_virtual_loss_spreads_a_batch_over_several_leaves():
    pos = Position.start()
    arrays = _evaluated_root(pos)
    n, exact, status, leaves, black = _collect(arrays, 4, 1.0, True)
    assert (n, exact, status) == (4, 0, T.STATUS_OK)
    assert len(set(leaves.tolist())) == 4
    assert not black.any()  # the root's children: White to move
    bbs, links, stats, meta = arrays
    assert np.all(stats[leaves, B.INFLIGHT] == 1.0) and stats[0, B.INFLIGHT] == 4.0
    assert np.all(links[leaves, T.FLAGS] & B.PENDING)
    # every leaf is evaluated and backed up: no virtual loss or pending mark is left
    priors = np.full((n, 65), 1.0 / 64, np.float32)
    B.apply_leaves(links, stats, meta, leaves, n, priors, np.full(n, 0.5, np.float32))
    used = int(meta[T.NEXT_FREE])
    assert np.all(stats[:used, B.INFLIGHT] == 0.0)
    assert not np.any(links[:used, T.FLAGS] & B.PENDING)
    assert stats[0, T.N] == 5.0 and np.all(stats[leaves, T.N] == 1.0)
    assert np.all(stats[leaves, T.W] == -0.5)  # the mover into the leaf sees -value
    assert np.all(links[leaves, T.FLAGS] & B.NET_PRIORS)


def test_without_virtual_loss_a_batch_collides_on_one_leaf():
    arrays = _evaluated_root(Position.start())
    n, exact, status, leaves, _ = _collect(arrays, 4, 0.0, True)
    assert n == 1  # every later descent reached the same pending leaf and was dropped
    bbs, links, stats, meta = arrays
    assert stats[0, B.INFLIGHT] == 1.0 and stats[leaves[0], B.INFLIGHT] == 1.0


def test_a_pass_is_an_edge_for_the_leafs_colour():
    arrays = _evaluated_root(MUST_PASS)
    n, _, _, leaves, black = _collect(arrays, 1, 1.0, False)
    bbs, links, stats, meta = arrays
    assert n == 1 and int(links[leaves[0], T.MOVE]) == PASS
    assert black.tolist() == [True]  # White passed: Black moves at the leaf


def test_a_terminal_leaf_is_backed_up_exactly_without_evaluation():
    # Black to move plays the last square; the game is over at the child.
    pos = Position.from_string("-O" + "X" * 62, "X")
    assert pos.legal_moves() == [parse_move("a1")]
    arrays = _evaluated_root(pos)
    n, exact, status, _, _ = _collect(arrays, 2, 1.0, True)
    bbs, links, stats, meta = arrays
    child = int(links[0, T.FIRST])
    assert (n, exact) == (0, 1) and status in (T.STATUS_OK, T.STATUS_DONE)
    assert stats[child, T.W] == 1.0 and links[child, T.FLAGS] & T.SOLVED


# --- the agent -------------------------------------------------------------------------------
def _visits(r) -> dict[str, int]:
    return {m.name: m.visits for m in r.moves}


@pytest.mark.parametrize("move", ["b4", "e6"])
def test_visits_follow_the_move_the_network_prefers(tmp_path, move):
    path = prefer_net(tmp_path / f"prefer-{move}.onnx", move)
    assert parse_move(move) in MIDGAME.legal_moves()
    r = make_agent(f"puct:net={path},root_solve=0,solve_empties=0", seed=1).search(
        MIDGAME, Limits(iterations=400))
    v = _visits(r)
    assert r.best_name == move and v[move] > 0.5 * sum(v.values()), v
    prior = {m.name: m.prior for m in r.moves}
    assert prior[move] == pytest.approx(np.exp(3) / (np.exp(3) + len(v) - 1), rel=1e-5)


def test_iterations_k_gives_k_network_evaluations(nets):
    agent = make_agent(f"puct:net={nets['tiny']},batch=8,root_solve=0", seed=2)
    tree = agent.tree
    real = tree.evaluator_for(STANDARD)
    counted = []

    class Counting:
        def evaluate(self, Ps, Os, black):
            counted.append(len(Ps))
            return real.evaluate(Ps, Os, black)

    tree._evaluators[STANDARD] = Counting()
    r = agent.search(MIDGAME, Limits(iterations=37))
    assert sum(counted) == 37 and r.iterations == 37 and r.playouts == 37
    # the root's own evaluation is the first visit; the other 36 went to its moves
    assert sum(m.visits for m in r.moves) == 36
    assert max(counted) <= 8 and len(counted) < 37  # batched
    counted.clear()
    r = agent.search(MIDGAME, Limits(iterations=20))  # same root: reused, not re-evaluated
    assert sum(counted) == 20 and sum(m.visits for m in r.moves) == 56


def test_the_self_play_spec_gives_visits_as_a_policy_target(nets):
    spec = f"puct:net={nets['tiny']},noise=0.25,noise_alpha=0.5,seed=4,root_solve=0"
    a, b = make_agent(spec), make_agent(spec)
    ra = a.search(Position.start(), Limits(iterations=64))
    rb = b.search(Position.start(), Limits(iterations=64))
    assert [(m.move, m.visits) for m in ra.moves] == [(m.move, m.visits) for m in rb.moves]
    assert sum(m.visits for m in ra.moves) == 63
    assert sum(m.prior for m in ra.moves) == pytest.approx(1.0)
    clean = make_agent(spec.replace("noise=0.25", "noise=0")).search(
        Position.start(), Limits(iterations=1))
    assert {m.move: m.prior for m in clean.moves} != {m.move: m.prior for m in ra.moves}
    # searching the same root again draws fresh noise over the clean priors
    again = a.search(Position.start(), Limits(iterations=1))
    mixed = {m.move: m.prior for m in again.moves}
    base = {m.move: m.prior for m in clean.moves}
    assert all(p >= 0.75 * base[mv] - 1e-6 for mv, p in mixed.items())
    assert mixed != {m.move: m.prior for m in ra.moves}


def test_puct_without_a_net_gives_the_same_moves_and_visits_as_before():
    # recorded before the network existed, seed 3, 300 iterations; the eval=1 line is
    # re-recorded whenever the shipped standard weights change
    before = {
        "puct:net=none": [(3, 5), (11, 19), (20, 180), (25, 20), (44, 13), (45, 63)],
        "puct:net=none,eval=1,eval_scale=4": [(3, 11), (11, 5), (20, 210), (25, 15),
                                              (44, 33), (45, 26)],
    }
    for spec, visits in before.items():
        r = make_agent(spec, seed=3).search(MIDGAME, Limits(iterations=300))
        assert sorted((m.move, m.visits) for m in r.moves) == visits, spec
        assert r.best_move == 20 and r.iterations == 300 and r.playouts == 300


def test_tree_reuse_after_advance_keeps_the_visits(nets):
    agent = make_agent(f"puct:net={nets['tiny']},root_solve=0", seed=2)
    pos = Position.start()
    agent.search(pos, Limits(iterations=600))
    _, links, stats, _ = agent.tree._arrays
    f5 = parse_move("f5")
    c0, n0 = int(links[0, T.FIRST]), int(links[0, T.NCHILD])
    row = next(i for i in range(c0, c0 + n0) if links[i, T.MOVE] == f5)
    c1, n1 = int(links[row, T.FIRST]), int(links[row, T.NCHILD])
    reply = max(range(c1, c1 + n1), key=lambda i: stats[i, T.N])
    reply_move, reply_visits = int(links[reply, T.MOVE]), int(stats[reply, T.N])
    assert reply_visits > 5
    kept = agent.advance([f5, reply_move])
    assert 0.0 < kept < 1.0
    _, links2, stats2, _ = agent.tree._arrays
    assert int(stats2[0, T.N]) == reply_visits and links2[0, T.FLAGS] & B.NET_PRIORS
    r = agent.search(pos.play(f5).play(reply_move), Limits(iterations=10))
    assert r.reused_fraction == pytest.approx(kept)
    assert sum(m.visits for m in r.moves) == reply_visits - 1 + 10


def test_puct_with_a_net_finishes_within_the_deadline(nets):
    agent = make_agent(f"puct:net={nets['small']},batch=32")
    agent.search(MIDGAME, Limits(iterations=40))
    t0 = time.monotonic()
    r = agent.search(MIDGAME, Limits(time=1.0))
    wall = time.monotonic() - t0
    # The deadline ended the search, not before it, with more than one batch of leaves
    # evaluated (a second is several batches even on a busy machine); how soon after the
    # deadline is othello-bench search --agent puct:net=...'s max_overrun_s.
    assert r.stopped_by == "time" and r.playouts > 32
    assert 0.99 <= wall < 1.0 + SLACK, wall


def test_a_stop_event_ends_a_net_search_at_once(nets):
    agent = make_agent(f"puct:net={nets['small']}")
    agent.search(MIDGAME, Limits(iterations=10))
    stop = threading.Event()
    threading.Timer(0.2, stop.set).start()
    t0 = time.monotonic()
    r = agent.search(MIDGAME, Limits(time=60.0, stop=stop))
    # ended by the stop, long before its deadline (how soon: othello-bench search's
    # max_stop_latency_s)
    assert r.stopped_by == "stop" and time.monotonic() - t0 < 60.0 / 3


def test_a_bad_net_path_fails_when_the_agent_is_built_naming_the_file(tmp_path):
    with pytest.raises((AgentSpecError, NetError), match="missing-net.onnx"):
        make_agent(f"puct:net={tmp_path / 'missing-net.onnx'}")
    bad = tmp_path / "garbage.onnx"
    bad.write_text("garbage")
    with pytest.raises((AgentSpecError, NetError), match="garbage.onnx"):
        make_agent(f"puct:net={bad}")


def test_a_net_for_other_rules_plays_those_rules_and_falls_back_for_these(nets):
    agent = make_agent(f"puct:net={nets['rev']},root_solve=0", seed=3)
    rev = agent.search(MIDGAME.with_rules("reversed"), Limits(iterations=50))
    assert rev.playouts == 50 and agent.tree.eval_positions == 50
    std = agent.search(MIDGAME, Limits(iterations=300))
    assert agent.tree.eval_positions == 0  # rollouts, as puct:net=none
    plain = make_agent("puct:net=none", seed=3).search(MIDGAME, Limits(iterations=300))
    assert [(m.move, m.visits) for m in std.moves] == [(m.move, m.visits) for m in plain.moves]


def test_the_endgame_is_solved_with_a_net(nets, tmp_path):
    # Black to move; a1 (corner) is the only winning move, the network prefers another.
    corner_win = Position.from_string(
        "-OOXOOXXXX-OXOXXXOOOXXOXXOXOXXXOOXXOOXXOOXOOOXXO-OXOOOXO-XOOOXOO", "X")
    wrong = [m for m in corner_win.legal_moves() if m != parse_move("a1")][0]
    path = biased_net(tmp_path / "wrong.onnx", {wrong: 8.0})
    r = make_agent(f"puct:net={path}", seed=1).search(corner_win, Limits(iterations=200))
    assert r.best_name == "a1" and r.moves[0].exact
    # without the root solver the leaf solver and proven bounds still find it
    r = make_agent(f"puct:net={path},root_solve=0", seed=1).search(corner_win,
                                                                    Limits(iterations=200))
    assert r.best_name == "a1"


def test_the_net_counts_in_the_agents_cost(nets):
    base = spec_cost("puct:net=none")
    with_net = spec_cost(f"puct:net={nets['small']},net_threads=3")
    assert base.threads == 1 and with_net.threads == 3
    assert with_net.memory_mib > base.memory_mib
    p = {"net": str(nets["dir"] / "absent.onnx"), "net_threads": 4, "memory": 64}
    assert cost_of("puct", p).threads == 1  # no file, no network: it cannot run one


def test_the_default_net_is_the_shipped_file_or_none_with_one_warning(monkeypatch, nets,
                                                                      tmp_path):
    from structlog.testing import capture_logs

    from engine_server.agents.papers import puct

    shipped = {STANDARD: nets["tiny"], REVERSED: tmp_path / "net-reversed.onnx"}
    monkeypatch.setattr(puct, "default_net_path", lambda rules: shipped[int(rules)])
    monkeypatch.setattr(puct, "_warned", set())
    # An earlier test in this process may have raised the log level above warnings (a CLI run
    # with --log-level error): capture_logs replaces the processors, not the level filter.
    before = structlog.get_config()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.DEBUG))
    try:
        with capture_logs() as logs:
            agent = make_agent("puct:root_solve=0", seed=3)
            agent.search(MIDGAME, Limits(iterations=30))
            assert agent.tree.eval_positions == 30
            rev = MIDGAME.with_rules("reversed")
            r = agent.search(rev, Limits(iterations=200))
            make_agent("puct", seed=3).search(rev, Limits(iterations=10))
    finally:
        structlog.configure(**before)
    plain = make_agent("puct:net=none", seed=3).search(rev, Limits(iterations=200))
    assert [(m.move, m.visits) for m in r.moves] == [(m.move, m.visits) for m in plain.moves]
    warned = [e for e in logs if e["event"] == "puct_no_network"]
    assert len(warned) == 1 and warned[0]["rules"] == "reversed"


def test_a_full_tree_goes_on_evaluating_without_expanding(nets):
    agent = make_agent(f"puct:net={nets['tiny']},memory=1,root_solve=0", seed=1)
    r = agent.search(Position.start(), Limits(iterations=3000))
    assert r.tree_full and r.iterations == 3000 and r.playouts == 3000
    assert r.best_move in Position.start().legal_moves()
    _, links, stats, meta = agent.tree._arrays
    used = int(meta[T.NEXT_FREE])
    assert not np.any(stats[:used, B.INFLIGHT]) and not np.any(links[:used, T.FLAGS] & B.PENDING)


def test_a_failing_evaluator_leaves_no_virtual_loss_in_the_tree(nets):
    agent = make_agent(f"puct:net={nets['tiny']},root_solve=0", seed=1)
    agent.search(MIDGAME, Limits(iterations=100))
    tree = agent.tree
    real = tree.evaluator_for(STANDARD)

    class Failing:
        def evaluate(self, Ps, Os, black):
            raise RuntimeError("device lost")

    tree._evaluators[STANDARD] = Failing()
    with pytest.raises(RuntimeError, match="device lost"):
        agent.search(MIDGAME, Limits(iterations=50))
    _, links, stats, meta = tree._arrays
    used = int(meta[T.NEXT_FREE])
    assert not np.any(stats[:used, B.INFLIGHT]) and not np.any(links[:used, T.FLAGS] & B.PENDING)
    tree._evaluators[STANDARD] = real
    r = agent.search(MIDGAME, Limits(iterations=50))
    assert sum(m.visits for m in r.moves) == 149


def test_a_net_search_reports_progress_while_it_runs(nets):
    agent = make_agent(f"puct:net={nets['small']},root_solve=0")
    agent.search(MIDGAME, Limits(iterations=10))
    seen = []
    # twenty intervals: a busy machine's pauses cannot leave fewer than three reports
    r = agent.search(MIDGAME, Limits(time=2.0), progress=seen.append, progress_interval=0.1)
    assert len(seen) >= 3 and not any(s.final for s in seen) and r.final
    assert [s.playouts for s in seen] == sorted(s.playouts for s in seen)
    assert all(m.margin is None for s in seen for m in s.moves)  # values, not disc margins
