"""The referee: plays one game between two players and returns what happened.

:func:`play_game` is the unit of work of every tournament.  It takes a :class:`GameTask` (two
player specs, the opening, the rules, the time control, a seed) and returns a plain dict (JSON
ready), so it can run in any process: a local pool today, a Dask worker later.  Engines are kept
between games in a per-process cache (starting one costs seconds); a player that crashed, hung
or broke the protocol is killed and replaced by a fresh process for its next game.

The referee owns the board and the clocks.  A player loses at once, with the reason recorded,
for an illegal move (``illegal``), a move later than the per-move limit plus the grace margin or
a clock below minus the grace margin (``timeout``), an engine that dies (``crash``), an answer
that is not a move (``protocol``), a CS303 submission past its memory limit (``memory``), or a
resignation (``resign``).  A move past the per-move limit but within the grace (for CS303, a
``go`` the judge's timer cut, whose last candidate is played) does not end the game: it is
counted in the side's ``slow_moves``.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from datetime import datetime, timezone

from engine_server.game import PASS, Color, Game, Position, Rules, ggf, square_name
from engine_server.log import get_logger

from .players import (
    Player,
    PlayerError,
    PlayerSpec,
    PlayerTimeout,
    TimeControl,
    Turn,
    ggf_clock,
    make_player,
)

log = get_logger("match.referee")

# A player with neither a per-move limit nor a clock still may not hang the tournament forever.
HANG_LIMIT = 900.0

REASONS = ("normal", "illegal", "timeout", "crash", "protocol", "memory", "resign")


@dataclass(frozen=True)
class GameTask:
    key: str
    pairing: str
    opening_index: int
    opening: tuple[int, ...]
    swap: int
    round: int
    black: str           # player spec texts
    white: str
    black_label: str
    white_label: str
    rules: str
    tc: TimeControl
    seed: int
    event: str = "othello-match"

    @property
    def opening_text(self) -> str:
        return " ".join(square_name(m) for m in self.opening)


def derive_seed(*parts: object) -> int:
    """A 31-bit seed from any values, stable across processes and runs."""
    h = hashlib.blake2b("|".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(h, "little") & 0x7FFFFFFF


class PlayerCache:
    """Idle players of this process, by spec and time control, to reuse between games."""

    def __init__(self) -> None:
        self._idle: dict[tuple, list[Player]] = {}

    @staticmethod
    def _key(spec: PlayerSpec, tc: TimeControl) -> tuple:
        return (spec.kind, spec.target, spec.name, tuple(sorted(tc.as_dict().items())))

    def acquire(self, spec: PlayerSpec, tc: TimeControl) -> Player:
        idle = self._idle.get(self._key(spec, tc))
        if idle:
            return idle.pop()
        return make_player(spec, tc)

    def release(self, player: Player, healthy: bool) -> None:
        if not healthy:
            try:
                player.kill()
            except Exception as e:  # a dead engine may fail to die again; nothing to keep
                log.warning("kill_failed", player=player.spec.name, error=str(e))
            return
        self._idle.setdefault(self._key(player.spec, player.tc), []).append(player)

    def close_all(self, kill: bool = False) -> None:
        for players in self._idle.values():
            for p in players:
                try:
                    p.kill() if kill else p.close()
                except Exception as e:
                    log.warning("close_failed", player=p.spec.name, error=str(e))
        self._idle.clear()


PROCESS_PLAYERS = PlayerCache()


def close_process_players(kill: bool = False) -> None:
    PROCESS_PLAYERS.close_all(kill)


@dataclass
class _Side:
    player: Player
    moves: int = 0
    time: float = 0.0
    max_time: float = 0.0
    playouts: int = 0
    searched: int = 0
    slow_moves: int = 0
    healthy: bool = True


def _comment(text: str) -> str:
    return " ".join(text.replace("[", "(").replace("]", ")").split())[:300]


def play_game(task: GameTask, cache: PlayerCache | None = None) -> dict:
    """Play one game; the result is a JSON-ready dict (see the journal format in docs/match.md)."""
    cache = cache or PROCESS_PLAYERS
    tc = task.tc
    started = time.time()
    rules = Rules.parse(task.rules)
    game = Game(Position.start(rules))
    items: list[ggf.MoveItem] = []
    for mv in task.opening:
        game.play(mv)
        items.append(ggf.MoveItem(mv))
    specs = {Color.BLACK: PlayerSpec.parse(task.black), Color.WHITE: PlayerSpec.parse(task.white)}
    sides = {c: _Side(cache.acquire(specs[c], tc)) for c in (Color.BLACK, Color.WHITE)}
    forfeit: tuple[Color, str, str] | None = None

    def lose(color: Color, reason: str, detail: str) -> None:
        nonlocal forfeit
        if forfeit is None:
            forfeit = (color, reason, detail)
            log.info("forfeit", game=task.key, color=str(color), reason=reason,
                     detail=detail[:200])
        if reason in ("timeout", "crash", "protocol", "memory"):
            sides[color].healthy = False

    for c in (Color.BLACK, Color.WHITE):
        try:
            sides[c].player.new_game(game, c, derive_seed(task.seed, int(c)))
        except PlayerError as e:
            lose(c, e.reason, f"at game start: {e}")
            break

    clock_left = ({Color.BLACK: float(tc.clock), Color.WHITE: float(tc.clock)}
                  if tc.clock is not None else None)

    def notify(move: int, mover: Color, generated: bool) -> None:
        for c in (Color.BLACK, Color.WHITE):
            if generated and c == mover:
                continue
            try:
                sides[c].player.observe(game, move, mover)
            except PlayerError as e:
                lose(c, e.reason, f"when told {mover} played {square_name(move)}: {e}")
                return

    while forfeit is None and not game.is_over():
        pos = game.position
        color = pos.side
        side = sides[color]
        if pos.must_pass() and not side.player.wants_pass_turns:
            game.play(PASS)
            items.append(ggf.MoveItem(PASS))
            notify(PASS, color, generated=False)
            continue
        limits = [x for x in (tc.move_time,
                              None if clock_left is None else max(0.0, clock_left[color]))
                  if x is not None]
        wait = min(limits) + tc.grace if limits else HANG_LIMIT
        turn = Turn(game, color, dict(clock_left) if clock_left else None, list(items), wait)
        t0 = time.monotonic()
        try:
            reply = side.player.genmove(turn)
        except PlayerError as e:
            detail = str(e)
            if isinstance(e, PlayerTimeout) and e.waited:
                by_clock = clock_left is not None and (
                    tc.move_time is None or tc.move_time > clock_left[color])
                bound = (f"the clock ({max(0.0, clock_left[color]):.3f} s left)"
                         if by_clock and clock_left is not None else "the move limit")
                detail = side.player.fault_detail(
                    "clock" if by_clock else "move_time",
                    f"{detail}; waited for {bound} + {tc.grace:g} s grace")
            lose(color, e.reason, detail)
            break
        elapsed = time.monotonic() - t0
        side.moves += 1
        side.time += elapsed
        side.max_time = max(side.max_time, elapsed)
        if "playouts" in reply.stats:
            side.playouts += int(reply.stats["playouts"])
            side.searched += 1
        if tc.move_time is not None and elapsed > tc.move_time + tc.grace:
            lose(color, "timeout", side.player.fault_detail(
                "move_time", f"move took {elapsed:.3f} s; the limit is {tc.move_time:g} s "
                             f"+ {tc.grace:g} s grace"))
            break
        if clock_left is not None:
            clock_left[color] -= elapsed
            if clock_left[color] < -tc.grace:
                lose(color, "timeout", side.player.fault_detail(
                    "clock", f"clock fell to {clock_left[color]:.3f} s of {tc.clock:g} s "
                             f"(grace {tc.grace:g} s)"))
                break
            clock_left[color] += tc.increment
        if reply.move is None:
            lose(color, "resign", "resigned")
            break
        if not pos.is_legal(reply.move):
            what = "pass" if reply.move == PASS else square_name(reply.move)
            why = "it has a legal move" if reply.move == PASS else "not a legal move"
            lose(color, "illegal", f"played {what}: {why} (legal: "
                                   f"{' '.join(square_name(m) for m in pos.legal_moves())})")
            break
        if reply.stats.get("over_limit", tc.move_time is not None and elapsed > tc.move_time):
            side.slow_moves += 1
        game.play(reply.move)
        items.append(ggf.MoveItem(reply.move, reply.eval, round(elapsed, 3)))
        notify(reply.move, color, generated=True)

    for c in (Color.BLACK, Color.WHITE):
        cache.release(sides[c].player, sides[c].healthy)
    return _result(task, game, items, forfeit, sides, started,
                   {c: sides[c].player.engine_name for c in sides})


def _result(task: GameTask, game: Game, items: list[ggf.MoveItem],
            forfeit: tuple[Color, str, str] | None, sides: dict, started: float,
            engine_names: dict) -> dict:
    pos = game.position
    b_discs, w_discs = pos.discs()
    if forfeit is None:
        res = game.result()
        winner = res.winner
        black_score: int | None = res.black_score
        reason, detail, loser = "normal", "", None
        re_tag = f"{res.black_score:+d}.000"
    else:
        loser, reason, detail = forfeit
        winner = loser.other
        black_score = None
        sign = "+" if winner == Color.BLACK else "-"
        re_tag = f"{sign}64.000:{'t' if reason == 'timeout' else 'r'}"
    tags = {"PC": task.event, "DT": datetime.fromtimestamp(started, timezone.utc)
            .strftime("%Y-%m-%d %H:%M:%S GMT"),
            "PB": task.black_label.replace("]", ")"), "PW": task.white_label.replace("]", ")"),
            "TI": _ti(task.tc), "RE": re_tag}
    if forfeit is not None:
        tags["CO"] = _comment(f"{loser} loses by {reason}: {detail}")
    record = ggf.GgfRecord(start=game.start, moves=items, tags=tags)

    def side_stats(c: Color) -> dict:
        s = sides[c]
        return {"moves": s.moves, "time": round(s.time, 3), "max_time": round(s.max_time, 3),
                "playouts": s.playouts, "searched": s.searched, "engine": engine_names[c],
                "slow_moves": s.slow_moves}

    return {
        "key": task.key, "pairing": task.pairing, "opening_index": task.opening_index,
        "opening": task.opening_text, "swap": task.swap, "round": task.round,
        "seed": task.seed, "rules": str(game.rules),
        "black": task.black_label, "white": task.white_label,
        "black_spec": task.black, "white_spec": task.white,
        "winner": None if winner is None else str(winner),
        "black_score": black_score, "black_discs": b_discs, "white_discs": w_discs,
        "reason": reason, "loser": None if loser is None else str(loser), "detail": detail,
        "moves": " ".join(square_name(m) for m in game.moves),
        "evals": [m.eval for m in items], "times": [m.time for m in items],
        "stats": {"black": side_stats(Color.BLACK), "white": side_stats(Color.WHITE)},
        "started": round(started, 3), "duration": round(time.time() - started, 3),
        "ggf": record.to_text(),
    }


def _ti(tc: TimeControl) -> str:
    return ggf_clock(tc)
