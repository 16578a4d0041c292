"""NBoard v2 (docs/reference/protocols.md section 1): line in, lines out through the session.

``go``, ``hint`` and ``analyze`` run on the session's worker, so that ``ping`` is answered while
they run: ``ping`` stops them the moment it arrives (their pending output is cancelled) and
answers ``pong``.  Any other command waits for the running request's answer, as engines that
read one command at a time do: commands are answered in the order given, also when the input
ends right after them.  Unknown lines are ignored, as the protocol requires, but said in a
``status`` line (which NBoard shows and never takes for an answer); input that is understood but
wrong (a malformed game, an illegal move, a ping without a number) is answered with a ``status``
line and changes nothing.  Nothing reaches stderr at the default log level (warning): NBoard
merges stderr into the protocol.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable

from engine_server.agents import AgentSpecError
from engine_server.game import Color, IllegalMoveError, NotationError, Position, ggf
from engine_server.log import get_logger
from engine_server.search.limits import Limits, SearchResult
from engine_server.search.timeman import ABSOLUTE, FISCHER, Clock, TimeManager
from engine_server.session import SearchJob, Session
from protocol import nboard as nb
from protocol.notation import move_text
from protocol.text import clean_line

from .common import depth_limits, depth_token
from .registry import CommandRegistry

log = get_logger("nboard")

HINT_INTERVAL = 0.5
# A go reports its search at least this often once it runs longer (two intervals at most
# between lines, as a report that comes early is dropped and the next is due an interval on).
GO_INTERVAL = 0.4

# A command gets the rest of its line and the time it arrived; it answers (if at all) through
# the session's output, often later, from the search worker.
NBoardCommand = Callable[["NBoardHandler", str, float], None]


def _quote(text: str, limit: int = 60) -> str:
    """Input echoed in a status line: quoted, and cut when long."""
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _is_move_text(word: str) -> bool:
    """``F5``, ``d3`` or ``PA``: a move as protocol v1 sent it bare."""
    try:
        ggf.parse_move_item(word)
    except (ggf.GgfError, NotationError, ValueError):
        return False
    return True


class NBoardHandler:
    """NBoard over a ``Session``: ``handle_line`` in, lines out through ``session.output``."""

    commands: CommandRegistry[NBoardCommand] = CommandRegistry("NBoard")

    def __init__(self, session: Session, timeman: TimeManager | None = None,
                 hint_interval: float = HINT_INTERVAL, go_interval: float = GO_INTERVAL):
        self.session = session
        self.out = session.output
        self.timeman = timeman or TimeManager(lag_buffer=session.options.move_overhead)
        self.depth = 12
        self.contempt = 0
        self.times: list[float | None] = []     # seconds used per move, aligned with the game
        self.tc: ggf.TimeControl | None = None
        self.hint_interval = hint_interval
        self.go_interval = go_interval
        # Set once the request now running (go, hint, analyze) has written its answer.
        self._answered = threading.Event()
        self._answered.set()

    # --- dispatch ---------------------------------------------------------------------------
    def handle_line(self, raw: str, received: float | None = None) -> bool:
        """Handle one input line; False means quit."""
        received = time.monotonic() if received is None else received
        line = clean_line(raw)
        if not line:
            return True
        word, _, rest = line.partition(" ")
        rest = rest.strip()
        if word not in ("ping", "quit"):
            # Commands are answered in order: a go or hint still running finishes first (a
            # ping stops it as it arrives, see ``arrived``; quit ends everything).
            self._await_answer()
        command = self.commands.get(word)
        if command is None:
            if not rest and _is_move_text(word):  # protocol v1 bare move ("F5")
                self._cmd_move(word, received)
            else:  # ignored, but said: a status line is all NBoard shows of it
                self._status(f"not understood: {_quote(line)} (ignored)")
            return True
        try:
            command.func(self, rest, received)
        except Exception as e:  # a bug must not cost the GUI its engine: report, go on
            log.exception("command_failed", command=word)
            self._status(f"internal error: {type(e).__name__}: {e}")
        return word != "quit"

    # --- durable state (the session store) ---------------------------------------------------
    def owes_answer(self) -> bool:
        """A ``go``, ``hint`` or ``analyze`` has not written its answer yet."""
        job = self.session.current_job
        return job is not None and not self._answered.is_set() and not job.done()

    def snapshot(self) -> dict[str, Any]:
        """The protocol's own state beside the session's: depth (the level), contempt, the
        seconds each move took and the game's clock as ``set game`` gave it."""
        tc = self.tc
        return {"depth": self.depth, "contempt": self.contempt, "times": list(self.times),
                "tc": None if tc is None else [tc.main, tc.increment, tc.grace]}

    def restore(self, state: dict[str, Any]) -> None:
        self.depth = int(state.get("depth", self.depth))
        self.contempt = int(state.get("contempt", 0))
        self.times = [None if t is None else float(t) for t in state.get("times", [])]
        tc = state.get("tc")
        self.tc = None if tc is None else ggf.TimeControl(*(float(x) for x in tc))

    def _status(self, text: str = "") -> None:
        self.out.write(nb.status_line(text))

    def _owe(self) -> threading.Event:
        """A new request that answers later: the event its answer sets."""
        self._answered = threading.Event()
        return self._answered

    def _await_answer(self, stopping: threading.Event | None = None, poll: float = 0.05
                      ) -> None:
        """Wait until the request now running (go, hint, analyze) has written its answer, it
        ended without one (a ping cancelled it), or ``stopping`` is set.  Pondering after a
        ``go`` owes nothing and is not waited for."""
        job = self.session.current_job
        if job is None:
            return
        answered = self._answered
        while not (answered.wait(poll) or job.done()
                   or (stopping is not None and stopping.is_set())):
            pass

    def arrived(self, raw: str) -> None:
        """Called by the transport's reading thread the moment a line arrives: a ``ping`` stops
        the running request at once and cancels what it would still write (NBoard: "stop
        thinking, then reply pong"), so that it does not wait behind that request."""
        if clean_line(raw).partition(" ")[0] != "ping":
            return
        job = self.session.current_job
        if job is not None:
            with self.out.lock:
                job.cancelled = True
            job.stop.set()

    def end_of_input(self, stopping: threading.Event, poll: float = 0.1) -> None:
        """No more input: wait for the running request's answer (``go``'s ``===`` line, the
        last round of a ``hint``, ``analyze``'s lines), or for ``stopping``.  A request that a
        ``ping`` stopped owes nothing, as the protocol says."""
        self._await_answer(stopping, poll)

    # --- commands ---------------------------------------------------------------------------
    @commands("quit")
    def _cmd_quit(self, rest: str, received: float) -> None:
        """End the session (the controller stops reading)."""
        self.session.stop()

    @commands("nboard")
    def _cmd_nboard(self, rest: str, received: float) -> None:
        pass  # version noted; no reply expected

    @commands("ping")
    def _cmd_ping(self, rest: str, received: float) -> None:
        self.session.stop()
        n = rest.split()[0] if rest.split() else "0"
        if not n.lstrip("-").isdigit():
            # NBoard reads the number back; anything else would be an error dialog there
            self._status(f"bad ping {_quote(rest)}: expected a number; stopped, no pong")
            return
        self.out.write(nb.pong_line(n))

    @commands("set")
    def _cmd_set(self, rest: str, received: float) -> None:
        var, _, value = rest.partition(" ")
        value = value.strip()
        if var == "depth":
            try:
                asked = int(value)
            except ValueError:
                self._status(f"bad depth {value!r}")
                return
            self.depth = max(1, min(60, asked))
            if self.depth != asked:
                self._status(f"depth {asked} is outside 1..60; using {self.depth}")
            self._apply_level()
            self.out.write(nb.myname_line(self.session.options.name))
        elif var == "game":
            self._set_game(value)
        elif var == "contempt":
            try:
                self.contempt = int(value)
            except ValueError:
                self._status(f"bad contempt {value!r}: expected whole centi-discs")
        else:  # ignored, but said
            self._status(f"not understood: {_quote('set ' + rest)} (variables: depth, game, "
                         "contempt)")

    def _apply_level(self) -> None:
        """With a level table in the configuration, ``set depth N`` chooses the preset of
        level N (GUIs show depth as the strength setting); the preset carries its own budget."""
        preset = self.session.options.catalog.level_preset(self.depth)
        if preset is None:
            return
        try:
            if self.session.admit(preset) != self.session.agent_spec:
                self.session.set_agent(preset)
        except AgentSpecError as e:
            self._status(f"level {self.depth} ({preset}) refused: {e}")

    def _limits(self) -> Limits:
        """The search budget for the set depth: the level preset's own budget when a level
        table is configured, else the depth itself (playouts for tree agents)."""
        if self.session.options.catalog.levels:
            return Limits()
        return depth_limits(self.depth)

    def _set_game(self, text: str) -> None:
        try:
            rec = ggf.parse(text)
            game = rec.game()
            tc = rec.time_control()  # before anything changes: a bad TI rejects the record
        except (ggf.GgfError, NotationError, IllegalMoveError, ValueError) as e:
            self._status(f"bad game: {e}")
            # info, not warning: the status line said it, and NBoard reads stderr as protocol
            log.info("bad_set_game", error=str(e))
            return
        self.session.set_game(game)
        self.times = [m.time for m in rec.moves]
        self.tc = tc

    @commands("move")
    def _cmd_move(self, rest: str, received: float) -> None:
        try:
            item = ggf.parse_move_item(rest.split()[0] if rest.split() else "")
            self.session.play(item.move)
        except (ggf.GgfError, IllegalMoveError, NotationError, ValueError) as e:
            self._status(f"illegal move {rest!r}: {e}")
            return
        self.times.append(item.time)

    @commands("learn")
    def _cmd_learn(self, rest: str, received: float) -> None:
        self.session.stop()
        self.out.write("learned")

    @commands("hint")
    def _cmd_hint(self, rest: str, received: float) -> None:
        try:
            n = max(1, int(rest.split()[0])) if rest.split() else 1
        except ValueError:
            self._status(f"bad hint {_quote(rest)}: expected a number of moves")
            return
        pos = self.session.position
        if pos.is_game_over():
            return
        limits = self._limits()
        limits.analysis = True  # every listed move's value, exact where it can be solved
        if self.session.options.move_time is not None:
            limits.time = self.session.options.move_time
        self._status("thinking")
        self.out.write(*self._book_lines(pos, n))

        def report(job: SearchJob, result: SearchResult) -> None:
            self.out.write_for(job, *self._search_lines(result, n))

        answered = self._owe()

        def done(job: SearchJob) -> None:
            if job.result is not None:
                self.out.write_for(job, *self._search_lines(job.result, n),
                                   nb.nodestats_line(job.result.nodes, job.result.elapsed),
                                   nb.status_line())
            answered.set()

        self.session.start("hint", limits, on_done=done, on_progress=report,
                           progress_interval=self.hint_interval)

    def _book_lines(self, pos: Position, n: int) -> list[str]:
        """``book <pv> <eval> <games> <depth>`` for the book's moves, best first, before the
        search's lines (NBoard shows both; Edax and NTest send book lines the same way)."""
        lines = []
        for m in self.session.agent.book_moves(pos)[:n]:
            lines.append(nb.book_line(m.line or (m.move,), m.value, m.games, m.leaf_depth))
        return lines

    def _search_lines(self, result: SearchResult, n: int) -> list[str]:
        """One round of hint lines, best move first (the move ``go`` would play).

        NBoard keeps one hint per move but greys or drops hints whose depth token differs from
        the line before, so a round shares one token: ``100%`` when the root is solved exactly
        (only exactly solved moves are listed, by margin), ``100%W`` when win/draw/loss is
        proven (only moves whose outcome is proven), else the set depth."""
        token = depth_token(result, self.depth)
        best = result.best_move
        moves = list(result.moves)
        if token == "100%":
            moves = [m for m in moves if m.exact]
            moves.sort(key=lambda m: (m.move != best, -m.lower))
        else:
            if token == "100%W":
                moves = [m for m in moves if m.proven is not None]
            moves.sort(key=lambda m: (m.move != best, -m.visits, -m.eval))
        lines = []
        for m in moves[:n]:
            lines.append(nb.search_line(result.pv_for(m.move), m.eval, token))
        return lines

    @commands("go")
    def _cmd_go(self, rest: str, received: float) -> None:
        pos = self.session.position
        if pos.is_game_over():
            self._status("the game is over")
            return
        limits = self._limits()
        budget = self.timeman.budget(self._clock(pos.side), pos.empties,
                                     self.session.options.move_time,
                                     forced=len(pos.legal_moves()) <= 1)
        if budget is not None:
            limits.deadline = received + budget
        self._status("thinking")
        answered = self._owe()
        reported = [received]

        def report(job: SearchJob, result: SearchResult) -> None:
            # a quick move writes its answer alone; a long one, what NBoard shows of a
            # search at least every other interval (the board's eval, the node counter)
            now = time.monotonic()
            if now - reported[0] >= self.go_interval:
                reported[0] = now
                self.out.write_for(job, *self._progress_lines(result))

        def done(job: SearchJob) -> None:
            try:
                r = job.result
                if r is None or r.best_move is None:
                    self.out.write_for(job, nb.status_line(f"search failed: {job.error}"))
                    return
                elapsed = time.monotonic() - received
                wrote = self.out.write_for(
                    job, nb.nodestats_line(r.nodes, r.elapsed),
                    nb.move_line(r.best_move, r.eval, elapsed), nb.status_line())
                if wrote:
                    log.info("move", move=move_text(r.best_move), **r.summary())
            finally:
                answered.set()  # before any pondering, which owes nothing

        self.session.start("go", limits, on_done=done, on_progress=report,
                           progress_interval=self.go_interval, then_ponder=True, record=True)

    def _progress_lines(self, result: SearchResult) -> list[str]:
        """A go's search so far, as NBoard shows it: the best move's line (PV, eval and depth
        of the last finished iteration) on the board, nodes and seconds in the node counter,
        and the depths finished and under way in the status bar."""
        lines = []
        if result.best_move is not None:
            lines.append(nb.search_line(result.pv_for(result.best_move), result.eval,
                                        depth_token(result, self.depth)))
        lines.append(nb.nodestats_line(result.nodes, result.elapsed))
        status = "thinking"
        if result.search_nodes and result.iterations:  # a depth-first search
            status += f": depth {result.iterations} done"
            if result.searching:
                status += f", {result.searching} under way"
        lines.append(nb.status_line(status))
        return lines

    def _clock(self, side: Color) -> Clock | None:
        if self.tc is None or self.tc.main <= 0:
            return None
        used = 0.0
        color = self.session.game.start.side
        n_own = 0
        for t in self.times:
            if color == side:
                n_own += 1
                used += t or 0.0
            color = color.other
        kind = FISCHER if self.tc.increment > 0 else ABSOLUTE
        c = Clock(kind=kind, main=self.tc.main, period=self.tc.increment)
        c.set_left(self.tc.main + self.tc.increment * n_own - used, 0)
        return c

    @commands("analyze")
    def _cmd_analyze(self, rest: str, received: float) -> None:
        from engine_server.agents import make_agent
        from engine_server.agents.analysis import analyze_game
        from engine_server.search.endgame.rootsolve import RootSolver

        positions = self.session.game.positions()
        agent = make_agent(self.session.agent_spec, seed=self.session.options.seed)
        out = self.out
        answered = self._owe()

        def run(job: SearchJob) -> None:
            # the solves use the cores the agent may use (``threads``)
            try:
                analyze_game(positions, agent, RootSolver(threads=agent.threads), job.stop,
                             lambda k, ev: out.write_for(job, nb.analysis_line(k, ev)))
            finally:
                answered.set()

        self.session.run_task("analyze", run)

    @commands("clear")
    def _cmd_clear(self, rest: str, received: float) -> None:
        pass  # seen from some controllers; ignored


__all__ = ["NBoardHandler"]
