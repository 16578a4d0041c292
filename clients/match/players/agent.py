"""Agents of this project as players, run in the game's own process (``agent:SPEC``)."""

from __future__ import annotations

import threading
import time
import traceback

from engine_server.game import Color, Game
from engine_server.search.limits import Limits
from engine_server.search.timeman import ABSOLUTE, FISCHER, Clock, TimeManager

from .base import Player, PlayerCrash, PlayerProtocolError, PlayerSpec, Reply, TimeControl, Turn


class AgentPlayer(Player):
    # The specs whose kernels this process has loaded: the first search of a process loads
    # (or compiles) them, seconds that would otherwise fall on a game's clock.
    _warmed: set[str] = set()
    _warm_lock = threading.Lock()

    def __init__(self, spec: PlayerSpec, tc: TimeControl):
        super().__init__(spec, tc)
        self.agent = None
        self.synced = 0
        self.timeman = TimeManager()

    def new_game(self, game: Game, color: Color, seed: int) -> None:
        from engine_server.agents import make_agent

        try:
            self.agent = make_agent(self.spec.target, seed=seed)
            self._warm_up(game, seed)
        except Exception as e:  # an agent that cannot be built loses like a crashed engine
            raise PlayerCrash(f"agent construction failed: {e}") from e
        self.synced = 0

    def _warm_up(self, game: Game, seed: int) -> None:
        # A short search of a throwaway agent, before the clock runs: the game's agent keeps
        # its seeded stream and its tree untouched.
        from engine_server.agents import make_agent

        with AgentPlayer._warm_lock:
            if self.spec.target in AgentPlayer._warmed:
                return
            pos = game.position
            if not pos.is_game_over():
                make_agent(self.spec.target, seed=seed).search(
                    pos, Limits(iterations=30, analysis=True))
            AgentPlayer._warmed.add(self.spec.target)

    def _limits(self, turn: Turn, t0: float) -> Limits:
        limits = Limits(playouts=self.tc.playouts)
        clock = None
        if turn.clock_left is not None:
            clock = Clock(kind=FISCHER if self.tc.increment > 0 else ABSOLUTE,
                          main=self.tc.clock or 0.0, period=self.tc.increment)
            clock.set_left(turn.clock_left[turn.color], 0)
        pos = turn.game.position
        budget = self.timeman.budget(clock, pos.empties, self.tc.move_time,
                                     forced=len(pos.legal_moves()) <= 1)
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

