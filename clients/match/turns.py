"""Where the games of a match were decided: every move of the last ``--from`` empties judged by
the exact solver (``othello-match turns DIR``).

Each position of a game from ``--from`` empties to the end is solved, the last first so that
each solve leaves the table ready for the one before: to win/draw/loss, and exactly from
``--exact`` empties.  A move of a side that had a choice is then judged by the values before
and after it, from the mover's view:

* a *turn* is a move that changed the outcome (a win given up for a draw or a loss, a draw for a
  loss); it costs half a point a step, and a move that keeps it (the solver's) is named;
* from ``--exact`` empties, the discs a move gave away against the best move.

Both are facts, not estimates: nothing here depends on an evaluation or on who played.  The
cost is the solver's: a win/draw/loss proof at 22 empties takes about a tenth of a second here,
at 26 empties seconds to a minute (a drawn position is the hardest to prove).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from engine_server import __version__
from engine_server.game import PASS, Game, Position
from engine_server.search.endgame.solver import DEFAULT_TABLE_BITS, Solver
from protocol.notation import square_name

from .config import MatchError
from .journal import Journal
from .record import GameRecord

DEFAULT_FROM = 22
DEFAULT_EXACT = 20


@dataclass(frozen=True)
class Verdict:
    """One move of a side that had a choice.  ``before`` / ``after``: the position's value
    before the move and the value the move reached, from the mover's view; win/draw/loss as
    +1 / 0 / -1 unless ``exact`` (final disc margins, empties to the winner)."""

    game: int           # index in the journal
    ply: int            # moves before this one, opening included
    player: str
    empties: int
    move: str
    exact: bool
    before: int
    after: int
    keeps: str | None   # a move that reaches ``before`` (the solver's)

    @property
    def points_lost(self) -> float:
        """Half a point for each step of win -> draw -> loss."""
        return (_sign(self.before) - _sign(self.after)) / 2

    @property
    def discs_lost(self) -> int:
        return self.before - self.after if self.exact else 0


@dataclass
class PlayerTurns:
    """One player's moves over the judged part of every game."""

    player: str
    games: int = 0
    moves: int = 0                 # judged moves (a choice, at most --from empties)
    exact_moves: int = 0           # of those, judged exactly
    turns: int = 0                 # moves that changed the outcome
    points_lost: float = 0.0
    discs_lost: int = 0            # over the exactly judged moves
    turn_list: list[Verdict] = field(default_factory=list)

    def row(self) -> dict[str, object]:
        return {"player": self.player, "games": self.games, "moves": self.moves,
                "turns": self.turns, "points_lost": self.points_lost,
                "exact_moves": self.exact_moves, "discs_lost": self.discs_lost,
                "discs_lost_per_game": round(self.discs_lost / self.games, 3)
                if self.games else 0.0}


def _sign(v: int) -> int:
    return (v > 0) - (v < 0)


def game_positions(record: GameRecord) -> list[tuple[int, Position, int | None]]:
    """(ply, position, the move played there) along the game; the last has no move (the
    game's end, or where the record stops).  Passes are played as moves of their own."""
    game = Game.from_moves(record.moves.split(), rules=record.rules)
    moves: list[int | None] = [*game.moves, None]
    return list(zip(range(len(moves)), game.positions(), moves))


def judge_game(index: int, record: GameRecord, solver: Solver, wld_from: int,
               exact_from: int) -> list[Verdict]:
    """The verdicts of every move with a choice at ``wld_from`` empties or fewer."""
    line = [(ply, pos, move) for ply, pos, move in game_positions(record)
            if pos.empties <= wld_from]
    values: dict[int, int] = {}    # ply -> the value for the side to move there
    exact_at: dict[int, bool] = {}  # ply -> the value is the exact margin (else win/draw/loss)
    keeps: dict[int, int | None] = {}
    for ply, pos, _ in reversed(line):
        if pos.is_game_over():
            values[ply], exact_at[ply], keeps[ply] = pos.score(), True, None
            continue
        exact_at[ply] = pos.empties <= exact_from
        r = solver.solve(pos, "exact" if exact_at[ply] else "wld")
        if r.score is None:
            raise MatchError(f"game {index}: the solver gave no value at ply {ply}")
        values[ply], keeps[ply] = int(r.score), r.best_move
    verdicts = []
    by_ply = {ply: pos for ply, pos, _ in line}
    for ply, pos, move in line:
        if move is None or move == PASS or len(pos.legal_moves()) < 2 or ply + 1 not in by_ply:
            continue
        nxt = by_ply[ply + 1]
        before, after = values[ply], values[ply + 1]
        if nxt.side != pos.side:
            after = -after
        exact = exact_at[ply] and exact_at[ply + 1]
        if not exact:
            before, after = _sign(before), _sign(after)
        player = record.black if pos.side.name == "BLACK" else record.white
        keep = keeps[ply]
        verdicts.append(Verdict(index, ply, player, pos.empties, square_name(move), exact,
                                before, after,
                                None if keep is None or keep == PASS else square_name(keep)))
    return verdicts


