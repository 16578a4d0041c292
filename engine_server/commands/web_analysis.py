"""Whole-game analysis for the web page (the ``analyze`` message, docs/web.md): every move of
the game searched in turn by an analyst of its own, one ``analysis`` message per move.

A mixin of ``WebHandler`` (``web.py``), which declares the command, checks its request and
calls :meth:`AnalysisMixin._start_analysis`.  A mixin rather than a helper object because the
analysis lives on the handler's threads and state: it runs on the controller (``post``), writes
through the handler, stops when the page detaches or the handler closes, and the game it checks
is the handler's session's.  Its own state is three attributes, set by ``_init_analysis``.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Callable

from engine_server.agents import AgentSpecError
from engine_server.game import PASS, Color, Game, Position, square_name
from engine_server.search.limits import Limits
from engine_server.session import SearchJob, Session
from protocol import web

from .web_views import black_view

Message = web.Message

ANALYSIS_TIME = 0.25        # seconds per position of a whole-game analysis when not given
ANALYSIS_AGENT = "best"     # the analyst, when the policy admits it (else the page's agent)


class AnalysisMixin:
    """The analysis of the handler's game: its analyst session (the strongest agent allowed),
    the game it analyses (start, moves) and the job searching one of its positions."""

    # The handler's, which the analysis uses.
    session: Session
    post: Callable[[Callable[[], None]], None]
    on_search: Callable[[SearchJob], None] | None
    detached: bool
    _closed: bool

    _analyst: Session | None
    _analysis: tuple[Position, list[int]] | None
    _analysis_job: SearchJob | None

    def _write(self, msg: Message, job: SearchJob | None = None) -> bool:
        raise NotImplementedError   # the handler's

    def _init_analysis(self) -> None:
        self._analyst = None
        self._analysis = None
        self._analysis_job = None

    def _start_analysis(self, budget: float) -> list[Message]:
        """Analyse the game as it stands, ``budget`` seconds per position; the reply."""
        game = self.session.game
        self._stop_analysis()
        if self._analyst is None:
            try:
                spec = self.session.admit(ANALYSIS_AGENT)
            except AgentSpecError:
                spec = self.session.agent_spec
            opts = replace(self.session.options, agent=spec, warmup=False)
            self._analyst = Session(opts, self.session.output)
        moves = list(game.moves)
        self._analysis = (game.start, moves)
        self.post(lambda: self._analyse(0, budget))
        return [{"type": "analysis", "moves": [], "done": False, "total": len(moves),
                 "agent": self._analyst.agent_spec, "time": budget}]

    def _stop_analysis(self) -> None:
        self._analysis = None
        self._analysis_job = None
        if self._analyst is not None:
            self._analyst.stop()

    def _close_analysis(self) -> None:
        self._stop_analysis()
        if self._analyst is not None:
            self._analyst.close()
            self._analyst = None

    def _check_analysis(self) -> None:
        """After the game changed: an analysis of moves it no longer starts with stops."""
        if self._analysis is None:
            return
        start, moves = self._analysis
        game = self.session.game
        if game.start != start or game.moves[:len(moves)] != moves:
            self._stop_analysis()

    def _analyse(self, k: int, budget: float) -> None:
        """Search the position before move ``k`` of the analysed game (moves with no choice
        are reported at once), or report the end."""
        if self._closed or self.detached or self._analysis is None:
            return
        self._check_analysis()   # the game was replaced: the rest would be void
        if self._analysis is None:
            return
        start, moves = self._analysis
        trivial: list[Message] = []
        game = Game.from_moves(moves[:k], start=start)
        while k < len(moves):
            pos = game.position
            legal = pos.legal_moves()
            if moves[k] != PASS and len(legal) > 1:
                break
            if moves[k] != PASS:   # the only move: nothing lost, nothing to search
                trivial.append({"ply": k, "color": web.color_name(pos.side),
                                "move": square_name(moves[k]), "best": square_name(moves[k]),
                                "value": None, "best_value": None, "loss": 0, "exact": False,
                                "after": None})
            game.play(moves[k])
            k += 1
        if trivial:
            self._write({"type": "analysis", "moves": trivial, "done": False})
        if k == len(moves):
            self._analysis = None
            self._write({"type": "analysis", "moves": [], "done": True})
            return
        analyst = self._analyst
        assert analyst is not None
        analyst.set_game(game)
        color = game.position.side

        def done(job: SearchJob) -> None:
            self.post(lambda: self._analysed(job, k, color, budget))

        limits = Limits(deadline=time.monotonic() + budget, analysis=True)
        self._analysis_job = analyst.start("analysis", limits, on_done=done)
        if self.on_search is not None:
            self.on_search(self._analysis_job)

    def _analysed(self, job: SearchJob, k: int, color: Color, budget: float) -> None:
        if self._closed or job is not self._analysis_job or job.cancelled \
                or self._analysis is None:
            return
        self._analysis_job = None
        move = self._analysis[1][k]
        r = job.result
        if r is None:
            self._analysis = None
            self._write({"type": "error", "request": "analyze",
                         "message": f"the analysis failed: {job.error}"})
            return
        known = {m.move: m for m in r.moves if m.move != PASS
                 and (m.visits > 0 or m.proven is not None or m.exact)}
        played = known.get(move)
        best = max(known.values(), key=lambda m: m.eval, default=None)
        value = None if played is None else round(played.eval, 1)
        loss = (None if played is None or best is None
                else round(max(0.0, best.eval - played.eval), 1))
        self._write({"type": "analysis", "done": False, "moves": [{
            "ply": k, "color": web.color_name(color), "move": square_name(move),
            "best": None if best is None else square_name(best.move),
            "value": value, "best_value": None if best is None else round(best.eval, 1),
            "loss": loss, "exact": bool(played is not None and played.exact),
            "after": None if value is None else round(black_view(value, color), 1)}]})
        self._analyse(k + 1, budget)


__all__ = ["ANALYSIS_AGENT", "ANALYSIS_TIME", "AnalysisMixin"]
