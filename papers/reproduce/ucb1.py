"""The UCB1 paper Table 1: round robin of Shallow Search (n=100), Min-Max Search (n=10, k=3) and
MCTS with UCB1 (n=50, N=1200), 40 games per colour per pairing, average reward (win 1, draw 1/2)."""

from __future__ import annotations

from pathlib import Path

from clients.match import elo as E
from clients.match.config import MatchConfig

from .common import table_text, tc

UCB1_PAPER = {  # Table 1: average reward of the row player against the column player
    ("shallow", "minmax"): 0.5875, ("shallow", "ucb1"): 0.325, ("minmax", "ucb1"): 0.25,
}
UCB1_PLAYERS = {"shallow": "agent:shallow:n=100", "minmax": "agent:minmax:n=10,k=3",
                   "ucb1": "agent:ucb1:n=50,N=1200"}
UCB1_LONG = {"shallow": "Shallow Search", "minmax": "Min-Max Search",
                "ucb1": "MCTS with UCB1"}


def ucb1_configs(out: Path, games: int, seed: int) -> list[MatchConfig]:
    players = [f"{k}={v}" for k, v in UCB1_PLAYERS.items()]
    return [MatchConfig(players=players, out=out / "table1", games=2 * games, openings="start",
                        tc=tc(), seed=seed, event="seed000-table1")]


def ucb1_report(results: list[dict], games: int, seed: int) -> tuple[list[str], dict]:
    res = results[0]
    pairs = {(p["a"], p["b"]): p for p in res["pairings"]}
    names = list(UCB1_PLAYERS)
    lines = [f"Average reward of the row player against the column player (win 1, draw 1/2), "
             f"{games} games per colour per pairing (paper: 40); ours with a 95% interval.", "",
             "| | " + " | ".join(f"vs {UCB1_LONG[n]}" for n in names) + " |",
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
            paper = UCB1_PAPER.get((a, b))
            paper = paper if paper is not None else 1.0 - UCB1_PAPER[(b, a)]
            cells.append(f"paper {paper:.4f} / ours **{score:.3f}** ±{E.Z95 * se:.3f}")
            bars.append((f"{a} vs {b}", paper, score, E.Z95 * se))
        lines.append(f"| {UCB1_LONG[a]} | " + " | ".join(cells) + " |")
    lines += ["", "Our round robin in full:", "", "```", table_text(res), "```"]
    return lines, {"bars": bars}
