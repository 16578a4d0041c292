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
does not answer in time, dies, or answers something that is not a move.  The referee owns the
board, the rules and the clocks.  Engines are reached through ``clients.engine_client``; its
errors become player errors in one place, :func:`_player_error`.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from clients.engine_client import (
    EngineClient,
    EngineClosed,
    EngineCommandError,
    EngineError,
    EngineSessionExpired,
    EngineTimeout,
    PipeChannel,
)
from clients.engine_process import EngineProcess
from clients.remote import RemoteEngine
from engine_server.game import PASS, Color, Game, NotationError, Position, Rules, ggf, parse_move
from engine_server.log import get_logger
from engine_server.search.limits import Limits
from engine_server.search.timeman import ABSOLUTE, FISCHER, Clock, TimeManager
from protocol import nboard as nb

log = get_logger("match.players")

KINDS = ("agent", "gtp", "nboard", "zmq", "cs303")
_NAME_RE = re.compile(r"^([A-Za-z0-9_.+#-]+)=(.+)$")

SETUP_TIMEOUT = 60.0     # engine start-up and handshake (numba caches load here)
COMMAND_TIMEOUT = 20.0   # any command other than a move request
CS303_DEFAULT_TIME_OUT = 5.0  # the course judge's limit, when --move-time does not say


class PlayerError(Exception):
    reason = "protocol"


class PlayerTimeout(PlayerError):
    reason = "timeout"


class PlayerCrash(PlayerError):
    reason = "crash"


class PlayerProtocolError(PlayerError):
    reason = "protocol"


