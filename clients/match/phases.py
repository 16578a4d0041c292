"""How each side of a match played, phase by phase, in the part of the game the exact solver
cannot reach: every move of a side that had a choice, from ``--from`` down to ``--to`` empties,
judged by an outside engine's values (``othello-match phases DIR --judge SPEC --depth D``).

Each position of a game in that range is valued by the judge (its value with its move, side to
move's view; an NBoard engine searches to ``--depth``).  A move's *loss* is the judge's value of
the position before it minus its value of the position after it, both from the mover's view:
what the judge thinks the move gave away.  These are estimates, not facts (``turns`` gives the
facts near the end).  Two things follow from that:

* a search's value swings between odd and even depths, so single losses are noisy and even
  their mean over many moves has an offset (often below zero) that is the same for both sides:
  compare the sides, not a side with zero;
* when the judge is also one of the players, its own moves agree with its own search and look
  better than they are: the comparison then flatters the judge.

Per player and band of empties: the moves judged, the mean loss a move and the loss a game; with
two players, the difference between them a game (the first minus the second, paired by game)
with its 95% interval.  The judge's answers are cached in ``--cache`` (default: the match
directory), so a killed run resumes.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from engine_server import __version__
from engine_server.game import PASS, Position
from protocol.notation import square_name

from .config import MatchError
from .elo import mean_half_width
from .record import GameRecord
from .turns import finished_games, game_positions

DEFAULT_FROM = 54
DEFAULT_TO = 27
DEFAULT_BAND = 4

ValuesOf = Callable[[list[Position]], np.ndarray]


@dataclass(frozen=True)
class JudgedMove:
    """One move of a side that had a choice; ``before`` / ``after``: the judge's value of the
    position before the move and after it, both from the mover's view, in discs."""

    game: int
    ply: int
    player: str
    empties: int
    move: str
    before: float
    after: float

    @property
    def loss(self) -> float:
        return self.before - self.after


def judged_moves(records: list[GameRecord], values_of: ValuesOf, first: int = DEFAULT_FROM,
                 last: int = DEFAULT_TO) -> list[JudgedMove]:
    """Every move with a choice played at ``first`` to ``last`` + 1 empties (the positions at
    ``last`` empties only as the positions after a move), judged by ``values_of``."""
    line: list[tuple[int, int, Position, int | None, str]] = []
    for gi, record in enumerate(records):
        for ply, pos, move in game_positions(record):
            if last <= pos.empties <= first and not pos.is_game_over():
                player = record.black if pos.side.name == "BLACK" else record.white
                line.append((gi, ply, pos, move, player))
    if not line:
        return []
    values = values_of([item[2] for item in line])
    value_at = {(gi, ply): (pos, float(v)) for (gi, ply, pos, _, _), v in zip(line, values)}
    out = []
    for gi, ply, pos, move, player in line:
        nxt = value_at.get((gi, ply + 1))
        if (move is None or move == PASS or nxt is None or pos.empties == last
                or len(pos.legal_moves()) < 2):
            continue
        after_pos, after = nxt
        if after_pos.side != pos.side:
            after = -after
        out.append(JudgedMove(gi, ply, player, pos.empties, square_name(move),
                              value_at[(gi, ply)][1], after))
    return out


def bands(first: int, last: int, width: int) -> list[tuple[int, int]]:
    """(high, low) bands of ``width`` empties from ``first`` down to the last move judged."""
    out, hi = [], first
    while hi > last:
        lo = max(hi - width + 1, last + 1)
        out.append((hi, lo))
        hi = lo - 1
    return out


def _interval(xs: list[float]) -> tuple[float, float, float]:
    mean, half = mean_half_width(xs, z=1.96)
    return mean, mean - half, mean + half


def summarize(records: list[GameRecord], moves: list[JudgedMove],
              rows: list[tuple[int, int]]) -> dict[str, object]:
    """Per player and band (and all bands together, where there are several): moves, mean
    loss a move, loss a game; with two players, their difference a game paired by game, with
    its 95% interval."""
    players = sorted({name for r in records for name in (r.black, r.white)})
    every = [*rows, (rows[0][0], rows[-1][1])] if len(rows) > 1 else rows
    out: dict[str, object] = {"games": len(records), "players": players, "bands": []}
    for hi, lo in every:
        inside = [m for m in moves if lo <= m.empties <= hi]
        row: dict[str, object] = {"empties": [hi, lo]}
        per_game = {p: [0.0] * len(records) for p in players}
        for m in inside:
            per_game[m.player][m.game] += m.loss
        for p in players:
            mine = [m.loss for m in inside if m.player == p]
            row[p] = {"moves": len(mine),
                      "loss_per_move": round(statistics.fmean(mine), 3) if mine else None,
                      "loss_per_game": round(sum(mine) / len(records), 3) if records else None}
        if len(players) == 2 and records:
            a, b = players
            # only games both played (a tournament's journal may hold other pairings)
            both = [i for i, r in enumerate(records) if {r.black, r.white} == {a, b}]
            if both:
                mean, low, high = _interval([per_game[a][i] - per_game[b][i] for i in both])
                row["difference_per_game"] = [round(x, 3) for x in (mean, low, high)]
        out["bands"].append(row)   # type: ignore[attr-defined]
    return out


