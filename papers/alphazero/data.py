"""Training samples for the network: WTHOR expert games, self-play records, the 8 symmetries.

A sample is a position (side to move's bitboards and whether Black is to move), a policy target
and a value target from the mover's view.  Positions are kept as bitboards (17 bytes each, not
the 1 KiB of their planes) and turned into planes per batch, after a random symmetry.

WTHOR: every position before a move of a complete, legal game, *including* the positions where
the side to move had to pass (WTHOR leaves passes out; the target there is the pass, index 64);
value target: the game's real result for the mover, +1 / 0 / -1.  Every 20th game (database
order) is held out, as training/patterns.py does.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, cast

import numpy as np

from engine_server.eval import planes
from engine_server.eval.features import symmetry
from engine_server.game import wthor
from engine_server.game.bitboard import START_BLACK, START_WHITE, U

from . import kernels

HOLDOUT = 20
N_SYM = 8


def _square_maps() -> np.ndarray:
    """SQUARE_MAP[k, s]: the square that ``s`` goes to under symmetry ``k``; 64 (pass) stays."""
    out = np.zeros((N_SYM, planes.N_MOVES), np.int64)
    for k in range(N_SYM):
        for s in range(64):
            img = int(symmetry(U(1) << U(s), k))
            out[k, s] = img.bit_length() - 1
        out[k, planes.PASS_INDEX] = planes.PASS_INDEX
    return out


SQUARE_MAP = _square_maps()


@dataclass
class Samples:
    """Positions with targets.  ``move``: the expert's move (0..64), or -1 where ``pi`` (a
    distribution over 65 moves, e.g. MCTS visits) is the target; ``value``: the result for the
    side to move, in [-1, 1]; ``game``: the game of each position (for the held-out split)."""

    P: np.ndarray
    O: np.ndarray
    black: np.ndarray
    move: np.ndarray
    value: np.ndarray
    game: np.ndarray
    empties: np.ndarray
    pi: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.P.shape[0])

    def take(self, idx: np.ndarray) -> "Samples":
        cols: dict[str, Any] = {f.name: getattr(self, f.name) for f in fields(self)}
        out: dict[str, Any] = {k: None if v is None else v[idx] for k, v in cols.items()}
        return Samples(**out)

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp.npz")
        arrays = {f.name: getattr(self, f.name) for f in fields(self)
                  if getattr(self, f.name) is not None}
        _savez(tmp, arrays)
        tmp.replace(path)

    @classmethod
    def load(cls, path: Path) -> "Samples":
        with np.load(path) as z:
            cols: dict[str, Any] = {f.name: z[f.name] if f.name in z.files else None
                                    for f in fields(cls)}
        return cls(**cols)

    @staticmethod
    def concat(parts: list["Samples"]) -> "Samples":
        """Game ids are renumbered so that games of different parts never collide."""
        parts = [p for p in parts if len(p)]
        if not parts:
            return empty()
        soft = any(p.pi is not None for p in parts)
        off = 0
        games = []
        for p in parts:
            games.append(p.game + off)
            off += int(p.game.max()) + 1
        cols = {f.name: np.concatenate([getattr(p, f.name) for p in parts])
                for f in fields(Samples) if f.name not in ("game", "pi")}
        pi = np.concatenate([p.pi if p.pi is not None else one_hot(p.move) for p in parts]) \
            if soft else None
        return Samples(game=np.concatenate(games), pi=pi, **cols)

    def policy_targets(self) -> np.ndarray:
        """Dense ``[n, 65]`` targets (one-hot where the target is a move)."""
        return self.pi if self.pi is not None else one_hot(self.move)


def _savez(path: Path, arrays: dict[str, np.ndarray]) -> None:
    cast(Any, np.savez)(path, **arrays)


def empty() -> Samples:
    return Samples(np.zeros(0, np.uint64), np.zeros(0, np.uint64), np.zeros(0, np.bool_),
                   np.zeros(0, np.int8), np.zeros(0, np.float32), np.zeros(0, np.int64),
                   np.zeros(0, np.int8))


def one_hot(move: np.ndarray) -> np.ndarray:
    out = np.zeros((len(move), planes.N_MOVES), np.float32)
    out[np.arange(len(move)), move.astype(np.int64)] = 1.0
    return out


def from_games(games: wthor.Games) -> tuple[Samples, dict[str, int]]:
    """Samples of the complete, legal games of ``games`` (game ids = indices in ``games``)."""
    n = len(games)
    pos, valid, final = wthor.replay(games, pass_samples=True, empties_to_winner=False)
    P, O, black, game = pos.P, pos.O, pos.black, pos.game
    move, empt = pos.move.astype(np.int8), pos.empties.astype(np.int8)
    done = valid & (final != 127)
    keep = done[game]
    result_black = np.sign(final[game]).astype(np.float32)
    value = np.where(black, result_black, -result_black).astype(np.float32)
    s = Samples(P, O, black, move, value, game, empt).take(np.nonzero(keep)[0])
    stats = {"games": n, "complete_legal_games": int(done.sum()), "positions": len(s),
             "pass_positions": int(np.sum(s.move == planes.PASS_INDEX))}
    return s, stats


def wthor_samples(source: Path, games: int | None = None,
                  cache: Path | None = None) -> tuple[Samples, dict[str, int]]:
    """WTHOR samples of a directory of ``.wtb`` files (or one file), first ``games`` games;
    cached as ``.npz`` when ``cache`` is given."""
    if cache is not None and cache.is_file():
        s = Samples.load(cache)
        with np.load(cache.with_suffix(".stats.npz")) as z:
            stats = {k: int(z[k]) for k in z.files}
        return s, stats
    g = wthor.read_file(source) if source.is_file() else wthor.read_dir(source)
    if games is not None:
        g = g.take(np.arange(min(games, len(g))))
    s, stats = from_games(g)
    if cache is not None:
        s.save(cache)
        _savez(cache.with_suffix(".stats.npz"), {k: np.asarray(v) for k, v in stats.items()})
    return s, stats


def split(s: Samples, holdout: int = HOLDOUT) -> tuple[np.ndarray, np.ndarray]:
    """Row indices of the training and the held-out positions (every ``holdout``-th game)."""
    test = (s.game % holdout) == 0
    return np.nonzero(~test)[0], np.nonzero(test)[0]


def transform(P: np.ndarray, O: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bitboards under symmetry ``k[i]`` each."""
    P = np.ascontiguousarray(P, np.uint64)
    O = np.ascontiguousarray(O, np.uint64)
    Pt = np.empty_like(P)
    Ot = np.empty_like(O)
    kernels.transform(P, O, np.ascontiguousarray(k, np.int64), Pt, Ot)
    return Pt, Ot


