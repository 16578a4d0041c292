"""PNG plots of match results (matplotlib, optional: without it the plots are skipped with a
note on the log)."""

from __future__ import annotations

from pathlib import Path

from engine_server.log import get_logger

log = get_logger("match.plots")


def pyplot():
    """matplotlib's pyplot on the file-only backend, or None when matplotlib is missing."""
    try:
        import matplotlib
    except ImportError:
        log.warning("plots_skipped", why="matplotlib is not installed (pip install "
                    "'othello-engine-server[plots]')")
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def write_match_plots(results: dict, out: Path, prefix: str = "") -> list[Path]:
    plt = pyplot()
    if plt is None:
        return []
    written = []
    names = results["matrix"]["names"]
    scores = results["matrix"]["score"]
    n = len(names)
    fig, ax = plt.subplots(figsize=(1.2 * n + 3, 1.0 * n + 2))
    grid = [[float("nan") if v is None else 100.0 * v for v in row] for row in scores]
    im = ax.imshow(grid, cmap="RdYlGn", vmin=0, vmax=100)
    for i in range(n):
        for j in range(n):
            if scores[i][j] is not None:
                ax.text(j, i, f"{100 * scores[i][j]:.0f}", ha="center", va="center", fontsize=9)
    ax.set_xticks(range(n), names, rotation=35, ha="right", fontsize=8)
    ax.set_yticks(range(n), names, fontsize=8)
    ax.set_xlabel("opponent")
    ax.set_title(f"score % of row against column ({results['games_played']} games)")
    fig.colorbar(im, ax=ax, label="score %")
    fig.tight_layout()
    path = out / f"{prefix}score_matrix.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    written.append(path)

    players = [p for p in results["players"] if p["games"]]
    if players:
        fig, ax = plt.subplots(figsize=(max(5.0, 1.1 * len(players) + 2), 4))
        xs = range(len(players))
        elo = [p["elo"] for p in players]
        err = [[p["elo"] - p["elo_low"] for p in players],
               [p["elo_high"] - p["elo"] for p in players]]
        ax.errorbar(xs, elo, yerr=err, fmt="o", capsize=5)
        ax.axhline(0, color="grey", lw=0.8)
        ax.set_xticks(list(xs), [p["name"] for p in players], rotation=25, ha="right",
                      fontsize=8)
        ax.set_ylabel(f"Elo (relative to {results['rating_anchor']})")
        ax.set_title("Elo with 95% intervals")
        fig.tight_layout()
        path = out / f"{prefix}elo.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written