def format_summary(summary: dict[str, object], judge: str, depth: int) -> str:
    players: list[str] = summary["players"]   # type: ignore[assignment]
    lines = [f"{summary['games']} games; each move with a choice judged by {judge} at depth "
             f"{depth}: loss = its value before the move - after it (mover's view, discs)"]
    head = f"{'empties':<9}" + "".join(f"{p[:14] + ' moves':>21}{'loss/move':>10}{'loss/game':>10}"
                                       for p in players)
    if len(players) == 2:
        head += f"   {players[0]} - {players[1]} a game [95%]"
    lines.append(head)
    for row in summary["bands"]:     # type: ignore[attr-defined]
        hi, lo = row["empties"]
        text = f"{f'{hi}-{lo}':<9}"
        for p in players:
            r = row[p]
            per_move = "-" if r["loss_per_move"] is None else f"{r['loss_per_move']:+.2f}"
            per_game = "-" if r["loss_per_game"] is None else f"{r['loss_per_game']:+.2f}"
            text += f"{r['moves']:>21}{per_move:>10}{per_game:>10}"
        if "difference_per_game" in row:
            mean, low, high = row["difference_per_game"]
            text += f"   {mean:+.2f} [{low:+.2f}, {high:+.2f}]"
        lines.append(text)
    return "\n".join(lines)


def run(directory: Path, judge: str, depth: int, first: int = DEFAULT_FROM,
        last: int = DEFAULT_TO, width: int = DEFAULT_BAND, move_time: float = 30.0,
        cache: Path | None = None, log: Callable[[str], None] = lambda s: None
        ) -> tuple[list[GameRecord], list[JudgedMove], dict[str, object]]:
    """Judge every game of the match in ``directory`` (its ``journal.jsonl``)."""
    from .outside_judge import JudgeError, judge_values

    records = finished_games(directory)

    def values_of(positions: list[Position]) -> np.ndarray:
        log(f"{len(positions)} positions to judge")
        try:
            return judge_values(positions, judge, depth, move_time, log,
                                directory if cache is None else cache)
        except JudgeError as e:
            raise MatchError(str(e)) from None

    moves = judged_moves(records, values_of, first, last)
    return records, moves, summarize(records, moves, bands(first, last, width))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="othello-match phases",
        description="How each side of a match played, by bands of empties: every move with a "
                    "choice from --from to --to empties judged by an outside engine (the "
                    "value it gives the position before the move minus the value after it). "
                    "Estimates: compare the sides, not a side with zero.")
    parser.add_argument("--version", action="version",
                        version=f"othello-match phases {__version__}")
    parser.add_argument("directory", type=Path, help="a match's --out directory")
    parser.add_argument("--judge", required=True,
                        help="the judge, a player spec of othello-match (e.g. "
                             "ntest=nboard:/path/to/ntest)")
    parser.add_argument("--depth", type=int, required=True,
                        help="the judge's search depth (an NBoard engine's `set depth`)")
    parser.add_argument("--from", dest="first", type=int, default=DEFAULT_FROM,
                        help=f"judge moves from this many empties (default {DEFAULT_FROM})")
    parser.add_argument("--to", dest="last", type=int, default=DEFAULT_TO,
                        help=f"down to the positions of this many empties (default "
                             f"{DEFAULT_TO}; `turns` judges exactly from about 26)")
    parser.add_argument("--band", type=int, default=DEFAULT_BAND,
                        help=f"empties a row (default {DEFAULT_BAND})")
    parser.add_argument("--judge-time", type=float, default=30.0,
                        help="seconds the judge may take a position (default 30: the depth, "
                             "not the clock, should end its search)")
    parser.add_argument("--cache", type=Path, default=None,
                        help="where the judge's answers are kept (default: the match directory)")
    parser.add_argument("--json", action="store_true",
                        help="one JSON object: the bands and every judged move")
    args = parser.parse_args(argv)
    if not 0 <= args.last < args.first <= 60:
        parser.error(f"need 0 <= --to < --from <= 60, got --to {args.last} --from {args.first}")
    if args.band < 1 or args.depth < 1 or args.judge_time <= 0:
        parser.error("--band and --depth must be at least 1 and --judge-time positive")
    try:
        records, moves, summary = run(
            args.directory, args.judge, args.depth, args.first, args.last, args.band,
            args.judge_time, args.cache, log=lambda s: print(s, file=sys.stderr, flush=True))
    except MatchError as e:
        sys.stderr.write(f"othello-match phases: {e}\n")
        return 2
    if args.json:
        print(json.dumps({**summary, "judge": args.judge, "depth": args.depth,
                          "moves": [asdict(m) for m in moves]}))
    else:
        print(format_summary(summary, args.judge, args.depth))
    return 0
