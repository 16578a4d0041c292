"""The cached kernels load in a second process without recompiling (and without crashing).

numba's cache is known to break on self-recursive kernels called with literal arguments
(numba #6061): the second process segfaults or fails to resolve a symbol.  This test runs every
kernel in a fresh process twice; the second must report cache hits and no compilation.
"""

import textwrap

from .second_process import run_probe

PROBE = textwrap.dedent(
    """
    import json
    import numpy as np
    from engine_server.game import bitboard as bb
    from engine_server.game.perft import perft_bik, perft_edax
    from engine_server.game.playout import random_games_from_start, random_playout
    P, O = bb.START_BLACK, bb.START_WHITE
    out = {
        "bik": perft_bik(P, O, 6), "edax": perft_edax(P, O, 6),
        "games": random_games_from_start(10, bb.make_rng(1))[3],
        "playout": random_playout(P, O, bb.make_rng(2))[2],
        "moves": int(bb.legal_moves(P, O)),
        "score": int(bb.final_score(P, O, bb.REVERSED)),
    }
    from engine_server.agents import AGENTS, make_agent
    from engine_server.game import Game
    from engine_server.search.mcts import rollout as R
    from engine_server.search import mcts as T
    from engine_server.search.limits import Limits
    from engine_server.game import Position
    from engine_server.search.endgame import solver as EG
    pos = Game.from_moves(["f5", "d6"]).position
    end = Position.from_string(
        "--XXXXX--OOOXX-O-OOOXXOX-OXOXOXXOXXXOXXX--XOXOXX-XXXOOO--OOOOO--", "X")
    moves = {}
    for name in AGENTS:
        a = make_agent(name, seed=4)
        moves[name] = a.search(pos, Limits(iterations=50)).best_move
        a.advance([moves[name]])
    out["agents"] = moves
    r = make_agent("best:threads=1", seed=4).search(end, Limits(iterations=50))
    out["endgame"] = [r.best_move, r.lower, r.upper]
    from engine_server.search import alphabeta as AB
    from engine_server.search.mcts import batched as BA
    from engine_server.eval import book as BK
    r = make_agent("puct", seed=4).search(pos, Limits(iterations=50))  # the shipped network
    out["puct_net"] = r.best_move
    r = make_agent("best", seed=4).search(Position.start(), Limits(iterations=50))
    out["book"] = [r.best_move, r.stopped_by]
    book = BK.shipped(0)
    few = slice(0, 200)
    out["negamax"] = int(BK.negamax(book.P[few], book.O[few], book.leaf[few].astype(np.int64),
                                    BK.disc_order(book.P[few], book.O[few])).sum())
    r = make_agent("ab", seed=4).search(pos, Limits(depth=5))
    out["ab"] = [r.best_move, r.eval]
    r = make_agent("puct:net=none,eval=1", seed=4).search(pos, Limits(iterations=50))
    out["puct_eval"] = r.best_move
    kernels = [perft_bik, perft_edax, random_games_from_start, random_playout, bb.legal_moves,
               bb.final_score, T.run_batch, T.expand, T.init_root, T.copy_subtree,
               T.count_subtree, R.choose_move, EG._table_move, AB.search_root, AB.table_move,
               AB.known_children, T.set_priors, BA.collect_leaves, BA.apply_leaves,
               BK.canonical, BK.find, BK.children, BK.negamax]
    stats = {k.py_func.__name__: (sum(k.stats.cache_hits.values()),
                                  sum(k.stats.cache_misses.values())) for k in kernels}
    print(json.dumps({"out": out, "stats": stats}))
    """
)


def _run() -> dict:
    return run_probe(PROBE)


def test_second_process_loads_cached_kernels():
    first = _run()  # writes the cache if it is cold
    second = _run()
    assert second["out"] == first["out"]
    assert second["out"]["bik"] == 8200 and second["out"]["edax"] == 8200
    assert len(second["out"]["agents"]) >= 9
    assert second["out"]["endgame"] == [62, 18, 18]  # FFO #1: g8 wins by 18
    assert second["out"]["book"][1] == "book"
    for name, (hits, misses) in second["stats"].items():
        assert misses == 0 and hits >= 1, (name, hits, misses)