def summarize(records: list[GameRecord], verdicts: list[Verdict]) -> list[PlayerTurns]:
    players: dict[str, PlayerTurns] = {}
    for r in records:
        for name in (r.black, r.white):
            players.setdefault(name, PlayerTurns(name)).games += 1
    for v in verdicts:
        p = players.setdefault(v.player, PlayerTurns(v.player))
        p.moves += 1
        p.exact_moves += v.exact
        p.discs_lost += v.discs_lost
        if v.points_lost > 0:
            p.turns += 1
            p.points_lost += v.points_lost
            p.turn_list.append(v)
    return sorted(players.values(), key=lambda p: p.player)


_OUTCOME = {1: "win", 0: "draw", -1: "loss"}


def format_turns(players: list[PlayerTurns], records: list[GameRecord], wld_from: int,
                 exact_from: int) -> str:
    lines = [f"every move with a choice from {wld_from} empties judged to win/draw/loss, "
             f"exactly from {exact_from} empties",
             f"{'player':<16} {'games':>5} {'moves':>6} {'turns':>5} {'points lost':>11} "
             f"{'exact moves':>11} {'discs lost/game':>15}"]
    for p in players:
        row = p.row()
        lines.append(f"{p.player:<16} {p.games:>5} {p.moves:>6} {p.turns:>5} "
                     f"{p.points_lost:>11.1f} {p.exact_moves:>11} "
                     f"{row['discs_lost_per_game']:>15.2f}")
    for p in players:
        for v in p.turn_list:
            r = records[v.game]
            keep = f" ({v.keeps} keeps the {_OUTCOME[_sign(v.before)]})" if v.keeps else ""
            lines.append(f"turn: game {v.game} ({r.black} - {r.white}, {r.opening}), "
                         f"{v.empties} empties: {v.player} played {v.move}, "
                         f"{_OUTCOME[_sign(v.before)]} -> {_OUTCOME[_sign(v.after)]}{keep}")
    return "\n".join(lines)


def finished_games(directory: Path) -> list[GameRecord]:
    """The games of the match journal in ``directory``; MatchError where there are none."""
    journal = Journal(directory)
    if not journal.path.is_file():
        raise MatchError(f"{journal.path}: no such journal (the --out directory of a match)")
    records = journal.load()
    if not records:
        raise MatchError(f"{journal.path}: no finished game")
    return records


def run(directory: Path, wld_from: int = DEFAULT_FROM, exact_from: int = DEFAULT_EXACT,
        threads: int = 1, table_bits: int = DEFAULT_TABLE_BITS,
        log: Callable[[str], None] | None = None
        ) -> tuple[list[GameRecord], list[Verdict], list[PlayerTurns]]:
    """Judge every game of the match in ``directory`` (its ``journal.jsonl``)."""
    records = finished_games(directory)
    solver = Solver(table_bits, threads=threads)
    verdicts: list[Verdict] = []
    t0 = time.monotonic()
    for i, record in enumerate(records):
        verdicts += judge_game(i, record, solver, wld_from, exact_from)
        if log is not None:
            log(f"{i + 1}/{len(records)} games judged, {time.monotonic() - t0:.0f} s")
    return records, verdicts, summarize(records, verdicts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="othello-match turns",
        description="Where the games of a match were decided: every move with a choice from "
                    "--from empties judged by the exact solver (win/draw/loss, and the exact "
                    "margin from --exact empties), per player: the moves that changed the "
                    "outcome and the discs given away.")
    parser.add_argument("--version", action="version",
                        version=f"othello-match turns {__version__}")
    parser.add_argument("directory", type=Path, help="a match's --out directory")
    parser.add_argument("--from", dest="wld_from", type=int, default=DEFAULT_FROM,
                        help=f"judge moves from this many empties (default {DEFAULT_FROM}; "
                             "26 takes up to a minute a position)")
    parser.add_argument("--exact", type=int, default=DEFAULT_EXACT,
                        help=f"exact margins from this many empties (default {DEFAULT_EXACT})")
    parser.add_argument("--threads", type=int, default=1, help="solver threads (default 1)")
    parser.add_argument("--table-bits", type=int, default=DEFAULT_TABLE_BITS,
                        help=f"solver table of 2^B entries (default {DEFAULT_TABLE_BITS})")
    parser.add_argument("--json", action="store_true",
                        help="one JSON object: the players' rows and every turn")
    args = parser.parse_args(argv)
    if not 0 <= args.exact <= args.wld_from <= 60:
        parser.error(f"need 0 <= --exact <= --from <= 60, got --exact {args.exact} "
                     f"--from {args.wld_from}")
    if args.threads < 1:
        parser.error(f"--threads must be at least 1, got {args.threads}")
    try:
        records, _, players = run(
            args.directory, args.wld_from, args.exact, args.threads, args.table_bits,
            log=lambda s: print(s, file=sys.stderr, flush=True))
    except MatchError as e:
        sys.stderr.write(f"othello-match turns: {e}\n")
        return 2
    if args.json:
        print(json.dumps({"from": args.wld_from, "exact": args.exact,
                          "players": [p.row() for p in players],
                          "turns": [asdict(v) for p in players for v in p.turn_list]}))
    else:
        print(format_turns(players, records, args.wld_from, args.exact))
    return 0
