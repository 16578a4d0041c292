"""The OCBA paper Table 1: MCTS-OCBA against plain UCT (one child and one playout per iteration,
c=1, reward (a-b)/(a+b)) at 50, 100 and 500 simulations per move, random and heuristic rollouts, 250
games per colour; plus OCBA with ``n0=1,sigma=equal`` under the heuristic rollout (why:
docs/papers/ocba.md, and :func:`ocba_diagnostics`).  Both get the same per-move playout
budget (``Limits(playouts=S)``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from clients.match import elo as E
from clients.match.config import MatchConfig
from clients.match.players import TimeControl

from .common import by_name, score, verdict

# Table 1, "(White vs Black, 250 games)": wins of the white player - wins of the black player.
OCBA_PAPER = {
    # (simulations, rollout): ((OCBA white wins, UCT black wins), (UCT white, OCBA black))
    (50, "random"): ((149, 93), (89, 152)), (50, "heuristic"): ((144, 102), (83, 160)),
    (100, "random"): ((142, 102), (117, 128)), (100, "heuristic"): ((149, 96), (102, 146)),
    (500, "random"): ((130, 111), (110, 130)), (500, "heuristic"): ((134, 109), (119, 120)),
}
OCBA_GAMES = 250
OCBA_SIMS = (50, 100, 500)
OCBA_ROLLOUTS = ("random", "heuristic")
OCBA_UCT = "agent:uct:reward=ratio,form=plain,c=1,expand=one"
# OCBA settings that work with a near-deterministic rollout (docs/papers/ocba.md)
OCBA_FIX = ",n0=1,sigma=equal"
# (simulations, rollout, OCBA with the fix): the paper's six, then the fixed heuristic rows
OCBA_SETTINGS = ([(s, r, False) for s in OCBA_SIMS for r in OCBA_ROLLOUTS]
                    + [(s, "heuristic", True) for s in OCBA_SIMS])


def _seed002_name(sims: int, rollout: str, fix: bool) -> str:
    return f"sims{sims}-{rollout}" + ("-fix" if fix else "")


def ocba_configs(out: Path, games: int, seed: int) -> list[MatchConfig]:
    configs = []
    for sims, rollout, fix in OCBA_SETTINGS:
        r = "" if rollout == "random" else f",rollout={rollout}"
        players = [f"ocba=agent:ocba:simulations={sims}{r}{OCBA_FIX if fix else ''}",
                   f"uct={OCBA_UCT}{r}"]
        tc = TimeControl(playouts=sims, tree_reuse=False)
        name = _seed002_name(sims, rollout, fix)
        configs.append(MatchConfig(players=players, out=out / name, games=2 * games,
                                   openings="start", tc=tc, seed=seed, event=f"seed002-{name}"))
    return configs


def _colour_split(res: dict, name: str) -> dict:
    p = by_name(res)[name]
    return {"black": p["as_black"], "white": p["as_white"]}


def ocba_report(results: list[dict], games: int, seed: int) -> tuple[list[str], dict]:
    lines = [f"{games} games per colour per setting (paper: {OCBA_GAMES}); each side "
             "gets the same number of playouts per move.  As in the paper's table, "
             "'White vs Black' lists the white player's wins - the black player's wins.  "
             "The paper's claim in every row: OCBA is better than UCT.", "",
             "| setting | OCBA (W) vs UCT (B): paper | ours | UCT (W) vs OCBA (B): paper | ours "
             "| OCBA wins: paper | ours (95% interval) | ties: paper | ours "
             "| OCBA score: ours (95% interval) | playouts/move OCBA, UCT | verdict |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    bars = []
    for res, (sims, rollout, fix) in zip(results, OCBA_SETTINGS):
        ocba, uct = _colour_split(res, "ocba"), _colour_split(res, "uct")
        (p_ow, p_ub), (p_uw, p_ob) = OCBA_PAPER[(sims, rollout)]
        o_w, u_b = ocba["white"]["wins"], uct["black"]["wins"]
        u_w, o_b = uct["white"]["wins"], ocba["black"]["wins"]
        pl = by_name(res)
        n = pl["ocba"]["games"]
        wins, ties, losses = pl["ocba"]["wins"], pl["ocba"]["draws"], pl["ocba"]["losses"]
        lo, hi = E.wilson_interval(wins, n)
        sc, slo, shi = score(wins, ties, losses)
        p_wins, p_ties = p_ow + p_ob, 2 * OCBA_GAMES - (p_ow + p_ub + p_uw + p_ob)
        p_rate = p_wins / (2 * OCBA_GAMES)
        inside = "inside" if lo <= p_rate <= hi else "outside"
        label = f"{sims} sims, {'heuristic' if rollout == 'heuristic' else 'no heuristic'}"
        if fix:
            label += ", OCBA n0=1,sigma=equal"
        lines.append(
            f"| {label} "
            f"| {p_ow} - {p_ub} | {o_w} - {u_b} | {p_uw} - {p_ob} | {u_w} - {o_b} "
            f"| {100 * p_rate:.1f}% "
            f"| **{100 * wins / n:.1f}%** ({100 * lo:.1f}-{100 * hi:.1f}) "
            f"| {100 * p_ties / (2 * OCBA_GAMES):.1f}% | {100 * ties / n:.1f}% "
            f"| {100 * sc:.1f}% ({100 * slo:.1f}-{100 * shi:.1f}) "
            f"| {pl['ocba']['mean_playouts']:.0f}, {pl['uct']['mean_playouts']:.0f} "
            f"| {verdict(slo, shi, 'OCBA', 'UCT')}; the paper's win rate is {inside} our "
            f"interval |")
        bars.append((f"{sims}, {rollout}" + (", fix" if fix else ""), p_rate, wins / n, lo, hi))
    lines += _seed002_why(seed)
    return lines, {"bars": bars}


def ocba_diagnostics(seed: int, positions: int = 20) -> dict:
    """Why OCBA and the heuristic rollout do not mix, measured on ``positions`` random-play
    positions (plies 10, 20, 30): distinct final scores in 100 rollouts per policy, and per
    agent the distinct nodes simulated in a 500-playout search and the share of nodes with two
    or more samples whose sample variance is zero."""
    from engine_server.agents import make_agent
    from engine_server.game import Game
    from engine_server.game import bitboard as bb
    from engine_server.search import mcts as T
    from engine_server.search.limits import Limits
    from engine_server.search.mcts import rollout as R

    table = np.zeros(64, dtype=np.int64)
    poss = []
    for k in range(positions):
        pos = Game.from_moves([]).position
        mover = make_agent("random", seed=seed * 1000 + k)
        for _ in range(10 + 10 * (k % 3)):
            pos = pos.play(mover.search(pos).best_move)
        poss.append(pos)
    out: dict = {"positions": positions, "distinct": {}, "agents": {}}
    rng = bb.make_rng(seed)
    for name, pid in (("random", R.RANDOM), ("heuristic", R.HEURISTIC)):
        counts = []
        for pos in poss:
            P, O = pos.bitboards()
            counts.append(len({R.rollout(P, O, pid, 0, table, rng) for _ in range(100)}))
        out["distinct"][name] = float(np.median(counts))
    for spec in ("ocba:simulations=500", "ocba:simulations=500,rollout=heuristic",
                 "ocba:simulations=500,rollout=heuristic" + OCBA_FIX,
                 OCBA_UCT[6:] + ",rollout=heuristic"):
        nodes, zero = [], []
        for pos in poss:
            agent = make_agent(spec, seed=seed)
            agent.search(pos, Limits(playouts=500))
            tree = agent.tree
            assert tree is not None, spec  # ocba and uct search a tree
            _, _, stats, meta = tree._arrays
            st = stats[: meta[T.NEXT_FREE]]
            n = st[:, T.N]
            nodes.append(int((n > 0).sum()))
            many = n >= 2
            mean = st[many, T.W] / n[many]
            var = st[many, T.W2] / n[many] - mean * mean
            zero.append(float((var < 1e-12).sum()) / max(1, int(many.sum())))
        out["agents"][spec] = (float(np.median(nodes)), float(np.mean(zero)))
    return out


def _seed002_why(seed: int) -> list[str]:
    d = ocba_diagnostics(seed)
    lines = ["", f"Why the heuristic rows differ, measured on {d['positions']} random-play "
             "positions (plies 10-30): median distinct final scores in 100 rollouts from a "
             f"position: random {d['distinct']['random']:.0f}, heuristic "
             f"{d['distinct']['heuristic']:.0f}.  One 500-playout search per position:", "",
             "| agent | distinct nodes simulated (median) | nodes with >= 2 samples and zero "
             "variance |", "|---|---|---|"]
    for spec, (nodes, zero) in d["agents"].items():
        lines.append(f"| `{spec}` | {nodes:.0f} | {100 * zero:.0f}% |")
    return lines
