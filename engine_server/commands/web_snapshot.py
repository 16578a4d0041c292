"""The web page's game as the session store keeps it (docs/web.md, "Restarts"): what a page would
miss if its game's process were restarted, as one JSON document (``snapshot``), and taking it
back on a fresh handler (``restore``).

A mixin of ``WebHandler`` (``web.py``), whose state it reads and writes: the game (through the
handler's session), who plays each side, the time per move, paused, the engines' evaluations
and times by ply, the live evaluation's switch and the analyst's values and whole-game analysis
(``web_analysis.py``).  The game's process (``serve/web_game.py``) writes the document to the
store whenever it has changed, and restores a game from it.
"""

from __future__ import annotations

from typing import Any, Callable

from engine_server.game import Color, Game, Position
from engine_server.session import Session
from protocol import web

Message = web.Message

SNAPSHOT_VERSION = 1        # of ``WebHandler.snapshot``'s document


class SnapshotMixin:
    """``snapshot``/``restore`` of the handler's game and settings (not its searches)."""

    # The handler's, which the snapshot holds.
    session: Session
    players: dict[Color, str | None]
    time: float
    max_time: float | None
    paused: bool
    evals: dict[int, float]
    times: dict[int, float]
    # The analyst's (web_analysis.py).
    evaluate: bool
    analyst_values: dict[int, Message]
    _analysis: tuple[Position, list[int]] | None
    _analysis_at: tuple[int, float]
    # The handler's checks and changes, which a restore goes through.
    _player: Callable[[Any, str], str | None]
    _apply_players: Callable[[dict[Color, str | None]], None]
    _check_analysis: Callable[[], None]

    def snapshot(self) -> dict[str, Any]:
        """What a page would miss if this game's process were restarted, JSON-ready: the game
        (rules, start, moves), who plays each side, the time per move, paused, the engines'
        evaluations and times by ply, the live evaluation's switch, the analyst's values and
        a whole-game analysis under way (the move it has reached).  Search trees, tables and
        a search under way are not kept: after :meth:`restore` an engine whose turn it is
        searches its move again (on ``attach``)."""
        analysis = None
        if self._analysis is not None:
            start, moves = self._analysis
            k, budget = self._analysis_at
            analysis = {"start": [start.to_string(), int(start.side)],
                        "moves": [int(m) for m in moves], "at": k, "time": budget}
        return {
            "version": SNAPSHOT_VERSION,
            "game": self.session.snapshot(),
            "players": {web.color_name(c): self.players[c] for c in (Color.BLACK, Color.WHITE)},
            "time": self.time,
            "paused": self.paused,
            "evals": [[k, v] for k, v in sorted(self.evals.items())],
            "times": [[k, v] for k, v in sorted(self.times.items())],
            "evaluate": self.evaluate,
            "analyst": [dict(e) for _, e in sorted(self.analyst_values.items())],
            "analysis": analysis,
        }

    def restore(self, state: dict[str, Any]) -> None:
        """Take back what :meth:`snapshot` wrote, on a fresh handler.  ValueError, KeyError,
        TypeError, WebError or AgentSpecError when it does not fit this server (an agent its
        policy now refuses, an illegal move, a state of another version)."""
        if state.get("version") != SNAPSHOT_VERSION:
            raise ValueError(f"a saved game of another version ({state.get('version')!r}; "
                             f"this server reads {SNAPSHOT_VERSION})")
        wanted = {c: self._player(state["players"].get(web.color_name(c)), web.color_name(c))
                  for c in (Color.BLACK, Color.WHITE)}
        t = float(state["time"])
        if t < 0:
            raise ValueError(f"time per move {t:g} s")
        self.session.restore(state["game"])
        self._apply_players(wanted)
        self.time = t if self.max_time is None else min(t, self.max_time)
        self.paused = bool(state["paused"])
        self.evals = {int(k): float(v) for k, v in state["evals"]}
        self.times = {int(k): float(v) for k, v in state["times"]}
        self.evaluate = bool(state["evaluate"])
        self.analyst_values = {int(e["ply"]): dict(e) for e in state["analyst"]}
        a = state.get("analysis")
        if a is not None:
            rules = self.session.game.rules
            start = Position.from_string(a["start"][0], Color(int(a["start"][1])), rules)
            moves = [int(m) for m in a["moves"]]
            Game.from_moves(moves, start=start)   # IllegalMoveError (a ValueError) if not
            self._analysis = (start, moves)
            self._analysis_at = (int(a["at"]), float(a["time"]))
            self._check_analysis()


__all__ = ["SNAPSHOT_VERSION", "SnapshotMixin"]
