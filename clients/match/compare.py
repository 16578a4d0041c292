"""Two matches on the same openings, game by game (``othello-match compare DIR_A DIR_B``).

When two versions of a player meet the same opponent with the same ``--seed`` (the same
openings, colours and rounds), each game of one match has a twin in the other.  Against an
opponent that plays the same moves in the same position (NTest at a fixed depth), a game whose
result differs was changed by the player, so the per-game difference in points measures the
change with far less noise than the two scores apart: most games come out the same and add
nothing to the spread.  Reported: the games matched, how many changed, the mean difference a
game (B minus A) with its 95% interval (normal approximation of the differences), and each
match's score over the matched games.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from .config import MatchError
from .elo import Z95
from .journal import Journal
from .record import POINTS, GameRecord


@dataclass(frozen=True)
class Comparison:
    player_a: str
    player_b: str
    games: int              # games with a twin in the other match
    changed: int            # of those, games whose result differs
    score_a: float          # the player's score over the matched games, match A
    score_b: float
    mean_diff: float        # B minus A, points a game
    low: float
    high: float
    only_a: int             # games without a twin
    only_b: int


def _first_player(records: list[GameRecord]) -> str:
    if not records:
        raise MatchError("no games in the journal")
    return records[0].pairing.partition(" vs ")[0]


def _by_game(records: list[GameRecord], player: str) -> dict[tuple[int, int, int], float]:
    """The player's points by (opening, colour swap, round)."""
    out: dict[tuple[int, int, int], float] = {}
    for r in records:
        outcome = r.outcome_for(player)
        if outcome is not None:
            out[(r.opening_index, r.swap, r.round)] = POINTS[outcome]
    return out


def compare(records_a: list[GameRecord], records_b: list[GameRecord],
            player_a: str | None = None, player_b: str | None = None) -> Comparison:
    """The game-by-game comparison of ``player_a`` in match A and ``player_b`` in match B
    (each by default the first player of its match's pairings)."""
    pa = player_a or _first_player(records_a)
    pb = player_b or _first_player(records_b)
    a, b = _by_game(records_a, pa), _by_game(records_b, pb)
    if not a:
        raise MatchError(f"match A has no game of {pa!r}")
    if not b:
        raise MatchError(f"match B has no game of {pb!r}")
    keys = sorted(a.keys() & b.keys())
    if not keys:
        raise MatchError("the two matches share no game (same openings, colours and rounds: "
                         "the same --seed and --openings)")
    diffs = [b[k] - a[k] for k in keys]
    n = len(diffs)
    mean = sum(diffs) / n
    var = sum((d - mean) ** 2 for d in diffs) / (n - 1) if n > 1 else 0.0
    half = Z95 * math.sqrt(var / n)
    return Comparison(
        player_a=pa, player_b=pb, games=n, changed=sum(1 for d in diffs if d != 0),
        score_a=sum(a[k] for k in keys) / n, score_b=sum(b[k] for k in keys) / n,
        mean_diff=mean, low=mean - half, high=mean + half,
        only_a=len(a.keys() - b.keys()), only_b=len(b.keys() - a.keys()))


def format_comparison(c: Comparison) -> str:
    lines = [f"{c.games} games matched by opening, colour and round "
             f"({c.only_a} only in A, {c.only_b} only in B); {c.changed} results differ",
             f"A ({c.player_a}): {100 * c.score_a:.1f}%   B ({c.player_b}): "
             f"{100 * c.score_b:.1f}%",
             f"B - A: {c.mean_diff:+.3f} points a game [{c.low:+.3f}, {c.high:+.3f}] (95%)"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="othello-match compare",
        description="Compare two matches played on the same openings, game by game.")
    ap.add_argument("a", type=Path, help="the first match's directory (its journal.jsonl)")
    ap.add_argument("b", type=Path, help="the second match's directory")
    ap.add_argument("--player-a", help="the player compared in A (default: the first one)")
    ap.add_argument("--player-b", help="the player compared in B (default: the first one)")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args(argv)
    try:
        recs = []
        for d in (args.a, args.b):
            if not (d / "journal.jsonl").is_file():
                raise MatchError(f"{d} holds no journal.jsonl")
            recs.append(Journal(d).load())
        c = compare(recs[0], recs[1], args.player_a, args.player_b)
    except MatchError as e:
        sys.stderr.write(f"othello-match compare: {e}\n")
        return 2
    print(json.dumps(asdict(c), indent=2) if args.json else format_comparison(c))
    return 0
