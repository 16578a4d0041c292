"""A session: one game, its rules, one agent with its persistent tree, and the search worker.

Protocols drive a session and never touch the board: they call ``set_game``/``play``/``undo`` and
start searches.  Threading follows KataGo's AsyncBot: every state-changing call first stops the
running search and joins its thread; a stopped search is marked cancelled under the output lock,
so nothing it would still print reaches the output, and it never becomes ``last_result``.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable

from engine_server import __version__
from engine_server.agents import DEFAULT_AGENT, make_agent
from engine_server.agents.policy import OPEN_POLICY, AgentPolicy, Catalog
from engine_server.game import Color, Game, Position, Rules
from engine_server.log import get_logger
from engine_server.search.limits import Limits, SearchResult
from engine_server.search.timeman import DEFAULT_LAG_BUFFER

if TYPE_CHECKING:
    from engine_server.search.endgame.rootsolve import RootSolver

log = get_logger("session")

SCORE_EMPTIES = 24     # perfect_score() does not try positions with more empties
SCORE_SECONDS = 2.0


@dataclass
class EngineOptions:
    agent: str = DEFAULT_AGENT
    rules: Rules = Rules.STANDARD
    move_time: float | None = None     # hard cap per move in seconds
    move_overhead: float = DEFAULT_LAG_BUFFER  # kept back of every budget a GUI's clock gives
    ponder: bool = False
    ponder_limit: float = 60.0         # pondering never runs longer than this
    seed: int = 1
    name: str = "OthelloPy"
    version: str = __version__
    warmup: bool = True
    catalog: Catalog = field(default_factory=Catalog)   # presets and NBoard levels
    policy: AgentPolicy = OPEN_POLICY                    # what this session may choose


class Output:
    """Thread-safe line sink.  ``write`` emits whole blocks atomically; ``write_for`` drops the
    lines of a cancelled job (checked under the same lock that cancels it)."""

    def __init__(self, sink: Callable[[str], None]):
        self._sink = sink
        self.lock = threading.RLock()

    def write(self, *lines: str) -> None:
        with self.lock:
            for line in lines:
                self._sink(line)

    def write_for(self, job: "SearchJob", *lines: str) -> bool:
        with self.lock:
            if job.cancelled:
                return False
            for line in lines:
                self._sink(line)
            return True


@dataclass
class SearchJob:
    kind: str
    position: Position
    limits: Limits
    stop: threading.Event = field(default_factory=threading.Event)
    cancelled: bool = False
    result: SearchResult | None = None
    error: BaseException | None = None
    thread: threading.Thread | None = None
    started: float = field(default_factory=time.monotonic)

    def done(self) -> bool:
        return self.thread is None or not self.thread.is_alive()


class Session:
    def __init__(self, options: EngineOptions, output: Output):
        self.options = options
        self.output = output
        self.agent_spec = self.admit(options.agent)  # fails early with the policy's message
        self.agent = make_agent(self.agent_spec, seed=options.seed)
        self.game = Game(Position.start(options.rules))
        self._agent_game: tuple[Position, list[int]] | None = None  # what the tree was built for
        self._job: SearchJob | None = None
        self._warmup: threading.Thread | None = None
        self._score_solver: RootSolver | None = None  # made on the first perfect_score()
        self._last_result: SearchResult | None = None
        # Set by a transport that keeps its sessions in a store: called with a request's
        # answer just before it is written (``commit``).
        self.persist: Callable[[list[str]], None] | None = None
        if options.warmup:
            self._start_warmup()

    @property
    def last_result(self) -> SearchResult | None:
        """The result of the last finished search started with ``record=True`` (a move the
        game goes on with: GTP ``genmove``, NBoard ``go``) that was not cancelled."""
        return self._last_result

    # --- state -------------------------------------------------------------------------------
    @property
    def position(self) -> Position:
        return self.game.position

    @property
    def rules(self) -> Rules:
        return self.game.rules

    def new_game(self, start: Position | None = None) -> None:
        self.stop()
        self.game = Game(start or Position.start(self.rules))

    def set_game(self, game: Game) -> None:
        """Replace the game; the tree survives if the new game continues the old one."""
        self.stop()
        self.game = game

    def play(self, move: int) -> Position:
        self.stop()
        return self.game.play(move)  # IllegalMoveError leaves the game unchanged

    def undo(self) -> int:
        self.stop()
        return self.game.undo()

    def perfect_score(self, seconds: float = SCORE_SECONDS) -> int | None:
        """The final disc margin of the current position with perfect play (side to move's
        view), or None when the solver cannot finish within ``seconds``."""
        from engine_server.search.endgame.rootsolve import RootSolver

        self.stop()
        pos = self.game.position
        if pos.is_game_over():
            return pos.score()
        if pos.empties > SCORE_EMPTIES:
            return None
        if self._score_solver is None:
            self._score_solver = RootSolver(18)
        proof = self._score_solver.run(pos, time.monotonic() + seconds)
        return proof.lower if proof.lower == proof.upper else None

    def set_rules(self, rules: Rules | str) -> None:
        self.stop()
        r = Rules.parse(rules)
        self.options.rules = r
        start = self.game.start.with_rules(r)
        self.game = Game.from_moves(self.game.moves, start=start)

    def admit(self, name_or_spec: str) -> str:
        """The spec this session would run for a preset name or spec (fitted to its policy's
        limits), or an AgentSpecError saying why it may not."""
        return self.options.policy.admit(name_or_spec, self.options.catalog.presets)

    def set_agent(self, name_or_spec: str) -> None:
        spec = self.admit(name_or_spec)  # AgentSpecError before anything changes
        agent = make_agent(spec, seed=self.options.seed)
        self.stop()
        self.agent = agent
        self.agent_spec = spec
        self._agent_game = None

    # --- durable state (the session store) ---------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """What a server must keep for this session to outlive it: rules, agent spec, the
        game's start and moves.  The tree and the table are not kept: the restored agent
        rebuilds them, so it plays what a fresh session would play from the position."""
        start = self.game.start
        return {"rules": str(self.rules), "agent": self.agent_spec,
                "start": [start.to_string(), int(start.side)],
                "moves": [int(m) for m in self.game.moves]}

    def commit(self, answer: list[str]) -> None:
        """The request being handled has changed what it will change and is about to write
        ``answer``: a store writes the session now, answer included, before the client can
        see it (a restart then never loses a change the client was told of, nor answers a
        resend differently)."""
        if self.persist is not None:
            self.persist(answer)

    def restore(self, state: dict[str, Any]) -> None:
        """Take back what :meth:`snapshot` wrote.  ValueError (or an AgentSpecError) when the
        state does not fit this server: an agent its policy refuses, an illegal move."""
        rules = Rules.parse(state["rules"])
        board, side = state["start"]
        start = Position.from_string(board, Color(int(side)), rules)
        game = Game.from_moves([int(m) for m in state["moves"]], start=start)
        spec = state["agent"]
        if spec != self.agent_spec:
            self.set_agent(spec)
        self.stop()
        self.options.rules = rules
        self.game = game
        self._agent_game = None

    # --- searching ---------------------------------------------------------------------------
    def _sync_agent(self, start: Position, moves: list[int]) -> None:
        """Tell the agent what was played since its last search (tree reuse)."""
        known = self._agent_game
        if known is not None and known[0] == start and moves[:len(known[1])] == known[1]:
            new = moves[len(known[1]):]
            if new:
                kept = self.agent.advance(new)
                log.debug("tree_advanced", moves=len(new), kept=round(kept, 4))
        elif known is not None:
            self.agent.reset()
        self._agent_game = (start, list(moves))

    def start(self, kind: str, limits: Limits, on_done: Callable[[SearchJob], None] | None = None,
              on_progress: Callable[[SearchJob, SearchResult], None] | None = None,
              progress_interval: float = 0.5, extra_moves: list[int] | None = None,
              then_ponder: bool = False, record: bool = False) -> SearchJob:
        """Start a search of the current position (plus ``extra_moves``, for pondering).

        ``limits`` is copied (the job's own stop event and the policy's cap go into the copy,
        ``job.limits``), so a caller may keep and reuse its object.
        ``then_ponder``: once the result is out, go on searching the position after the chosen
        move in the same thread (when pondering is on) until the next command stops it.
        ``record``: the search chooses the move the game goes on with; its result becomes
        ``last_result`` when it finishes with a move and is not cancelled.  The record and
        ``on_done`` happen in one hold of the output lock, the lock ``stop`` cancels under: a
        cancel comes before both (nothing reported, nothing recorded) or after both (NBoard's
        ``===`` line and ``last_result`` always agree).
        """
        self.stop()
        limits = replace(limits)
        moves = list(self.game.moves) + list(extra_moves or [])
        position = self.game.position
        for m in extra_moves or []:
            position = position.play(m)
        self._sync_agent(self.game.start, moves)
        job = SearchJob(kind, position, limits)
        if limits.stop is None:
            limits.stop = job.stop
        else:
            job.stop = limits.stop
        cap = self.options.policy.max_move_time
        watchdog: threading.Timer | None = None
        if cap is not None:
            # Budgets are tightened so the agent plans within the cap; the timer stops
            # searches that have no clock (analysis, depth or playout budgets) at the cap too.
            if limits.time is not None:
                limits.time = min(limits.time, cap)
            if limits.deadline is not None:
                limits.deadline = min(limits.deadline, job.started + cap)
            watchdog = threading.Timer(cap, job.stop.set)
            watchdog.daemon = True
        agent = self.agent
        warmup = self._warmup

        def progress(result: SearchResult) -> None:
            if on_progress is not None and not job.cancelled:
                on_progress(job, result)

        def run() -> None:
            try:
                if warmup is not None:
                    warmup.join()
                job.result = agent.search(position, limits, progress if on_progress else None,
                                          progress_interval)
                r = job.result
                log.info("search", kind=kind, spec=self.agent_spec,
                         budget=limits.time if limits.time is not None else (
                             None if limits.deadline is None
                             else round(limits.deadline - job.started, 3)),
                         **r.summary())
            except BaseException as e:  # reported to the protocol, never silently lost
                job.error = e
                log.exception("search_failed", kind=kind)
            with self.output.lock:
                if not job.cancelled:
                    found = job.result
                    if record and found is not None and found.best_move is not None:
                        self._last_result = found
                    if on_done is not None:
                        on_done(job)
            final = job.result
            if (then_ponder and self.options.ponder and final is not None
                    and final.best_move is not None and not job.stop.is_set()):
                after = position.play(final.best_move)
                if not after.is_game_over():
                    # Safe without a lock: the controller joins this thread before reading it.
                    self._agent_game = (self.game.start, moves + [final.best_move])
                    agent.advance([final.best_move])
                    agent.search(after, Limits(time=self.options.ponder_limit, stop=job.stop))
            if watchdog is not None:
                watchdog.cancel()

        job.thread = threading.Thread(target=run, name=f"search-{kind}", daemon=True)
        self._job = job
        job.thread.start()
        if watchdog is not None:
            watchdog.start()
        return job

    def stop(self) -> None:
        """Stop the running search (its pending output is cancelled) and join its thread."""
        job = self._job
        if job is None:
            return
        with self.output.lock:
            job.cancelled = True
        job.stop.set()
        if job.thread is not None:
            job.thread.join()
        self._job = None

    def finish(self, interrupt: bool = False) -> SearchJob | None:
        """Wait for the running search to end by itself (or stop it early, keeping its output)."""
        job = self._job
        if job is None:
            return None
        if interrupt:
            job.stop.set()
        if job.thread is not None:
            job.thread.join()
        self._job = None
        return job

    def interrupt(self) -> None:
        """Make the running search return its best-so-far now (output kept).  Thread-safe."""
        job = self._job
        if job is not None:
            job.stop.set()

    @property
    def busy(self) -> bool:
        return self._job is not None and not self._job.done()

    @property
    def current_job(self) -> SearchJob | None:
        return self._job

    def ponder(self, after: list[int]) -> None:
        """Search on the opponent's time from the position after ``after`` (our reply)."""
        if not self.options.ponder:
            return
        pos = self.game.position
        try:
            for m in after:
                pos = pos.play(m)
        except ValueError:
            return
        if pos.is_game_over():
            return
        self.start("ponder", Limits(time=self.options.ponder_limit), extra_moves=after)

    def run_task(self, kind: str, fn: Callable[[SearchJob], None]) -> SearchJob:
        """Run ``fn(job)`` on the worker like a search (stoppable, output cancellable)."""
        self.stop()
        job = SearchJob(kind, self.game.position, Limits())
        job.limits.stop = job.stop

        def run() -> None:
            try:
                fn(job)
            except BaseException as e:
                job.error = e
                log.exception("task_failed", kind=kind)

        job.thread = threading.Thread(target=run, name=f"task-{kind}", daemon=True)
        self._job = job
        job.thread.start()
        return job

    def _start_warmup(self) -> None:
        spec, seed = self.agent_spec, self.options.seed

        def run() -> None:
            t0 = time.monotonic()
            try:
                a = make_agent(spec, seed=seed)
                pos = Position.start(self.rules)
                # an analysis: a book position would otherwise skip the search this warms up
                # (the book is loaded all the same, for the analysis's book marks)
                a.search(pos, Limits(iterations=30, analysis=True))
                a.advance([pos.legal_moves()[0]])
                log.info("warmup_done", seconds=round(time.monotonic() - t0, 3))
            except Exception:
                log.exception("warmup_failed")

        self._warmup = threading.Thread(target=run, name="warmup", daemon=True)
        self._warmup.start()

    def close(self) -> None:
        self.stop()


__all__ = ["EngineOptions", "Output", "Session", "SearchJob"]
