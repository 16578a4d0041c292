"""Engines speaking NBoard v2 over pipes (``nboard:COMMAND``); the line formats are
``protocol.nboard``'s."""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable

from clients.channels import PipeChannel
from clients.engine_client import EngineError
from engine_server.game import Color, Game, Position, ggf
from protocol import nboard as nb

from .base import (
    COMMAND_TIMEOUT,
    Player,
    PlayerCrash,
    PlayerProtocolError,
    PlayerSpec,
    PlayerTimeout,
    Reply,
    TimeControl,
    Turn,
    nboard_clock,
    player_error,
    quit_engine,
)


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
            raise player_error(e, f"no answer to {line!r}",
                                f"engine exited (code {self._code()})") from None

    def _read_until(self, pred: Callable[[str], bool], timeout: float, what: str) -> str:
        assert self.channel is not None
        end = time.monotonic() + timeout
        while True:
            try:
                line = self.channel.read_line(end)
            except EngineError as e:
                raise player_error(e, f"no {what} within {timeout:.3g} s",
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
            self._sync(self.tc.setup)
            # A dry-run search from the start position (see gtp._GtpBase._start): an engine that
            # loads its search code lazily pays for it here, not on move one.
            ti, _ = nboard_clock(self.tc, [])
            start = ggf.GgfRecord(start=Position.start(), tags={"TI": ti})
            self._send(nb.set_game_line(start.to_text()))
            self._sync(self.tc.setup)
            self._send("go")
            self._read_until(nb.is_move_line, self.tc.setup, "=== move")

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
        # NTest writes a zero evaluation as an empty field (``=== G4//2.32``), as GGF's move
        # items may; a judge of values needs to tell that from no field at all.
        fields = nb.move_fields(line)
        empty = item.eval is None and len(fields) > 1 and fields[1] == ""
        return Reply(item.move, item.eval, {"empty_eval": True} if empty else {})

    def close(self) -> None:
        quit_engine(self.channel)
        self.channel = None

    def kill(self) -> None:
        if self.channel is not None:
            self.channel.kill()
            self.channel = None

