"""Values of positions by an engine outside ours, as it reports them with its moves: NTest or
Edax over NBoard, any engine ``othello-match`` can play.  ``othello-match phases`` judges the
moves of a match with it, ``othello-train heldout`` the evaluation's errors."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

import numpy as np

from engine_server.game import PASS, Game, Position, positions_digest

from .players import PlayerError, PlayerSpec, TimeControl, Turn, make_player


class JudgeError(Exception):
    """The outside judge could not value a position (it died, timed out or gave no value)."""


def judge_values(positions: list[Position], spec_text: str, depth: int, move_time: float,
                 log: Callable[[str], None], cache: Path | None = None) -> np.ndarray:
    """Each position's value in discs, side to move's view, as the engine of ``spec_text``
    (a player spec of ``othello-match``) reports it with its move; an NBoard engine is sent
    ``set depth depth`` and ``move_time`` seconds a move, so that the depth, not the clock,
    ends its search.  Where it answers a forced move without a value, the position after the
    move is asked instead.  Answers are saved to ``cache`` as they come (resumable)."""
    import hashlib

    spec = PlayerSpec.parse(spec_text)
    n = len(positions)
    values, done = np.full(n, np.nan), np.zeros(n, bool)
    key = hashlib.sha256(repr((spec.target, depth, positions_digest(positions))).encode())
    path = None if cache is None else cache / f"judge-{key.hexdigest()[:16]}.npz"
    if path is not None and path.is_file():
        with np.load(path) as z:
            values, done = z["values"].copy(), z["done"].copy()
        log(f"resuming: {int(done.sum())} of {n} positions already judged")

    def save() -> None:
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp.npz")
            np.savez(tmp, values=values, done=done)
            tmp.replace(path)

    if done.all():
        return values
    player = make_player(spec, TimeControl(move_time=move_time, grace=move_time,
                                           nboard_depth=depth))

    def ask(pos: Position, i: int) -> float:
        # Engines answer a forced move at once, often without a value (NTest does): follow
        # the forced moves, and the opponent's forced passes, to a position with a choice.
        # NTest also leaves the field empty when the value is 0 (``=== G4//2.32``).
        sign = 1.0
        while True:
            reply = player.genmove(Turn(game=Game(pos), color=pos.side, clock_left=None,
                                        items=[], wait=2 * move_time + 30))
            if reply.eval is not None:
                return sign * float(reply.eval)
            moves = pos.legal_moves()
            if len(moves) > 1 and reply.stats.get("empty_eval"):
                return 0.0          # NTest's way of writing a zero
            if len(moves) != 1:
                raise JudgeError(f"{spec.name} gave no evaluation with its move "
                                 f"for position {i} ({pos.to_ggf()})")
            pos, sign = pos.play(moves[0]), -sign
            if pos.is_game_over():
                return sign * float(pos.score())
            if pos.must_pass():
                pos, sign = pos.play(PASS), -sign

    t0, fresh = time.monotonic(), 0
    try:
        for i, pos in enumerate(positions):
            if done[i]:
                continue
            if fresh == 0:
                player.new_game(Game(pos), pos.side, 0)
            values[i] = ask(pos, i)
            done[i] = True
            fresh += 1
            if fresh % 25 == 0 or done.all():
                save()
                dt = time.monotonic() - t0
                log(f"  {int(done.sum())}/{n} positions judged by {spec.name}, "
                    f"{dt / fresh:.2f} s each")
    except PlayerError as e:
        raise JudgeError(f"{spec.name}: {e}") from None
    finally:
        save()
        player.close()
    return values


__all__ = ["JudgeError", "judge_values"]
