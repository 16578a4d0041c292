"""Players the referee can seat: in-process agents, GTP/NBoard subprocesses, remote engines over
ZeroMQ and CS303 ``AI`` files.

Specs (an optional ``NAME=`` prefix sets the name shown in tables):

* ``agent:SPEC``        an agent of this project, run in the game's own process;
* ``gtp:COMMAND``       an engine subprocess speaking GTP (ours, Edax, ...);
* ``nboard:COMMAND``    an engine subprocess speaking NBoard v2 (ours, NTest, Edax, ...);
* ``zmq:ENDPOINT``      a remote engine (GTP over ``clients.remote.RemoteEngine``);
* ``cs303:PATH.py``     a file with a CS303 ``AI`` class, run as the course judge runs it.

A player never judges: it asks its engine for a move and reports what came back, raising
:class:`PlayerTimeout`, :class:`PlayerCrash` or :class:`PlayerProtocolError` when the engine
does not answer in time, dies, or answers something that is not a move (and a CS303 player
:class:`PlayerIllegal` and :class:`PlayerMemory`, as the course's judge rules).  The referee
owns the board, the rules and the clocks.  Engines are reached through
``clients.engine_client`` over ``clients.channels``; its errors become player errors in one
place, ``base.player_error``.

One module per transport: ``base`` (specs, time control, turns and replies, errors, the
:class:`Player` interface), ``agent``, ``gtp`` (GTP over pipes and ZeroMQ), ``nboard`` and
``cs303``.
"""

from __future__ import annotations

from .agent import AgentPlayer
from .base import (
    COMMAND_TIMEOUT,
    CS303_MEMORY_MB,
    KINDS,
    SETUP_TIMEOUT,
    Player,
    PlayerCrash,
    PlayerError,
    PlayerIllegal,
    PlayerMemory,
    PlayerProtocolError,
    PlayerSpec,
    PlayerTimeout,
    Reply,
    TimeControl,
    Turn,
    ggf_clock,
    nboard_clock,
)
from .cs303 import CS303_DEFAULT_TIME_OUT, Cs303Player
from .gtp import GtpPlayer, ZmqPlayer
from .nboard import NBoardPlayer

PLAYER_CLASSES = {"agent": AgentPlayer, "gtp": GtpPlayer, "nboard": NBoardPlayer,
                  "zmq": ZmqPlayer, "cs303": Cs303Player}


def make_player(spec: PlayerSpec, tc: TimeControl) -> Player:
    return PLAYER_CLASSES[spec.kind](spec, tc)


__all__ = ["AgentPlayer", "COMMAND_TIMEOUT", "CS303_DEFAULT_TIME_OUT", "CS303_MEMORY_MB",
           "Cs303Player", "GtpPlayer", "KINDS", "NBoardPlayer", "PLAYER_CLASSES", "Player",
           "PlayerCrash", "PlayerError", "PlayerIllegal", "PlayerMemory", "PlayerProtocolError",
           "PlayerSpec", "PlayerTimeout", "Reply",
           "SETUP_TIMEOUT", "TimeControl", "Turn", "ZmqPlayer", "ggf_clock", "make_player",
           "nboard_clock"]
