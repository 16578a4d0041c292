"""The MCTS blog post Table 1: random and pseudo-random play against each other by colour, 10,000
games per cell, in the rollout kernel (``rollout.policy_games``) for both pseudo-random definitions,
with a referee cross-check of the post's definition; Fig. 1: MCTS (black) against pseudo-random
play (white) by iterations (max_iter 1 to 200, nSims 1 and 50), plain and with domain knowledge,
with the post's pseudo-random (``avoid=x``: X-squares re-drawn) on both sides."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from clients.match import elo as E
from clients.match.config import MatchConfig

from .common import by_name, tc

# Table 1 of the MCTS blog post: 10,000 games per cell, black's policy by white's policy.
DK_TABLE = {("random", "random"): (4604, 4985, 411),
                 ("random", "pseudo-random"): (3698, 5933, 369),
                 ("pseudo-random", "random"): (5479, 4128, 393),
                 ("pseudo-random", "pseudo-random"): (4655, 4985, 360)}
DK_TABLE_GAMES = 10_000
DK_LONG_GAMES = 200_000
DK_POLICIES = ("random", "pseudo-random")
# the pseudo-random definitions: the post's source code (X-squares) and our earlier reading
DK_AVOID = ("x", "xc")
DK_PSEUDO = "agent:pseudo-random:avoid=x"
DK_ITERS = (1, 5, 10, 20, 40, 80, 200)
DK_NSIMS = (1, 50)
# Plain MCTS picks the move with the best raw UCT score: no inner score, no position penalties,
# and a greed penalty made vanishing by a huge exponent ((own-opp)/(own+opp)^50 < 1e-30).
DK_VARIANTS = {"plain": ",a=0,b=50,c=0,d=0", "dk": ""}
DK_GAMES = 400


def dk_table1(seed: int, games: int = DK_TABLE_GAMES) -> dict:
    """Table 1 in the rollout kernel: ``{(avoid, black, white): (B, W, D)}`` for both
    pseudo-random definitions, ``games`` per cell, each cell from its own seeded stream."""
    from engine_server.game import bitboard as bb
    from engine_server.search.mcts import rollout as R

    ids = {"x": R.PSEUDO_X, "xc": R.PSEUDO}
    table = np.zeros(64, dtype=np.int64)
    out = {}
    for k, avoid in enumerate(DK_AVOID):
        for i, black in enumerate(DK_POLICIES):
            for j, white in enumerate(DK_POLICIES):
                pb = ids[avoid] if black == "pseudo-random" else R.RANDOM
                pw = ids[avoid] if white == "pseudo-random" else R.RANDOM
                rng = bb.make_rng(seed * 1009 + 100 * k + 10 * i + j)
                b, w, d = R.policy_games(bb.START_BLACK, bb.START_WHITE, pb, pw, 0, games,
                                         table, rng)
                out[(avoid, black, white)] = (int(b), int(w), int(d))
    return out


def dk_configs(out: Path, games: int, seed: int) -> list[MatchConfig]:
    configs = []
    specs = {"random": "agent:random", "pseudo-random": DK_PSEUDO}
    for black in DK_POLICIES:
        for white in DK_POLICIES:
            players = [f"{black}_black={specs[black]}", f"{white}_white={specs[white]}"]
            configs.append(MatchConfig(players=players, out=out / f"table1-{black}-{white}",
                                       games=games, openings="start", swap=False,
                                       tc=tc(), seed=seed, event="seed004-table1"))
    for variant, extra in DK_VARIANTS.items():
        for nsims in DK_NSIMS:
            for iters in DK_ITERS:
                name = f"{variant}-n{nsims}-i{iters}"
                players = [f"mcts=agent:dk:nSims={nsims},max_iter={iters},avoid=x{extra}",
                           f"pseudo-random={DK_PSEUDO}"]
                configs.append(MatchConfig(players=players, out=out / f"fig1-{name}",
                                           games=games, openings="start", swap=False,
                                           tc=tc(), seed=seed, event=f"seed004-{name}"))
    return configs


def _rate_cell(b: int, w: int, d: int) -> tuple[float, float, float]:
    n = b + w + d
    lo, hi = E.wilson_interval(b, n)
    return b / n, lo, hi


def dk_report(results: list[dict], games: int, seed: int) -> tuple[list[str], dict]:
    kernel = dk_table1(seed)
    # the definitions' rates to +-0.2%: is the post's 10,000-game count consistent with them?
    long = dk_table1(seed + 1, DK_LONG_GAMES)
    lines = [f"Table 1: games won by black (B), by white (W) and drawn (D), "
             f"{DK_TABLE_GAMES} games per cell as in the post, black's policy by row; "
             "black's win rate with its 95% (Wilson) interval.  Ours for both definitions of "
             "the pseudo-random policy: `x` re-draws X-squares (the post's source code), `xc` "
             "X- and C-squares (our earlier reading).  The last columns give each definition's "
             f"rate over {DK_LONG_GAMES:,} games and whether it lies in the paper's "
             "interval, i.e. whether the post's count is what that definition produces.", "",
             "| black | white | paper (95% interval) | ours, avoid=x | ours, avoid=xc "
             f"| {DK_LONG_GAMES:,} games: x, xc | verdict |", "|---|---|---|---|---|---|---|"]
    rates = {}
    for black in DK_POLICIES:
        for white in DK_POLICIES:
            pb, pw, pd = DK_TABLE[(black, white)]
            p_rate, p_lo, p_hi = _rate_cell(pb, pw, pd)
            cells, fits, longs = [], [], []
            for avoid in DK_AVOID:
                b, w, d = kernel[(avoid, black, white)]
                r, lo, hi = _rate_cell(b, w, d)
                rates[(avoid, black, white)] = (r, lo, hi)
                cells.append(f"B {b} / W {w} / D {d}: **{100 * r:.1f}%** "
                             f"({100 * lo:.1f}-{100 * hi:.1f})")
                lr = _rate_cell(*long[(avoid, black, white)])[0]
                longs.append(f"{100 * lr:.2f}%")
                if p_lo <= lr <= p_hi:
                    fits.append(avoid)
            if black == white == "random":
                verdict = ("the same policies under both definitions; the post's count is "
                           + ("consistent with random play" if fits else
                              "outside what random play gives"))
            else:
                verdict = ("the post's count is consistent with "
                           + (" and ".join(f"`{a}`" for a in fits) if fits else "neither")
                           + (f", not with `{[a for a in DK_AVOID if a not in fits][0]}`"
                              if len(fits) == 1 else ""))
            lines.append(f"| {black} | {white} | B {pb} / W {pw} / D {pd}: "
                         f"{100 * p_rate:.1f}% ({100 * p_lo:.1f}-{100 * p_hi:.1f}) | "
                         + " | ".join(cells) + f" | {', '.join(longs)} | {verdict} |")
            rates[("long", black, white)] = (_rate_cell(*long[("x", black, white)])[0],
                                             p_lo, p_hi)
    lines += ["", f"The same cells played by the referee (`agent:random`, `{DK_PSEUDO[6:]}`"
              f"), {games} games each, checking that the agent plays as the kernel:", "",
              "| black | white | B / W / D | black wins (95% interval) | kernel, avoid=x |",
              "|---|---|---|---|---|"]
    i = 0
    for black in DK_POLICIES:
        for white in DK_POLICIES:
            c = results[i]["colors"]
            i += 1
            r, lo, hi = _rate_cell(c["black"], c["white"], c["draw"])
            lines.append(f"| {black} | {white} | {c['black']} / {c['white']} / {c['draw']} "
                         f"| {100 * r:.1f}% ({100 * lo:.1f}-{100 * hi:.1f}) "
                         f"| {100 * rates[('x', black, white)][0]:.1f}% |")
    lines += ["", f"Fig. 1: win rate of MCTS (black, `dk:avoid=x`) against pseudo-random play "
              f"(white, `{DK_PSEUDO[6:]}`), {games} games per point; in brackets the 95% "
              "interval.", "",
              "| max_iter | " + " | ".join(f"{v} nSims={n}" for v in DK_VARIANTS
                                           for n in DK_NSIMS) + " |",
              "|---|" + "---|" * (len(DK_VARIANTS) * len(DK_NSIMS))]
    series: dict[tuple[str, int], list[tuple[int, float, float, float]]] = {}
    fig = results[4:]
    j = 0
    for variant in DK_VARIANTS:
        for nsims in DK_NSIMS:
            for iters in DK_ITERS:
                p = by_name(fig[j])["mcts"]
                j += 1
                lo, hi = E.wilson_interval(p["wins"], p["games"])
                series.setdefault((variant, nsims), []).append(
                    (iters, p["wins"] / p["games"], lo, hi))
    for k, iters in enumerate(DK_ITERS):
        cells = []
        for variant in DK_VARIANTS:
            for nsims in DK_NSIMS:
                _, rate, lo, hi = series[(variant, nsims)][k]
                cells.append(f"{100 * rate:.1f}% ({100 * lo:.1f}-{100 * hi:.1f})")
        lines.append(f"| {iters} | " + " | ".join(cells) + " |")
    bench = rates[("x", "random", "pseudo-random")]
    lines += ["", "The post gives Fig. 1 as a picture only; its claims against ours:", "",
              "| the post's claim | ours | verdict |", "|---|---|---|"]
    lines += _dk_claims(series, rates)
    return lines, {"series": series, "benchmark": rates[("x", "random", "random")][0],
                   "random_vs_pseudo": bench[0]}


def _dk_claims(series: dict, rates: dict) -> list[str]:
    """One row per claim of the post's text about Fig. 1, decided on our 95% intervals."""
    def point(variant: str, nsims: int, iters: int) -> tuple[float, float, float]:
        _, r, lo, hi = next(p for p in series[(variant, nsims)] if p[0] == iters)
        return r, lo, hi

    def pct(v: tuple[float, float, float]) -> str:
        return f"{100 * v[0]:.1f}% ({100 * v[1]:.1f}-{100 * v[2]:.1f})"

    rows = []
    rr = rates[("x", "random", "random")]
    lr, p_lo, p_hi = rates[("long", "random", "random")]
    rows.append(f"| black wins 46% when both play randomly (4,604 of 10,000) | {pct(rr)}; "
                f"{100 * lr:.2f}% over {DK_LONG_GAMES:,} games "
                f"| {'consistent' if p_lo <= lr <= p_hi else 'differs'} |")
    rp = rates[("x", "random", "pseudo-random")]
    one = point("plain", 1, 1)
    worse = one[2] < rp[1]
    rows.append(f"| nSims=1, max_iter=1 does worse than random play | plain {pct(one)} against "
                f"random black's {pct(rp)} | {'holds' if worse else 'not shown'} |")
    late = [point("plain", 50, i) for i in DK_ITERS if i >= 40]
    late_iters = [i for i in DK_ITERS if i >= 40]
    below = [str(i) for i, v in zip(late_iters, late) if v[2] < 0.99]
    rows.append("| plain MCTS wins >99% from 40 iterations on | nSims=50: "
                + ", ".join(f"{i}: {pct(v)}" for i, v in zip(late_iters, late))
                + " | " + (f"fails: significantly below 99% at {', '.join(below)} iterations"
                           if below else "consistent") + " |")
    few = [(n, i, point("dk", n, i), point("plain", n, i)) for n in DK_NSIMS
           for i in DK_ITERS if 5 <= i <= 20]
    better = [f"n{n}/i{i}" for n, i, d, p in few if d[1] > p[2]]
    worse_dk = [f"n{n}/i{i}" for n, i, d, p in few if d[2] < p[1]]
    verdict = ("holds" if better and not worse_dk else "partly" if better else "not shown")
    rows.append("| domain knowledge raises the win rate at few iterations and simulations "
                f"| dk significantly above plain at {', '.join(better) or 'no point'} "
                f"(of nSims 1/50 x max_iter 5-20); below at {', '.join(worse_dk) or 'none'} "
                f"| {verdict} |")
    hi_d, hi_p = point("dk", 50, 200), point("plain", 50, 200)
    drop = hi_d[2] < hi_p[1]
    rows.append(f"| domain knowledge lowers it at high iterations (to ~97%) | nSims=50, 200 "
                f"iterations: dk {pct(hi_d)}, plain {pct(hi_p)} "
                f"| {'holds' if drop else 'not shown'} |")
    return rows
