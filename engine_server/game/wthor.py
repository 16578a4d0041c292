"""The WTHOR database of expert games (the French federation's format).

A ``.wtb`` file is a 16-byte header (creation date, number of games, year, board size, the depth
at which the "theoretical score" was computed) and 68 bytes per game: tournament id (2 bytes),
black and white player ids (2 + 2), black's real disc count, black's theoretical disc count
(perfect play from the position with ``depth`` empties reached in the game), then 60 move bytes
``10 * row + col`` with 11 = a1 and 0 after the last move.  Passes are not recorded: a side with
no legal move simply does not appear.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numba import njit

from engine_server.game.bitboard import (
    START_BLACK,
    START_WHITE,
    U1,
    flips,
    legal_moves,
    popcount,
)

# The WTHOR database beside the checkout (../shared/data/wthor), where the training commands look
# unless --wthor says otherwise.
DEFAULT_WTHOR = Path(__file__).resolve().parents[3] / "shared" / "data" / "wthor"

HEADER = 16
RECORD = 68


@dataclass(frozen=True)
class Games:
    """Games as arrays: moves [n, 60] (square index 0..63, -1 after the end), black's real and
    theoretical disc counts, the theoretical-score depth, and the year."""

    moves: np.ndarray
    real: np.ndarray
    theoretical: np.ndarray
    depth: np.ndarray
    year: np.ndarray

    def __len__(self) -> int:
        return int(self.moves.shape[0])

    def take(self, idx: np.ndarray) -> "Games":
        return Games(self.moves[idx], self.real[idx], self.theoretical[idx], self.depth[idx],
                     self.year[idx])


class WthorError(ValueError):
    """A file that is not a WTHOR game file."""


def read_file(path: str | Path) -> Games:
    data = Path(path).read_bytes()
    if len(data) < HEADER or (len(data) - HEADER) % RECORD:
        raise WthorError(f"{path}: size {len(data)} is not 16 + 68 * games")
    n = int.from_bytes(data[4:8], "little")
    if n != (len(data) - HEADER) // RECORD:
        raise WthorError(f"{path}: header says {n} games, the file holds "
                         f"{(len(data) - HEADER) // RECORD}")
    if data[12] not in (0, 8):
        raise WthorError(f"{path}: board size {data[12]} (only 8x8 games are read)")
    year = int.from_bytes(data[10:12], "little")
    depth = data[14] or 22
    rec = np.frombuffer(data, dtype=np.uint8, offset=HEADER).reshape(n, RECORD)
    raw = rec[:, 8:].astype(np.int64)
    row, col = raw // 10, raw % 10
    ok = (row >= 1) & (row <= 8) & (col >= 1) & (col <= 8)
    moves = np.where(ok, (row - 1) * 8 + (col - 1), -1)
    return Games(moves, rec[:, 6].astype(np.int64), rec[:, 7].astype(np.int64),
                 np.full(n, depth, dtype=np.int64), np.full(n, year, dtype=np.int64))


def read_dir(directory: str | Path) -> Games:
    """Every ``*.wtb`` file of ``directory``, in name order."""
    files = sorted(Path(directory).glob("*.wtb")) + sorted(Path(directory).glob("*.WTB"))
    if not files:
        raise WthorError(f"no .wtb files in {directory}")
    parts = [read_file(f) for f in files]
    return Games(*(np.concatenate([getattr(p, k) for p in parts])
                   for k in ("moves", "real", "theoretical", "depth", "year")))


@njit(cache=True)
def replay_kernel(moves, P_out, O_out, black_out, move_out, game_out, empt_out, final_out,
                  valid, pass_samples, empties_to_winner):
    """Positions before each move of each game (side to move's view) and the move played;
    returns the count.

    ``valid[g]`` is cleared for a game with an illegal move; ``final_out[g]`` gets black's final
    disc margin for a game that reached its end (127 when it stopped before), with the empty
    squares given to the winner when ``empties_to_winner``.  WTHOR does not record passes;
    ``pass_samples`` makes a forced pass a position of its own (move 64), as the network's
    policy target needs."""
    k = 0
    for g in range(moves.shape[0]):
        b = START_BLACK
        w = START_WHITE
        black = True
        start = k
        for i in range(60):
            sq = moves[g, i]
            if sq < 0:
                break
            P = b if black else w
            O = w if black else b
            m = U1 << np.uint64(sq)
            L = legal_moves(P, O)
            if (L & m) == 0:
                # the side to move had to pass
                if L != 0:
                    valid[g] = False
                    break
                if pass_samples:
                    P_out[k] = P
                    O_out[k] = O
                    black_out[k] = black
                    move_out[k] = 64
                    game_out[k] = g
                    empt_out[k] = 64 - popcount(P | O)
                    k += 1
                black = not black
                P, O = O, P
                if (legal_moves(P, O) & m) == 0:
                    valid[g] = False
                    break
            P_out[k] = P
            O_out[k] = O
            black_out[k] = black
            move_out[k] = sq
            game_out[k] = g
            empt_out[k] = 64 - popcount(P | O)
            k += 1
            f = flips(P, O, m)
            P ^= f | m
            O ^= f
            if black:
                b, w = P, O
            else:
                w, b = P, O
            black = not black
        if not valid[g]:
            k = start
            continue
        nb = popcount(b)
        nw = popcount(w)
        e = 64 - nb - nw
        d = nb - nw
        if legal_moves(b, w) != 0 or legal_moves(w, b) != 0:
            final_out[g] = 127   # unfinished game (resigned or lost on time)
        elif not empties_to_winner:
            final_out[g] = d
        elif d > 0:
            final_out[g] = d + e
        elif d < 0:
            final_out[g] = d - e
        else:
            final_out[g] = 0
    return k


@dataclass(frozen=True)
class Positions:
    """Positions (side to move's view) with the game they come from and the move played there
    (64: a forced pass, with ``pass_samples``)."""

    P: np.ndarray
    O: np.ndarray
    black: np.ndarray      # black to move
    game: np.ndarray
    empties: np.ndarray
    move: np.ndarray

    def __len__(self) -> int:
        return int(self.P.shape[0])


def replay(games: Games, pass_samples: bool = False, empties_to_winner: bool = True
           ) -> tuple[Positions, np.ndarray, np.ndarray]:
    """All positions of ``games``; also per game whether it replayed legally and black's final
    margin on the board (127 when the game stopped before its end).  The flags are those of
    :func:`replay_kernel`."""
    n = len(games)
    cap = n * 64          # 60 moves and the passes between them
    P = np.zeros(cap, np.uint64)
    O = np.zeros(cap, np.uint64)
    black = np.zeros(cap, np.bool_)
    game = np.zeros(cap, np.int64)
    empt = np.zeros(cap, np.int64)
    final = np.zeros(n, np.int64)
    valid = np.ones(n, np.bool_)
    move = np.zeros(cap, np.int64)
    k = replay_kernel(games.moves.astype(np.int64), P, O, black, move, game, empt, final, valid,
                      pass_samples, empties_to_winner)
    return Positions(P[:k], O[:k], black[:k], game[:k], empt[:k], move[:k]), valid, final