def _player_error(e: EngineError, timeout: str, crash: str) -> PlayerError:
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
    move counts as a time loss; ``playouts`` is a per-move budget for in-process agents."""

    move_time: float | None = None
    clock: float | None = None
    increment: float = 0.0
    grace: float = 1.0
    playouts: int | None = None
    tree_reuse: bool = True
    nboard_depth: int | None = None

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


def _fmt(x: float) -> str:
    return f"{x:.3f}".rstrip("0").rstrip(".") if x != int(x) else str(int(x))


def _quit(channel: PipeChannel | None) -> None:
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

    def close(self) -> None:
        """End the engine politely (used between tournaments)."""

    def kill(self) -> None:
        """End the engine at once (after a crash, a hang or a protocol error)."""
        self.close()


# --- in-process agents ---------------------------------------------------------------------------

class AgentPlayer(Player):
    def __init__(self, spec: PlayerSpec, tc: TimeControl):
        super().__init__(spec, tc)
        self.agent = None
        self.synced = 0
        self.timeman = TimeManager()

    def new_game(self, game: Game, color: Color, seed: int) -> None:
        from engine_server.agents import make_agent

        try:
            self.agent = make_agent(self.spec.target, seed=seed)
        except Exception as e:  # an agent that cannot be built loses like a crashed engine
            raise PlayerCrash(f"agent construction failed: {e}") from e
        self.synced = 0

    def _limits(self, turn: Turn, t0: float) -> Limits:
        limits = Limits(playouts=self.tc.playouts)
        clock = None
        if turn.clock_left is not None:
            clock = Clock(kind=FISCHER if self.tc.increment > 0 else ABSOLUTE,
                          main=self.tc.clock or 0.0, period=self.tc.increment)
            clock.set_left(turn.clock_left[turn.color], 0)
        budget = self.timeman.budget(clock, turn.game.position.empties, self.tc.move_time)
        if budget is not None:
            # The driver checks its deadline between batches of a few ms: leave room for one.
            limits.deadline = t0 + max(0.001, budget - min(0.05, 0.1 * budget))
        return limits

    def genmove(self, turn: Turn) -> Reply:

        t0 = time.monotonic()
        game = turn.game
        try:
            if self.tc.tree_reuse:
                self.agent.advance(game.moves[self.synced:])
            else:
                self.agent.reset()
            r = self.agent.search(game.position, self._limits(turn, t0))
        except Exception as e:
            raise PlayerCrash(f"agent raised {type(e).__name__}: {e}\n"
                              + traceback.format_exc(limit=3)) from e
        self.synced = len(game.moves) + 1
        if r.best_move is None:
            raise PlayerProtocolError("agent returned no move")
        # Agents without a search (random play) have no evaluation to report.
        ev = r.eval if r.playouts > 0 and r.moves else None
        return Reply(r.best_move, ev, {"playouts": r.playouts, "iterations": r.iterations})


# --- GTP over pipes and over ZeroMQ --------------------------------------------------------------

class _GtpBase(Player):
    """The GTP conversation; subclasses open the :class:`EngineClient` (``_open``) and may say
    how engine errors become player errors (``_player_error``) and which lines are retried."""

    def __init__(self, spec: PlayerSpec, tc: TimeControl):
        super().__init__(spec, tc)
        self.commands: set[str] = set()
        self.started = False
        self.client: EngineClient | None = None

    def _open(self) -> EngineClient:
        raise NotImplementedError

    def _retries(self, line: str) -> int | None:
        """Resends for ``line`` (None: the client's default)."""
        return None

    def _player_error(self, e: EngineError, line: str, timeout: float) -> PlayerError:
        code = None
        if self.client is not None and isinstance(self.client.channel, PipeChannel):
            code = self.client.channel.proc.poll()
        return _player_error(e, f"no answer to {line!r} within {timeout:.3g} s",
                             f"engine exited (code {code}) during {line!r}")

    @contextmanager
    def _talking(self, line: str, timeout: float) -> Iterator[EngineClient]:
        """The client, with its errors raised as player errors."""
        if self.client is None:
            self.client = self._open()
        try:
            yield self.client
        except EngineError as e:
            raise self._player_error(e, line, timeout) from None

    def _command(self, line: str, timeout: float) -> str:
        with self._talking(line, timeout) as client:
            return client.command(line, timeout, retries=self._retries(line))

    def _start(self) -> None:
        version = self._command("protocol_version", SETUP_TIMEOUT)
        if version.strip() not in ("1", "2"):
            log.info("gtp_protocol_version", engine=self.spec.name, version=version)
        with self._talking("list_commands", COMMAND_TIMEOUT) as client:
            self.commands = client.list_commands(COMMAND_TIMEOUT,
                                                 retries=self._retries("list_commands"))
        if "name" in self.commands:
            name = self._command("name", COMMAND_TIMEOUT).split()
            if name:
                self.engine_name = name[0]
        if "reg_genmove" in self.commands:
            # A dry-run search before the first game: engines that load or compile their
            # search code lazily (ours: numba caches) would otherwise pay for it on move one.
            self._command("clear_board", COMMAND_TIMEOUT)
            self._command("reg_genmove black", SETUP_TIMEOUT)
        self.started = True

    def new_game(self, game: Game, color: Color, seed: int) -> None:
        if not self.started:
            self._start()
        if "set_game" in self.commands:
            self._command("set_game Othello", COMMAND_TIMEOUT)
        self._command("boardsize 8", COMMAND_TIMEOUT)
        self._command("clear_board", COMMAND_TIMEOUT)
        rules = game.rules
        if "othello-rules" in self.commands:
            self._command(f"othello-rules {rules}", COMMAND_TIMEOUT)
        elif rules != Rules.STANDARD:
            raise PlayerProtocolError("the engine has no othello-rules command; it cannot be "
                                      "told to play reversed rules")
        self._time_settings()
        replay = Game(game.start)
        for mv in game.moves:
            self._play(replay.position.side, mv)
            replay.play(mv)

    def _time_settings(self) -> None:
        tc = self.tc
        if tc.clock is not None:
            if tc.increment > 0 and "kata-time_settings" in self.commands:
                self._command(f"kata-time_settings fischer {_fmt(tc.clock)} "
                              f"{_fmt(tc.increment)}", COMMAND_TIMEOUT)
            elif "time_settings" in self.commands:
                # Absolute time; an increment reaches the engine through time_left only.
                self._command(f"time_settings {_fmt(tc.clock)} 0 0", COMMAND_TIMEOUT)
        elif tc.move_time is not None and "time_settings" in self.commands:
            # Canadian overtime of one stone per period is the GTP idiom for a per-move limit.
            self._command(f"time_settings 0 {_fmt(tc.move_time)} 1", COMMAND_TIMEOUT)

    def _play(self, color: Color, move: int) -> None:
        text = "pass" if move == PASS else _sq(move)
        line = f"play {color} {text}"
        with self._talking(line, COMMAND_TIMEOUT) as client:
            client.play(str(color), text, COMMAND_TIMEOUT, retries=self._retries(line))

    def observe(self, game: Game, move: int, color: Color) -> None:
        self._play(color, move)

    def genmove(self, turn: Turn) -> Reply:
        if "time_left" in self.commands:
            if turn.clock_left is not None:
                left = max(0.0, turn.clock_left[turn.color])
                self._command(f"time_left {turn.color} {_fmt(left)} 0", COMMAND_TIMEOUT)
            elif self.tc.move_time is not None:
                self._command(f"time_left {turn.color} {_fmt(self.tc.move_time)} 1",
                              COMMAND_TIMEOUT)
        line, wait = f"genmove {turn.color}", turn.wait or 1e9
        with self._talking(line, wait) as client:
            answer = client.genmove(str(turn.color), wait, retries=self._retries(line)).strip()
        word = answer.split()[0].lower() if answer.split() else ""
        if word == "resign":
            return Reply(None)
        try:
            return Reply(parse_move(word))
        except NotationError:
            raise PlayerProtocolError(f"genmove answered {answer!r}") from None


def _sq(move: int) -> str:
    from engine_server.game import square_name

    return square_name(move)


class GtpPlayer(_GtpBase):
    def _open(self) -> EngineClient:
        try:
            return EngineClient(PipeChannel.spawn(shlex.split(self.spec.target)))
        except OSError as e:
            raise PlayerCrash(f"cannot start {self.spec.target!r}: {e}") from e

    def _channel(self) -> PipeChannel | None:
        if self.client is None:
            return None
        assert isinstance(self.client.channel, PipeChannel)
        return self.client.channel

    def close(self) -> None:
        _quit(self._channel())
        self.client = None
        self.started = False

    def kill(self) -> None:
        channel = self._channel()
        if channel is not None:
            channel.kill()
        self.client = None
        self.started = False


class _SessionLost(PlayerProtocolError):
    """The server closed our session and its game (``? session expired``)."""


class ZmqPlayer(_GtpBase):
    """A remote engine.  Its session survives reconnects (the channel keeps its routing id, and
    a resent request is answered from the server's memory); should the server have closed it
    anyway (idle for ``idle_timeout``, or evicted while disconnected), the game is set up again
    from the referee's record in a new session and the request made once more."""

    def _open(self) -> EngineClient:
        return RemoteEngine(self.spec.target, protocol="gtp", timeout=COMMAND_TIMEOUT)

    def _retries(self, line: str) -> int | None:
        # A move request is not retried: the wait is the referee's, and a retry would restart it.
        return 0 if line.startswith("genmove") else None

    def _resume(self, game: Game, e: PlayerError) -> None:
        log.warning("zmq_session_lost", engine=self.spec.name, detail=str(e))
        self.new_game(game, game.position.side, 0)

    def observe(self, game: Game, move: int, color: Color) -> None:
        try:
            super().observe(game, move, color)
        except _SessionLost as e:
            self._resume(game, e)   # the record holds the move: the new session has it

    def genmove(self, turn: Turn) -> Reply:
        try:
            return super().genmove(turn)
        except _SessionLost as e:
            self._resume(turn.game, e)
            return super().genmove(turn)

    def _player_error(self, e: EngineError, line: str, timeout: float) -> PlayerError:
        if isinstance(e, EngineSessionExpired):
            return _SessionLost(str(e))
        if isinstance(e, EngineCommandError):
            return PlayerProtocolError(str(e))
        # Anything else means the server could not be reached (as RemoteError always meant).
        return PlayerTimeout(f"no answer to {line!r} within {timeout:.3g} s")

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
            self.client = None
        self.started = False


# --- NBoard over pipes ---------------------------------------------------------------------------

class NBoardPlayer(Player):
    """NBoard has no response framing to parse: ``ping N``/``pong N`` marks where the answers to
    earlier lines end, so this player reads the pipe channel line by line itself."""

    def __init__(self, spec: PlayerSpec, tc: TimeControl):
        super().__init__(spec, tc)
        self.channel: PipeChannel | None = None
        self.ping = 0

    def _code(self) -> int | None:
        return self.channel.proc.poll() if self.channel is not None else None

    def _send(self, line: str) -> None:
        assert self.channel is not None
        try:
            self.channel.send(line)
        except EngineError as e:
            raise _player_error(e, f"no answer to {line!r}",
                                f"engine exited (code {self._code()})") from None

    def _read_until(self, pred: Callable[[str], bool], timeout: float, what: str) -> str:
        assert self.channel is not None
        end = time.monotonic() + timeout
        while True:
            try:
                line = self.channel.read_line(end)
            except EngineError as e:
                raise _player_error(e, f"no {what} within {timeout:.3g} s",
                                    f"engine exited (code {self._code()}) "
                                    f"while waiting for {what}") from None
            name = nb.parse_myname(line)
            if name:
                self.engine_name = name
            if pred(line):
                return line

    def _sync(self, timeout: float) -> None:
        self.ping += 1
        n = self.ping
        self._send(f"ping {n}")
        self._read_until(lambda l: l.strip() == f"pong {n}", timeout, f"pong {n}")

    def new_game(self, game: Game, color: Color, seed: int) -> None:
        if self.channel is None:
            try:
                self.channel = PipeChannel.spawn(shlex.split(self.spec.target))
            except OSError as e:
                raise PlayerCrash(f"cannot start {self.spec.target!r}: {e}") from e
            self._send("nboard 2")
            if self.tc.nboard_depth is not None:
                self._send(f"set depth {self.tc.nboard_depth}")
            self._sync(SETUP_TIMEOUT)
            # A dry-run search from the start position, for the reason given in _GtpBase.
            ti, _ = nboard_clock(self.tc, [])
            start = ggf.GgfRecord(start=Position.start(), tags={"TI": ti})
            self._send(nb.set_game_line(start.to_text()))
            self._sync(SETUP_TIMEOUT)
            self._send("go")
            self._read_until(nb.is_move_line, SETUP_TIMEOUT, "=== move")

    def genmove(self, turn: Turn) -> Reply:
        ti, items = nboard_clock(self.tc, turn.items)
        rec = ggf.GgfRecord(start=turn.game.start, moves=items,
                            tags={"PB": "black", "PW": "white", "TI": ti})
        self._send(nb.set_game_line(rec.to_text()))
        self._sync(COMMAND_TIMEOUT)
        self._send("go")
        try:
            line = self._read_until(nb.is_move_line, turn.wait or 1e9, "=== move")
        except PlayerTimeout as e:
            raise PlayerTimeout(
                f"{e} (the engine was sent TI[{ti}]; an NBoard engine learns the time control "
                "only from the GGF clock: one that ignores it needs a depth it finishes in time, "
                "--nboard-depth N, or a limit of its own, e.g. this engine's --move-time)"
            ) from None
        try:
            item = nb.parse_move_line(line)
        except ggf.GgfError as e:
            raise PlayerProtocolError(f"bad move line {line!r}: {e}") from None
        return Reply(item.move, item.eval)

    def close(self) -> None:
        _quit(self.channel)
        self.channel = None

    def kill(self) -> None:
        if self.channel is not None:
            self.channel.kill()
            self.channel = None


def _kill(proc: EngineProcess | PipeChannel) -> None:
    proc.kill()


# --- CS303 AI files ------------------------------------------------------------------------------

class Cs303Player(Player):
    """A CS303 ``AI`` class in its own worker process (``clients.match.cs303_worker``), one
    process per game as the course platform runs one judge process per game.  The worker calls
    ``AI(8, color, time_out).go(board)`` under the judge's SIGALRM timer and returns
    ``candidate_list``; its last element is the move, an empty list a pass."""

    wants_pass_turns = True

    def __init__(self, spec: PlayerSpec, tc: TimeControl):
        super().__init__(spec, tc)
        self.proc: EngineProcess | None = None
        self.time_out = tc.move_time if tc.move_time is not None else CS303_DEFAULT_TIME_OUT
        self.engine_name = Path(spec.target).stem if spec.name == spec.text else spec.name

    def _request(self, msg: dict, timeout: float) -> dict:
        assert self.proc is not None
        try:
            self.proc.send(json.dumps(msg))
            line = self.proc.read_line(timeout)
        except EngineTimeout:
            raise PlayerTimeout(f"no answer within {timeout:.3g} s") from None
        except (EOFError, BrokenPipeError, OSError):
            raise PlayerCrash(f"AI process exited (code {self.proc.proc.poll()})") from None
        try:
            reply = json.loads(line)
        except json.JSONDecodeError:
            raise PlayerProtocolError(f"worker said {line[:200]!r}") from None
        if reply.get("error"):
            raise PlayerCrash(reply["error"])
        return reply

    def new_game(self, game: Game, color: Color, seed: int) -> None:
        self.kill()  # a fresh process each game: module and class state start clean
        args = [sys.executable, "-m", "clients.match.cs303_worker", str(Path(self.spec.target))]
        env = dict(os.environ)
        repo = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = repo + os.pathsep + env.get("PYTHONPATH", "")
        self.proc = EngineProcess(args, env=env)
        self._request({"op": "load", "seed": seed}, SETUP_TIMEOUT)
        self._request({"op": "new", "color": -1 if color == Color.BLACK else 1,
                       "time_out": self.time_out}, self.time_out + SETUP_TIMEOUT)

    def genmove(self, turn: Turn) -> Reply:
        board = turn.game.position.to_cs303().tolist()
        reply = self._request({"op": "go", "board": board}, turn.wait or 1e9)
        cands = reply.get("candidates", [])
        if not cands:
            return Reply(PASS, stats={"timed_out": reply.get("timed_out", False)})
        last = cands[-1]
        try:
            r, c = int(last[0]), int(last[1])
            if len(last) != 2 or not (0 <= r < 8 and 0 <= c < 8):
                raise ValueError
        except (TypeError, ValueError, IndexError):
            raise PlayerProtocolError(f"candidate_list[-1] = {last!r} is not a (row, col) on "
                                      "the board") from None
        return Reply(c + 8 * r, stats={"timed_out": reply.get("timed_out", False)})

    def close(self) -> None:
        self.kill()

    def kill(self) -> None:
        if self.proc is not None:
            _kill(self.proc)
            self.proc = None


PLAYER_CLASSES = {"agent": AgentPlayer, "gtp": GtpPlayer, "nboard": NBoardPlayer,
                  "zmq": ZmqPlayer, "cs303": Cs303Player}


def make_player(spec: PlayerSpec, tc: TimeControl) -> Player:
    return PLAYER_CLASSES[spec.kind](spec, tc)
