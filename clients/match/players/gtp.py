"""Engines speaking GTP: a subprocess over pipes (``gtp:COMMAND``) or a remote engine over
ZeroMQ (``zmq:ENDPOINT``, through ``clients.remote.RemoteEngine``).  One conversation,
:class:`_GtpBase`; the two differ in how they open the client and what its errors mean."""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from contextlib import contextmanager

from clients.channels import PipeChannel
from clients.engine_client import (
    EngineClient,
    EngineCommandError,
    EngineError,
    EngineSessionExpired,
)
from clients.remote import RemoteEngine
from engine_server.game import PASS, Color, Game, NotationError, Rules, parse_move
from engine_server.log import get_logger

from .base import (
    COMMAND_TIMEOUT,
    Player,
    PlayerCrash,
    PlayerError,
    PlayerProtocolError,
    PlayerSpec,
    PlayerTimeout,
    Reply,
    TimeControl,
    Turn,
    player_error,
    quit_engine,
)

log = get_logger("match.players")


def _fmt(x: float) -> str:
    return f"{x:.3f}".rstrip("0").rstrip(".") if x != int(x) else str(int(x))



class _GtpBase(Player):
    """The GTP conversation; subclasses open the :class:`EngineClient` (``_open``) and may say
    how engine errors become player errors (``player_error``) and which lines are retried."""

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
        return player_error(e, f"no answer to {line!r} within {timeout:.3g} s",
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
        version = self._command("protocol_version", self.tc.setup)
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
            self._command("reg_genmove black", self.tc.setup)
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
        quit_engine(self._channel())
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

