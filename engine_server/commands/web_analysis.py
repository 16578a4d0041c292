"""The web page's analyst (docs/web.md, "Hints and the analyst"): one agent, the strongest the
server's limits allow, on a session of its own, gives every number the page shows about a
position: the hints, the evaluation bar (``evaluate``: each position valued while no engine
searches) and the whole-game analysis (``analyze``: every move of the game in turn).  The
opponent's own evaluation never feeds them; the page keeps it as a series of its own.

A mixin of ``WebHandler`` (``web.py``), which declares the commands and checks their requests.
A mixin rather than a helper object because the analyst lives on the handler's threads and
state: it runs on the controller (``post``), writes through the handler, stops when the page
detaches or the handler closes, and the game it values is the handler's session's.

One session runs one search at a time, so the analyst's work has an order: a hint (asked by
the person, waited for) stops whatever else runs; the whole-game analysis goes on after it from
the position it had reached; the live evaluation of the current position comes last, only
while no engine searches a move (it would take the engine's cores).
"""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any, Callable

from engine_server.agents import AgentSpecError, parse_spec
from engine_server.agents.verdict import Verdict, analysis_depth, judge, judge_book
from engine_server.game import PASS, Color, Game, Position, square_name
from engine_server.search.limits import Limits, SearchResult
from engine_server.session import SearchJob, Session
from protocol import web

from .web_views import black_view

Message = web.Message

ANALYSIS_TIME = 0.25        # seconds per position of a whole-game analysis when not given
EVAL_TIME = 0.5             # seconds of the live evaluation of one position at most
# A search to the analysis's depth may take longer than its share of time on a slow machine or
# a hard position: it may run this many times its share before it stops at the depth it
# finished (the page shows each value's depth).
# The searches of an analysis and of the bar have a depth and no clock, so that the endgame
# solver works to a node budget (agents/root_solving.py) and the same game gets the same values
# on any machine; a search still running after GUARD seconds (or OVERRUN times its share) is
# stopped at the depth it finished, so that a slow machine cannot hold the analyst for long.
OVERRUN = 4.0
GUARD = 5.0
# The analyst: an operator's preset named ``analyst`` when the configuration has one, else the
# first of these the policy admits (fitted to its threads and memory); presets of the strongest
# family when only presets may be chosen; the game's own agent when nothing else is allowed.
ANALYST_PRESET = "analyst"
ANALYST_FAMILIES = ("best", "ab", "mcts")


def analyst_spec(session: Session) -> str:
    """The spec the analyst runs on this session's policy and presets."""
    presets = session.options.catalog.presets
    names = [ANALYST_PRESET] if ANALYST_PRESET in presets else []
    names += list(ANALYST_FAMILIES)
    for family in ANALYST_FAMILIES:
        names += [p for p, spec in presets.items() if spec.split(":")[0] == family]
    for name in names:
        try:
            return session.admit(name)
        except AgentSpecError:
            continue
    return session.agent_spec


def effort(r: SearchResult) -> Message:
    """What the search was: depth (and its selectivity, percent) for alpha-beta, root visits
    for tree agents, ``book`` for a move of the opening book."""
    if r.stopped_by == "book":
        return {"book": True}
    if r.search_nodes > 0:
        return {"depth": r.iterations, "selectivity": r.selectivity}
    visits = sum(m.visits for m in r.moves)
    return {"visits": visits or r.iterations}


