"""Figures for docs/net/: loss curves of a run, and Elo by generation for the loop."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def _plt() -> Any:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def losses(history: list[dict[str, Any]], path: Path, title: str) -> None:
    """Training and held-out losses by step (the rows a Trainer logs)."""
    plt = _plt()
    rows = [r for r in history if "train_policy_loss" in r]
    if not rows:
        return
    x = [r.get("global_step", r["step"]) for r in rows]
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4))
    a1.plot(x, [r["train_policy_loss"] for r in rows], label="policy (train)")
    a2.plot(x, [r["train_value_loss"] for r in rows], label="value MSE (train)")
    test = [r for r in rows if "test_policy_loss" in r]
    if test:
        xt = [r.get("global_step", r["step"]) for r in test]
        a1.plot(xt, [r["test_policy_loss"] for r in test], "o-", label="policy (held out)")
        a2.plot(xt, [r["test_value_mse"] for r in test], "o-", label="value MSE (held out)")
        if all(r.get("test_top1") is not None for r in test):
            ax = a1.twinx()
            ax.plot(xt, [r["test_top1"] for r in test], "s--", color="tab:green",
                    label="top-1 (held out)")
            ax.set_ylabel("top-1 accuracy")
            ax.legend(loc="center right")
    a1.set_xlabel("step")
    a2.set_xlabel("step")
    a1.set_ylabel("cross-entropy (nats)")
    a2.set_ylabel("(z - v)^2")
    a1.grid(alpha=0.3)
    a1.legend(loc="upper center")
    a2.grid(alpha=0.3)
    a2.legend(loc="upper right")
    fig.suptitle(title)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def elo_by_generation(gens: list[dict[str, Any]], path: Path, title: str) -> None:
    """Each gate's Elo of the candidate over the best (95% interval), and the best's cumulative
    Elo over generation 0 (accepted gates only add up)."""
    plt = _plt()
    rows = [g for g in gens if "gate" in g]
    if not rows:
        return
    x = [g["generation"] for g in rows]
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4))
    for g in rows:
        e = g["gate"]["elo"]
        lo = e["low"] if e["low"] is not None else -800
        hi = e["high"] if e["high"] is not None else 800
        mid = e["elo"] if e["elo"] is not None else (800 if e["low"] is not None else -800)
        col = "tab:green" if g["gate"]["accepted"] else "tab:red"
        a1.errorbar([g["generation"]], [mid], yerr=[[mid - lo], [hi - mid]], fmt="o",
                    color=col, capsize=3)
    a1.axhline(0, color="grey", lw=0.8)
    a1.set_xlabel("generation")
    a1.set_ylabel("candidate - best (Elo, 95%)")
    a1.set_title("gates (green: accepted)")
    a2.plot(x, [g.get("best_elo", 0.0) for g in rows], "o-")
    a2.set_xlabel("generation")
    a2.set_ylabel("best net's Elo over generation 0")
    for a in (a1, a2):
        a.grid(alpha=0.3)
    fig.suptitle(title)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


__all__ = ["elo_by_generation", "losses"]