def transform_policy(pi: np.ndarray, k: np.ndarray) -> np.ndarray:
    """Distributions ``[n, 65]`` moved with their squares: out[i, SQUARE_MAP[k_i, s]] =
    pi[i, s]."""
    out = np.empty_like(pi)
    rows = np.arange(len(pi))[:, None]
    out[rows, SQUARE_MAP[k]] = pi
    return out


@dataclass
class Batch:
    x: np.ndarray                 # planes [n, C, 8, 8] float32
    move: np.ndarray              # int64 [n], -1 where ``pi`` holds the target
    pi: np.ndarray | None         # float32 [n, 65] or None
    value: np.ndarray             # float32 [n]
    legal: np.ndarray             # bool [n, 65]: the legal moves (pass when there is none)


def make_batch(s: Samples, idx: np.ndarray, legal_plane: bool,
               rng: np.random.Generator | None = None, k: np.ndarray | None = None) -> Batch:
    """Planes and targets of rows ``idx``, each under symmetry ``k[i]``, or a random one when
    ``rng`` is given (the identity otherwise).  The side-to-move plane is the same on every
    image; the legal-move plane is computed on the image."""
    if k is None:
        k = rng.integers(0, N_SYM, len(idx)) if rng is not None \
            else np.zeros(len(idx), np.int64)
    P, O = transform(s.P[idx], s.O[idx], k)
    x = planes.encode(P, O, s.black[idx], legal_plane)
    mv = s.move[idx].astype(np.int64)
    soft = s.pi is not None and bool(np.any(mv < 0))
    if soft:
        assert s.pi is not None
        pi = transform_policy(s.pi[idx].astype(np.float32), k)
        mv = np.full(len(idx), -1, np.int64)
    else:
        pi = None
        mv = SQUARE_MAP[k, mv]
    return Batch(x, mv, pi, s.value[idx].astype(np.float32), legal_mask(P, O))


def legal_mask(P: np.ndarray, O: np.ndarray) -> np.ndarray:
    out = np.zeros((len(P), planes.N_MOVES), np.bool_)
    kernels.legal_mask(np.ascontiguousarray(P, np.uint64), np.ascontiguousarray(O, np.uint64),
                       out)
    return out


def random_positions(n: int, seed: int, black0: np.uint64 = START_BLACK,
                     white0: np.uint64 = START_WHITE
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    P = np.zeros(n, np.uint64)
    O = np.zeros(n, np.uint64)
    black = np.zeros(n, np.bool_)
    kernels.random_positions(n, seed, U(black0), U(white0), P, O, black)
    return P, O, black


__all__ = ["HOLDOUT", "N_SYM", "SQUARE_MAP", "Batch", "Samples", "from_games", "legal_mask",
           "make_batch", "one_hot", "random_positions", "split", "transform",
           "transform_policy", "wthor_samples"]
