"""The seed baselines as their papers describe them: the OCBA paper's plain UCT, the MCTS blog
post's pseudo-random policy as the post's source defines it, OCBA with equal variances, and the
reproduction reports' verdicts."""

from __future__ import annotations

import numpy as np
import pytest

from engine_server.agents import make_agent, parse_spec
from engine_server.game import Game, Position, parse_move
from engine_server.game import bitboard as bb
from engine_server.game.valuemaps import C_SQUARES, CORNERS, X_SQUARES
from engine_server.search import mcts as T
from engine_server.search.limits import Limits
from engine_server.search.mcts import rollout as R
from papers.reproduce.common import score, verdict
from papers.reproduce.dk import dk_configs
from papers.reproduce.ocba import ocba_configs
from papers.reproduce.uct import uct_configs

MIDGAME = Game.from_moves(["f5", "d6", "c3", "d3", "c4", "f4", "c5", "b3", "c2"]).position
# Black to move with five moves: b2 (an X-square), d2, e2, f2 and h2 (a C-square).
X_AND_C = Position.from_string(
    "------------------O-O-O----XXX----------------------------------", "X")


def _visited(tree) -> int:
    bbs, links, stats, meta = tree._arrays
    return int((stats[: meta[T.NEXT_FREE], T.N] > 0).sum())


def test_plain_uct_adds_exactly_one_node_and_one_playout_per_iteration():
    agent = make_agent("uct:reward=ratio,form=plain,c=1,expand=one", seed=3)
    r = agent.search(MIDGAME, Limits(iterations=40))
    assert (r.iterations, r.playouts) == (40, 40)
    # the root plus one newly simulated node per iteration
    assert _visited(agent.tree) == 1 + 40


def test_seed001_uct_still_simulates_every_child_of_the_leaf_it_expands():
    agent = make_agent("uct", seed=3)
    r = agent.search(MIDGAME, Limits(iterations=40))
    assert r.iterations == 40 and r.playouts > 3 * r.iterations
    assert agent.tree.config.sim_all and not agent.tree.config.descend


def test_plain_uct_visits_every_root_move_before_repeating_one():
    agent = make_agent("uct:reward=ratio,form=plain,c=1,expand=one", seed=3)
    n = len(MIDGAME.legal_moves())
    r = agent.search(MIDGAME, Limits(playouts=n))
    assert sorted(m.visits for m in r.moves) == [1] * n


def test_pseudo_random_avoid_x_redraws_only_x_squares():
    assert R.bad_squares_of(R.PSEUDO_X, 0) == np.uint64(X_SQUARES)
    assert R.bad_squares_of(R.PSEUDO, 0) == np.uint64(X_SQUARES | C_SQUARES)
    assert R.bad_squares_of(R.PSEUDO_X, 1) == np.uint64(CORNERS)  # reversed rules

    def shares(spec: str) -> tuple[float, float]:
        agent = make_agent(spec, seed=11)
        moves = [agent.search(X_AND_C).best_move for _ in range(3000)]
        return (moves.count(parse_move("b2")) / 3000, moves.count(parse_move("h2")) / 3000)

    x_b2, x_h2 = shares("pseudo-random:avoid=x")
    xc_b2, xc_h2 = shares("pseudo-random")
    # three draws must all hit b2: (1/5)^3 = 0.8%; h2 keeps its 1/5 and more
    assert x_b2 < 0.02 and x_h2 > 0.18
    # xc re-draws h2 too: each of b2 and h2 needs two bad draws first, (2/5)^2 / 5 = 3.2%
    assert 0.015 < xc_b2 < 0.06 and 0.015 < xc_h2 < 0.06


def test_the_posts_definition_reproduces_its_table1_and_ours_does_not():
    # the post: random black against pseudo-random white wins 3,698 of 10,000
    t = np.zeros(64, dtype=np.int64)
    rates = {}
    for pid in (R.PSEUDO_X, R.PSEUDO):
        b, w, d = R.policy_games(bb.START_BLACK, bb.START_WHITE, R.RANDOM, pid, 0, 4000, t,
                                 bb.make_rng(5))
        assert b + w + d == 4000
        rates[pid] = b / 4000
    assert abs(rates[R.PSEUDO_X] - 0.3698) < 0.025
    assert rates[R.PSEUDO] < 0.25


def test_dk_avoid_reaches_its_rollout_policy_and_keeps_its_default():
    assert make_agent("dk").tree.config.policy == R.PSEUDO
    assert make_agent("dk:avoid=x").tree.config.policy == R.PSEUDO_X


def _ocba_node(select: int) -> int:
    """OCBA's pick at a root whose children are: the best (mean 0.5, noisy), a far worse one
    whose identical samples give it zero variance, and a close rival with small variance."""
    bbs, links, stats, meta = T.new_tree(8)
    T.init_root(bbs, links, stats, meta, bb.START_BLACK, bb.START_WHITE)
    T.expand(bbs, links, stats, meta, 0)  # four children at rows 1-4
    samples = {1: [1.0, 0.0] * 5, 2: [0.0] * 6, 3: [0.42, 0.38] * 3, 4: [0.0] * 6}
    for i, zs in samples.items():
        stats[i, T.N] = len(zs)
        stats[i, T.W] = sum(zs)
        stats[i, T.W2] = sum(z * z for z in zs)
    stats[0, T.N] = sum(len(z) for z in samples.values())
    cfg = T.tree_config(select=select, n0=5, sigma0=1.0, expand_at=1, descend=True,
                        reward=T.REWARD_RATIO)
    return int(T.select_child(bbs, links, stats, 0, cfg, bb.make_rng(1)))


def test_equal_variance_ocba_samples_the_close_rival_that_zero_variance_starves():
    # sample deviations: the zero-variance children count as sigma0 = 1 and draw the samples
    assert _ocba_node(T.SELECT_OCBA) in (2, 4)
    # equal deviations: the allocation follows the gaps, and row 3 is 0.1 behind the best
    assert _ocba_node(T.SELECT_OCBA_EQUAL) == 3
    assert make_agent("ocba:sigma=equal").tree.config.select == T.SELECT_OCBA_EQUAL
    assert make_agent("ocba").tree.config.select == T.SELECT_OCBA


def test_reproduction_players_are_valid_specs_with_the_papers_baselines(tmp_path):
    specs = []
    for make in (uct_configs, ocba_configs, dk_configs):
        for cfg in make(tmp_path, 1, 1):
            specs += [p.split("=", 1)[1] for p in cfg.players]
    for spec in set(specs):
        assert spec.startswith("agent:")
        parse_spec(spec[len("agent:"):])  # raises on a bad spec
    uct = [s for s in specs if s.startswith("agent:uct:reward=ratio")]
    assert uct and all("expand=one" in s for s in uct)
    assert all("avoid=x" in s for s in specs if "dk:" in s or "pseudo-random" in s)


@pytest.mark.parametrize("lo,hi,word", [(0.55, 0.7, "holds"), (0.3, 0.45, "fails"),
                                        (0.45, 0.6, "not shown")])
def test_verdicts_follow_the_interval(lo, hi, word):
    assert word in verdict(lo, hi, "A", "B")


def test_score_intervals_stay_open_at_a_perfect_score():
    s, lo, hi = score(10, 0, 0)
    assert s == 1.0 and hi == pytest.approx(1.0) and lo < 0.8
