"""The web page's protocol: JSON messages in, JSON messages out, no I/O (docs/web.md).

A browser tab sends one JSON object per WebSocket message, ``{"type": ..., "id": ...}``; the
handler answers with a list of JSON objects, each echoing the request's ``id``.  Messages that
come later (search progress, the engine's move, hints) are written as JSON lines through the
session's ``Output``, as the text protocols write theirs.

Threading follows the session's rule: only the controller (the thread that calls
``handle_message``) changes the game.  A search finishes on the session's worker thread, so its
result is handed back with ``post(fn)``, which must run ``fn`` on the controller after the
messages already queued there; the front end owns that queue.  Searches are started through
``post`` too, so the replies to a message are always sent before anything its search writes.

Bad input (malformed JSON, an oversized message, an unknown type, an illegal move, an agent
the server refuses) gets an ``error`` reply and changes nothing.

Beside it: ``web_views.py`` (the agent catalog, the ``welcome`` message and the game's part of
``state``), ``web_analysis.py`` (the whole-game analysis behind ``analyze``) and
``web_snapshot.py`` (``snapshot``/``restore``: the game as the session store keeps it); the
message encoding and field checks are ``protocol/web.py``'s.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any, Callable

from engine_server.agents import AgentSpecError
from engine_server.game import (
    PASS,
    Color,
    Game,
    IllegalMoveError,
    NotationError,
    Position,
    Rules,
    ggf,
    parse_move,
    square_name,
)
from engine_server.log import get_logger
from engine_server.search.limits import Limits, SearchResult
from engine_server.session import SearchJob, Session
from protocol import web

from .registry import CommandRegistry
from .web_analysis import ANALYSIS_TIME, AnalysisMixin, effort
from .web_snapshot import SNAPSHOT_VERSION, SnapshotMixin
from .web_views import agent_catalog, black_view, game_state, welcome_message

log = get_logger("web")

DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024
DEFAULT_TIME = 1.0          # seconds per move when the page does not say
HINT_TIME = 1.0             # a hint's least budget (the time per move when longer)
PROGRESS_INTERVAL = 0.25    # seconds between progress messages
HUMAN = "human"

Message = web.Message
Post = Callable[[Callable[[], None]], None]
WebCommand = Callable[["WebHandler", "Request"], list[Message]]


# A request that cannot be done: answered with an ``error`` message, nothing changed.
WebError = web.MessageError


@dataclass(frozen=True)
class Request:
    """One decoded message: its fields, the id to echo, and its arrival time (deadlines of
    the searches it starts are measured from it)."""

    msg: dict[str, Any]
    received: float

    def text(self, key: str, default: str | None = None) -> str | None:
        return web.text_field(self.msg, key, default)

    def number(self, key: str) -> float | None:
        return web.number_field(self.msg, key)


def parse_move_list(text: str, start: Position) -> Game:
    """A move list such as ``f5d6c3`` (any case, spaces, commas or dashes between moves;
    ``pa``/``pass`` for passes) played from ``start``; the passes a list leaves out are
    inserted where the side to move has none.  NotationError/IllegalMoveError say where it
    fails."""
    game = Game(start)
    for i, tok in enumerate(web.move_tokens(text), 1):
        move = parse_move(tok)  # NotationError for anything else
        if move != PASS and game.position.must_pass():
            game.play(PASS)
        try:
            game.play(move)
        except IllegalMoveError as e:
            raise IllegalMoveError(f"move {i} ({tok}): {e}") from None
    return game


class WebHandler(AnalysisMixin, SnapshotMixin):
    """The page's protocol over a ``Session``: ``handle_text``/``handle_message`` in, reply
    messages out; later messages through ``session.output`` as JSON lines."""

    commands: CommandRegistry[WebCommand] = CommandRegistry("web")

    def __init__(self, session: Session, post: Post,
                 max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
                 progress_interval: float = PROGRESS_INTERVAL,
                 on_search: Callable[[SearchJob], None] | None = None):
        self.session = session
        self.out = session.output
        self.post = post
        # Told of every search thread this handler starts (the front end lowers its
        # scheduling priority so that many searches cannot starve the sockets).
        self.on_search = on_search
        self.max_message_bytes = max_message_bytes
        self.progress_interval = progress_interval
        opts = session.options
        caps = [c for c in (opts.policy.max_move_time, opts.move_time) if c is not None]
        self.max_time: float | None = min(caps) if caps else None
        self.time = DEFAULT_TIME if self.max_time is None else min(DEFAULT_TIME, self.max_time)
        # Who plays each side: None for a person at the page, else the name the page chose
        # (a preset or a spec).  Each engine side has its own session (agent and tree); the
        # first is this handler's session, which also holds the game.
        self.players: dict[Color, str | None] = {Color.BLACK: None, Color.WHITE: opts.agent}
        self._sessions: dict[Color, Session] = {Color.BLACK: session, Color.WHITE: session}
        self._spare: Session | None = None   # the second agent, once watching two was asked
        self.paused = False                  # two engines: stopped by the page
        self.evals: dict[int, float] = {}    # ply -> evaluation, black's discs
        self.times: dict[int, float] = {}    # ply -> seconds the engine took for that move
        self._job: SearchJob | None = None
        self._job_kind = ""
        self._job_color: Color | None = None
        # The analyst (web_analysis.py): its own session for hints, the live evaluation and
        # the whole-game analysis.
        self._init_analysis()
        self._closed = False
        # No page is connected (its tab closed or is reloading): nothing searches until one
        # comes back (``attach``), so a game waiting for its page costs no CPU.
        self.detached = False

    # --- framing ----------------------------------------------------------------------------
    def handle_text(self, raw: str | bytes, received: float | None = None) -> list[Message]:
        """One WebSocket message as it arrived (size, UTF-8 and JSON checked by protocol.web)."""
        try:
            msg = web.decode(raw, self.max_message_bytes)
        except web.MessageError as e:
            return [self._error(str(e))]
        return self.handle_message(msg, received)

    def handle_message(self, msg: Any, received: float | None = None) -> list[Message]:
        """One decoded message; the replies, in order (an ``error`` leaves everything as it
        was)."""
        received = time.monotonic() if received is None else received
        if not isinstance(msg, dict):
            return [self._error('a message is a JSON object such as {"type": "state"}')]
        rid = web.message_id(msg)
        kind = msg.get("type")
        command = self.commands.get(kind) if isinstance(kind, str) else None
        if command is None:
            what = "no message type" if kind is None else f"unknown message type {kind!r}"
            return [self._error(f"{what}; known: {', '.join(self.commands.names())}", rid)]
        try:
            replies = command.func(self, Request(msg, received))
        except (WebError, AgentSpecError) as e:
            return [self._error(str(e), rid, kind)]
        except Exception as e:  # a bug must still get an answer, and the page its game
            log.exception("command_failed", command=kind)
            return [self._error(f"internal error: {type(e).__name__}: {e}", rid, kind)]
        if rid is not None:
            for r in replies:
                r.setdefault("id", rid)
        return replies

    @staticmethod
    def _error(message: str, rid: Any = None, request: str | None = None) -> Message:
        return web.error(message, rid, request)

    def _write(self, msg: Message, job: SearchJob | None = None) -> bool:
        line = web.encode(msg)
        if job is None:
            self.out.write(line)
            return True
        return self.out.write_for(job, line)

    # --- state ------------------------------------------------------------------------------
    @property
    def game(self) -> Game:
        return self.session.game

    def _human_to_move(self) -> bool:
        pos = self.game.position
        return not pos.is_game_over() and self.players[pos.side] is None

    def state(self) -> Message:
        players = {}
        for c in (Color.BLACK, Color.WHITE):
            name = self.players[c]
            players[web.color_name(c)] = ({"human": True} if name is None else
                                       {"human": False, "agent": name,
                                        "spec": self._sessions[c].agent_spec})
        thinking = (web.color_name(self._job_color) if self._job is not None
                    and self._job_kind == "move" and self._job_color is not None else None)
        return {
            **game_state(self.game, self._human_to_move()),
            "players": players, "time": self.time, "max_time": self.max_time,
            "thinking": thinking, "hinting": self._job is not None and self._job_kind == "hint",
            "paused": self.paused and not any(p is None for p in self.players.values()),
            "evals": [[k, round(v, 2)] for k, v in sorted(self.evals.items())],
            "analyst": self.analyst_state(), "evaluate": self.evaluate,
        }

    def welcome(self) -> list[Message]:
        """What a page needs first: the agents, presets, limits and analyst, then the game."""
        msg = welcome_message(self.session, self.max_time, self.time, self.max_message_bytes)
        msg["analyst"] = self.analyst_info()
        return [msg, self.state()]

    def _hinting(self) -> bool:
        return self._job is not None and self._job_kind == "hint"

    def _engine_searching(self) -> bool:
        return self._job is not None and self._job_kind == "move"

    # --- a page leaving and coming back ------------------------------------------------------
    def detach(self) -> None:
        """The page has gone: stop every search (a move is searched again when it comes back)
        and start none."""
        self.detached = True
        self._halt()
        self._stop_analysis()

    def attach(self, received: float | None = None) -> list[Message]:
        """A page (the same tab reloaded, or a new connection) takes this game: what it needs
        first, and the engine goes on if it is its turn."""
        self.detached = False
        self._schedule(time.monotonic() if received is None else received)
        return self.welcome()

    def drain(self) -> list[Message]:
        """The server is stopping: nothing new starts.  An engine's move under way finishes
        (and is kept); a hint and the live evaluation stop; a whole-game analysis stops at the
        move it has reached and goes on from there after the restart.  The state, for the
        server to see that nothing searches any more once it is so."""
        self.detached = True
        if self._hinting():
            self._halt()
        self._stop_eval()
        self._suspend_analysis()
        return [self.state()]

    # --- engine turns -----------------------------------------------------------------------
    def _halt(self) -> None:
        """Stop every search of the game (the engines', a hint, the live evaluation; their
        pending output is dropped) before the game changes.  A whole-game analysis goes on."""
        for s in (self.session, self._spare):
            if s is not None:
                s.stop()
        if self._hinting() and self._analyst is not None:
            self._analyst.stop()
        self._stop_eval()
        self._job = None
        self._job_color = None

    def _schedule(self, received: float) -> None:
        """Let the engine move once the replies to the current message are out."""
        self.post(lambda: self._continue(received))

    def _continue(self, started: float) -> None:
        """Start the engine's move if it is an engine's turn and nothing runs; else the
        analyst may go on (web_analysis.py)."""
        if self._closed or self.detached:
            return
        if self._job is not None or not self._engine_to_move():
            self._analyst_next()
            return
        pos = self.game.position
        color = pos.side
        if pos.must_pass():
            # Nothing to think about; the pass is played at once.
            self.session.play(PASS)
            self._write({"type": "move", "color": web.color_name(color), "square": "pass"})
            self._write(self.state())
            self._continue(time.monotonic())
            return
        self._stop_eval()   # the engine's cores are its own while it searches
        session = self._sessions[color]
        if session.game is not self.game:
            session.set_game(self.game)  # the second agent follows the one game
        limits = Limits(deadline=started + self.time) if self.time > 0 else Limits()
        ply = len(self.game.moves)

        def done(job: SearchJob) -> None:
            self.post(lambda: self._engine_done(job, color, ply))

        def progress(job: SearchJob, r: SearchResult) -> None:
            self._write(self._progress(r, "move", color, ply), job)

        self._job_kind, self._job_color = "move", color
        self._job = session.start("move", limits, on_done=done, on_progress=progress,
                                  progress_interval=self.progress_interval, record=True)
        if self.on_search is not None:
            self.on_search(self._job)
        self._write(self.state())
        self._analyst_next()   # a whole-game analysis goes on meanwhile

    def _engine_to_move(self) -> bool:
        pos = self.game.position
        if pos.is_game_over() or self.players[pos.side] is None:
            return False
        return not (self.paused and not any(p is None for p in self.players.values()))

    def _engine_done(self, job: SearchJob, color: Color, ply: int) -> None:
        if self._closed or job is not self._job or job.cancelled:
            return  # a newer command stopped it; its result is void
        self._job = None
        self._job_color = None
        r = job.result
        if r is None or r.best_move is None:
            self.paused = True
            self._write({"type": "error", "message": f"the engine's search failed: {job.error}"})
            self._write(self.state())
            return
        self.evals[ply] = round(black_view(r.eval, color), 2)
        self.times[ply] = round(time.monotonic() - job.started, 3)
        self.session.play(r.best_move)
        self._write({"type": "move", "color": web.color_name(color),
                     "square": square_name(r.best_move), "eval": round(r.eval, 2),
                     "elapsed": round(r.elapsed, 3), "nodes": r.nodes,
                     **self._effort(r)})
        self._write(self.state())
        self._continue(time.monotonic())

    @staticmethod
    def _effort(r: SearchResult) -> Message:
        """Depth (and selectivity) for depth-first agents, root visits for tree agents."""
        return effort(r)

    def _progress(self, r: SearchResult, kind: str, color: Color, ply: int) -> Message:
        return {"type": "progress", "kind": kind, "color": web.color_name(color), "ply": ply,
                "elapsed": round(r.elapsed, 2), "nodes": r.nodes,
                "best": r.best_name or None, "eval": round(r.eval, 2), **self._effort(r)}

    # --- commands ---------------------------------------------------------------------------
    @commands("hello")
    def cmd_hello(self, q: Request) -> list[Message]:
        """The agents, presets, limits and the game (also sent when a tab connects)."""
        return self.welcome()

    @commands("state")
    def cmd_state(self, q: Request) -> list[Message]:
        """The game as it stands."""
        return [self.state()]

    @commands("ping")
    def cmd_ping(self, q: Request) -> list[Message]:
        """``pong`` at once, whatever runs (latency checks)."""
        return [{"type": "pong", "t": web.json_safe(q.msg.get("t"))}]

    def _player(self, value: Any, side: str) -> str | None:
        if value is None or value == HUMAN:
            return None
        if not isinstance(value, str) or not value.strip():
            raise WebError(f"{side!r} must be \"human\" or an agent name or spec")
        return value.strip()

    def _time(self, q: Request) -> float | None:
        t = q.number("time")
        if t is None:
            return None
        if t < 0:
            raise WebError("the time per move must be >= 0 (0: the agent's own budget)")
        if self.max_time is not None and t > self.max_time:
            raise WebError(f"time per move {t:g} s is above this server's limit of "
                           f"{self.max_time:g} s")
        return t

    def _apply_players(self, wanted: dict[Color, str | None]) -> None:
        """Give each engine side its agent, every name checked by the policy before anything
        changes.  The first engine side plays on this handler's session; a second one (two
        engines) on a second session, made on demand and closed when no longer needed."""
        engines = [c for c in (Color.BLACK, Color.WHITE) if wanted[c] is not None]
        names = {c: wanted[c] or "" for c in engines}
        for c in engines:
            self.session.admit(names[c])   # AgentSpecError: nothing has changed
        self._halt()
        sessions: dict[Color, Session] = {}
        if len(engines) == 2:
            second = engines[1]
            if self._spare is None:
                opts = replace(self.session.options, agent=names[second], warmup=False)
                self._spare = Session(opts, self.session.output)
            elif self._spare.admit(names[second]) != self._spare.agent_spec:
                self._spare.set_agent(names[second])
            sessions[second] = self._spare
        elif self._spare is not None:
            self._spare.close()
            self._spare = None
        if engines:
            first = engines[0]
            if self.session.admit(names[first]) != self.session.agent_spec:
                self.session.set_agent(names[first])
            sessions[first] = self.session
        for c in (Color.BLACK, Color.WHITE):
            sessions.setdefault(c, self.session)
        self.players = dict(wanted)
        self._sessions = sessions

    def _wanted_players(self, q: Request) -> dict[Color, str | None]:
        """The players after this request: ``black``/``white`` where it names them."""
        wanted = dict(self.players)
        for c in (Color.BLACK, Color.WHITE):
            key = web.color_name(c)
            if key in q.msg:
                wanted[c] = self._player(q.msg[key], key)
        return wanted

    @commands("new")
    def cmd_new(self, q: Request) -> list[Message]:
        """A new game: ``black``/``white`` ("human" or an agent), ``time``, ``rules``."""
        wanted = self._wanted_players(q)
        t = self._time(q)
        rules_text = q.text("rules")
        try:
            rules = Rules.parse(rules_text) if rules_text is not None else self.game.rules
        except ValueError as e:
            raise WebError(str(e)) from None
        self._apply_players(wanted)
        if t is not None:
            self.time = t
        self.session.options.rules = rules
        self.session.new_game(Position.start(rules))
        self._check_analysis()
        self._forget_values()
        self.evals.clear()
        self.times.clear()
        self.paused = False
        self._schedule(q.received)
        return [self.state()]

    @commands("set")
    def cmd_set(self, q: Request) -> list[Message]:
        """Change ``black``/``white`` or ``time`` in the middle of a game."""
        wanted = self._wanted_players(q)
        t = self._time(q)
        if wanted != self.players:
            self._apply_players(wanted)
        if t is not None:
            self.time = t
        self._schedule(q.received)
        return [self.state()]

    @commands("move")
    def cmd_move(self, q: Request) -> list[Message]:
        """The person's move: ``square`` ("d3", or "pass" when there is none)."""
        text = q.text("square")
        if text is None:
            raise WebError("a move needs a square, e.g. {\"type\": \"move\", \"square\": \"d3\"}")
        try:
            move = parse_move(text)
        except NotationError as e:
            raise WebError(str(e)) from None
        return self._human_move(move, q.received)

    @commands("pass")
    def cmd_pass(self, q: Request) -> list[Message]:
        """The person passes (only when they have no legal move)."""
        return self._human_move(PASS, q.received)

    def _human_move(self, move: int, received: float) -> list[Message]:
        pos = self.game.position
        if pos.is_game_over():
            raise WebError("the game is over")
        if self._job is not None and self._job_kind == "move":
            raise WebError("not your turn: the engine is thinking")
        if self.players[pos.side] is not None:
            raise WebError(f"not your turn: {web.color_name(pos.side)} is played by the engine")
        if not pos.is_legal(move):
            if move == PASS:
                raise WebError("you cannot pass: you have a legal move")
            raise WebError(f"illegal move {square_name(move)}: "
                           + ("the square is taken" if (pos.black | pos.white) >> move & 1
                              else "it flips no disc"))
        self._halt()   # a hint may be running
        self.session.play(move)
        self._schedule(received)
        return [self.state()]

    @commands("undo")
    def cmd_undo(self, q: Request) -> list[Message]:
        """Take back the last move of the person (and the engine's reply); one ply when two
        engines play."""
        if not self.game.moves:
            raise WebError("nothing to undo")
        self._halt()
        humans = [c for c, p in self.players.items() if p is None]
        self.session.undo()
        if humans:
            while self.game.moves and (self.players[self.game.position.side] is not None
                                       or self.game.position.must_pass()):
                self.session.undo()
        else:
            self.paused = True
        self._check_analysis()
        n = len(self.game.moves)
        for table in (self.evals, self.times):
            for k in [k for k in table if k > n]:
                del table[k]
        self._forget_values(n)
        self._schedule(q.received)
        return [self.state()]

    @commands("hint")
    def cmd_hint(self, q: Request) -> list[Message]:
        """The analyst's evaluation of every legal move (``time`` optional: the time per
        move, at least ``HINT_TIME``)."""
        pos = self.game.position
        if pos.is_game_over():
            raise WebError("the game is over")
        if self._job is not None and self._job_kind == "move":
            raise WebError("the engine is thinking; ask for a hint on your turn")
        t = self._time(q)
        budget = t if t else max(self.time, HINT_TIME)
        if self.max_time is not None:
            budget = min(budget, self.max_time)
        self._halt()
        color, ply = pos.side, len(self.game.moves)
        # The analyst gives the hints, never the opponent: a whole-game analysis waits.
        self._suspend_analysis()
        session = self._analyst_session()
        session.set_game(self._game_copy())

        def done(job: SearchJob) -> None:
            self.post(lambda: self._hint_done(job, color, ply, budget))

        def progress(job: SearchJob, r: SearchResult) -> None:
            self._write(self._progress(r, "hint", color, ply), job)

        limits = Limits(deadline=q.received + budget, analysis=True)
        self._job_kind, self._job_color = "hint", color
        self._job = session.start("hint", limits, on_done=done, on_progress=progress,
                                  progress_interval=self.progress_interval)
        if self.on_search is not None:
            self.on_search(self._job)
        return [{"type": "thinking", "kind": "hint", "time": budget,
                 "agent": session.agent_spec}]

    def _hint_done(self, job: SearchJob, color: Color, ply: int, budget: float) -> None:
        if self._closed or job is not self._job or job.cancelled:
            return
        self._job = None
        self._job_color = None
        r = job.result
        if r is None:
            self._write({"type": "error", "request": "hint",
                         "message": f"the hint failed: {job.error}"})
            self._continue(time.monotonic())
            return
        depth_first = r.search_nodes > 0
        moves = []
        for m in r.moves:
            if m.move == PASS:
                continue
            known = m.visits > 0 or m.proven is not None or m.exact
            # a depth-first agent's move statistic counts plies searched, a tree's visits
            moves.append({"square": square_name(m.move),
                          "eval": round(m.eval, 2) if known else None, "exact": m.exact,
                          **({"depth": m.visits} if depth_first else {"visits": m.visits})})
        # the hint's value stays with the hint: the bar and the graph keep values of the
        # analysis's depth (web_analysis.py)
        self._write({"type": "hints", "ply": ply, "color": web.color_name(color),
                     "best": r.best_name or None, "eval": round(r.eval, 2),
                     "value": round(black_view(r.eval, color), 2), "moves": moves,
                     "agent": r.agent or None,
                     "elapsed": round(r.elapsed, 3), "nodes": r.nodes, **self._effort(r)})
        self._write(self.state())
        self._continue(time.monotonic())   # a resume that came during the hint

    @commands("stop")
    def cmd_stop(self, q: Request) -> list[Message]:
        """The engine plays its best move so far (two engines: and then they pause); a hint
        reports what it has."""
        if not any(p is None for p in self.players.values()):
            self.paused = True
        for s in (self.session, self._spare):
            if s is not None:
                s.interrupt()
        if self._hinting() and self._analyst is not None:
            self._analyst.interrupt()
        return [self.state()]

    @commands("resume")
    def cmd_resume(self, q: Request) -> list[Message]:
        """Two engines: go on after ``stop`` or ``undo``."""
        self.paused = False
        self._schedule(q.received)
        return [self.state()]

    def record(self) -> ggf.GgfRecord:
        game = self.game
        items = []
        for k, m in enumerate(game.moves):
            ev = self.evals.get(k)
            mover = game.positions()[k].side
            items.append(ggf.MoveItem(m, None if ev is None or k not in self.times
                                      else black_view(ev, mover), self.times.get(k)))
        tags = {"PC": "web", "PB": (self.players[Color.BLACK] or HUMAN).replace("]", ")"),
                "PW": (self.players[Color.WHITE] or HUMAN).replace("]", ")")}
        if game.is_over():
            tags["RE"] = f"{game.result().black_score:+d}.000"
        return ggf.GgfRecord(start=game.start, moves=items, tags=tags)

    @commands("export")
    def cmd_export(self, q: Request) -> list[Message]:
        """The game as GGF and as a move list (``f5d6c3...``, passes left out)."""
        moves = "".join(square_name(m) for m in self.game.moves if m != PASS)
        return [{"type": "record", "ggf": self.record().to_text(), "moves": moves}]

    @commands("import")
    def cmd_import(self, q: Request) -> list[Message]:
        """A game from ``text``: a GGF record or a move list; the engine goes on from there."""
        text = (q.text("text") or "").strip()
        if not text:
            raise WebError("nothing to import: paste a GGF record or a move list such as "
                           "f5d6c3")
        try:
            if "(;" in text[:4]:
                game = ggf.parse(text).game()
            else:
                game = parse_move_list(text, Position.start(self.game.rules))
        except (ggf.GgfError, NotationError, IllegalMoveError, ValueError) as e:
            raise WebError(f"cannot import: {e}") from None
        self._halt()
        self.session.options.rules = game.rules
        self.session.set_game(game)
        self._check_analysis()
        self._forget_values()
        self.evals.clear()
        self.times.clear()
        self._schedule(q.received)
        return [self.state()]

    @commands("evaluate")
    def cmd_evaluate(self, q: Request) -> list[Message]:
        """The live evaluation on (``on``: true, the default) or off: the analyst values each
        position of the game while no engine searches (an ``eval`` message each)."""
        on = q.msg.get("on", True)
        if not isinstance(on, bool):
            raise WebError("'on' must be true or false")
        self.evaluate = on
        if not on:
            self._stop_eval()
        self._schedule(q.received)
        return [self.state()]

    @commands("analyze")
    def cmd_analyze(self, q: Request) -> list[Message]:
        """Whole-game analysis: every move of the game as it stands searched (``time`` per
        position, 0.25 s when not given) by the strongest agent the server allows, with the
        exact endgame solver where the search reaches it; one ``analysis`` message per move,
        then one with ``done``.  A game replaced meanwhile (new, import, undo) ends it."""
        if not self.game.moves:
            raise WebError("nothing to analyse: the game has no moves yet")
        t = self._time(q)
        budget = t if t else ANALYSIS_TIME
        if self.max_time is not None:
            budget = min(budget, self.max_time)
        return self._start_analysis(budget)

    def interrupt(self) -> None:
        """Make running searches return now (any thread: the front end's reader calls it when
        the tab goes, so a long search does not hold the controller)."""
        for s in (self.session, self._spare, self._analyst):
            if s is not None:
                s.interrupt()

    def close(self) -> None:
        self._closed = True
        self._halt()
        self._close_analysis()
        self.session.close()
        if self._spare is not None:
            self._spare.close()
            self._spare = None


__all__ = ["DEFAULT_MAX_MESSAGE_BYTES", "Request", "SNAPSHOT_VERSION", "WebError", "WebHandler",
           "agent_catalog", "parse_move_list"]
