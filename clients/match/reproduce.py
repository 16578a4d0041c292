"""``othello-match reproduce seed000|seed002|seed004``: the seed papers' competitions, run by the
referee, with the papers' numbers printed next to ours.

* seed000 Table 1: round robin of Shallow Search (n=100), Min-Max Search (n=10, k=3) and MCTS
  with UCB1 (n=50, N=1200), 40 games per colour per pairing, average reward (win 1, draw 1/2).
* seed002 Table 1: MCTS-OCBA against UCT (c=1, reward (a-b)/(a+b)) at 50, 100 and 500
  simulations per move, random and heuristic rollouts, 250 games per colour.  Both get the same
  per-move playout budget (``Limits(playouts=S)``): our UCT simulates every child of the leaf it
  expands, so an iteration budget would give it several times more playouts.
* seed004 Fig. 1: MCTS (black) against pseudo-random play (white) by iterations (max_iter 1 to
  200, nSims 1 and 50), plain and with domain knowledge; and Table 1: random and pseudo-random
  play against each other by colour, 10,000 games per cell.

All games start from the standard position (the papers use no opening set), and the agents build
a new tree every move (the papers keep no tree between moves).  ``--games N`` scales every count:
games per colour per pairing (seed000, seed002), games per point of Fig. 1 (seed004; its Table 1
then plays 50 N games per cell).
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path

from engine_server.log import configure_logging

from . import elo as E
from .config import MatchConfig, MatchError
from .players import TimeControl
from .tournament import run_matches

# --- the papers' numbers ------------------------------------------------------------------------

SEED000_PAPER = {  # Table 1: average reward of the row player against the column player
    ("shallow", "minmax"): 0.5875, ("shallow", "ucb1"): 0.325, ("minmax", "ucb1"): 0.25,
}
SEED000_PLAYERS = {"shallow": "agent:shallow:n=100", "minmax": "agent:minmax:n=10,k=3",
                   "ucb1": "agent:ucb1:n=50,N=1200"}
SEED000_LONG = {"shallow": "Shallow Search", "minmax": "Min-Max Search",
                "ucb1": "MCTS with UCB1"}

# Table 1, "(White vs Black, 250 games)": wins of the white player - wins of the black player.
SEED002_PAPER = {
    # (simulations, rollout): ((OCBA white wins, UCT black wins), (UCT white, OCBA black))
    (50, "random"): ((149, 93), (89, 152)), (50, "heuristic"): ((144, 102), (83, 160)),
    (100, "random"): ((142, 102), (117, 128)), (100, "heuristic"): ((149, 96), (102, 146)),
    (500, "random"): ((130, 111), (110, 130)), (500, "heuristic"): ((134, 109), (119, 120)),
}
SEED002_GAMES = 250
SEED002_SIMS = (50, 100, 500)
SEED002_ROLLOUTS = ("random", "heuristic")

# Table 1 of seed 004: 10,000 games per cell, black's policy by white's policy.
SEED004_TABLE = {("random", "random"): (4604, 4985, 411),
                 ("random", "pseudo-random"): (3698, 5933, 369),
                 ("pseudo-random", "random"): (5479, 4128, 393),
                 ("pseudo-random", "pseudo-random"): (4655, 4985, 360)}
SEED004_ITERS = (1, 5, 10, 20, 40, 80, 200)
SEED004_NSIMS = (1, 50)
# Plain MCTS picks the move with the best raw UCT score: no inner score, no position penalties,
# and a greed penalty made vanishing by a huge exponent ((own-opp)/(own+opp)^50 < 1e-30).
SEED004_VARIANTS = {"plain": ",a=0,b=50,c=0,d=0", "dk": ""}
SEED004_CLAIMS = [
    "black's win rate when both sides play randomly: 46% (Table 1: 4,604 of 10,000)",
    "nSims=1, max_iter=1 does worse than random play",
    "plain MCTS: a consistent win rate above 99% from 40 iterations on",
    "domain knowledge raises the win rate at few iterations and few simulations",
    "domain knowledge lowers it at high iterations (to about 97%)",
]


def _tc() -> TimeControl:
    return TimeControl(tree_reuse=False)


def _by_name(results: dict) -> dict:
    return {p["name"]: p for p in results["players"]}


# --- seed 000 -----------------------------------------------------------------------------------

def seed000_configs(out: Path, games: int, seed: int) -> list[MatchConfig]:
    players = [f"{k}={v}" for k, v in SEED000_PLAYERS.items()]
    return [MatchConfig(players=players, out=out / "table1", games=2 * games, openings="start",
                        tc=_tc(), seed=seed, event="seed000-table1")]


def seed000_report(results: list[dict], games: int) -> tuple[list[str], dict]:
    res = results[0]
    pairs = {(p["a"], p["b"]): p for p in res["pairings"]}
    names = list(SEED000_PLAYERS)
    lines = [f"Average reward of the row player against the column player (win 1, draw 1/2), "
             f"{games} games per colour per pairing (paper: 40); ours with a 95% interval.", "",
             "| | " + " | ".join(f"vs {SEED000_LONG[n]}" for n in names) + " |",
             "|---|" + "---|" * len(names)]
    bars = []
    for a in names:
        cells = []
        for b in names:
            if a == b:
                cells.append("-")
                continue
            if (a, b) in pairs:
                pr, flip = pairs[(a, b)], False
            else:
                pr, flip = pairs[(b, a)], True
            w, d, l = pr["wins"], pr["draws"], pr["losses"]
            if flip:
                w, l = l, w
            n = w + d + l
            score = (w + 0.5 * d) / n if n else float("nan")
            se = (E.score_variance(w, d, l) / n) ** 0.5 if n else float("nan")
            paper = SEED000_PAPER.get((a, b))
            paper = paper if paper is not None else 1.0 - SEED000_PAPER[(b, a)]
            cells.append(f"paper {paper:.4f} / ours **{score:.3f}** ±{E.Z95 * se:.3f}")
            bars.append((f"{a} vs {b}", paper, score, E.Z95 * se))
        lines.append(f"| {SEED000_LONG[a]} | " + " | ".join(cells) + " |")
    lines += ["", "Our round robin in full:", "", "```", _table_text(res), "```"]
    return lines, {"bars": bars}


# --- seed 002 -----------------------------------------------------------------------------------

def seed002_configs(out: Path, games: int, seed: int) -> list[MatchConfig]:
    configs = []
    for sims in SEED002_SIMS:
        for rollout in SEED002_ROLLOUTS:
            r = "" if rollout == "random" else f",rollout={rollout}"
            players = [f"ocba=agent:ocba:simulations={sims}{r}",
                       f"uct=agent:uct:reward=ratio,form=plain,c=1{r}"]
            tc = TimeControl(playouts=sims, tree_reuse=False)
            configs.append(MatchConfig(players=players, out=out / f"sims{sims}-{rollout}",
                                       games=2 * games, openings="start", tc=tc, seed=seed,
                                       event=f"seed002-{sims}-{rollout}"))
    return configs


def _colour_split(res: dict, name: str) -> dict:
    p = _by_name(res)[name]
    return {"black": p["as_black"], "white": p["as_white"]}


def seed002_report(results: list[dict], games: int) -> tuple[list[str], dict]:
    lines = [f"{games} games per colour per setting (paper: {SEED002_GAMES}); each side "
             "gets the same number of playouts per move.  As in the paper's table, "
             "'White vs Black' lists the white player's wins - the black player's wins.", "",
             "| setting | OCBA (W) vs UCT (B): paper | ours | UCT (W) vs OCBA (B): paper | ours "
             "| OCBA wins: paper | ours (95% interval) | ties: paper | ours "
             "| playouts/move OCBA, UCT |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    bars = []
    i = 0
    for sims in SEED002_SIMS:
        for rollout in SEED002_ROLLOUTS:
            res = results[i]
            i += 1
            ocba, uct = _colour_split(res, "ocba"), _colour_split(res, "uct")
            (p_ow, p_ub), (p_uw, p_ob) = SEED002_PAPER[(sims, rollout)]
            o_w, u_b = ocba["white"]["wins"], uct["black"]["wins"]
            u_w, o_b = uct["white"]["wins"], ocba["black"]["wins"]
            n = _by_name(res)["ocba"]["games"]
            wins = ocba["white"]["wins"] + ocba["black"]["wins"]
            ties = _by_name(res)["ocba"]["draws"]
            lo, hi = E.wilson_interval(wins, n)
            p_wins, p_ties = p_ow + p_ob, 2 * SEED002_GAMES - (p_ow + p_ub + p_uw + p_ob)
            pl = _by_name(res)
            lines.append(
                f"| {sims} sims, {'heuristic' if rollout == 'heuristic' else 'no heuristic'} "
                f"| {p_ow} - {p_ub} | {o_w} - {u_b} | {p_uw} - {p_ob} | {u_w} - {o_b} "
                f"| {100 * p_wins / (2 * SEED002_GAMES):.1f}% "
                f"| **{100 * wins / n:.1f}%** ({100 * lo:.1f}-{100 * hi:.1f}) "
                f"| {100 * p_ties / (2 * SEED002_GAMES):.1f}% | {100 * ties / n:.1f}% "
                f"| {pl['ocba']['mean_playouts']:.0f}, {pl['uct']['mean_playouts']:.0f} |")
            bars.append((f"{sims}, {rollout}", p_wins / (2 * SEED002_GAMES), wins / n,
                         lo, hi))
    return lines, {"bars": bars}


# --- seed 004 -----------------------------------------------------------------------------------

def seed004_configs(out: Path, games: int, seed: int) -> list[MatchConfig]:
    configs = []
    for black in ("random", "pseudo-random"):
        for white in ("random", "pseudo-random"):
            players = [f"{black}_black=agent:{black}", f"{white}_white=agent:{white}"]
            configs.append(MatchConfig(players=players, out=out / f"table1-{black}-{white}",
                                       games=50 * games, openings="start", swap=False,
                                       tc=_tc(), seed=seed, event="seed004-table1"))
    for variant, extra in SEED004_VARIANTS.items():
        for nsims in SEED004_NSIMS:
            for iters in SEED004_ITERS:
                name = f"{variant}-n{nsims}-i{iters}"
                players = [f"mcts=agent:dk:nSims={nsims},max_iter={iters}{extra}",
                           "pseudo-random=agent:pseudo-random"]
                configs.append(MatchConfig(players=players, out=out / f"fig1-{name}",
                                           games=games, openings="start", swap=False,
                                           tc=_tc(), seed=seed, event=f"seed004-{name}"))
    return configs


def seed004_report(results: list[dict], games: int) -> tuple[list[str], dict]:
    lines = [f"Table 1: games won by black (B), by white (W) and drawn (D); {50 * games} games "
             "per cell (paper: 10,000), black's policy by row.", "",
             "| black \\ white | random: paper | ours | pseudo-random: paper | ours |",
             "|---|---|---|---|---|"]
    table = results[:4]
    i = 0
    black_rates = {}
    rows = {}
    for black in ("random", "pseudo-random"):
        cells = []
        for white in ("random", "pseudo-random"):
            c = table[i]["colors"]
            i += 1
            n = c["black"] + c["white"] + c["draw"]
            pb, pw, pd = SEED004_TABLE[(black, white)]
            cells.append(f"B {pb} / W {pw} / D {pd} ({pb / 100:.1f}% black) | "
                         f"B {c['black']} / W {c['white']} / D {c['draw']} "
                         f"(**{100 * c['black'] / n:.1f}%** black)")
            black_rates[(black, white)] = c["black"] / n
        rows[black] = cells
        lines.append(f"| {black} | " + " | ".join(cells) + " |")
    lines += ["", f"Fig. 1: win rate of MCTS (black) against pseudo-random play (white), "
              f"{games} games per point; in brackets the 95% interval.", "",
              "| max_iter | " + " | ".join(f"{v} nSims={n}" for v in SEED004_VARIANTS
                                           for n in SEED004_NSIMS) + " |",
              "|---|" + "---|" * (len(SEED004_VARIANTS) * len(SEED004_NSIMS))]
    series: dict[tuple[str, int], list[tuple[int, float, float, float]]] = {}
    fig = results[4:]
    j = 0
    for variant in SEED004_VARIANTS:
        for nsims in SEED004_NSIMS:
            for iters in SEED004_ITERS:
                res = fig[j]
                j += 1
                p = _by_name(res)["mcts"]
                lo, hi = E.wilson_interval(p["wins"], p["games"])
                series.setdefault((variant, nsims), []).append(
                    (iters, p["wins"] / p["games"], lo, hi))
    for k, iters in enumerate(SEED004_ITERS):
        cells = []
        for variant in SEED004_VARIANTS:
            for nsims in SEED004_NSIMS:
                _, rate, lo, hi = series[(variant, nsims)][k]
                cells.append(f"{100 * rate:.1f}% ({100 * lo:.0f}-{100 * hi:.0f})")
        lines.append(f"| {iters} | " + " | ".join(cells) + " |")
    lines += ["", "The post gives Fig. 1 as a picture only; its text says:", ""]
    lines += [f"* {c}" for c in SEED004_CLAIMS]
    bench = black_rates[("random", "random")]
    lines += ["", f"Our benchmark (random against random, black's win rate): {100 * bench:.1f}%; "
              f"random black against pseudo-random white: "
              f"{100 * black_rates[('random', 'pseudo-random')]:.1f}%."]
    return lines, {"series": series, "benchmark": bench,
                   "random_vs_pseudo": black_rates[("random", "pseudo-random")]}


EXPERIMENTS = {
    "seed000": ("Seed 000, Table 1: Shallow Search, Min-Max Search and MCTS with UCB1",
                seed000_configs, seed000_report, 40),
    "seed002": ("Seed 002, Table 1: MCTS-OCBA against MCTS-UCT", seed002_configs,
                seed002_report, SEED002_GAMES),
    "seed004": ("Seed 004, Fig. 1 and Table 1: MCTS against (pseudo-)random play",
                seed004_configs, seed004_report, 200),
}


def _table_text(res: dict) -> str:
    from .results import format_table

    return format_table(res)


# --- plots --------------------------------------------------------------------------------------

def write_plots(name: str, data: dict, out: Path) -> list[Path]:
    from .plots import pyplot

    plt = pyplot()
    if plt is None:
        return []
    if name == "seed000":
        bars = data["bars"]
        fig, ax = plt.subplots(figsize=(8, 4))
        xs = range(len(bars))
        ax.bar([x - 0.2 for x in xs], [b[1] for b in bars], 0.4, label="paper")
        ax.bar([x + 0.2 for x in xs], [b[2] for b in bars], 0.4, yerr=[b[3] for b in bars],
               capsize=4, label="ours (95%)")
        ax.axhline(0.5, color="grey", lw=0.8)
        ax.set_xticks(list(xs), [b[0] for b in bars], rotation=20, ha="right")
        ax.set_ylabel("average reward of the first player")
        ax.set_ylim(0, 1)
        ax.set_title("Seed 000 Table 1: paper against ours")
        ax.legend()
    elif name == "seed002":
        bars = data["bars"]
        fig, ax = plt.subplots(figsize=(8, 4))
        xs = range(len(bars))
        ax.bar([x - 0.2 for x in xs], [100 * b[1] for b in bars], 0.4, label="paper")
        ax.bar([x + 0.2 for x in xs], [100 * b[2] for b in bars], 0.4,
               yerr=[[100 * (b[2] - b[3]) for b in bars], [100 * (b[4] - b[2]) for b in bars]],
               capsize=4, label="ours (95%)")
        ax.axhline(50, color="grey", lw=0.8)
        ax.set_xticks(list(xs), [b[0] for b in bars])
        ax.set_xlabel("simulations per move, rollout policy")
        ax.set_ylabel("OCBA wins %")
        ax.set_ylim(0, 100)
        ax.set_title("Seed 002 Table 1: MCTS-OCBA against MCTS-UCT")
        ax.legend()
    else:
        fig, ax = plt.subplots(figsize=(8, 5))
        for (variant, nsims), pts in data["series"].items():
            xs = [p[0] for p in pts]
            label = f"{'MCTS + domain knowledge' if variant == 'dk' else 'MCTS'}, nSims={nsims}"
            line, = ax.plot(xs, [100 * p[1] for p in pts], marker="o", label=label)
            ax.fill_between(xs, [100 * p[2] for p in pts], [100 * p[3] for p in pts],
                            color=line.get_color(), alpha=0.15)
        ax.axhline(46, color="grey", ls="--", lw=1, label="paper's benchmark (46%)")
        ax.axhline(100 * data["random_vs_pseudo"], color="black", ls=":", lw=1,
                   label="ours: random black vs pseudo-random")
        ax.set_xscale("log")
        ax.set_xticks(list(SEED004_ITERS), [str(i) for i in SEED004_ITERS])
        ax.set_xlabel("max_iter")
        ax.set_ylabel("win rate of MCTS as black, %")
        ax.set_ylim(0, 101)
        ax.set_title("Seed 004 Fig. 1: MCTS against pseudo-random play")
        ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    path = out / f"reproduce-{name}.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return [path]


# --- entry --------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="othello-match reproduce",
                                description="Run a seed paper's competition and compare.")
    p.add_argument("experiment", choices=list(EXPERIMENTS))
    p.add_argument("--games", type=int, default=None,
                   help="games per colour per pairing (seed000: 40, seed002: 250) or per "
                        "point of Fig. 1 (seed004: 200; its Table 1 plays 50x that)")
    p.add_argument("--concurrency", type=int, default=os.cpu_count() or 1)
    p.add_argument("--out", help="output directory (default othello-reproduce-EXPERIMENT)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--max-games", type=int, help="play at most this many games now")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--log-level", default="warning",
                   choices=["debug", "info", "warning", "error"])
    args = p.parse_args(argv)
    configure_logging(args.log_level)
    title, make, report, default_games = EXPERIMENTS[args.experiment]
    games = args.games or default_games
    out = Path(args.out or f"othello-reproduce-{args.experiment}")
    configs = make(out, games, args.seed)
    try:
        results = run_matches(configs, concurrency=args.concurrency, max_games=args.max_games,
                              progress=not args.no_progress, plots=False)
    except KeyboardInterrupt:
        sys.stderr.write("\ninterrupted; run the same command again to resume\n")
        return 130
    except MatchError as e:
        sys.stderr.write(f"othello-match: {e}\n")
        return 2
    played = sum(r["games_played"] for r in results)
    scheduled = sum(r["games_scheduled"] for r in results)
    game_seconds = sum(r["game_seconds"] for r in results)
    first = min((r["first_start"] for r in results if r["first_start"]), default=None)
    last = max((r["last_end"] for r in results if r["last_end"]), default=None)
    span = (last - first) if first is not None else 0.0
    body, data = report(results, games)
    command = "othello-match reproduce " + " ".join(
        shlex.quote(a) for a in (argv if argv is not None else sys.argv[2:]))
    lines = [f"# {title}", "", f"Command: `{command}`", "",
             f"{played} of {scheduled} games, {game_seconds:.0f} s of game time in "
             f"{span:.0f} s of wall time with {args.concurrency} worker processes.", ""] + body
    complete = all(r["complete"] for r in results)
    if not complete:
        lines += ["", "**Incomplete**: run the same command again to play the rest."]
    text = "\n".join(lines)
    print(text)
    out.mkdir(parents=True, exist_ok=True)
    pngs = write_plots(args.experiment, data, out)
    if args.experiment == "seed000":
        from .plots import write_match_plots

        pngs += write_match_plots(results[0], out, prefix="reproduce-seed000-")
    md = text + "\n" + "".join(f"\n![{p.stem}]({p.name})\n" for p in pngs)
    report_path = out / f"reproduce-{args.experiment}.md"
    report_path.write_text(md + "\n")
    sys.stderr.write(f"report: {report_path}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
