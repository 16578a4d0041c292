"""The reproduction's own figure per seed: the paper's numbers against ours."""

from __future__ import annotations

from pathlib import Path

from .dk import DK_ITERS


def write_plots(name: str, data: dict, out: Path) -> list[Path]:
    from clients.match.plots import pyplot

    plt = pyplot()
    if plt is None:
        return []
    if name == "ucb1":
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
        ax.set_title("The UCB1 paper Table 1: paper against ours")
        ax.legend()
    elif name == "uct":
        bars = data["bars"]
        fig, ax = plt.subplots(figsize=(8, 4))
        xs = range(len(bars))
        ax.bar(list(xs), [100 * b[1] for b in bars], 0.6,
               yerr=[[100 * (b[1] - b[2]) for b in bars], [100 * (b[3] - b[1]) for b in bars]],
               capsize=4, label="ours (95%)")
        ax.axhline(50, color="grey", lw=0.8)
        ax.set_xticks(list(xs), [b[0] for b in bars], rotation=20, ha="right")
        ax.set_ylabel("score of the paper's choice, %")
        ax.set_ylim(0, 100)
        ax.set_title("The CS303 report (reversed rules): the paper's choices against the others")
        ax.legend()
    elif name == "ocba":
        bars = data["bars"]
        fig, ax = plt.subplots(figsize=(10, 4))
        xs = range(len(bars))
        ax.bar([x - 0.2 for x in xs], [100 * b[1] for b in bars], 0.4, label="paper")
        ax.bar([x + 0.2 for x in xs], [100 * b[2] for b in bars], 0.4,
               yerr=[[100 * (b[2] - b[3]) for b in bars], [100 * (b[4] - b[2]) for b in bars]],
               capsize=4, label="ours (95%)")
        ax.axhline(50, color="grey", lw=0.8)
        ax.set_xticks(list(xs), [b[0] for b in bars], rotation=20, ha="right")
        ax.set_xlabel("simulations per move, rollout policy (fix: OCBA n0=1,sigma=equal)")
        ax.set_ylabel("OCBA wins %")
        ax.set_ylim(0, 100)
        ax.set_title("The OCBA paper Table 1: MCTS-OCBA against MCTS-UCT")
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
        ax.axhline(37, color="grey", ls=":", lw=1,
                   label="paper: random black vs pseudo-random (37.0%)")
        ax.axhline(100 * data["random_vs_pseudo"], color="black", ls=":", lw=1,
                   label="ours: random black vs pseudo-random")
        ax.set_xscale("log")
        ax.set_xticks(list(DK_ITERS), [str(i) for i in DK_ITERS])
        ax.set_xlabel("max_iter")
        ax.set_ylabel("win rate of MCTS as black, %")
        ax.set_ylim(0, 101)
        ax.set_title("The MCTS blog post Fig. 1: MCTS against pseudo-random play")
        ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    path = out / f"reproduce-{name}.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return [path]
