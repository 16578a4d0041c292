"""Elo arithmetic for match tables: scores, intervals, multi-player ratings and an SPRT.

Conventions: a win scores 1, a draw 1/2; Elo differences use the logistic curve
``E = 1 / (1 + 10^(-d/400))``; 95% intervals use z = 1.96.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

import numpy as np

Z95 = 1.959963984540054
ELO_PER_NAT = 400.0 / math.log(10.0)


def expected_score(elo_diff: float) -> float:
    return 1.0 / (1.0 + 10.0 ** (-elo_diff / 400.0))


def elo_from_score(score: float) -> float:
    """Elo difference that makes ``score`` the expected score; +-inf at 1 and 0."""
    if score >= 1.0:
        return math.inf
    if score <= 0.0:
        return -math.inf
    return -400.0 * math.log10(1.0 / score - 1.0)


@dataclass(frozen=True)
class Interval:
    elo: float
    low: float
    high: float

    @property
    def half_width(self) -> float:
        return 0.5 * (self.high - self.low)

    def as_dict(self) -> dict:
        return {"elo": finite_or_none(self.elo), "low": finite_or_none(self.low),
                "high": finite_or_none(self.high)}


def finite_or_none(x: float) -> float | None:
    """JSON has no infinities: an unbounded Elo is written as null."""
    return round(x, 2) + 0.0 if math.isfinite(x) else None


def score_variance(wins: float, draws: float, losses: float) -> float:
    """Per-game variance of the score (trinomial: 1, 1/2, 0)."""
    n = wins + draws + losses
    if n == 0:
        return 0.0
    s = (wins + 0.5 * draws) / n
    return (wins * (1 - s) ** 2 + draws * (0.5 - s) ** 2 + losses * s ** 2) / n


def elo_interval(wins: float, draws: float, losses: float, z: float = Z95) -> Interval:
    """Elo difference of a head-to-head result with its normal-approximation interval (the
    interval of the mean score, mapped through the logistic curve, as cutechess reports it)."""
    if wins + draws + losses == 0:
        return Interval(0.0, -math.inf, math.inf)
    s, lo, hi = score_interval(wins, draws, losses, z)
    return Interval(elo_from_score(s), elo_from_score(lo), elo_from_score(hi))


def score_interval(wins: float, draws: float, losses: float,
                   z: float = Z95) -> tuple[float, float, float]:
    """(score, low, high): the mean score of single games with its normal-approximation
    interval (the same as :func:`elo_interval`, before the logistic curve)."""
    n = wins + draws + losses
    if n == 0:
        return 0.5, 0.0, 1.0
    s = (wins + 0.5 * draws) / n
    se = math.sqrt(score_variance(wins, draws, losses) / n)
    return s, s - z * se, s + z * se


# A game pair (one opening, each side once with black) scores 0, 1/2, 1, 3/2 or 2 points:
# the pentanomial counts.  Its per-game mean is one of these.
PAIR_SCORES = (0.0, 0.25, 0.5, 0.75, 1.0)


def pentanomial(pair_points: list[float]) -> list[int]:
    """The five counts of game pairs that scored 0, 1/2, 1, 3/2 and 2 points."""
    counts = [0] * 5
    for x in pair_points:
        k = round(2 * x)
        if not 0 <= k <= 4 or abs(2 * x - k) > 1e-9:
            raise ValueError(f"a game pair scores 0, 0.5, 1, 1.5 or 2 points, not {x}")
        counts[k] += 1
    return counts


def pair_score_interval(counts: list[int], z: float = Z95) -> tuple[float, float, float]:
    """(score, low, high) from pentanomial counts: the per-game mean score with the interval
    of the mean of the pairs (Fishtest's pentanomial model).  The two games of a pair are not
    independent: a lopsided opening tends to give each player the game in which it has the
    favoured colour, a 1-1 pair that single games count as two results far from the mean.
    The variance of the pairs measures that; the trinomial interval ignores it."""
    n = sum(counts)
    if n == 0:
        return 0.5, 0.0, 1.0
    s = sum(c * x for c, x in zip(counts, PAIR_SCORES)) / n
    var = sum(c * (x - s) ** 2 for c, x in zip(counts, PAIR_SCORES)) / n
    se = math.sqrt(var / n)
    return s, s - z * se, s + z * se


def pair_elo_interval(counts: list[int], z: float = Z95) -> Interval:
    """:func:`pair_score_interval` mapped through the logistic curve."""
    if sum(counts) == 0:
        return Interval(0.0, -math.inf, math.inf)
    s, lo, hi = pair_score_interval(counts, z)
    return Interval(elo_from_score(s), elo_from_score(lo), elo_from_score(hi))


def mean_half_width(xs: list[float], z: float = Z95) -> tuple[float, float]:
    """The mean of paired differences and the half width of its normal interval,
    ``z * stdev / sqrt(n)`` (NaN with fewer than two)."""
    mean = statistics.fmean(xs)
    if len(xs) < 2:
        return mean, math.nan
    return mean, z * statistics.stdev(xs) / math.sqrt(len(xs))


def wilson_interval(successes: float, n: float, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a proportion (win rates in the reproduction tables)."""
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def likelihood_of_superiority(wins: float, losses: float) -> float:
    """P(the first player is stronger), draws ignored (normal approximation)."""
    if wins + losses == 0:
        return 0.5
    return 0.5 * (1.0 + math.erf((wins - losses) / math.sqrt(2.0 * (wins + losses))))


@dataclass
class Rating:
    name: str
    elo: float
    se: float  # standard error in Elo

    @property
    def interval(self) -> Interval:
        return Interval(self.elo, self.elo - Z95 * self.se, self.elo + Z95 * self.se)


def bradley_terry(names: list[str], results: dict[tuple[str, str], tuple[float, float, float]],
                  anchor: str | None = None, prior_elo_sd: float = 1000.0,
                  iterations: int = 100) -> list[Rating]:
    """Ratings of many players from head-to-head results ``(a, b) -> (wins, draws, losses)``
    of a against b.

    The maximum of the Bradley-Terry likelihood (draws as half a win each way) times a wide
    normal prior (``prior_elo_sd``); the prior only matters when a player won or lost every game,
    where the plain maximum does not exist.  Standard errors come from the inverse Hessian.
    Ratings are relative to ``anchor`` (whose rating is then exactly 0) or to the mean.
    """
    n = len(names)
    idx = {name: i for i, name in enumerate(names)}
    games = np.zeros((n, n))
    points = np.zeros((n, n))  # points[i, j]: i's points against j
    for (a, b), (w, d, l) in results.items():
        i, j = idx[a], idx[b]
        games[i, j] += w + d + l
        games[j, i] += w + d + l
        points[i, j] += w + 0.5 * d
        points[j, i] += l + 0.5 * d
    tau2 = (prior_elo_sd / ELO_PER_NAT) ** 2
    r = np.zeros(n)
    hess = -np.eye(n) / tau2
    for _ in range(iterations):
        diff = r[:, None] - r[None, :]
        p = 1.0 / (1.0 + np.exp(-diff))
        grad = (points - games * p).sum(axis=1) - r / tau2
        wgt = games * p * (1.0 - p)
        hess = wgt - np.diag(wgt.sum(axis=1)) - np.eye(n) / tau2
        step = np.linalg.solve(hess, -grad)
        r = r + step
        if np.max(np.abs(step)) < 1e-10:
            break
    cov = np.linalg.inv(-hess)
    if anchor is not None:
        a = idx[anchor]
        contrast = np.eye(n)
        contrast[:, a] -= 1.0
    else:
        contrast = np.eye(n) - np.full((n, n), 1.0 / n)
    rel = contrast @ r
    rel_cov = contrast @ cov @ contrast.T
    se = np.sqrt(np.clip(np.diag(rel_cov), 0.0, None))
    return [Rating(name, float(rel[i] * ELO_PER_NAT), float(se[i] * ELO_PER_NAT))
            for i, name in enumerate(names)]


@dataclass(frozen=True)
class Sprt:
    """Sequential probability ratio test of H0: elo = elo0 against H1: elo = elo1 (logistic
    Elo, the normal approximation of the generalised SPRT as Fishtest used it)."""

    elo0: float
    elo1: float
    alpha: float = 0.05
    beta: float = 0.05

    @classmethod
    def parse(cls, text: str) -> "Sprt":
        parts = [float(x) for x in text.split(",")]
        if len(parts) not in (2, 4):
            raise ValueError("--sprt takes elo0,elo1[,alpha,beta]")
        s = cls(*parts)
        if not s.elo0 < s.elo1:
            raise ValueError("--sprt needs elo0 < elo1")
        if not (0 < s.alpha < 1 and 0 < s.beta < 1):
            raise ValueError("--sprt alpha and beta must be in (0, 1)")
        return s

    @property
    def lower(self) -> float:
        return math.log(self.beta / (1.0 - self.alpha))

    @property
    def upper(self) -> float:
        return math.log((1.0 - self.beta) / self.alpha)

    def llr(self, wins: float, draws: float, losses: float) -> float:
        n = wins + draws + losses
        if n == 0:
            return 0.0
        if min(wins, draws, losses) == 0:
            # A zero count makes the sample variance degenerate (no loss at all gives variance
            # 0 after a few wins); half a game of each kind keeps the estimate finite.
            wins, draws, losses, n = wins + 0.5, draws + 0.5, losses + 0.5, n + 1.5
        s = (wins + 0.5 * draws) / n
        var = score_variance(wins, draws, losses)
        s0, s1 = expected_score(self.elo0), expected_score(self.elo1)
        return n * (s1 - s0) * (2.0 * s - s0 - s1) / (2.0 * var)

    def status(self, wins: float, draws: float, losses: float) -> str:
        """``H1`` (accept elo1), ``H0`` (accept elo0) or ``continue``."""
        v = self.llr(wins, draws, losses)
        if v >= self.upper:
            return "H1"
        if v <= self.lower:
            return "H0"
        return "continue"
