"""What every player shares: the spec and time control it is built from, what it is told and
answers (:class:`Turn`, :class:`Reply`), the errors a move can end in, and the :class:`Player`
interface the referee drives.

Engines are reached through ``clients.engine_client`` over ``clients.channels``; its errors
become player errors in one place, :func:`player_error`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from clients.channels import PipeChannel
from clients.engine_client import EngineClosed, EngineError, EngineTimeout
from engine_server.game import Color, Game, ggf

KINDS = ("agent", "gtp", "nboard", "zmq", "cs303")
_NAME_RE = re.compile(r"^([A-Za-z0-9_.+#-]+)=(.+)$")

SETUP_TIMEOUT = 60.0     # engine start-up and handshake (numba caches load here); --setup-timeout
COMMAND_TIMEOUT = 20.0   # any command other than a move request
CS303_MEMORY_MB = 100.0  # the CS303 platform's memory limit per submission; --cs303-memory-limit


class PlayerError(Exception):
    reason = "protocol"


class PlayerTimeout(PlayerError):
    """No answer within the referee's wait (``waited``), or a judge's own timer that left
    nothing to play (``waited`` false: the referee's wait is not the story)."""

    reason = "timeout"

    def __init__(self, message: str, waited: bool = True):
        super().__init__(message)
        self.waited = waited


class PlayerCrash(PlayerError):
    reason = "crash"


class PlayerProtocolError(PlayerError):
    reason = "protocol"


class PlayerMemory(PlayerError):
    """An engine that went past the memory limit it was given (a CS303 submission's)."""

    reason = "memory"


class PlayerIllegal(PlayerError):
    """A move the rules do not allow, found by a player that reads its engine's answer as a
    judge does (CS303's ``candidate_list``), named in that judge's words."""

    reason = "illegal"


def player_error(e: EngineError, timeout: str, crash: str) -> PlayerError:
    """The forfeit an engine error means: silence is a timeout, a dead engine a crash, a '?'
    reply (or anything else unexpected) a protocol error.  ``timeout`` and ``crash`` are the
    details to report for those two."""
    if isinstance(e, EngineTimeout):
        return PlayerTimeout(timeout)
    if isinstance(e, EngineClosed):
        return PlayerCrash(crash)
    return PlayerProtocolError(str(e))


@dataclass(frozen=True)
class PlayerSpec:
    kind: str
    target: str         # the agent spec, command line, endpoint or file path
    name: str           # as shown in tables and records
    text: str           # the spec as given

    @classmethod
    def parse(cls, text: str) -> "PlayerSpec":
        raw = text.strip()
        name = None
        m = _NAME_RE.match(raw)
        if m and ":" not in m.group(1):
            name, raw = m.group(1), m.group(2).strip()
        kind, sep, target = raw.partition(":")
        kind = kind.strip().lower()
        if not sep or kind not in KINDS or not target.strip():
            raise ValueError(f"bad player spec {text!r}: expected one of "
                             + ", ".join(f"{k}:..." for k in KINDS) + " (optionally NAME=...)")
        target = target.strip()
        if kind == "agent":
            from engine_server.config import resolve_agent

            # A preset name becomes its spec here, so journals and tables show what ran; an
            # unknown agent or parameter fails here, not in a worker.
            target = resolve_agent(target)
        if kind == "cs303" and not Path(target).is_file():
            raise ValueError(f"cs303 player file not found: {target}")
        return cls(kind, target, name or raw, text.strip())


@dataclass
class TimeControl:
    """What bounds a move.  ``move_time`` is the hard per-move limit, ``clock`` a game clock of
    ``clock`` seconds plus ``increment`` per move; ``grace`` is the lateness tolerated before a
    move counts as a time loss; ``playouts`` is a per-move budget for in-process agents;
    ``setup`` bounds each step of an engine's start-up and handshake (not part of a match's
    identity: it decides whether a game starts, not how it is played); ``cs303_memory_mb`` is
    the memory a CS303 submission's process may take beyond its own start-up (None: no limit;
    ``clients.match.cs303_worker`` says how it is counted)."""

    move_time: float | None = None
    clock: float | None = None
    increment: float = 0.0
    grace: float = 1.0
    playouts: int | None = None
    tree_reuse: bool = True
    nboard_depth: int | None = None
    setup: float = SETUP_TIMEOUT
    cs303_memory_mb: float | None = CS303_MEMORY_MB

    def as_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class Turn:
    """What a player is told when asked for a move."""

    game: Game
    color: Color
    clock_left: dict | None          # Color -> seconds left before this move (game clock)
    items: list                       # ggf.MoveItem per move so far (eval and time)
    wait: float | None                # seconds the referee waits before calling it a timeout


@dataclass
class Reply:
    move: int | None                  # None: the player resigned
    eval: float | None = None         # disc margin from the mover's view, when given
    # "playouts"; "over_limit": whether the move ran past the per-move limit, for a player
    # whose judge times the move itself (CS303's timer), else the referee's clock decides
    stats: dict = field(default_factory=dict)


def ggf_clock(tc: TimeControl, grace: bool = True) -> str:
    """The GGF ``TI`` value of a time control's game clock (``0``: none)."""
    if tc.clock is None:
        return "0"
    return ggf.TimeControl(tc.clock, tc.increment, tc.grace).text(grace)


def nboard_clock(tc: TimeControl, items: list[ggf.MoveItem]) -> tuple[str, list[ggf.MoveItem]]:
    """What an NBoard engine is told of the time control: the ``TI`` value and the move items
    of the ``set game`` record, from which it works out its clock as the NBoard GUI's engines
    do (``TI`` less the times of its own moves, plus the increment after each).

    A game clock goes as it is, with the real times.  GGF has no per-move limit, so a limit of
    M seconds goes as the Fischer clock ``TI[M/M]`` (M now, M more after each move) with every
    earlier move charged its full M, since unused time does not carry over: the mover's clock
    always reads M, the time it has for this move."""
    if tc.clock is not None:
        return ggf_clock(tc, grace=False), list(items)
    if tc.move_time is not None:
        m = tc.move_time
        return (ggf.TimeControl(m, m).text(grace=False),
                [ggf.MoveItem(i.move, i.eval, m) for i in items])
    return "0", list(items)



def quit_engine(channel: PipeChannel | None) -> None:
    """Ask an engine subprocess to quit, then wait for it (killed if it does not go)."""
    if channel is None:
        return
    try:
        if channel.proc.poll() is None:
            channel.send("quit")
    except (EngineError, OSError):
        pass
    channel.close(timeout=5)


class Player:
    wants_pass_turns = False  # asked to move even when the only move is a pass

    def __init__(self, spec: PlayerSpec, tc: TimeControl):
        self.spec = spec
        self.tc = tc
        self.engine_name = spec.name
        self.healthy = True

    def new_game(self, game: Game, color: Color, seed: int) -> None:
        raise NotImplementedError

    def genmove(self, turn: Turn) -> Reply:
        raise NotImplementedError

    def observe(self, game: Game, move: int, color: Color) -> None:
        """A move this player did not generate (the opponent's, or its own forced pass)."""

    def fault_detail(self, kind: str, detail: str) -> str:
        """A referee's fault (``kind``: ``clock``, the game clock ran out; ``move_time``, a
        move over the limit) in the words of the judge this player stands for."""
        return detail

    def close(self) -> None:
        """End the engine politely (used between tournaments)."""

    def kill(self) -> None:
        """End the engine at once (after a crash, a hang or a protocol error)."""
        self.close()