class AnalysisMixin:
    """The analyst of the handler's game: its session, the values it has found (``analyst``,
    ply -> black's discs), the whole-game analysis (the game it analyses, the move it has
    reached, its job) and the live evaluation's job."""

    # The handler's, which the analyst uses.
    session: Session
    post: Callable[[Callable[[], None]], None]
    on_search: Callable[[SearchJob], None] | None
    max_time: float | None
    detached: bool
    _closed: bool

    _analyst: Session | None
    _analysis: tuple[Position, list[int]] | None
    _analysis_job: SearchJob | None
    _analysis_at: tuple[int, float]
    _analysis_fresh: bool
    _eval_job: SearchJob | None
    evaluate: bool
    analyst_values: dict[int, Message]

    def _write(self, msg: Message, job: SearchJob | None = None) -> bool:
        raise NotImplementedError   # the handler's

    def _hinting(self) -> bool:
        raise NotImplementedError   # the handler's: a hint runs on the analyst

    def state(self) -> Message:
        raise NotImplementedError   # the handler's

    def _engine_searching(self) -> bool:
        raise NotImplementedError   # the handler's: an engine searches its move

    def _init_analysis(self) -> None:
        self._analyst = None
        self._analysis = None
        self._analysis_job = None
        self._analysis_at = (0, ANALYSIS_TIME)
        self._analysis_fresh = False
        self._eval_job = None
        self.evaluate = False           # the page asks for the live evaluation
        self.analyst_values = {}        # ply -> {"value": black's discs, "exact", effort...}

    # --- the analyst's session ----------------------------------------------------------------
    def _analyst_session(self) -> Session:
        if self._analyst is None:
            opts = replace(self.session.options, agent=analyst_spec(self.session), warmup=False)
            self._analyst = Session(opts, self.session.output)
        return self._analyst

    def analyst_info(self) -> Message:
        """The analyst as the page names it: its spec and family."""
        spec = self._analyst.agent_spec if self._analyst is not None \
            else analyst_spec(self.session)
        try:
            family = parse_spec(spec)[0].name
        except AgentSpecError:
            family = spec.split(":")[0]
        return {"spec": spec, "family": family}

    def _game_copy(self) -> Game:
        game = self.session.game
        return Game.from_moves(list(game.moves), start=game.start)

    def _note_value(self, ply: int, color: Color, r: SearchResult, budget: float,
                    source: str) -> Message:
        """Keep the analyst's value of the position at ``ply`` (``color`` to move) unless an
        exact one is known; the entry as the page gets it.  Only searches to the analysis's
        depth (the live evaluation, the whole-game analysis) come here, so that the bar and
        the graph compare values of one depth ply to ply: a hint searches deeper, and its
        values stay with the hint."""
        return self._keep_value({"ply": ply, "value": round(black_view(r.eval, color), 2),
                                 "exact": r.exact, "source": source, "budget": budget,
                                 **effort(r)})

    def _keep_value(self, entry: Message) -> Message:
        old = self.analyst_values.get(entry["ply"])
        if old is None or entry["exact"] or not old["exact"]:
            self.analyst_values[entry["ply"]] = entry
        return entry

    def _forget_values(self, keep: int | None = None) -> None:
        """After the game changed: the values of the plies after ``keep`` go (all: None)."""
        for k in [k for k in self.analyst_values if keep is None or k > keep]:
            del self.analyst_values[k]

    def analyst_state(self) -> list[list[Any]]:
        """The values for ``state``: ``[ply, black's discs]`` pairs."""
        return [[k, e["value"]] for k, e in sorted(self.analyst_values.items())]

    # --- what runs next -------------------------------------------------------------------
    def _analyst_next(self) -> None:
        """The analyst is free (or may be): go on with the whole-game analysis, else value the
        current position for the bar if the page asked for it and no engine searches."""
        if self._closed or self.detached or self._hinting():
            return
        if self._analysis is not None:
            if self._analysis_job is None:
                self._stop_eval()
                k, budget = self._analysis_at
                self._analyse(k, budget)
            return
        if self._eval_job is not None or not self.evaluate or self._engine_searching():
            return
        game = self.session.game
        ply, pos = len(game.moves), game.position
        if ply in self.analyst_values:
            return
        if pos.is_game_over():   # nothing to search: the result
            result = game.result()
            entry = {"ply": ply, "value": float(result.black_score), "exact": True,
                     "source": "result", "budget": 0.0}
            self.analyst_values[ply] = entry
            self._write({"type": "eval", "color": web.color_name(pos.side), **entry})
            self._write(self.state())
            return
        analyst = self._analyst_session()
        analyst.set_game(self._game_copy())
        budget = EVAL_TIME if self.max_time is None else min(EVAL_TIME, self.max_time)
        color = pos.side

        # the analysis's depth at its usual time, so that the bar and the graph agree
        limits, guard = self._guarded(analysis_depth(ANALYSIS_TIME), budget, analysis=False)

        def done(job: SearchJob) -> None:
            guard.cancel()
            self.post(lambda: self._eval_done(job, ply, color, budget))

        self._eval_job = analyst.start("evaluate", limits, on_done=done)
        if self.on_search is not None:
            self.on_search(self._eval_job)

    def _eval_done(self, job: SearchJob, ply: int, color: Color, budget: float) -> None:
        if self._closed or job is not self._eval_job or job.cancelled:
            return
        self._eval_job = None
        r = job.result
        if r is not None and r.moves and len(self.session.game.moves) >= ply:
            entry = self._note_value(ply, color, r, budget, "evaluate")
            self._write({"type": "eval", "color": web.color_name(color), **entry})
            self._write(self.state())
        self._analyst_next()

    def _stop_eval(self) -> None:
        if self._eval_job is not None:
            self._eval_job = None
            if self._analyst is not None:
                self._analyst.stop()

    def _suspend_analysis(self) -> None:
        """Stop the whole-game analysis's search for now (a hint needs the analyst); it goes
        on from the same move afterwards."""
        if self._analysis_job is not None:
            self._analysis_job = None
            if self._analyst is not None:
                self._analyst.stop()

    # --- the whole-game analysis ---------------------------------------------------------
    def _start_analysis(self, budget: float) -> list[Message]:
        """Analyse the game as it stands, ``budget`` seconds per position; the reply."""
        game = self.session.game
        self._stop_analysis()
        self._stop_eval()
        analyst = self._analyst_session()
        moves = list(game.moves)
        self._analysis = (game.start, moves)
        self._analysis_at = (0, budget)
        self._analysis_fresh = True
        self.post(lambda: self._analyse(0, budget))
        return [{"type": "analysis", "moves": [], "done": False, "total": len(moves),
                 "agent": analyst.agent_spec, "time": budget}]

    def _stop_analysis(self) -> None:
        self._analysis = None
        if self._analysis_job is not None:
            self._analysis_job = None
            if self._analyst is not None:
                self._analyst.stop()

    def _close_analysis(self) -> None:
        self._stop_analysis()
        self._eval_job = None
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
        if self._analysis is None or self._analysis_job is not None:
            return
        self._analysis_at = (k, budget)
        if self._hinting():
            return   # the hint first; _analyst_next goes on from here after it
        start, moves = self._analysis
        quick: list[Message] = []   # forced moves and book moves: nothing to search
        game = Game.from_moves(moves[:k], start=start)
        analyst = self._analyst_session()
        while k < len(moves):
            pos = game.position
            legal = pos.legal_moves()
            if moves[k] != PASS and len(legal) > 1:
                verdict = judge_book(pos, moves[k], analyst.agent.book_moves(pos))
                if verdict is None:
                    break
                quick.append(self._verdict_entry(k, pos, verdict))
                if verdict.best_value is not None and self._same_game(k):
                    self._keep_value({"ply": k, "exact": False, "source": "book",
                                      "budget": 0.0, "book": True,
                                      "value": round(black_view(verdict.best_value,
                                                                pos.side), 2)})
            elif moves[k] != PASS:   # the only move: nothing lost, nothing to search
                quick.append({"ply": k, "color": web.color_name(pos.side),
                              "move": square_name(moves[k]), "best": square_name(moves[k]),
                              "value": None, "best_value": None, "loss": 0, "exact": False,
                              "book": False, "mark": None, "after": None})
            game.play(moves[k])
            k += 1
        self._analysis_at = (k, budget)
        if quick:
            self._write({"type": "analysis", "moves": quick, "done": False})
        if k == len(moves):
            self._analysis = None
            self._write({"type": "analysis", "moves": [], "done": True})
            self._analyst_next()
            return
        self._stop_eval()
        analyst.set_game(game)   # and no search runs on it now
        if self._analysis_fresh:
            # The analysis starts from an empty table: the same game gets the same values
            # whatever the analyst searched before (hints, the bar), live or from a link.
            analyst.agent.reset()
            self._analysis_fresh = False
        pos = game.position

        # Every position to one depth (agents/verdict.py): the values ply to ply are alike
        # and the same game analysed twice gets the same marks.
        limits, guard = self._guarded(analysis_depth(budget), budget, analysis=True)

        def done(job: SearchJob) -> None:
            guard.cancel()
            self.post(lambda: self._analysed(job, k, pos, budget))

        self._analysis_job = analyst.start("analysis", limits, on_done=done)
        if self.on_search is not None:
            self.on_search(self._analysis_job)

    @staticmethod
    def _guarded(depth: int, budget: float,
                 analysis: bool) -> tuple[Limits, threading.Timer]:
        """A search to ``depth`` with no clock, and the timer that stops it past its guard
        time (to cancel when the search is done)."""
        stop = threading.Event()
        timer = threading.Timer(max(GUARD, OVERRUN * budget), stop.set)
        timer.daemon = True
        timer.start()
        return Limits(depth=depth, stop=stop, analysis=analysis), timer

    def _same_game(self, k: int) -> bool:
        """The game still starts with the analysed game's first ``k`` moves."""
        return self._analysis is not None and self._analysis[0] == self.session.game.start \
            and self.session.game.moves[:k] == self._analysis[1][:k]

    @staticmethod
    def _verdict_entry(k: int, pos: Position, v: Verdict) -> Message:
        """One analysed move as the page gets it: values in the mover's view, ``after`` the
        value after the move in black's."""
        return {"ply": k, "color": web.color_name(pos.side), "move": square_name(v.move),
                "best": None if v.best is None else square_name(v.best),
                "value": v.value, "best_value": v.best_value, "loss": v.loss,
                "exact": v.exact, "book": v.book, "depth": v.depth, "mark": v.mark,
                "mistake": v.mistake, "blunder": v.blunder,
                "after": None if v.value is None else round(black_view(v.value, pos.side), 2)}

    def _analysed(self, job: SearchJob, k: int, pos: Position, budget: float) -> None:
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
        verdict = judge(pos, move, r)
        if verdict.best is not None and self._same_game(k):
            self._note_value(k, pos.side, r, budget, "analysis")
        self._write({"type": "analysis", "done": False,
                     "moves": [self._verdict_entry(k, pos, verdict)]})
        self._analyse(k + 1, budget)


__all__ = ["ANALYSIS_TIME", "ANALYST_FAMILIES", "ANALYST_PRESET", "AnalysisMixin", "EVAL_TIME",
           "analyst_spec", "effort"]
