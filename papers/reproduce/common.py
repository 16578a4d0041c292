"""Helpers the seed modules share: the time control, a match's players by name, head-to-head
scores with their intervals, verdicts on a claim and a match's table as text."""

from __future__ import annotations

from clients.match import elo as E
from clients.match.players import TimeControl


def tc() -> TimeControl:
    return TimeControl(tree_reuse=False)


def by_name(results: dict) -> dict:
    return {p["name"]: p for p in results["players"]}


def score(w: int, d: int, l: int) -> tuple[float, float, float]:
    """Score of a head-to-head result (win 1, draw 1/2) with its 95% Wilson interval, which
    stays sane at 0% and 100% where the normal approximation collapses to a point."""
    n = w + d + l
    if n == 0:
        return float("nan"), 0.0, 1.0
    lo, hi = E.wilson_interval(w + 0.5 * d, n)
    return (w + 0.5 * d) / n, lo, hi


def verdict(lo: float, hi: float, ahead: str, behind: str) -> str:
    """Whether an interval of ``ahead``'s score says it is stronger than ``behind``."""
    if lo > 0.5:
        return f"{ahead} is ahead: the claim holds"
    if hi < 0.5:
        return f"{behind} is ahead: the claim fails"
    return "no significant difference: the claim is not shown"


def pair(res: dict, a: str, b: str) -> tuple[int, int, int]:
    """W/D/L of ``a`` against ``b`` from a match's pairings."""
    for pr in res["pairings"]:
        if (pr["a"], pr["b"]) == (a, b):
            return pr["wins"], pr["draws"], pr["losses"]
        if (pr["a"], pr["b"]) == (b, a):
            return pr["losses"], pr["draws"], pr["wins"]
    raise KeyError((a, b))


def table_text(res: dict) -> str:
    from clients.match.results import format_table

    return format_table(res)
