"""A tiny exact negamax over the Position API, to check agents on small endgames."""

from __future__ import annotations

from engine_server.game import Position


def solve(pos: Position) -> int:
    moves = pos.legal_moves()
    if not moves:
        return pos.score()
    return max(-solve(pos.play(m)) for m in moves)


def move_scores(pos: Position) -> dict[int, int]:
    return {m: -solve(pos.play(m)) for m in pos.legal_moves()}
